// The transport through the host: pinned staging buffers and ProcessGroupGloo.
//
// Per launch, on the communication stream: device-to-host copies into pinned
// memory from maia's host allocator, then one host function that issues the
// launch's Gloo operations on those buffers and waits for them, then the
// host-to-device copies. The host function occupies one driver core while
// the exchange runs (as an NCCL kernel occupies SMs); see docs/distributed.md
// for why it is a host function rather than a progress thread.
#pragma once

#include "ExchangeProgress.h"
#include "Transport.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>

namespace torch_maia::distributed {

class GlooTransport final : public Transport {
 public:
  explicit GlooTransport(c10::intrusive_ptr<c10d::Backend> gloo);

  const char* name() const override { return "gloo"; }
  const c10::intrusive_ptr<c10d::Backend>& gloo() const { return gloo_; }
  /// Gloo operations issued so far (what the device transports left to it).
  uint64_t operations() const { return operations_.load(); }
  /// From now on, records in progress how far this rank got, so that a
  /// failed exchange names the ranks that never reached it.
  void trackProgress(std::shared_ptr<ExchangeProgress> progress) {
    progress_ = std::move(progress);
  }

  void allreduce(Launch& launch, const at::Tensor& buffer, c10d::ReduceOp::RedOpType op) override;
  void broadcast(Launch& launch, const at::Tensor& buffer, int root) override;
  void reduce(Launch& launch, const at::Tensor& buffer, int root,
              c10d::ReduceOp::RedOpType op) override;
  void allgather(Launch& launch, const at::Tensor& input, const at::Tensor& output) override;
  void gather(Launch& launch, const at::Tensor& input, const at::Tensor& output,
              int root) override;
  void scatter(Launch& launch, const at::Tensor& input, const at::Tensor& output,
               int root) override;
  void reduceScatter(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                     c10d::ReduceOp::RedOpType op) override;
  void alltoall(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                std::vector<int64_t> input_split_bytes,
                std::vector<int64_t> output_split_bytes) override;
  void send(Launch& launch, const at::Tensor& buffer, int peer, int tag) override;
  void recv(Launch& launch, const at::Tensor& buffer, int peer, int tag) override;
  void recvAnysource(Launch& launch, const at::Tensor& buffer, int tag,
                     std::shared_ptr<std::atomic<int>> source) override;
  void barrier(Launch& launch) override;
  void exchange(Launch& launch) override;

 private:
  /// Adds a Gloo operation to the launch, issued with the timeout of the
  /// call adding it (launch.timeout now); see ExchangeStep::ends_at_timeout.
  static void addStep(
      Launch& launch,
      std::function<c10::intrusive_ptr<c10d::Work>(std::chrono::milliseconds)> issue,
      bool ends_at_timeout = true);
  /// Adds step to what the ranks compare before the launch's exchange.
  static void sign(Launch& launch, const std::string& step);
  int rank() const { return gloo_->getRank(); }
  int size() const { return gloo_->getSize(); }

  c10::intrusive_ptr<c10d::Backend> gloo_;
  std::atomic<uint64_t> operations_{0};
  std::shared_ptr<ExchangeProgress> progress_;
  uint64_t collective_exchanges_ = 0;  // enqueued so far (host)
};

}  // namespace torch_maia::distributed
