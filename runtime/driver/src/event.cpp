#include "event.h"

#include <chrono>

#include "ipc_event.h"

namespace maia::driver {

void EventRecordCommand::runChunk(int64_t) {
  // The time the stream reached the record; the event completes in finish(),
  // once the stream has moved past the command.
  timestamp_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count();
}

void EventRecordCommand::finish() {
  record_->timestamp_ns.store(timestamp_ns_, std::memory_order_relaxed);
  record_->done.store(true, std::memory_order_release);
  if (record_->shared_slot) ipc::completeRecord(*record_->shared_slot, record_->shared_sequence);
}

}  // namespace maia::driver
