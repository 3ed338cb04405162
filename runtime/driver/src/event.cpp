#include "event.h"

#include <chrono>

namespace maia::driver {

void EventRecordCommand::runChunk(int64_t) {
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  std::lock_guard<std::mutex> lock(event_->mutex);
  // Records of one event on two streams may finish out of order: the event
  // reflects its latest record.
  if (generation_ < event_->completed.load(std::memory_order_relaxed)) return;
  event_->timestamp_ns.store(now, std::memory_order_relaxed);
  event_->completed.store(generation_, std::memory_order_release);
}

}  // namespace maia::driver
