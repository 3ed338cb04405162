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
// Point-to-point (send, recv, recv from any rank, all_to_all with uneven
// splits) uses one channel per ordered pair of ranks: the sender stages each
// piece in two slots of its scratch reserved for that receiver and publishes
// it in the control block; the receiver waits for it, copies it out of the
// sender's mapped scratch, and marks it consumed (IpcControl). The messages
// of a launch (a batch_isend_irecv, an all_to_all) are enqueued together at
// exchange(), piece by piece across messages, sends before receives, so that
// ranks exchanging large messages both ways cannot wait on each other.
//
// allreduce: up to kDirectBytes every rank reduces the whole message from all
// slots (one barrier); above, a reduce-scatter then all-gather (rank r
// reduces chunk r of each piece and publishes it; two barriers per piece,
// each rank reading 1/size of the reduction work). From
// MAIA_DIST_IPC_ZERO_COPY_BYTES on, zero-copy: the ranks read each other's
// buffers directly, opened through their allocations' IPC handles (cached,
// IpcPeerBuffers), with no slot and three barriers per message (allgather
// and reduceScatter too, from the same size of their input: two barriers). A buffer's
// address is known to its peers only once its rank's stream reaches the
// collective, so a step on the communication stream exposes it, waits for
// the peers', and only then enqueues the reads on a helper stream, which
// the communication stream waits for on a device word
// (maiaStreamWaitValue64): the host never waits. broadcast, reduce,
// allgather, reduceScatter, gather, scatter and all_to_all with equal splits:
// one barrier per piece; barrier: one barrier.
#pragma once

#include <algorithm>
#include <functional>

#include "IpcControl.h"
#include "Transport.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace torch_maia::distributed {

struct ZeroCopyCollective;
enum class ZeroCopyKind { kAllreduce, kAllgather, kReduceScatter };

class IpcTransport final : public Transport {
 public:
  /// Collective over the ranks of one host: rank is this process's index in
  /// group_ranks (their ranks in the process group, for error messages).
  /// Allocates the scratch on device; keys under prefix in store.
  IpcTransport(c10d::Store& store, const std::string& prefix, int rank,
               std::vector<int> group_ranks, c10::DeviceIndex device);
  ~IpcTransport() override;

  const char* name() const override { return "ipc"; }
  c10::DeviceIndex device() const { return device_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t slotBytes() const { return slot_bytes_; }

  void allreduce(Launch& launch, const at::Tensor& buffer, c10d::ReduceOp::RedOpType op) override;
  /// Messages (allreduce's buffer, allgather's and reduce-scatter's input)
  /// of at least this many bytes take the zero-copy path (0: never).
  int64_t zeroCopyBytes() const { return zero_copy_bytes_; }
  /// Peer allocations opened by the zero-copy path so far (each once).
  size_t peerBuffersOpened() const;
  /// Collectives queued on the zero-copy path so far.
  uint64_t zeroCopyLaunches() const;
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
  void alltoall(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                std::vector<int64_t> input_split_bytes,
                std::vector<int64_t> output_split_bytes) override;
  void barrier(Launch& launch) override;

  void send(Launch& launch, const at::Tensor& buffer, int peer, int tag) override;
  void recv(Launch& launch, const at::Tensor& buffer, int peer, int tag) override;
  /// Blocks the host until a peer has published the start of a send with
  /// tag that this rank has not queued a receive for, then receives it.
  void recvAnysource(Launch& launch, const at::Tensor& buffer, int tag,
                     std::shared_ptr<std::atomic<int>> source) override;
  /// Enqueues the launch's point-to-point messages (the collectives were
  /// enqueued by their calls).
  void exchange(Launch& launch) override;

 private:
  /// A point-to-point message waiting for exchange(): bytes to or from peer,
  /// waiting for it at most timeout (its call's) per piece.
  struct Message {
    bool send;
    int peer;
    at::Tensor bytes;
    IpcControl::PieceHeader header;
    std::chrono::milliseconds timeout;
  };
  /// Enqueues a step barrier of the host's ranks on launch.stream; step
  /// says what it moves (every rank must be at the same one).
  void sync(Launch& launch, const std::string& step);
  /// Whether a collective of bytes takes the zero-copy path (every rank
  /// decides alike: same message size, same capture state, same device
  /// memory size).
  bool takesZeroCopy(const Launch& launch, size_t bytes) const;
  /// Enqueues a zero-copy collective of numel elements (per rank for
  /// allgather and reduce-scatter), the peers reading exposed in place;
  /// output: allgather's and reduce-scatter's (this rank's).
  void launchZeroCopy(Launch& launch, ZeroCopyKind kind, const at::Tensor& exposed,
                      int64_t numel, at::ScalarType dtype, c10d::ReduceOp::RedOpType op,
                      void* output, const std::string& what);
  /// input, or a copy of it made on launch.stream when it overlaps what this
  /// rank writes while its peers read it.
  at::Tensor exposable(Launch& launch, const at::Tensor& input, bool overlaps_writes) const;
  /// Enqueues body as a host function on launch.stream (skipped once the
  /// launch failed); a non-empty result fails the launch, named by what.
  void hostStep(Launch& launch, const std::string& what, std::function<std::string()> body);
  void queueMessage(const Launch& launch, bool send, int peer, const at::Tensor& buffer, int tag,
                    int32_t kind);
  int64_t piecesOf(const Message& message) const;
  /// Enqueues piece index of message: for a send, wait for the slot, stage,
  /// publish; for a receive, wait for the piece, copy it out, consume.
  void movePiece(Launch& launch, const Message& message, int64_t index);
  /// The bytes of slot `slot` of owner's channel to peer.
  at::Tensor channelView(int owner, int peer, int slot, int64_t bytes) const;
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

  int rank_;
  int size_;
  c10::DeviceIndex device_;
  size_t slot_bytes_;
  std::shared_ptr<IpcControl> control_;
  struct ZeroCopy;
  std::shared_ptr<ZeroCopy> zero_copy_;  // shared with the steps it queued
  int64_t zero_copy_bytes_;
  int64_t import_window_bytes_ = 0;  // the device's, as large as its memory
  void* own_scratch_ = nullptr;
  std::vector<void*> scratch_;  // per rank: own_scratch_, or the peer's, mapped
  uint64_t epoch_ = 0;
  uint64_t slot_turn_ = 0;
  size_t channel_slot_bytes_;
  std::vector<uint64_t> sent_pieces_;      // per peer: pieces enqueued to it
  std::vector<uint64_t> received_pieces_;  // per peer: pieces enqueued from it
  std::vector<Message> messages_;          // of the launch being built
};

}  // namespace torch_maia::distributed
