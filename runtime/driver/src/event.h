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
namespace ipc {
struct EventSlot;
struct SharedEvent;
}  // namespace ipc
}  // namespace maia::driver

namespace maia::driver {

/// One maiaEventRecord call: complete once its stream has passed it. Waits
/// hold the record they were enqueued for, so a later record of the same
/// event on another stream, completing first, releases none of them.
struct EventRecord {
  std::atomic<bool> done{false};
  std::atomic<int64_t> timestamp_ns{0};  // written before done
  /// An interprocess event's record also completes its sequence number in
  /// the event's shared slot (ipc_event.h).
  maia::driver::ipc::EventSlot* shared_slot = nullptr;
  uint64_t shared_sequence = 0;
};

}  // namespace maia::driver

struct maiaEvent {
  explicit maiaEvent(bool with_timing) : timing(with_timing) {}

  /// The latest record queued successfully (what query, synchronize and a
  /// new wait refer to, as in CUDA), and its device, whose sticky error is
  /// the event's; null until the first record.
  std::shared_ptr<maia::driver::EventRecord> latest() const {
    std::lock_guard<std::mutex> lock(mutex);
    return latest_;
  }
  maia::driver::Device* device() const {
    std::lock_guard<std::mutex> lock(mutex);
    return device_;
  }
  void publish(std::shared_ptr<maia::driver::EventRecord> record, maia::driver::Device* device) {
    std::lock_guard<std::mutex> lock(mutex);
    latest_ = std::move(record);
    device_ = device;
  }

  const bool timing;
  /// Set at creation for maiaEventInterprocess events and for events opened
  /// from a peer's handle (shared->imported()); null otherwise.
  std::shared_ptr<maia::driver::ipc::SharedEvent> shared;

 private:
  mutable std::mutex mutex;
  std::shared_ptr<maia::driver::EventRecord> latest_;
  maia::driver::Device* device_ = nullptr;
};

namespace maia::driver {

using Event = maiaEvent;

Status resolveEvent(maiaEvent_t handle, std::shared_ptr<Event>* out);

/// Runs on a device core when the stream reaches the record.
class EventRecordCommand final : public Command {
 public:
  explicit EventRecordCommand(std::shared_ptr<EventRecord> record) : record_(std::move(record)) {}
  void runChunk(int64_t) override;
  void finish() override;
  bool skippedOnFault() const override { return false; }
  std::string describe() const override { return "event record"; }

 private:
  std::shared_ptr<EventRecord> record_;
  int64_t timestamp_ns_ = 0;
};

/// Holds its stream until the record it was enqueued for completes.
class EventWaitCommand final : public Command {
 public:
  explicit EventWaitCommand(std::shared_ptr<EventRecord> record) : record_(std::move(record)) {}
  bool ready() const override { return record_->done.load(std::memory_order_acquire); }
  void runChunk(int64_t) override {}
  bool skippedOnFault() const override { return false; }
  std::string describe() const override { return "event wait"; }

 private:
  std::shared_ptr<EventRecord> record_;
};

}  // namespace maia::driver
