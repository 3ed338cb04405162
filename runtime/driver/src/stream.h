// Stream: an in-order queue of commands on one device (maiaStream_t).
#pragma once

#include <maia/runtime.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "command.h"
#include "error.h"
#include "spin_lock.h"

namespace maia::driver {
class Device;
}

struct maiaStream {
  maiaStream(maia::driver::Device* owner, int prio, bool default_stream)
      : device(owner), priority(prio), is_default(default_stream) {}

  maia::driver::Device* const device;
  const int priority;
  const bool is_default;

  /// Guards queue and destroyed. Commands are owned by the queue.
  maia::driver::SpinLock mutex;
  std::deque<maia::driver::Command*> queue;
  bool destroyed = false;
  /// False once a core saw that the head has no chunk left to claim; set
  /// again (under mutex) whenever the head changes. Idle cores read it
  /// without the lock: while one core runs a single-chunk head, the others
  /// would otherwise take the queue lock on every enqueue, contending with
  /// the enqueueing host.
  std::atomic<bool> head_claimable{false};

  /// Sequence numbers: commands enqueued / completed so far. Commands
  /// complete in order, so "command n is done" is completed >= n.
  std::atomic<uint64_t> enqueued{0};
  std::atomic<uint64_t> completed{0};

  bool idle() const {
    return completed.load(std::memory_order_acquire) ==
           enqueued.load(std::memory_order_acquire);
  }
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
