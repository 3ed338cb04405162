// Event: a marker recorded into a stream (maiaEvent_t).
#pragma once

#include <maia/runtime.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "command.h"
#include "error.h"

namespace maia::driver {
class Device;
}

struct maiaEvent {
  explicit maiaEvent(bool with_timing) : timing(with_timing) {}

  const bool timing;
  /// Generation of the latest record call / of the latest record executed.
  /// The event is complete when completed >= recorded.
  std::atomic<uint64_t> recorded{0};
  std::atomic<uint64_t> completed{0};
  std::atomic<int64_t> timestamp_ns{0};
  /// Device of the latest record: its sticky error is the event's.
  std::atomic<maia::driver::Device*> device{nullptr};
  std::mutex mutex;  // orders completions of records racing on two streams
};

namespace maia::driver {

using Event = maiaEvent;

Status resolveEvent(maiaEvent_t handle, std::shared_ptr<Event>* out);

/// Runs on a device core when the stream reaches the record.
class EventRecordCommand final : public Command {
 public:
  EventRecordCommand(std::shared_ptr<Event> event, uint64_t generation)
      : event_(std::move(event)), generation_(generation) {}
  void runChunk(int64_t) override;
  void finish() override;
  bool skippedOnFault() const override { return false; }
  std::string describe() const override { return "event record"; }

 private:
  std::shared_ptr<Event> event_;
  uint64_t generation_;
  int64_t timestamp_ns_ = 0;
};

/// Holds its stream until the event's record (as of enqueue time) completes.
class EventWaitCommand final : public Command {
 public:
  EventWaitCommand(std::shared_ptr<Event> event, uint64_t generation)
      : event_(std::move(event)), generation_(generation) {}
  bool ready() const override {
    return event_->completed.load(std::memory_order_acquire) >= generation_;
  }
  void runChunk(int64_t) override {}
  bool skippedOnFault() const override { return false; }
  std::string describe() const override { return "event wait"; }

 private:
  std::shared_ptr<Event> event_;
  uint64_t generation_;
};

}  // namespace maia::driver
