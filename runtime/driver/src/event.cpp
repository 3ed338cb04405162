#include "event.h"

#include <chrono>

namespace maia::driver {

void EventRecordCommand::runChunk(int64_t) {
  // The time the stream reached the record; the event completes in finish(),
  // once the stream has moved past the command.
  timestamp_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count();
}

void EventRecordCommand::finish() {
  std::lock_guard<std::mutex> lock(event_->mutex);
  // Records of one event on two streams may finish out of order: the event
  // reflects its latest record.
  if (generation_ < event_->completed.load(std::memory_order_relaxed)) return;
  event_->timestamp_ns.store(timestamp_ns_, std::memory_order_relaxed);
  event_->completed.store(generation_, std::memory_order_release);
}

}  // namespace maia::driver
