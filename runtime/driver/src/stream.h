// Stream: an in-order queue of commands on one device (maiaStream_t).
#pragma once

#include <maia/runtime.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "command_queue.h"
#include "error.h"

namespace maia::driver {
class Device;
class Capture;  // graph_capture.h
}

struct maiaStream {
  maiaStream(maia::driver::Device* owner, int prio, bool default_stream, uint64_t max_pending)
      : device(owner), priority(prio), is_default(default_stream), commands(max_pending) {}

  maia::driver::Device* const device;
  const int priority;
  const bool is_default;
  /// Names the stream in profiler records: 0 for a default stream, others
  /// numbered from 1 in creation order (handles are addresses, reused).
  uint64_t id = 0;

  /// The commands queued and not yet completed, with the sequence numbers
  /// enqueued/completed; closed when the stream is destroyed.
  maia::driver::CommandQueue commands;

  bool idle() const { return commands.idle(); }

  /// Graph capture (graph_capture.h): while set, enqueue() hands commands to
  /// `capture` instead of the queue. The flag is what the launch path reads
  /// (one relaxed load); `capture` is read and replaced under capture_mutex.
  std::atomic<bool> capturing{false};
  std::mutex capture_mutex;
  std::shared_ptr<maia::driver::Capture> capture;
};

namespace maia::driver {

using Stream = maiaStream;

/// Resolves a C handle: NULL is the current device's default stream; any
/// other value must be a live stream. The shared_ptr keeps it alive while
/// the caller uses it.
Status resolveStream(maiaStream_t handle, std::shared_ptr<Stream>* out);

/// Creates a stream and registers it with the scheduler.
Status createStream(Device* device, int priority, bool is_default,
                    std::shared_ptr<Stream>* out);

/// Queues cmd on stream (taking ownership). Fails if the stream's device
/// has a sticky error; in MAIA_LAUNCH_BLOCKING mode, also waits for it.
Status enqueue(Stream* stream, std::unique_ptr<Command> cmd);

/// Waits until every command enqueued on stream so far has completed; then
/// reports the device's sticky error, if any.
Status synchronizeStream(Stream* stream);

}  // namespace maia::driver
