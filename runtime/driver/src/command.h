// Command: one unit of work queued on a stream (a kernel launch, a copy, a
// memset, an event record or wait, a host callback).
//
// A command is split into chunks that device cores claim and run in
// parallel (a kernel's program ids, a copy's byte ranges). The stream's
// next command starts only when every chunk of its head is done: this is
// what makes a stream in-order.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace maia::driver {

class Device;
struct Activity;
void discardActivity(Activity* activity);  // activity.h

class Command {
 public:
  explicit Command(int64_t chunks = 1) : total_chunks_(chunks) {}
  virtual ~Command() {
    if (activity_ != nullptr) discardActivity(activity_);
  }

  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  /// False while the command must not start (an event wait not yet met).
  virtual bool ready() const { return true; }
  /// Runs chunk index in [0, totalChunks()). Must not throw.
  virtual void runChunk(int64_t index) = 0;
  /// Called once, after every chunk ran (or was skipped) and the stream
  /// counted the command complete; must not touch the stream.
  virtual void finish() {}
  /// Whether chunks are skipped on a faulted device. Event records still
  /// complete so that nothing waits forever on a broken device.
  virtual bool skippedOnFault() const { return true; }
  /// Names the command in error messages.
  virtual std::string describe() const = 0;

  /// What a profiler records it as (a maiaActivityKind); 0: not recorded.
  virtual int activityKind() const { return 0; }
  /// The record's name (a kernel's symbol); null: the kind's name.
  virtual const char* activityName() const { return nullptr; }
  /// Bytes a copy or fill writes.
  virtual uint64_t activityBytes() const { return 0; }
  /// Called at enqueue while a profiler is active, after this command's
  /// own record was attached: a command that runs others (a graph replay)
  /// attaches theirs, attributed to the same stream and enqueue.
  virtual void beginNestedActivities(int /*device*/, uint64_t /*stream_id*/,
                                     int64_t /*enqueue_ns*/) {}
  /// Called when the command completes, before its own record is ended
  /// (only if it has one): publishes what beginNestedActivities attached.
  virtual void endNestedActivities() {}

  /// The profiler record being filled in, or null: set at enqueue only
  /// while a profiler is active (activity.h).
  Activity* activity() const { return activity_; }
  void setActivity(Activity* activity) { activity_ = activity; }

  int64_t totalChunks() const { return total_chunks_; }

  /// Claims the next chunk; returns an index >= totalChunks() when none is
  /// left. Claiming never blocks.
  int64_t claimChunk() { return next_chunk_.fetch_add(1, std::memory_order_relaxed); }
  bool hasUnclaimedChunk() const {
    return next_chunk_.load(std::memory_order_relaxed) < total_chunks_;
  }
  /// Marks one claimed chunk done; true for the caller that completed the
  /// last one, which then owns finishing the command.
  bool markChunkDone() {
    // Read before the increment: once it lands, another thread may finish
    // and free the command.
    const int64_t total = total_chunks_;
    return done_chunks_.fetch_add(1, std::memory_order_acq_rel) + 1 == total;
  }

 protected:
  void setTotalChunks(int64_t chunks) { total_chunks_ = chunks; }

 private:
  int64_t total_chunks_;
  Activity* activity_ = nullptr;
  std::atomic<int64_t> next_chunk_{0};
  std::atomic<int64_t> done_chunks_{0};
};

}  // namespace maia::driver
