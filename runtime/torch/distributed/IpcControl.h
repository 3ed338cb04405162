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
// a failure, or the group's timeout.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <sys/types.h>

#include <chrono>
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

  /// Runs on a driver core: marks this rank arrived at epoch, running step
  /// (what the step moves, e.g. "allreduce of 100 Float"), and waits until
  /// every rank has. Returns "" on success, else why it failed: a peer
  /// exited, timed out, failed, or runs another step (then every other
  /// rank's wait fails at once too).
  std::string arriveAndWait(uint64_t epoch, const std::string& step,
                            std::chrono::milliseconds timeout);

 private:
  struct Block;
  std::string failure(const std::string& cause);
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
