#include "activity.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include "command.h"
#include "error.h"
#include "event.h"

namespace maia::driver {

std::atomic<bool> g_activity_enabled{false};

/// A record being filled in while its command is queued and running.
struct Activity {
  maiaActivityRecord record;
  std::atomic<int64_t> start_ns{0};  // the first core to start a chunk stamps it
};

namespace {

constexpr size_t kDefaultMaxRecords = size_t{1} << 20;

/// Bumped by every maiaProfilerStart: a thread's correlation stack from an
/// earlier session is discarded at its next use. A profiler that stopped
/// while an operator was running never pops its id, and that id must not
/// tag the work of later sessions.
std::atomic<uint64_t> g_session{0};

/// The correlation ids of this host thread. Deeper pushes than kDepth are
/// counted, not stored: their work is attributed to the deepest one kept.
struct CorrelationStack {
  static constexpr int kDepth = 64;
  uint64_t ids[kDepth];
  int depth = 0;
  uint64_t session = 0;
};
thread_local CorrelationStack t_correlation;

CorrelationStack& correlationStack() {
  CorrelationStack& stack = t_correlation;
  const uint64_t session = g_session.load(std::memory_order_relaxed);
  if (stack.session != session) {
    stack.session = session;
    stack.depth = 0;
  }
  return stack;
}

uint64_t currentCorrelationId() {
  const CorrelationStack& stack = correlationStack();
  const int depth = std::min(stack.depth, CorrelationStack::kDepth);
  return depth == 0 ? 0 : stack.ids[depth - 1];
}

uint64_t hostThreadId() {
  // gettid is a syscall: once per thread, and only while profiling.
  thread_local const uint64_t tid = static_cast<uint64_t>(syscall(SYS_gettid));
  return tid;
}

/// Completed records, in completion order. A mutex, not a spin lock: a
/// flush holds it while it copies many records, and cores publishing
/// meanwhile should sleep rather than spin (this runs only while profiling).
struct RecordBuffer {
  std::mutex mutex;
  std::deque<maiaActivityRecord> records;
  size_t max_records = kDefaultMaxRecords;
  uint64_t dropped = 0;
  bool active = false;
};

RecordBuffer& buffer() {
  static auto* records = new RecordBuffer();  // outlives exit-time completions
  return *records;
}

void publish(const maiaActivityRecord& record) {
  RecordBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (b.records.size() >= b.max_records) {
    ++b.dropped;
    return;
  }
  b.records.push_back(record);
}

void copyName(char* out, const char* name) {
  std::strncpy(out, name, MAIA_ACTIVITY_NAME_BYTES - 1);
  out[MAIA_ACTIVITY_NAME_BYTES - 1] = '\0';
}

void fillCommon(maiaActivityRecord* record, maiaActivityKind kind, const char* name, int device,
                uint64_t stream_id, uint64_t bytes) {
  record->kind = kind;
  record->device = device;
  record->stream_id = stream_id;
  record->correlation_id = currentCorrelationId();
  record->bytes = bytes;
  record->host_thread = hostThreadId();
  copyName(record->name, name != nullptr ? name : activityKindName(kind));
}

size_t maxRecordsFromEnvironment() {
  const char* text = std::getenv("MAIA_PROFILER_MAX_RECORDS");
  if (text == nullptr || *text == '\0') return kDefaultMaxRecords;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  return (*end == '\0' && value > 0) ? static_cast<size_t>(value) : kDefaultMaxRecords;
}

}  // namespace

int64_t activityClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* activityKindName(maiaActivityKind kind) {
  switch (kind) {
    case maiaActivityKernel: return "Kernel";
    case maiaActivityMemcpyHtoD: return "Memcpy HtoD";
    case maiaActivityMemcpyDtoH: return "Memcpy DtoH";
    case maiaActivityMemcpyDtoD: return "Memcpy DtoD";
    case maiaActivityMemcpyHtoH: return "Memcpy HtoH";
    case maiaActivityMemset: return "Memset";
    case maiaActivityHostFunction: return "Host function";
    case maiaActivityEventRecord: return "Event record";
    case maiaActivityGraph: return "Graph launch";
  }
  return "Unknown";
}

maiaActivityKind copyActivityKind(bool dst_on_device, bool src_on_device) {
  if (dst_on_device) return src_on_device ? maiaActivityMemcpyDtoD : maiaActivityMemcpyHtoD;
  return src_on_device ? maiaActivityMemcpyDtoH : maiaActivityMemcpyHtoH;
}

void beginActivity(Command& cmd, int device, uint64_t stream_id) {
  int kind = cmd.activityKind();
  // Event records are defined with the events (event.h); recognizing them
  // here keeps the profiler out of that file. Only runs while profiling.
  if (kind == 0 && dynamic_cast<EventRecordCommand*>(&cmd) != nullptr)
    kind = maiaActivityEventRecord;
  if (kind == 0) return;  // event waits: nothing runs
  auto* activity = new Activity();
  fillCommon(&activity->record, static_cast<maiaActivityKind>(kind), cmd.activityName(), device,
             stream_id, cmd.activityBytes());
  activity->record.enqueue_ns = activityClockNs();
  cmd.setActivity(activity);
  cmd.beginNestedActivities(device, stream_id, activity->record.enqueue_ns);
}

std::unique_ptr<ReplayActivities> beginReplayActivities(size_t count, int device,
                                                        uint64_t stream_id, int64_t enqueue_ns) {
  auto replay = std::make_unique<ReplayActivities>();
  fillCommon(&replay->common, maiaActivityKernel, nullptr, device, stream_id, 0);
  replay->common.enqueue_ns = enqueue_ns;
  replay->nodes = std::make_unique<ReplayActivities::Node[]>(count);
  replay->count = count;
  return replay;
}

void publishReplayActivities(const ReplayActivities& replay) {
  RecordBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  for (size_t j = 0; j < replay.count; ++j) {
    const ReplayActivities::Node& node = replay.nodes[j];
    if (node.chunks_left.load(std::memory_order_acquire) != 0) continue;
    const int kind = node.command != nullptr ? node.command->activityKind()
                                             : maiaActivityEventRecord;
    if (kind == 0) continue;
    if (b.records.size() >= b.max_records) {
      ++b.dropped;
      continue;
    }
    maiaActivityRecord& record = b.records.emplace_back(replay.common);
    record.kind = static_cast<maiaActivityKind>(kind);
    const char* name = node.command != nullptr ? node.command->activityName() : nullptr;
    copyName(record.name, name != nullptr ? name : activityKindName(record.kind));
    record.bytes = node.command != nullptr ? node.command->activityBytes() : 0;
    const int64_t start = node.start_ns.load(std::memory_order_relaxed);
    record.start_ns = start != 0 ? start : node.end_ns;
    record.end_ns = node.end_ns;
  }
}

void activityChunkStarted(Activity* activity) {
  int64_t unset = 0;
  if (activity->start_ns.load(std::memory_order_relaxed) == unset)
    activity->start_ns.compare_exchange_strong(unset, activityClockNs(),
                                               std::memory_order_relaxed);
}

void endActivity(Activity* activity) {
  const int64_t end = activityClockNs();
  maiaActivityRecord& record = activity->record;
  const int64_t start = activity->start_ns.load(std::memory_order_relaxed);
  record.start_ns = start != 0 ? start : end;
  record.end_ns = end;
  publish(record);
  delete activity;
}

void discardActivity(Activity* activity) { delete activity; }

void recordHostRunActivity(maiaActivityKind kind, const char* name, int device,
                           uint64_t stream_id, uint64_t bytes, int64_t start_ns) {
  maiaActivityRecord record;
  fillCommon(&record, kind, name, device, stream_id, bytes);
  record.enqueue_ns = start_ns;
  record.start_ns = start_ns;
  record.end_ns = activityClockNs();
  publish(record);
}

}  // namespace maia::driver

using namespace maia::driver;

extern "C" {

maiaError_t maiaProfilerStart(void) {
  RecordBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (b.active)
    return report(makeError(maiaErrorInvalidValue,
                            "maiaProfilerStart: a profiler is already active"));
  b.records.clear();
  b.dropped = 0;
  b.max_records = maxRecordsFromEnvironment();
  b.active = true;
  g_session.fetch_add(1, std::memory_order_relaxed);
  g_activity_enabled.store(true, std::memory_order_relaxed);
  return maiaSuccess;
}

maiaError_t maiaProfilerStop(void) {
  RecordBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.active = false;
  g_activity_enabled.store(false, std::memory_order_relaxed);
  return maiaSuccess;
}

maiaError_t maiaProfilerFlush(maiaActivityRecord* records, size_t capacity, size_t* out_count) {
  MAIA_CHECK_OUT(out_count);
  RecordBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (records == nullptr) {
    *out_count = b.records.size();
    return maiaSuccess;
  }
  const size_t n = std::min(capacity, b.records.size());
  std::copy_n(b.records.begin(), n, records);
  b.records.erase(b.records.begin(), b.records.begin() + static_cast<std::ptrdiff_t>(n));
  *out_count = n;
  return maiaSuccess;
}

maiaError_t maiaProfilerGetDroppedCount(uint64_t* out_count) {
  MAIA_CHECK_OUT(out_count);
  RecordBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  *out_count = b.dropped;
  return maiaSuccess;
}

maiaError_t maiaProfilerGetTimestamp(int64_t* out_ns) {
  MAIA_CHECK_OUT(out_ns);
  *out_ns = activityClockNs();
  return maiaSuccess;
}

maiaError_t maiaProfilerPushCorrelationId(uint64_t id) {
  CorrelationStack& stack = correlationStack();
  if (stack.depth < CorrelationStack::kDepth) stack.ids[stack.depth] = id;
  ++stack.depth;
  return maiaSuccess;
}

maiaError_t maiaProfilerPopCorrelationId(uint64_t* out_id) {
  CorrelationStack& stack = correlationStack();
  if (stack.depth == 0)
    return report(makeError(maiaErrorInvalidValue,
                            "maiaProfilerPopCorrelationId: this thread has no correlation id"));
  const uint64_t id = currentCorrelationId();
  --stack.depth;
  if (out_id != nullptr) *out_id = id;
  return maiaSuccess;
}

}  // extern "C"
