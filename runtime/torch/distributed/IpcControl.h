// The host-shared control block of the ranks of one host in a process group:
// the cross-process barrier that orders their communication streams.
//
// The driver's interprocess events cannot order one collective's steps: a
// stream wait refers to the owner's latest record *when the wait is queued*,
// and the peer's host may not have queued its record for this step yet (it
// may still be issuing the previous collective). So each step boundary is a
// host function on the communication stream (device work, in stream order,
// on a driver core) that publishes "this rank's stream reached step e" in a
// POSIX shared-memory block and waits, spinning briefly then on a futex,
// until every rank's stream has. Its wait ends with an error, never a hang:
// a peer process that exited (seen through its pidfd), a peer that reported
// a failure, the call's timeout (the group's unless the call gave its own),
// or this rank's host giving up on the launch (Work.wait(timeout) expired).
#pragma once

#include "Transport.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace torch_maia::distributed {

class IpcControl {
 public:
  /// Collective over the ranks of one host (each calls it once, at group
  /// creation; rank is this process's index in group_ranks, the group ranks
  /// of the host's processes, which errors name): index 0 creates the
  /// segment and publishes its name under prefix, the others open it; the
  /// last to open it unlinks the name.
  IpcControl(c10d::Store& store, const std::string& prefix, int rank,
             std::vector<int> group_ranks);
  ~IpcControl();
  IpcControl(const IpcControl&) = delete;
  IpcControl& operator=(const IpcControl&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  /// What bounds a wait: timeout from the wait's start, and the launch it
  /// belongs to (may be null): its failure on this rank (the host gave up in
  /// Work.wait(timeout)) ends the wait at once and fails the peers' waits
  /// too; while the wait sleeps, the launch says whom it waits for.
  struct WaitLimit {
    std::chrono::milliseconds timeout;
    std::shared_ptr<LaunchStatus> launch;
  };

  /// What a piece of a point-to-point message carries besides its data, so
  /// that a receive matched with the wrong send fails instead of mixing data.
  struct PieceHeader {
    int64_t message_bytes = 0;
    int32_t tag = 0;
    int32_t kind = 0;  // PieceKind
  };
  enum PieceKind : int32_t { kSendRecv = 1, kAllToAll = 2 };
  /// The channel of each ordered pair (from, to) counts the pieces `from`
  /// published and `to` consumed; a piece's data sits in one of two slots of
  /// the sender's scratch (piece n in slot n % 2), so the sender may publish
  /// piece n once piece n - 2 is consumed. These run on driver cores, as
  /// host functions of the communication stream, and return "" or why they
  /// failed (a peer exited, failed, timed out, or sent another message).
  std::string waitSlotFree(int to, uint64_t piece, const WaitLimit& limit);
  void publish(int to, uint64_t piece, const PieceHeader& header);
  std::string waitPublished(int from, uint64_t piece, const PieceHeader& expected,
                            const WaitLimit& limit);
  void consume(int from, uint64_t piece);
  /// On the host, for a receive from any rank: the first peer p whose piece
  /// next[p] is published with tag (the start of a send this rank has not
  /// queued a receive for), or -1 with *cause set.
  int waitAnySender(const std::vector<uint64_t>& next, int32_t tag, const WaitLimit& limit,
                    std::string* cause);

  /// Runs on a driver core: marks this rank arrived at epoch, running step
  /// (what the step moves, e.g. "allreduce of 100 Float"), and waits until
  /// every rank has. Returns "" on success, else why it failed: a peer
  /// exited, timed out, failed, or runs another step (then every other
  /// rank's wait fails at once too).
  std::string arriveAndWait(uint64_t epoch, const std::string& step, const WaitLimit& limit);

  /// A buffer a rank lets its peers read directly for one collective
  /// (zero-copy): the IPC handle of its allocation, its offset in it, and
  /// the epoch of the barrier after which it may be read.
  struct alignas(64) ExposedBuffer {
    maiaIpcMemHandle_t handle;
    uint64_t offset;
    uint64_t epoch;
  };
  /// On a driver core, before arriving at buffer.epoch: publishes this
  /// rank's buffer (the barrier orders it before the peers' reads).
  void expose(const ExposedBuffer& buffer);
  /// After the barrier of its epoch: what peer exposed. A peer writes its
  /// next one only after a later barrier, which this rank must reach first.
  ExposedBuffer exposed(int peer) const;

 private:
  struct Block;
  struct Pair;
  Pair& pair(int from, int to) const;
  ExposedBuffer* exposedBuffers() const;
  std::string failure(const std::string& cause);
  /// Why the group failed, if a rank reported a failed step ("" if none).
  std::string reportedFailure() const;
  /// Spins, then sleeps on the bell, until ready() (returns ""), a peer
  /// failed or exited, the launch failed on this rank, or the timeout (then
  /// the cause names waiting_for()).
  std::string waitUntil(const std::function<bool()>& ready,
                        const std::function<std::string()>& waiting_for,
                        const WaitLimit& limit);
  void ringBell();
  /// The first peer process that has exited, or -1.
  int exitedPeer() const;

  int rank_;
  int size_;
  std::vector<int> group_ranks_;
  Block* block_ = nullptr;
  size_t bytes_ = 0;
  std::vector<pid_t> pids_;
  std::vector<int> pidfds_;
};

}  // namespace torch_maia::distributed
