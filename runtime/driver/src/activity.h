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
#include <memory>

namespace maia::driver {

class Command;
struct Activity;

extern std::atomic<bool> g_activity_enabled;

int64_t activityClockNs();

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

/// The records of one profiled graph replay, made with one allocation at
/// maiaGraphLaunch: what all its commands share (device, stream, enqueue,
/// host thread, correlation id) once, and per command only its times. The
/// records themselves are built when the replay completes, off the path
/// from one command to the next and off the host's enqueue.
struct ReplayActivities {
  struct Node {
    const Command* command = nullptr;  // null: an event record
    std::atomic<int64_t> start_ns{0};    // the first core to start a chunk stamps it
    std::atomic<int64_t> chunks_left{0};
    int64_t end_ns = 0;  // written by the thread finishing the last chunk
  };
  maiaActivityRecord common;
  std::unique_ptr<Node[]> nodes;
  size_t count = 0;
};

/// Starts the records of a replay of `count` commands, attributed like
/// beginActivity's to the stream and to the calling thread's correlation
/// id; the caller sets each node's command and chunk count.
std::unique_ptr<ReplayActivities> beginReplayActivities(size_t count, int device,
                                                        uint64_t stream_id, int64_t enqueue_ns);

/// A core starts a chunk of replayed command `node` (cheap: no lock).
inline void replayChunkStarted(ReplayActivities& replay, size_t node) {
  std::atomic<int64_t>& start = replay.nodes[node].start_ns;
  int64_t unset = 0;
  if (start.load(std::memory_order_relaxed) == unset)
    start.compare_exchange_strong(unset, activityClockNs(), std::memory_order_relaxed);
}
/// A chunk of replayed command `node` finished; the last one stamps the
/// end. Call before the chunk counts as done for the replay.
inline void replayChunkDone(ReplayActivities& replay, size_t node) {
  ReplayActivities::Node& n = replay.nodes[node];
  if (n.chunks_left.fetch_sub(1, std::memory_order_acq_rel) == 1) n.end_ns = activityClockNs();
}
/// Publishes, in order and under one lock, a record per command that
/// finished (a fault skips the rest: nothing ran, no record). Call before
/// the replay's own record is ended, so a host that saw the replay
/// complete can flush them.
void publishReplayActivities(const ReplayActivities& replay);

/// Work done by the calling thread instead of a core (a small synchronous
/// copy): records [start_ns, now] directly.
void recordHostRunActivity(maiaActivityKind kind, const char* name, int device,
                           uint64_t stream_id, uint64_t bytes, int64_t start_ns);


/// The record kind of a copy between these sides.
maiaActivityKind copyActivityKind(bool dst_on_device, bool src_on_device);
const char* activityKindName(maiaActivityKind kind);

}  // namespace maia::driver
