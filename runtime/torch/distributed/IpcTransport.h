// The intra-host transport: the ranks of one host move data through each
// other's device memory, mapped with the driver's IPC handles.
//
// At group creation every rank allocates a scratch buffer of two slots on its
// device, exports it (maiaIpcGetMemHandle), and opens its peers' handles
// (exchanged through the group's store), so every rank can read every peer's
// scratch with device copies and kernels. Per collective, everything is
// enqueued on the communication stream at the call: device-to-device copies
// (maiaMemcpyAsync) into this rank's slot, a step barrier (IpcControl: a host
// function on the stream, ordering the ranks' streams), then reads of the
// peers' slots by copies and by ATen kernels on maia tensors over the mapped
// memory (the reductions, in rank order so every rank gets bit-identical
// results). Messages larger than a slot go in slot-sized pieces, alternating
// the two slots: a rank writes a slot again only after a barrier that every
// peer crossed after its last read of it.
//
// allreduce: up to kDirectBytes every rank reduces the whole message from all
// slots (one barrier); above, a reduce-scatter then all-gather (rank r
// reduces chunk r of each piece and publishes it; two barriers per piece,
// each rank reading 1/size of the reduction work). broadcast, reduce,
// allgather, reduceScatter, gather, scatter and all_to_all with equal splits:
// one barrier per piece; barrier: one barrier. Point-to-point operations and
// uneven all_to_all go to the Gloo transport (fallback), in the same launch.
#pragma once

#include <algorithm>

#include "GlooTransport.h"
#include "IpcControl.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace torch_maia::distributed {

class IpcTransport final : public Transport {
 public:
  /// Collective over the ranks of one host: rank is this process's index in
  /// group_ranks (their ranks in the process group, for error messages).
  /// Allocates the scratch on device; keys under prefix in store.
  IpcTransport(GlooTransport& fallback, c10d::Store& store, const std::string& prefix, int rank,
               std::vector<int> group_ranks, c10::DeviceIndex device);
  ~IpcTransport() override;

  const char* name() const override { return "ipc"; }
  c10::DeviceIndex device() const { return device_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t slotBytes() const { return slot_bytes_; }

  void allreduce(Launch& launch, const at::Tensor& buffer, c10d::ReduceOp::RedOpType op) override;
  void broadcast(Launch& launch, const at::Tensor& buffer, int root) override;
  void reduce(Launch& launch, const at::Tensor& buffer, int root,
              c10d::ReduceOp::RedOpType op) override;
  void allgather(Launch& launch, const at::Tensor& input, const at::Tensor& output) override;
  void reduceScatter(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                     c10d::ReduceOp::RedOpType op) override;

  void gather(Launch& launch, const at::Tensor& input, const at::Tensor& output,
              int root) override;
  void scatter(Launch& launch, const at::Tensor& input, const at::Tensor& output,
               int root) override;
  /// Moves equal splits itself; uneven ones go through Gloo (the ranks could
  /// not agree on a piece count without a host round trip).
  void alltoall(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                std::vector<int64_t> input_split_bytes,
                std::vector<int64_t> output_split_bytes) override;
  void barrier(Launch& launch) override;

  // Through the Gloo transport (point-to-point: a step barrier is host-wide).
  void send(Launch& launch, const at::Tensor& buffer, int peer, int tag) override {
    fallback_.send(launch, buffer, peer, tag);
  }
  void recv(Launch& launch, const at::Tensor& buffer, int peer, int tag) override {
    fallback_.recv(launch, buffer, peer, tag);
  }
  void recvAnysource(Launch& launch, const at::Tensor& buffer, int tag,
                     std::shared_ptr<std::atomic<int>> source) override {
    fallback_.recvAnysource(launch, buffer, tag, std::move(source));
  }
  /// The IPC steps are enqueued by the calls above; this runs the Gloo part.
  void exchange(Launch& launch) override { fallback_.exchange(launch); }

 private:
  /// Enqueues a step barrier of the host's ranks on launch.stream; step
  /// says what it moves (every rank must be at the same one).
  void sync(Launch& launch, const std::string& step);
  /// The slot a piece uses (alternating).
  int nextSlot() { return static_cast<int>(slot_turn_++ & 1); }
  /// Splits n elements into pieces of at most piece elements, each moved
  /// through the next slot: calls fn(begin, count, slot) per piece.
  template <class Fn>
  void forEachPiece(int64_t n, int64_t piece, Fn&& fn) {
    for (int64_t begin = 0; begin < n; begin += piece)
      fn(begin, std::min(piece, n - begin), nextSlot());
  }
  /// numel elements of dtype at element offset in rank's slot.
  at::Tensor slotView(int rank, int slot, int64_t offset, int64_t numel,
                      at::ScalarType dtype) const;
  /// Elements of dtype per slot.
  int64_t slotElements(at::ScalarType dtype) const;
  void copy(Launch& launch, const at::Tensor& dst, const at::Tensor& src) const;
  /// out = sources[0] op sources[1] op ... (in that order).
  void combine(const at::Tensor& out, const std::vector<at::Tensor>& sources,
               c10d::ReduceOp::RedOpType op) const;

  GlooTransport& fallback_;
  int rank_;
  int size_;
  c10::DeviceIndex device_;
  size_t slot_bytes_;
  std::shared_ptr<IpcControl> control_;
  void* own_scratch_ = nullptr;
  std::vector<void*> scratch_;  // per rank: own_scratch_, or the peer's, mapped
  uint64_t epoch_ = 0;
  uint64_t slot_turn_ = 0;
};

}  // namespace torch_maia::distributed
