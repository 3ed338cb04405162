#include "command_queue.h"

#include <algorithm>
#include <bit>
#include <mutex>

namespace maia::driver {
namespace {

constexpr uint64_t kInitialSlots = 64;

}  // namespace

CommandQueue::CommandQueue(uint64_t max_pending)
    : max_pending_(max_pending),
      ring_(std::make_unique<Command*[]>(std::min(kInitialSlots, std::bit_ceil(max_pending)))),
      mask_(std::min(kInitialSlots, std::bit_ceil(max_pending)) - 1) {}

CommandQueue::~CommandQueue() {
  for (uint64_t n = popped_; n < enqueued_.load(); ++n) delete ring_[n & mask_];
}

CommandQueue::Push CommandQueue::push(std::unique_ptr<Command>& command, uint64_t* sequence) {
  std::lock_guard<SpinLock> lock(producer_mutex_);
  if (closed_) return Push::kClosed;
  const uint64_t n = enqueued_.load(std::memory_order_relaxed);  // written under this lock only
  // Slots [completed, n) may still be read by cores: slot n must not be one
  // of them, and at most max_pending may be pending. The cores' count is
  // read again only when the recent one says either limit is reached.
  if (n - completed_seen_ >= std::min(mask_ + 1, max_pending_))
    completed_seen_ = completed_.load(std::memory_order_acquire);
  if (n - completed_seen_ >= max_pending_) return Push::kFull;
  if (n - completed_seen_ > mask_) grow(n);
  ring_[n & mask_] = command.release();
  // A release store, not a fence: the scheduler's notification that
  // follows is the fence the wake-up protocol needs (a second one cost a
  // store-buffer drain per launch).
  enqueued_.store(n + 1, std::memory_order_release);
  *sequence = n;
  return Push::kQueued;
}

void CommandQueue::grow(uint64_t enqueued) {
  std::lock_guard<SpinLock> lock(consumer_mutex_);
  const uint64_t slots = 2 * (mask_ + 1);
  auto ring = std::make_unique<Command*[]>(slots);
  for (uint64_t n = popped_; n < enqueued; ++n) ring[n & (slots - 1)] = ring_[n & mask_];
  ring_ = std::move(ring);
  mask_ = slots - 1;
}

uint64_t CommandQueue::closeIfIdle() {
  std::lock_guard<SpinLock> lock(producer_mutex_);
  const uint64_t pending = enqueued_.load(std::memory_order_relaxed) - completed();
  if (pending == 0) closed_ = true;
  return pending;
}

bool CommandQueue::claimHeadChunk(Command** command, int64_t* chunk) {
  const uint64_t done = completed();
  if (done == enqueued() || exhausted_.load(std::memory_order_relaxed) == done + 1) return false;
  std::lock_guard<SpinLock> lock(consumer_mutex_);
  const uint64_t head = popped_;
  if (head == enqueued()) return false;
  Command* candidate = ring_[head & mask_];
  if (!candidate->hasUnclaimedChunk()) {
    exhausted_.store(head + 1, std::memory_order_relaxed);
    return false;
  }
  if (!candidate->ready()) return false;
  const int64_t claimed = candidate->claimChunk();
  if (claimed >= candidate->totalChunks()) return false;
  *command = candidate;
  *chunk = claimed;
  return true;
}

bool CommandQueue::popHead() {
  bool parallel_next = false;
  {
    std::lock_guard<SpinLock> lock(consumer_mutex_);
    const uint64_t next = ++popped_;
    parallel_next = next < enqueued() && ring_[next & mask_]->totalChunks() > 1;
  }
  completed_.fetch_add(1, std::memory_order_seq_cst);
  return parallel_next;
}

}  // namespace maia::driver
