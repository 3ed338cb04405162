// CommandQueue: the in-order queue of one stream, shared by the host threads
// that enqueue (producers) and the device cores that run commands
// (consumers).
//
// The two sides take different locks, so that a host enqueueing a stream of
// small kernels does not spin while a core claims or pops a command: with
// one lock for both, that spinning would take most of the host's enqueue
// time (maia-driver-bench's "launch, running stream" measures the host's
// cost per launch). Commands live in a ring indexed by their sequence
// number: producers write slot `enqueued` and publish it by advancing
// `enqueued`; consumers read the head slot `popped` under their own lock. A
// slot is rewritten only after its command completed, so the two sides
// never touch one slot at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "command.h"
#include "spin_lock.h"

namespace maia::driver {

class CommandQueue {
 public:
  /// max_pending: commands queued and not completed that push() accepts.
  explicit CommandQueue(uint64_t max_pending);
  /// Deletes commands that never ran (a queue is destroyed idle, or at exit).
  ~CommandQueue();

  CommandQueue(const CommandQueue&) = delete;
  CommandQueue& operator=(const CommandQueue&) = delete;

  enum class Push { kQueued, kFull, kClosed };

  /// Producer side, any host thread. Queues command (taking it) unless the
  /// queue holds max_pending commands (kFull: command is left with the
  /// caller, who waits for room and retries) or was closed. sequence: the
  /// command's number; it is the head once completed() reaches it.
  Push push(std::unique_ptr<Command>& command, uint64_t* sequence);
  /// Closes the queue to later pushes if nothing is pending; otherwise
  /// returns the pending count and leaves it open.
  uint64_t closeIfIdle();

  /// Consumer side. Claims a chunk of the head command if it has one left
  /// and is ready; the command stays valid until popHead() for it.
  bool claimHeadChunk(Command** command, int64_t* chunk);
  /// Pops the head, whose chunks are all done; afterwards the queue is not
  /// touched (a host that saw the completion may destroy the stream).
  /// Returns whether the next head has chunks for more than one core.
  bool popHead();

  /// Sequence numbers: commands enqueued / completed so far. Commands
  /// complete in order, so "command n is done" is completed() >= n.
  uint64_t enqueued() const { return enqueued_.load(std::memory_order_acquire); }
  uint64_t completed() const { return completed_.load(std::memory_order_acquire); }
  bool idle() const { return completed() == enqueued(); }
  /// Whether push() would accept a command now (kFull otherwise).
  bool hasRoom() const { return enqueued() - completed() < max_pending_; }

 private:
  /// Doubles the ring (both locks held): it starts small and grows to what
  /// the stream's backlog needs, up to max_pending.
  void grow(uint64_t enqueued);

  const uint64_t max_pending_;

  // Producer side: written by host threads only.
  alignas(64) SpinLock producer_mutex_;
  bool closed_ = false;
  uint64_t completed_seen_ = 0;  // a recent completed_: spares reading the cores' line

  // The ring: replaced only with both locks held.
  alignas(64) std::unique_ptr<Command*[]> ring_;
  uint64_t mask_ = 0;

  // Consumer side: the head, under consumer_mutex_.
  alignas(64) SpinLock consumer_mutex_;
  uint64_t popped_ = 0;
  /// popped + 1 of a head found with no chunk left to claim: idle cores
  /// read it without the lock and skip the queue while that command runs on
  /// another core (a hint: a stale value only sends them to the lock).
  std::atomic<uint64_t> exhausted_{0};

  alignas(64) std::atomic<uint64_t> enqueued_{0};
  alignas(64) std::atomic<uint64_t> completed_{0};
};

}  // namespace maia::driver
