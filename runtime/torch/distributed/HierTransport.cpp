#include "HierTransport.h"

#include <ATen/ATen.h>

#include "MaiaCheck.h"
#include "MaiaStream.h"

namespace torch_maia::distributed {

HierTransport::HierTransport(GlooTransport& flat, std::unique_ptr<IpcTransport> local,
                             std::unique_ptr<GlooTransport> leaders, int host, int hosts,
                             int local_rank, int local_size)
    : flat_(flat),
      local_(std::move(local)),
      leaders_(std::move(leaders)),
      host_(host),
      hosts_(hosts),
      local_rank_(local_rank),
      local_size_(local_size) {}

HierTransport::~HierTransport() = default;

void HierTransport::acrossHosts(Launch& launch,
                                const std::function<void(Transport&, Launch&)>& fill) {
  if (!leader() || hosts_ < 2) return;
  Launch sub;
  sub.device = launch.device;
  sub.stream = launch.stream;
  sub.op = launch.op;
  sub.seq = launch.seq;
  sub.label = launch.label + " (between hosts)";
  sub.timeout = launch.timeout;
  sub.status = std::make_shared<LaunchStatus>(launch.status);
  fill(*leaders_, sub);
  leaders_->exchange(sub);
  for (auto& step : sub.after) step();
  for (auto& release : sub.release) release();
}

namespace {

void copyDevice(Launch& launch, const at::Tensor& dst, const at::Tensor& src) {
  if (src.numel() == 0 || dst.data_ptr() == src.data_ptr()) return;
  MAIA_CHECK(maiaMemcpyAsync(dst.data_ptr(), src.data_ptr(), src.nbytes(),
                             maiaMemcpyDeviceToDevice, driverStream(launch.stream)));
}

}  // namespace

void HierTransport::allreduce(Launch& launch, const at::Tensor& buffer,
                              c10d::ReduceOp::RedOpType op) {
  if (buffer.numel() == 0) return;
  if (local_) local_->allreduce(launch, buffer, op);
  acrossHosts(launch, [&](Transport& t, Launch& l) { t.allreduce(l, buffer, op); });
  if (local_) local_->broadcast(launch, buffer, 0);
}

void HierTransport::broadcast(Launch& launch, const at::Tensor& buffer, int root) {
  if (buffer.numel() == 0) return;
  const int root_host = root / local_size_;
  if (local_ && host_ == root_host) local_->broadcast(launch, buffer, root % local_size_);
  acrossHosts(launch, [&](Transport& t, Launch& l) { t.broadcast(l, buffer, root_host); });
  if (local_ && host_ != root_host) local_->broadcast(launch, buffer, 0);
}

void HierTransport::allgather(Launch& launch, const at::Tensor& input, const at::Tensor& output) {
  const int64_t n = input.numel();
  if (n == 0) return;
  at::Tensor block = output.narrow(0, host_ * local_size_ * n, local_size_ * n);
  if (local_)
    local_->allgather(launch, input, block);
  else
    copyDevice(launch, block, input);
  acrossHosts(launch, [&](Transport& t, Launch& l) { t.allgather(l, block, output); });
  if (local_) local_->broadcast(launch, output, 0);
}

void HierTransport::reduceScatter(Launch& launch, const at::Tensor& input,
                                  const at::Tensor& output, c10d::ReduceOp::RedOpType op) {
  const int64_t n = output.numel();
  if (n == 0) return;
  if (!local_) {
    acrossHosts(launch, [&](Transport& t, Launch& l) { t.reduceScatter(l, input, output, op); });
    return;
  }
  // The input is the caller's: the host's partial reduction goes to a copy.
  at::Tensor partial = at::empty_like(input);
  copyDevice(launch, partial, input);
  local_->allreduce(launch, partial, op);
  at::Tensor block = at::empty({local_size_ * n}, output.options());
  acrossHosts(launch, [&](Transport& t, Launch& l) { t.reduceScatter(l, partial, block, op); });
  if (hosts_ < 2) copyDevice(launch, block, partial.narrow(0, 0, local_size_ * n));
  local_->broadcast(launch, block, 0);
  copyDevice(launch, output, block.narrow(0, local_rank_ * n, n));
}

}  // namespace torch_maia::distributed
