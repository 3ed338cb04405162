// Graph capture and replay: Capture (graph_capture.h), the replay command,
// and the C API of maia/runtime.h's "graph capture" section.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "activity.h"
#include "device.h"
#include "graph_capture.h"
#include "handle_registry.h"
#include "recycling_pool.h"

namespace maia::driver {

Status Capture::add(std::unique_ptr<Command> cmd) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!invalid_reason_.empty()) return invalidError();
  const int64_t chunks = cmd->totalChunks();
  body_->nodes.push_back(GraphNode{std::move(cmd), nullptr, chunks});
  return {};
}

Status Capture::addEventRecord(std::shared_ptr<Event> event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!invalid_reason_.empty()) return invalidError();
  recorded_events_.push_back(event.get());
  body_->nodes.push_back(GraphNode{nullptr, std::move(event), 1});
  return {};
}

Status Capture::addEventWait(Stream* stream, const Event& event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!invalid_reason_.empty()) return invalidError();
    // Recorded earlier on this stream's capture: the replay runs commands
    // in order, so the wait is already met.
    if (std::find(recorded_events_.begin(), recorded_events_.end(), &event) !=
        recorded_events_.end())
      return {};
  }
  return invalidate(stream,
                    "waiting on an event not recorded in this capture (a dependency on work "
                    "outside the graph cannot be replayed)");
}

Status Capture::invalidate(Stream* stream, const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (invalid_reason_.empty()) invalid_reason_ = what;
  return makeError(maiaErrorStreamCaptureUnsupported, what, " is not allowed while stream ",
                   static_cast<const void*>(stream),
                   " captures a graph; the capture is invalidated (maiaStreamEndCapture "
                   "reports it and makes no graph)");
}

Status Capture::invalidError() const {
  return makeError(maiaErrorStreamCaptureInvalidated,
                   "the stream's graph capture was invalidated earlier by ", invalid_reason_,
                   "; end it with maiaStreamEndCapture");
}

Status Capture::finish(std::shared_ptr<GraphBody>* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!invalid_reason_.empty())
    return makeError(maiaErrorStreamCaptureInvalidated,
                     "maiaStreamEndCapture: the capture was invalidated by ", invalid_reason_,
                     "; no graph was made");
  *out = body_;
  return {};
}

std::shared_ptr<Capture> captureOf(Stream* stream) {
  std::lock_guard<std::mutex> lock(stream->capture_mutex);
  return stream->capture;
}

Status captureViolation(Stream* stream, const char* what) {
  std::shared_ptr<Capture> capture = captureOf(stream);
  if (!capture) return {};
  return capture->invalidate(stream, what);
}

namespace {

/// An instantiated graph: the body and where each node's chunks start in
/// the replay's chunk numbering.
struct ExecPlan {
  std::shared_ptr<const GraphBody> body;
  std::vector<int64_t> first_chunk;  // per node, then the total at the end
  std::vector<size_t> record_slot;   // per node: its index among event records
  size_t records = 0;
  int64_t total_chunks = 1;
};

thread_local const GraphNode* t_running_node = nullptr;

/// One replay: the chunks of all nodes, numbered in capture order. Cores
/// claim them as they claim any command's chunks; a chunk of node j starts
/// once every chunk of nodes 0..j-1 is done (chunks are claimed in
/// increasing order, so the ones it waits for are running on other cores:
/// the wait is short and cannot deadlock). A kernel still runs on as many
/// cores as it was split for; the host enqueues one command.
class GraphReplayCommand final : public Command, public PooledAllocation<GraphReplayCommand> {
 public:
  GraphReplayCommand(std::shared_ptr<const ExecPlan> plan,
                     std::vector<std::shared_ptr<EventRecord>> records)
      : Command(plan->total_chunks), plan_(std::move(plan)), records_(std::move(records)) {}

  int activityKind() const override { return maiaActivityGraph; }

  /// While profiling, every replayed command gets its own record, as the
  /// same command enqueued alone would; with no profiler this never runs
  /// and runChunk only tests activities_ (no atomic, no allocation). The
  /// records are built and published together when the replay completes,
  /// so the path from one command to the next only reads the clock, and
  /// the enqueue makes one allocation, not one per command.
  void beginNestedActivities(int device, uint64_t stream_id, int64_t enqueue_ns) override {
    const auto& nodes = plan_->body->nodes;
    if (nodes.empty()) return;
    activities_ = beginReplayActivities(nodes.size(), device, stream_id, enqueue_ns);
    for (size_t j = 0; j < nodes.size(); ++j) {
      activities_->nodes[j].command = nodes[j].command.get();
      activities_->nodes[j].chunks_left.store(std::max<int64_t>(1, nodes[j].chunks),
                                              std::memory_order_relaxed);
    }
  }

  void endNestedActivities() override {
    if (activities_) publishReplayActivities(*activities_);
  }

  void runChunk(int64_t index) override {
    const ExecPlan& plan = *plan_;
    const auto& nodes = plan.body->nodes;
    if (nodes.empty()) return;
    const size_t j = static_cast<size_t>(
        std::upper_bound(plan.first_chunk.begin(), plan.first_chunk.end() - 1, index) -
        plan.first_chunk.begin() - 1);
    const int64_t first = plan.first_chunk[j];
    if (!waitForChunks(first)) return;  // the device faulted: skip the rest
    const GraphNode& node = nodes[j];
    ReplayActivities* activities = activities_.get();
    if (activities != nullptr) [[unlikely]]
      replayChunkStarted(*activities, j);
    t_running_node = &node;
    if (node.command) {
      node.command->runChunk(index - first);
    } else {
      completeRecord(*records_[plan.record_slot[j]]);
    }
    t_running_node = nullptr;
    // Ended before the command's chunks count as done: the next command
    // starts only then, so a replay's records never overlap.
    if (activities != nullptr) [[unlikely]]
      replayChunkDone(*activities, j);
    done_chunks_.fetch_add(1, std::memory_order_acq_rel);
  }

  /// Records not reached (a fault stopped the replay) complete anyway, as
  /// an event record command does: nothing may wait forever on them.
  void finish() override {
    for (auto& record : records_)
      if (!record->done.load(std::memory_order_acquire)) completeRecord(*record);
  }

  std::string describe() const override {
    const GraphNode* node = t_running_node;
    const auto& nodes = plan_->body->nodes;
    if (node == nullptr) return "graph replay (" + std::to_string(nodes.size()) + " commands)";
    return "graph replay, command " + std::to_string(node - nodes.data()) + " of " +
           std::to_string(nodes.size()) + ": " +
           (node->command ? node->command->describe() : std::string("event record"));
  }

 private:
  /// Waits until `count` chunks of the replay are done; false if the device
  /// faulted meanwhile (a faulted chunk never counts as done).
  bool waitForChunks(int64_t count) {
    Device* device = plan_->body->device;
    for (int spins = 0; done_chunks_.load(std::memory_order_acquire) < count; ++spins) {
      if (device->faulted()) return false;
      if (spins < 4096) {
        _mm_pause();
      } else {
        std::this_thread::yield();
      }
    }
    return !device->faulted();
  }

  static void completeRecord(EventRecord& record) {
    record.timestamp_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now().time_since_epoch())
                                  .count(),
                              std::memory_order_relaxed);
    record.done.store(true, std::memory_order_release);
  }

  std::shared_ptr<const ExecPlan> plan_;
  std::vector<std::shared_ptr<EventRecord>> records_;  // this replay's, by record slot
  std::atomic<int64_t> done_chunks_{0};
  std::unique_ptr<ReplayActivities> activities_;  // null unless profiled
};

}  // namespace
}  // namespace maia::driver

struct maiaGraph {
  std::shared_ptr<const maia::driver::GraphBody> body;
};

struct maiaGraphExec {
  std::shared_ptr<const maia::driver::ExecPlan> plan;
};

namespace maia::driver {
namespace {

HandleRegistry<maiaGraph>& graphs() {
  static auto* registry = new HandleRegistry<maiaGraph>();  // outlives exit-time calls
  return *registry;
}

HandleRegistry<maiaGraphExec>& execs() {
  static auto* registry = new HandleRegistry<maiaGraphExec>();
  return *registry;
}

Status beginCapture(maiaStream_t handle) {
  std::shared_ptr<Stream> stream;
  MAIA_RETURN_IF_ERROR(resolveStream(handle, &stream));
  if (handle == nullptr || stream->is_default)
    return makeError(maiaErrorInvalidValue, "maiaStreamBeginCapture: the default stream of maia:",
                     stream->device->index(),
                     " cannot capture (synchronous calls order on it); capture on a stream "
                     "from maiaStreamCreate");
  std::lock_guard<std::mutex> lock(stream->capture_mutex);
  if (stream->capture)
    return makeError(maiaErrorInvalidValue, "maiaStreamBeginCapture: stream ",
                     static_cast<const void*>(handle), " is already capturing");
  stream->capture = std::make_shared<Capture>(stream->device);
  stream->capturing.store(true, std::memory_order_release);
  return {};
}

Status endCapture(maiaStream_t handle, maiaGraph_t* out) {
  std::shared_ptr<Stream> stream;
  MAIA_RETURN_IF_ERROR(resolveStream(handle, &stream));
  std::shared_ptr<Capture> capture;
  {
    std::lock_guard<std::mutex> lock(stream->capture_mutex);
    capture = std::move(stream->capture);
    stream->capture.reset();
    stream->capturing.store(false, std::memory_order_release);
  }
  if (!capture)
    return makeError(maiaErrorInvalidValue, "maiaStreamEndCapture: stream ",
                     static_cast<const void*>(handle), " is not capturing");
  std::shared_ptr<GraphBody> body;
  MAIA_RETURN_IF_ERROR(capture->finish(&body));
  auto graph = std::make_shared<maiaGraph>();
  graph->body = std::move(body);
  *out = graph.get();
  graphs().add(std::move(graph));
  return {};
}

Status instantiate(maiaGraph_t handle, maiaGraphExec_t* out) {
  std::shared_ptr<maiaGraph> graph = graphs().find(handle);
  if (!graph)
    return makeError(maiaErrorInvalidHandle, "graph ", static_cast<const void*>(handle),
                     " is not a live graph (destroyed, or never created)");
  auto plan = std::make_shared<ExecPlan>();
  plan->body = graph->body;
  const auto& nodes = graph->body->nodes;
  int64_t chunks = 0;
  plan->first_chunk.reserve(nodes.size() + 1);
  plan->record_slot.resize(nodes.size(), 0);
  for (size_t j = 0; j < nodes.size(); ++j) {
    plan->first_chunk.push_back(chunks);
    chunks += nodes[j].chunks;
    if (!nodes[j].command) plan->record_slot[j] = plan->records++;
  }
  plan->first_chunk.push_back(chunks);
  plan->total_chunks = std::max<int64_t>(1, chunks);
  auto exec = std::make_shared<maiaGraphExec>();
  exec->plan = std::move(plan);
  *out = exec.get();
  execs().add(std::move(exec));
  return {};
}

Status launchGraph(maiaGraphExec_t handle, maiaStream_t stream_handle) {
  std::shared_ptr<maiaGraphExec> exec = execs().find(handle);
  if (!exec)
    return makeError(maiaErrorInvalidHandle, "graph executable ", static_cast<const void*>(handle),
                     " is not live (destroyed, or never instantiated)");
  std::shared_ptr<Stream> stream;
  MAIA_RETURN_IF_ERROR(resolveStream(stream_handle, &stream));
  const ExecPlan& plan = *exec->plan;
  Device* device = plan.body->device;
  if (stream->device != device)
    return makeError(maiaErrorInvalidValue, "maiaGraphLaunch: the graph was captured on maia:",
                     device->index(), " but the stream is on maia:", stream->device->index());
  if (stream->capturing.load(std::memory_order_acquire))
    return makeError(maiaErrorStreamCaptureUnsupported,
                     "maiaGraphLaunch: the stream is capturing; launching a graph into a "
                     "capture is not supported");
  // A record per event record node, made here: the event refers to this
  // replay's record from now on, as after a maiaEventRecord.
  std::vector<std::shared_ptr<EventRecord>> records;
  if (plan.records > 0) {
    records.reserve(plan.records);
    for (size_t i = 0; i < plan.records; ++i) records.push_back(std::make_shared<EventRecord>());
  }
  auto command = std::make_unique<GraphReplayCommand>(exec->plan, records);
  MAIA_RETURN_IF_ERROR(enqueue(stream.get(), std::move(command)));
  if (plan.records > 0) {
    size_t slot = 0;
    for (const GraphNode& node : plan.body->nodes)
      if (!node.command) node.event->publish(records[slot++], device);
  }
  return {};
}

}  // namespace
}  // namespace maia::driver

using namespace maia::driver;

extern "C" {

maiaError_t maiaStreamBeginCapture(maiaStream_t stream) {
  MAIA_API_ENTER();
  return report(beginCapture(stream));
}

maiaError_t maiaStreamEndCapture(maiaStream_t stream, maiaGraph_t* out_graph) {
  MAIA_CHECK_OUT(out_graph);
  MAIA_API_ENTER();
  return report(endCapture(stream, out_graph));
}

maiaError_t maiaStreamIsCapturing(maiaStream_t stream, int* out_capturing) {
  MAIA_CHECK_OUT(out_capturing);
  MAIA_API_ENTER();
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  *out_capturing = target->capturing.load(std::memory_order_acquire) ? 1 : 0;
  return maiaSuccess;
}

maiaError_t maiaGraphGetNodeCount(maiaGraph_t graph, size_t* out_count) {
  MAIA_CHECK_OUT(out_count);
  MAIA_API_ENTER();
  std::shared_ptr<maiaGraph> target = graphs().find(graph);
  if (!target)
    return report(makeError(maiaErrorInvalidHandle, "graph ", static_cast<const void*>(graph),
                            " is not a live graph"));
  *out_count = target->body->nodes.size();
  return maiaSuccess;
}

maiaError_t maiaGraphInstantiate(maiaGraphExec_t* out_exec, maiaGraph_t graph) {
  MAIA_CHECK_OUT(out_exec);
  MAIA_API_ENTER();
  return report(instantiate(graph, out_exec));
}

maiaError_t maiaGraphLaunch(maiaGraphExec_t exec, maiaStream_t stream) {
  MAIA_API_ENTER();
  return report(launchGraph(exec, stream));
}

maiaError_t maiaGraphDestroy(maiaGraph_t graph) {
  MAIA_API_ENTER();
  if (!graphs().remove(graph))
    return report(makeError(maiaErrorInvalidHandle, "maiaGraphDestroy: graph ",
                            static_cast<const void*>(graph),
                            " is not a live graph (already destroyed?)"));
  return maiaSuccess;
}

maiaError_t maiaGraphExecDestroy(maiaGraphExec_t exec) {
  MAIA_API_ENTER();
  // Replays still queued hold the plan: destruction is deferred for them.
  if (!execs().remove(exec))
    return report(makeError(maiaErrorInvalidHandle, "maiaGraphExecDestroy: executable ",
                            static_cast<const void*>(exec),
                            " is not live (already destroyed?)"));
  return maiaSuccess;
}

}  // extern "C"
