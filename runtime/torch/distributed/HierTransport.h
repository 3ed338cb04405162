// The cross-host transport: the group spans hosts, each host holding a
// contiguous block of L group ranks (as torchrun numbers them). A collective
// runs in three stages on the communication stream: within each host through
// the IPC transport, between one leader per host (its first rank) through
// Gloo's TCP transport, and back within each host through IPC:
//   allreduce, reduce: IPC allreduce, leaders' Gloo allreduce, IPC broadcast;
//   broadcast: IPC broadcast on the root's host, leaders' Gloo broadcast,
//              IPC broadcast on the other hosts;
//   allgather: IPC allgather into the host's block, leaders' Gloo allgather
//              of the blocks, IPC broadcast of the whole output;
//   reduceScatter: IPC allreduce of (a copy of) the input, leaders' Gloo
//              reduce-scatter of host blocks, IPC broadcast of the block.
// The leaders' Gloo step is a whole Gloo launch enqueued between the IPC
// stages (a host function on the same stream). The other collectives run on
// the group's own Gloo transport. MAIA_DIST_EMULATE_HOSTS=k makes every k
// consecutive global ranks a host, so this path runs on one machine.
#pragma once

#include "GlooTransport.h"
#include "IpcTransport.h"

namespace torch_maia::distributed {

class HierTransport final : public Transport {
 public:
  /// local: the IPC transport of this host's ranks (null when the host has
  /// one rank); leaders: Gloo between the hosts' first ranks (null on the
  /// other ranks); host: this rank's host index of hosts.
  HierTransport(GlooTransport& flat, std::unique_ptr<IpcTransport> local,
                std::unique_ptr<GlooTransport> leaders, int host, int hosts, int local_rank,
                int local_size);
  ~HierTransport() override;

  const char* name() const override { return "hierarchical"; }

  void allreduce(Launch& launch, const at::Tensor& buffer, c10d::ReduceOp::RedOpType op) override;
  void broadcast(Launch& launch, const at::Tensor& buffer, int root) override;
  /// Every rank gets the result (the backend hands non-roots a copy).
  void reduce(Launch& launch, const at::Tensor& buffer, int root,
              c10d::ReduceOp::RedOpType op) override {
    allreduce(launch, buffer, op);
  }
  void allgather(Launch& launch, const at::Tensor& input, const at::Tensor& output) override;
  void reduceScatter(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                     c10d::ReduceOp::RedOpType op) override;

  void gather(Launch& launch, const at::Tensor& input, const at::Tensor& output,
              int root) override {
    flat_.gather(launch, input, output, root);
  }
  void scatter(Launch& launch, const at::Tensor& input, const at::Tensor& output,
               int root) override {
    flat_.scatter(launch, input, output, root);
  }
  void alltoall(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                std::vector<int64_t> input_split_bytes,
                std::vector<int64_t> output_split_bytes) override {
    flat_.alltoall(launch, input, output, std::move(input_split_bytes),
                   std::move(output_split_bytes));
  }
  void send(Launch& launch, const at::Tensor& buffer, int peer, int tag) override {
    flat_.send(launch, buffer, peer, tag);
  }
  void recv(Launch& launch, const at::Tensor& buffer, int peer, int tag) override {
    flat_.recv(launch, buffer, peer, tag);
  }
  void recvAnysource(Launch& launch, const at::Tensor& buffer, int tag,
                     std::shared_ptr<std::atomic<int>> source) override {
    flat_.recvAnysource(launch, buffer, tag, std::move(source));
  }
  void barrier(Launch& launch) override { flat_.barrier(launch); }
  void exchange(Launch& launch) override { flat_.exchange(launch); }

 private:
  /// Enqueues, now, a whole launch of the leaders' Gloo transport built by fill.
  void acrossHosts(Launch& launch, const std::function<void(Transport&, Launch&)>& fill);
  bool leader() const { return leaders_ != nullptr; }

  GlooTransport& flat_;
  std::unique_ptr<IpcTransport> local_;
  std::unique_ptr<GlooTransport> leaders_;
  int host_;
  int hosts_;
  int local_rank_;
  int local_size_;
};

}  // namespace torch_maia::distributed
