#include "GlooTransport.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "MaiaCheck.h"
#include "MaiaHostAllocator.h"
#include "MaiaStream.h"

namespace torch_maia::distributed {

void LaunchStatus::fail(std::string message) {
  if (parent_) parent_->fail(message);
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_.load()) return;  // the first failure is the cause
  message_ = std::move(message);
  failed_.store(true, std::memory_order_release);
}

bool LaunchStatus::failed() const { return failed_.load(std::memory_order_acquire); }

std::string LaunchStatus::message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return message_;
}

std::string describeReduction(const char* collective, int64_t numel, at::ScalarType dtype,
                              c10d::ReduceOp::RedOpType op) {
  static const char* const names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX",
                                      "BAND", "BOR", "BXOR", "PREMUL_SUM"};
  const char* name = static_cast<int>(op) < 9 ? names[static_cast<int>(op)] : "?";
  return c10::str(collective, " (", name, ") of ", numel, " ", dtype);
}

bool abortOnAsyncError() {
  static const bool abort = [] {
    const char* value = std::getenv("MAIA_DIST_ASYNC_ERROR_HANDLING");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return abort;
}

void failExchange(LaunchStatus& status, const std::string& label, const std::string& cause) {
  std::string message = label + " failed: " + cause;
  status.fail(message);
  if (!abortOnAsyncError()) return;
  std::fprintf(stderr,
               "[maia c10d] %s\n[maia c10d] tearing the process down so that no rank goes on "
               "with wrong data (MAIA_DIST_ASYNC_ERROR_HANDLING=0 keeps it running and raises "
               "the error from the group's next wait, barrier or collective)\n",
               message.c_str());
  std::fflush(stderr);
  std::abort();
}

namespace {

using ExchangeStep = std::function<c10::intrusive_ptr<c10d::Work>()>;

/// What the host function on the communication stream runs: the launch's
/// Gloo operations, all issued before any is waited for (a batch of sends
/// and receives must be posted together or two ranks could wait on each
/// other's first operation).
struct Exchange {
  c10::intrusive_ptr<c10d::Backend> gloo;
  /// The launch's signature (empty: not compared).
  std::string signature;
  std::vector<ExchangeStep> steps;
  std::vector<std::function<void()>> on_exchanged;
  std::shared_ptr<LaunchStatus> status;
  std::string label;
  std::chrono::milliseconds timeout;
};

std::string describe(const std::exception& error) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error))
    return c10_error->what_without_backtrace();
  return error.what();
}

void fail(const Exchange& exchange, const std::string& cause) {
  failExchange(*exchange.status, exchange.label, cause);
}

/// Bytes of a signature the ranks compare (longer ones are compared by
/// their first bytes and their length).
constexpr int64_t kSignatureBytes = 240;

/// Gathers every rank's signature: "" if they agree, else what differs.
/// Gloo moves whatever sizes it is given and tears the process down from its
/// transport thread when they differ, so the ranks agree first.
std::string disagreement(const Exchange& exchange) {
  const auto& gloo = exchange.gloo;
  const int size = gloo->getSize();
  std::string mine = exchange.signature;
  std::string tagged = c10::str(mine.size(), ":", mine);
  tagged.resize(kSignatureBytes, '\0');
  at::Tensor in = at::from_blob(tagged.data(), {kSignatureBytes}, at::kByte);
  at::Tensor all = at::empty({size * kSignatureBytes}, at::kByte);
  gloo->_allgather_base(all, in)->wait(exchange.timeout);
  const char* base = static_cast<const char*>(all.data_ptr());
  for (int peer = 0; peer < size; ++peer) {
    const char* theirs = base + peer * kSignatureBytes;
    if (std::memcmp(theirs, tagged.data(), kSignatureBytes) == 0) continue;
    std::string text(theirs, strnlen(theirs, kSignatureBytes));
    text = text.substr(std::min(text.find(':') + 1, text.size()));
    return c10::str("rank ", peer, " is at another step: it runs ", text, ", this rank ", mine);
  }
  return {};
}

void runExchange(void* user_data) {
  std::unique_ptr<Exchange> exchange(static_cast<Exchange*>(user_data));
  try {
    if (!exchange->signature.empty()) {
      std::string cause = disagreement(*exchange);
      if (!cause.empty()) return fail(*exchange, cause);
    }
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    works.reserve(exchange->steps.size());
    for (auto& step : exchange->steps) works.push_back(step());
    for (auto& work : works) work->wait(exchange->timeout);
    for (auto& done : exchange->on_exchanged) done();
  } catch (const std::exception& error) {
    fail(*exchange, describe(error));
  } catch (...) {
    fail(*exchange, "unknown error");
  }
}

/// A pinned host buffer with buffer's dtype and length, as a CPU tensor that
/// does not own it; the launch releases the memory once everything is
/// enqueued, recorded on the stream so it is not reused before the stream
/// is past its last use. With download, the device-to-host copy is enqueued.
at::Tensor stage(Launch& launch, const at::Tensor& buffer, bool download) {
  size_t bytes = buffer.nbytes();
  c10::DataPtr data = getMaiaHostAllocator()->allocate(bytes == 0 ? 1 : bytes);
  void* ptr = data.get();
  void* context = data.get_context();
  at::Tensor host = at::from_blob(ptr, {buffer.numel()},
                                  at::TensorOptions().dtype(buffer.scalar_type()));
  if (download && bytes > 0)
    MAIA_CHECK(maiaMemcpyAsync(ptr, buffer.data_ptr(), bytes, maiaMemcpyDeviceToHost,
                               driverStream(launch.stream)));
  auto owner = std::make_shared<c10::DataPtr>(std::move(data));
  launch.release.push_back([owner, ptr, context, stream = launch.stream] {
    getMaiaHostAllocator()->record_event(ptr, context, stream);
    owner->clear();
  });
  return host;
}

/// Enqueues, after the exchange, the copy of host back into buffer.
void upload(Launch& launch, const at::Tensor& host, const at::Tensor& buffer) {
  size_t bytes = buffer.nbytes();
  if (bytes == 0) return;
  launch.after.push_back([host, buffer, bytes, stream = launch.stream] {
    MAIA_CHECK(maiaMemcpyAsync(buffer.data_ptr(), host.data_ptr(), bytes, maiaMemcpyHostToDevice,
                               driverStream(stream)));
  });
}

at::Tensor bytesOf(const at::Tensor& host) { return host.view(at::kByte); }

}  // namespace

GlooTransport::GlooTransport(c10::intrusive_ptr<c10d::Backend> gloo) : gloo_(std::move(gloo)) {}

// Every rank skips a collective whose buffers are empty everywhere (their
// sizes agree across ranks), so Gloo never sees an empty buffer it might refuse.

void GlooTransport::allreduce(Launch& launch, const at::Tensor& buffer,
                              c10d::ReduceOp::RedOpType op) {
  if (buffer.numel() == 0) return;
  sign(launch, describeReduction("allreduce", buffer.numel(), buffer.scalar_type(), op));
  at::Tensor host = stage(launch, buffer, true);
  launch.steps.push_back([gloo = gloo_, host, op] {
    std::vector<at::Tensor> tensors{host};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp(op);
    return gloo->allreduce(tensors, options);
  });
  upload(launch, host, buffer);
}

void GlooTransport::broadcast(Launch& launch, const at::Tensor& buffer, int root) {
  if (buffer.numel() == 0) return;
  sign(launch,
       c10::str("broadcast of ", buffer.numel(), " ", buffer.scalar_type(), " from ", root));
  at::Tensor host = stage(launch, buffer, rank() == root);
  launch.steps.push_back([gloo = gloo_, host, root] {
    std::vector<at::Tensor> tensors{bytesOf(host)};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    return gloo->broadcast(tensors, options);
  });
  if (rank() != root) upload(launch, host, buffer);
}

void GlooTransport::reduce(Launch& launch, const at::Tensor& buffer, int root,
                           c10d::ReduceOp::RedOpType op) {
  if (buffer.numel() == 0) return;
  sign(launch, describeReduction("reduce", buffer.numel(), buffer.scalar_type(), op) +
                   c10::str(" to ", root));
  at::Tensor host = stage(launch, buffer, true);
  launch.steps.push_back([gloo = gloo_, host, root, op] {
    std::vector<at::Tensor> tensors{host};
    c10d::ReduceOptions options;
    options.rootRank = root;
    options.reduceOp = c10d::ReduceOp(op);
    return gloo->reduce(tensors, options);
  });
  if (rank() == root) upload(launch, host, buffer);
}

void GlooTransport::allgather(Launch& launch, const at::Tensor& input, const at::Tensor& output) {
  if (output.numel() == 0) return;
  sign(launch, c10::str("allgather of ", input.numel(), " ", input.scalar_type(), " per rank"));
  at::Tensor host_in = stage(launch, input, true);
  at::Tensor host_out = stage(launch, output, false);
  launch.steps.push_back([gloo = gloo_, host_in, host_out] {
    at::Tensor in = bytesOf(host_in), out = bytesOf(host_out);
    return gloo->_allgather_base(out, in);
  });
  upload(launch, host_out, output);
}

void GlooTransport::gather(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                           int root) {
  if (input.numel() == 0) return;
  sign(launch, c10::str("gather of ", input.numel(), " ", input.scalar_type(), " to ", root));
  at::Tensor host_in = stage(launch, input, true);
  at::Tensor host_out = rank() == root ? stage(launch, output, false) : at::Tensor();
  launch.steps.push_back([gloo = gloo_, host_in, host_out, root, size = size()] {
    std::vector<at::Tensor> inputs{bytesOf(host_in)};
    std::vector<std::vector<at::Tensor>> outputs;
    if (host_out.defined()) outputs.push_back(bytesOf(host_out).chunk(size));
    c10d::GatherOptions options;
    options.rootRank = root;
    return gloo->gather(outputs, inputs, options);
  });
  if (rank() == root) upload(launch, host_out, output);
}

void GlooTransport::scatter(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                            int root) {
  if (output.numel() == 0) return;
  sign(launch, c10::str("scatter of ", output.numel(), " ", output.scalar_type(), " from ", root));
  at::Tensor host_in = rank() == root ? stage(launch, input, true) : at::Tensor();
  at::Tensor host_out = stage(launch, output, false);
  launch.steps.push_back([gloo = gloo_, host_in, host_out, root, size = size()] {
    std::vector<at::Tensor> outputs{bytesOf(host_out)};
    std::vector<std::vector<at::Tensor>> inputs;
    if (host_in.defined()) inputs.push_back(bytesOf(host_in).chunk(size));
    c10d::ScatterOptions options;
    options.rootRank = root;
    return gloo->scatter(outputs, inputs, options);
  });
  upload(launch, host_out, output);
}

void GlooTransport::reduceScatter(Launch& launch, const at::Tensor& input,
                                  const at::Tensor& output, c10d::ReduceOp::RedOpType op) {
  if (output.numel() == 0) return;
  sign(launch, describeReduction("reduce_scatter", output.numel(), output.scalar_type(), op) +
                   " per rank");
  at::Tensor host_in = stage(launch, input, true);
  at::Tensor host_out = stage(launch, output, false);
  launch.steps.push_back([gloo = gloo_, host_in, host_out, op] {
    at::Tensor in = host_in, out = host_out;
    c10d::ReduceScatterOptions options;
    options.reduceOp = c10d::ReduceOp(op);
    return gloo->_reduce_scatter_base(out, in, options);
  });
  upload(launch, host_out, output);
}

void GlooTransport::alltoall(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                             std::vector<int64_t> input_split_bytes,
                             std::vector<int64_t> output_split_bytes) {
  // Called even when this rank's buffers are empty: its peers' may not be.
  // Split sizes differ between ranks by design: only the step is compared.
  sign(launch, c10::str("alltoall of ", input.scalar_type()));
  at::Tensor host_in = stage(launch, input, true);
  at::Tensor host_out = stage(launch, output, false);
  launch.steps.push_back([gloo = gloo_, host_in, host_out, in_splits = std::move(input_split_bytes),
                          out_splits = std::move(output_split_bytes)]() mutable {
    at::Tensor in = bytesOf(host_in), out = bytesOf(host_out);
    return gloo->alltoall_base(out, in, out_splits, in_splits);
  });
  upload(launch, host_out, output);
}

void GlooTransport::send(Launch& launch, const at::Tensor& buffer, int peer, int tag) {
  launch.point_to_point = true;
  if (buffer.numel() == 0) return;
  at::Tensor host = stage(launch, buffer, true);
  launch.steps.push_back([gloo = gloo_, host, peer, tag] {
    std::vector<at::Tensor> tensors{bytesOf(host)};
    return gloo->send(tensors, peer, tag);
  });
}

void GlooTransport::recv(Launch& launch, const at::Tensor& buffer, int peer, int tag) {
  launch.point_to_point = true;
  if (buffer.numel() == 0) return;
  at::Tensor host = stage(launch, buffer, false);
  launch.steps.push_back([gloo = gloo_, host, peer, tag] {
    std::vector<at::Tensor> tensors{bytesOf(host)};
    return gloo->recv(tensors, peer, tag);
  });
  upload(launch, host, buffer);
}

void GlooTransport::recvAnysource(Launch& launch, const at::Tensor& buffer, int tag,
                                  std::shared_ptr<std::atomic<int>> source) {
  launch.point_to_point = true;
  TORCH_CHECK(buffer.numel() > 0, "maia c10d: recv from any source needs a non-empty tensor");
  at::Tensor host = stage(launch, buffer, false);
  auto work = std::make_shared<c10::intrusive_ptr<c10d::Work>>();
  launch.steps.push_back([gloo = gloo_, host, tag, work] {
    std::vector<at::Tensor> tensors{bytesOf(host)};
    *work = gloo->recvAnysource(tensors, tag);
    return *work;
  });
  launch.on_exchanged.push_back([work, source] { source->store((*work)->sourceRank()); });
  upload(launch, host, buffer);
}

void GlooTransport::barrier(Launch& launch) {
  sign(launch, "barrier");
  launch.steps.push_back([gloo = gloo_] { return gloo->barrier(); });
}

void GlooTransport::exchange(Launch& launch) {
  if (launch.steps.empty()) return;
  operations_ += launch.steps.size();
  auto exchange = std::make_unique<Exchange>();
  exchange->gloo = gloo_;
  if (!launch.point_to_point) exchange->signature = launch.signature;
  exchange->steps = std::move(launch.steps);
  exchange->on_exchanged = std::move(launch.on_exchanged);
  exchange->status = launch.status;
  exchange->label = launch.label;
  exchange->timeout = launch.timeout;
  MAIA_CHECK(maiaLaunchHostFuncNamed(driverStream(launch.stream), &runExchange, exchange.get(),
                                     exchange->label.c_str()));
  exchange.release();  // runExchange owns it now
  launch.steps.clear();
  launch.on_exchanged.clear();
  launch.signature.clear();
  launch.point_to_point = false;
}

void GlooTransport::sign(Launch& launch, const std::string& step) {
  if (!launch.signature.empty()) launch.signature += "; ";
  launch.signature += step;
}

}  // namespace torch_maia::distributed
