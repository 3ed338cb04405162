// How a collective's data moves between ranks, once the backend has ordered it
// on the communication stream.
//
// MaiaBackend (c10d semantics: argument checks, dtypes, reductions that Gloo
// lacks, non-contiguous tensors, streams, Work objects) hands a transport flat
// contiguous device buffers in their wire dtype and a Launch: everything one
// stream enqueue covers (one collective, or a coalesced group). A transport
// enqueues on launch.stream what can run now (e.g. device-to-host staging),
// keeps what it must exchange, and appends to launch.after what has to follow
// the exchange (e.g. host-to-device copies); exchange() then enqueues the
// exchange itself, once per launch. The backend picks the transport per
// launch (transportFor), so an intra-host path over IPC-mapped device memory
// can take the collectives it supports while Gloo keeps the rest.
#pragma once

#include <maia/runtime.h>

#include <c10/core/ScalarType.h>
#include <c10/core/Stream.h>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace torch_maia::distributed {

/// What one launch's exchange reports back: set by the exchange (on a driver
/// core), read by the Work objects and the backend (on host threads).
class LaunchStatus {
 public:
  /// parent (the process group's status) fails with every launch.
  explicit LaunchStatus(std::shared_ptr<LaunchStatus> parent = nullptr)
      : parent_(std::move(parent)) {}
  void fail(std::string message);
  bool failed() const;
  /// The failure message ("" if none).
  std::string message() const;
  /// What the exchange waits for right now ("rank(s) 1 to reach the same
  /// step"; "" when it is not waiting for peers), so that a host that gives
  /// up on the launch (Work.wait(timeout)) can say whom it waited for;
  /// absent, if given, says then which peers have not come (it may ask the
  /// store: it runs on the host that gave up, only then).
  void setWaitingFor(std::string what, std::function<std::string()> absent = nullptr);
  std::string waitingFor() const;

 private:
  mutable std::mutex mutex_;
  std::string message_;
  std::string waiting_for_;
  std::function<std::string()> absent_;
  std::atomic<bool> failed_{false};
  std::shared_ptr<LaunchStatus> parent_;
};

/// A Gloo operation of a launch, issued by the exchange with the timeout of
/// the call that added it (GlooTransport).
struct ExchangeStep {
  std::function<c10::intrusive_ptr<c10d::Work>(std::chrono::milliseconds timeout)> issue;
  std::chrono::milliseconds timeout;
  /// Gloo ends the operation at its options' timeout itself (collectives);
  /// false: only the wait's timeout ends it (send, receive).
  bool ends_at_timeout = true;
};

/// One enqueue on the communication stream: a collective or a coalesced group.
struct Launch {
  c10::DeviceIndex device = -1;
  c10::Stream stream{c10::Stream::DEFAULT, c10::Device(c10::DeviceType::PrivateUse1, 0)};
  c10d::OpType op = c10d::OpType::UNKNOWN;
  uint64_t seq = 0;
  /// "ALLREDUCE (sequence number 3) of group '0' (rank 1 of 2)", for errors.
  std::string label;
  /// How long the steps of the call being added wait for a peer: the call's
  /// own timeout (AllreduceOptions.timeout, ...), else the group's. Each
  /// transport step takes the value current when the call adds it, so the
  /// collectives of a coalescing group keep their own.
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<LaunchStatus> status = std::make_shared<LaunchStatus>();
  /// Enqueued on stream after the exchange, in order.
  std::vector<std::function<void()>> after;
  /// Called on the host once everything is enqueued (staging release).
  std::vector<std::function<void()>> release;
  /// The transport's pending exchange steps (opaque to the backend).
  std::vector<ExchangeStep> steps;
  /// Run by the exchange once every step has completed (on a driver core).
  std::vector<std::function<void()>> on_exchanged;
  /// What the launch's collective steps move, as every rank must agree
  /// ("allreduce (SUM) of 100 Float; ..."), for the Gloo transport's check
  /// before it moves data; empty if a step is point-to-point (the ranks'
  /// sides differ by design).
  std::string signature;
  bool point_to_point = false;
};

/// Tears the process down when an exchange fails (NCCL's default), unless
/// MAIA_DIST_ASYNC_ERROR_HANDLING=0: then the error is kept and raised by the
/// next wait, barrier or collective of the group.
bool abortOnAsyncError();

/// Reports that launch label's exchange failed with cause (on a driver core):
/// fails status, then tears the process down unless abortOnAsyncError() is
/// false (the device steps queued behind the exchange would otherwise hand
/// the caller whatever the buffers hold).
void failExchange(LaunchStatus& status, const std::string& label, const std::string& cause);

/// "allreduce (SUM) of 100 Float": a reduction step as the ranks compare it.
std::string describeReduction(const char* collective, int64_t numel, at::ScalarType dtype,
                              c10d::ReduceOp::RedOpType op);

/// Buffers are contiguous 1-D device tensors on launch.device. Reductions get
/// them in a dtype the transport reduces natively (no float16/bfloat16/bool/
/// int16; the backend converts) and an op among SUM, PRODUCT, MIN, MAX, BAND,
/// BOR, BXOR; the other collectives move bytes of any dtype.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;

  virtual void allreduce(Launch& launch, const at::Tensor& buffer,
                         c10d::ReduceOp::RedOpType op) = 0;
  virtual void broadcast(Launch& launch, const at::Tensor& buffer, int root) = 0;
  /// Only the root's buffer receives the result.
  virtual void reduce(Launch& launch, const at::Tensor& buffer, int root,
                      c10d::ReduceOp::RedOpType op) = 0;
  /// output holds size() copies of input's length, in rank order.
  virtual void allgather(Launch& launch, const at::Tensor& input, const at::Tensor& output) = 0;
  /// output (root only; undefined elsewhere) holds size() slices.
  virtual void gather(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                      int root) = 0;
  /// input (root only; undefined elsewhere) holds size() slices.
  virtual void scatter(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                       int root) = 0;
  /// input holds size() slices of output's length; rank r gets the reduction of slice r.
  virtual void reduceScatter(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                             c10d::ReduceOp::RedOpType op) = 0;
  /// Splits count bytes, per peer; both empty: equal splits (every rank
  /// passed none, so every pair moves input.nbytes() / size()).
  virtual void alltoall(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                        std::vector<int64_t> input_split_bytes,
                        std::vector<int64_t> output_split_bytes) = 0;
  virtual void send(Launch& launch, const at::Tensor& buffer, int peer, int tag) = 0;
  virtual void recv(Launch& launch, const at::Tensor& buffer, int peer, int tag) = 0;
  /// Receives from whichever rank sends with tag; stores its rank in *source
  /// once the exchange is done.
  virtual void recvAnysource(Launch& launch, const at::Tensor& buffer, int tag,
                             std::shared_ptr<std::atomic<int>> source) = 0;
  virtual void barrier(Launch& launch) = 0;

  /// Enqueues the launch's exchange on launch.stream (after what the calls
  /// above enqueued, before launch.after).
  virtual void exchange(Launch& launch) = 0;
};

}  // namespace torch_maia::distributed
