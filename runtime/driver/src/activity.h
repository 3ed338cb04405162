// Activity recording for profilers (maia/profiler.h): what the enqueue path
// and the cores call while a profiler is active.
//
// Cost with no profiler active: enqueue() reads activityEnabled() (one
// relaxed load); a core tests the command's activity pointer, which is null,
// in a cache line it reads anyway. Nothing else runs.
#pragma once

#include <maia/profiler.h>

#include <atomic>
#include <cstdint>

namespace maia::driver {

class Command;
struct Activity;

extern std::atomic<bool> g_activity_enabled;

inline bool activityEnabled() { return g_activity_enabled.load(std::memory_order_relaxed); }

/// Attaches a record to cmd if its kind is recorded; call before it is
/// queued (afterwards a core may complete and free it at any time).
void beginActivity(Command& cmd, int device, uint64_t stream_id);
/// A core starts running a chunk of the command owning activity.
void activityChunkStarted(Activity* activity);
/// The command's last chunk finished: stamps the end, publishes the record.
void endActivity(Activity* activity);
/// A command that never ran (its queue was closed) drops its record.
void discardActivity(Activity* activity);

/// A record for one command of a graph replay (kind from the command, or
/// an event record when command is null), attributed like beginActivity's
/// to the stream and correlation id of the maiaGraphLaunch being enqueued.
/// Its end is taken when the last of its `chunks` chunks is done.
Activity* beginReplayNodeActivity(const Command* command, int64_t chunks, int device,
                                  uint64_t stream_id, int64_t enqueue_ns);
/// One chunk of a replayed command finished; the last one stamps the end
/// and publishes the record (and frees it): true then.
bool activityChunkDone(Activity* activity);

/// Work done by the calling thread instead of a core (a small synchronous
/// copy): records [start_ns, now] directly.
void recordHostRunActivity(maiaActivityKind kind, const char* name, int device,
                           uint64_t stream_id, uint64_t bytes, int64_t start_ns);

int64_t activityClockNs();

/// The record kind of a copy between these sides.
maiaActivityKind copyActivityKind(bool dst_on_device, bool src_on_device);
const char* activityKindName(maiaActivityKind kind);

}  // namespace maia::driver
