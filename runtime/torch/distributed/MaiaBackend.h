// The c10d backend of maia tensors ("maia" in torch.distributed).
//
// Every collective runs on the device's communication stream (one per device,
// shared by the process groups of the process, so their exchanges run in the
// order the program issued them): the stream first waits, by event, for the
// caller's current stream; the backend then converts what the transport
// cannot take as is (non-contiguous tensors, float16/bfloat16 reduced in
// float32, AVG and PREMUL_SUM), hands flat buffers to the transport and
// records the end event that Work.wait() makes the caller's stream wait for.
// The host never blocks, except in barrier() and blocking waits.
#pragma once

#include "GlooTransport.h"
#include "HierTransport.h"
#include "IpcTransport.h"
#include "MaiaWork.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <map>

namespace torch_maia::distributed {

/// The options of a maia group (what split_group copies from its parent).
struct MaiaOptions : c10d::Backend::Options {
  explicit MaiaOptions(std::chrono::milliseconds collective_timeout)
      : Options("maia", collective_timeout) {}
};

class MaiaBackend final : public c10d::Backend {
 public:
  /// gloo: a ProcessGroupGloo of the same ranks (over a PrefixStore of this
  /// group's store), the host transport. hosts: every rank's host
  /// (gethostname(), or the emulated host of MAIA_DIST_EMULATE_HOSTS);
  /// leaders: on the first rank of each host when the group spans hosts in
  /// blocks (see hostBlock), a ProcessGroupGloo of those ranks, else null.
  /// Collective: sets up the IPC transport of this host's ranks on device.
  MaiaBackend(c10::intrusive_ptr<c10d::Backend> gloo, c10::intrusive_ptr<c10d::Store> store,
              std::chrono::milliseconds timeout, std::string group_name,
              std::vector<std::string> hosts, c10::intrusive_ptr<c10d::Backend> leaders,
              c10::DeviceIndex device);
  ~MaiaBackend() override;

  const std::string getBackendName() const override { return "maia"; }
  c10::intrusive_ptr<Options> getBackendOptions() override;
  bool supportsCoalescing() const override { return true; }
  bool supportsSplitting() const override { return true; }
  /// The group's timeout (Backend.set_timeout from Python), for the
  /// collectives issued from now on that give none of their own.
  void setTimeout(std::chrono::milliseconds timeout) override { timeout_.store(timeout); }
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return seq_; }
  void setGroupUid(const std::string& pg_uid) override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                               int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  /// Blocks the host (not the device) until every rank has called it; rank 0
  /// names the ranks that did not within opts.timeout (the group's if
  /// unset), the first one or, with wait_all_ranks, all of them. Reached
  /// through the backend (torch_maia.distributed.monitored_barrier): torch
  /// 2.13's dist.monitored_barrier takes only groups whose backend is gloo.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;

  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;

 private:
  struct Pending;
  class Call;

  /// The transport that moves a launch's data on device: IPC when every rank
  /// of the group is on this host, hierarchical (IPC within hosts, Gloo
  /// between one leader per host) when the group spans hosts of equal rank
  /// counts in contiguous blocks, else Gloo; Gloo for launches on another
  /// device than the one the group was created on, and with
  /// MAIA_DIST_TRANSPORT=gloo.
  Transport& transportFor(c10d::OpType op, c10::DeviceIndex device);
  /// hierarchical: whether a group spanning hosts may use HierTransport
  /// (false for split groups, which have no leaders' Gloo group: Gloo).
  void setUpTransports(c10d::Store& store, const std::vector<std::string>& hosts,
                       c10::intrusive_ptr<c10d::Backend> leaders, bool hierarchical);

 public:
  /// Launches per transport name since creation, and "gloo_operations":
  /// the Gloo operations the group issued (tests, benchmarks).
  std::map<std::string, uint64_t> launchCounts() const;
  /// The name of the transport launches on the group's device use.
  const char* transportName() const { return device_transport_->name(); }

 private:
  std::unique_ptr<Pending> newPending(c10d::OpType op, c10::DeviceIndex device);
  void flush(Pending& pending);
  /// Raises the failure of an earlier exchange of this group, if any.
  void throwIfFailed(c10d::OpType op) const;
  /// allreduce and allreduce_coalesced: every tensor reduced in place, in
  /// one launch.
  c10::intrusive_ptr<c10d::Work> allreduceInPlace(std::vector<at::Tensor>& tensors,
                                                  const c10d::ReduceOp& reduce_op,
                                                  c10d::OpType op_type, const char* name,
                                                  std::chrono::milliseconds timeout);

  c10::intrusive_ptr<c10d::Backend> gloo_;
  c10::intrusive_ptr<c10d::Store> store_;
  GlooTransport gloo_transport_;
  /// Read by every call (DDP's reducer issues from the autograd thread).
  std::atomic<std::chrono::milliseconds> timeout_;
  std::string group_name_;
  std::string host_;  // this rank's (for split groups)
  c10::DeviceIndex device_;
  std::unique_ptr<IpcTransport> ipc_;
  std::unique_ptr<HierTransport> hier_;
  Transport* device_transport_ = &gloo_transport_;
  std::atomic<uint64_t> launches_gloo_{0}, launches_device_{0};
  /// Launches issued (DDP's reducer issues from the autograd thread).
  std::atomic<uint64_t> seq_{0};
  uint64_t monitored_barriers_ = 0;
  bool coalescing_ = false;
  std::unique_ptr<Pending> group_;  // the coalescing group, once it has an operation
  /// The first failure of any launch of this group.
  std::shared_ptr<LaunchStatus> group_status_ = std::make_shared<LaunchStatus>();
};

}  // namespace torch_maia::distributed
