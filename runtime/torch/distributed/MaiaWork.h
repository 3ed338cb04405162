// The Work of a maia collective: completion is an event on the
// communication stream, as for NCCL's WorkNCCL.
#pragma once

#include "Transport.h"

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>

namespace torch_maia::distributed {

/// The end of a launch: its event (recorded on the communication stream
/// after the launch's last command) and its status. Shared by the Works of a
/// coalesced group.
struct LaunchEnd {
  LaunchEnd(c10::DeviceIndex launch_device, std::shared_ptr<LaunchStatus> launch_status);
  ~LaunchEnd();
  LaunchEnd(const LaunchEnd&) = delete;
  LaunchEnd& operator=(const LaunchEnd&) = delete;

  c10::DeviceIndex device;
  maiaEvent_t event = nullptr;
  std::atomic<bool> recorded{false};
  std::shared_ptr<LaunchStatus> status;
  /// The launch's label (Launch::label), for errors raised on the host.
  std::string label;
  /// When the launch was issued: host waits count from here, as NCCL's count
  /// from the work's start.
  std::chrono::steady_clock::time_point issued = std::chrono::steady_clock::now();
  /// The group's timeout, or the shortest timeout a call of the launch gave.
  std::chrono::milliseconds timeout{0};
  /// Whether a call of the launch gave its own timeout: then a blocking wait
  /// (barrier) gives up on the host once it has passed, even if the stream
  /// has not reached the exchange yet.
  bool call_timeout = false;
};

class MaiaWork final : public c10d::Work {
 public:
  /// blocking: wait() also blocks the host until the collective is done and
  /// raises its error (barrier; every work with MAIA_DIST_BLOCKING_WAIT=1).
  MaiaWork(int rank, c10d::OpType op, uint64_t seq, std::shared_ptr<LaunchEnd> end,
           std::vector<at::Tensor> outputs, bool blocking);

  /// Done when the end event has completed, or the exchange failed.
  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override { return outputs_; }
  /// Makes the caller's current stream wait for the collective; raises a
  /// failure already known. As ProcessGroupNCCL's: with a timeout (or for a
  /// blocking work), also blocks the host until the collective completes;
  /// once timeout has passed since the call, the collective fails (its
  /// peers' waits too) and, unless the process is torn down, wait() raises.
  bool wait(std::chrono::milliseconds timeout) override;
  void synchronize() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  uint64_t getSequencenumber() const override { return seq_; }
  /// The sender of a receive from any source (its wait() blocks, as
  /// torch.distributed.recv reads the source right after waiting).
  int sourceRank() const override;
  void setSource(std::shared_ptr<std::atomic<int>> source) { source_ = std::move(source); }

  /// Completed (stream-ordered: consumers wait on an event recorded on the
  /// communication stream) by the backend once the launch is enqueued.
  const c10::intrusive_ptr<c10::ivalue::Future>& future() const { return future_; }
  const std::vector<at::Tensor>& outputs() const { return outputs_; }

 private:
  void throwIfFailed() const;
  void blockCallerStream();
  /// Blocks the host until the collective completes, or fails it once limit
  /// has passed since it was issued (what: the wait that gave limit).
  void waitOnHost(std::chrono::milliseconds limit, const char* what);

  uint64_t seq_;
  std::shared_ptr<LaunchEnd> end_;
  std::vector<at::Tensor> outputs_;
  bool blocking_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::shared_ptr<std::atomic<int>> source_;
};

}  // namespace torch_maia::distributed
