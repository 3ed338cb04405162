// The activity records of maia/profiler.h for host functions: named ones
// carry their name (what a communication library's collectives show in a
// trace), unnamed ones the kind's name; both are timed on the stream. And
// graph replays: every replayed command gets its record, as if enqueued
// alone by the thread that launched the graph.
#include <maia/profiler.h>

#include <string>
#include <vector>

#include "test_util.h"

using namespace maia_test;

namespace {

void noop(void*) {}

std::vector<maiaActivityRecord> flushAll() {
  size_t waiting = 0;
  EXPECT_EQ(maiaProfilerFlush(nullptr, 0, &waiting), maiaSuccess);
  std::vector<maiaActivityRecord> records(waiting);
  size_t got = 0;
  EXPECT_EQ(maiaProfilerFlush(records.data(), records.size(), &got), maiaSuccess);
  records.resize(got);
  return records;
}

TEST(ProfilerTest, HostFunctionRecordsCarryTheirName) {
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  MAIA_ASSERT_OK(maiaProfilerStart());
  MAIA_ASSERT_OK(maiaLaunchHostFuncNamed(stream, noop, nullptr, "allreduce seq 7"));
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, noop, nullptr));
  MAIA_ASSERT_OK(maiaLaunchHostFuncNamed(stream, noop, nullptr, ""));
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  MAIA_ASSERT_OK(maiaProfilerStop());
  std::vector<maiaActivityRecord> records = flushAll();
  ASSERT_EQ(records.size(), 3u);
  std::vector<std::string> names;
  for (const maiaActivityRecord& record : records) {
    EXPECT_EQ(record.kind, maiaActivityHostFunction);
    EXPECT_LE(record.enqueue_ns, record.start_ns);
    EXPECT_LE(record.start_ns, record.end_ns);
    names.emplace_back(record.name);
  }
  // One stream: completion order is enqueue order.
  EXPECT_EQ(names, (std::vector<std::string>{"allreduce seq 7", "Host function",
                                             "Host function"}));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
}

TEST(ProfilerTest, LongHostFunctionNamesAreCutNotOverrun) {
  MAIA_ASSERT_OK(maiaProfilerStart());
  const std::string name(3 * MAIA_ACTIVITY_NAME_BYTES, 'x');
  MAIA_ASSERT_OK(maiaLaunchHostFuncNamed(nullptr, noop, nullptr, name.c_str()));
  MAIA_ASSERT_OK(maiaStreamSynchronize(nullptr));
  MAIA_ASSERT_OK(maiaProfilerStop());
  std::vector<maiaActivityRecord> records = flushAll();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(std::string(records[0].name), name.substr(0, MAIA_ACTIVITY_NAME_BYTES - 1));
}

/// Captures on stream: kKernels axpb launches split over 1..3 programs, a
/// device-device copy, a memset, a pattern fill, a named host function and
/// an event record. Returns the kind and name each replay must record, in
/// order.
constexpr int kKernels = 5;
maiaGraph_t captureMixedGraph(maiaStream_t stream, void* a, void* b, int64_t n, maiaEvent_t event,
                              std::vector<std::pair<maiaActivityKind, std::string>>* expected) {
  EXPECT_EQ(maiaStreamBeginCapture(stream), maiaSuccess);
  for (int k = 0; k < kKernels; ++k) {
    axpb(a, n, 1, k, stream, 0, 1 + k % 3);
    expected->emplace_back(maiaActivityKernel, "axpb_i64");
  }
  EXPECT_EQ(maiaMemcpyAsync(b, a, n * sizeof(int64_t), maiaMemcpyDeviceToDevice, stream),
            maiaSuccess);
  expected->emplace_back(maiaActivityMemcpyDtoD, "Memcpy DtoD");
  EXPECT_EQ(maiaMemsetAsync(a, 0, n * sizeof(int64_t), stream), maiaSuccess);
  expected->emplace_back(maiaActivityMemset, "Memset");
  const int64_t seven = 7;
  EXPECT_EQ(maiaMemsetPatternAsync(b, &seven, sizeof(seven), 4, stream), maiaSuccess);
  expected->emplace_back(maiaActivityMemset, "Fill");
  EXPECT_EQ(maiaLaunchHostFuncNamed(stream, noop, nullptr, "in the graph"), maiaSuccess);
  expected->emplace_back(maiaActivityHostFunction, "in the graph");
  EXPECT_EQ(maiaEventRecord(event, stream), maiaSuccess);
  expected->emplace_back(maiaActivityEventRecord, "Event record");
  maiaGraph_t graph = nullptr;
  EXPECT_EQ(maiaStreamEndCapture(stream, &graph), maiaSuccess);
  return graph;
}

TEST(ProfilerTest, GraphReplaysRecordEveryCommandOnTheLaunchingStream) {
  const int64_t n = 3000;
  void *a = nullptr, *b = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&a, n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMalloc(&b, n * sizeof(int64_t)));
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  maiaEvent_t event;
  MAIA_ASSERT_OK(maiaEventCreate(&event, 0));
  std::vector<std::pair<maiaActivityKind, std::string>> expected;
  maiaGraph_t graph = captureMixedGraph(stream, a, b, n, event, &expected);
  ASSERT_NE(graph, nullptr);
  maiaGraphExec_t exec = nullptr;
  MAIA_ASSERT_OK(maiaGraphInstantiate(&exec, graph));

  constexpr int kReplays = 4;
  constexpr uint64_t kCorrelation = 4242;
  MAIA_ASSERT_OK(maiaProfilerStart());
  MAIA_ASSERT_OK(maiaProfilerPushCorrelationId(kCorrelation));
  for (int r = 0; r < kReplays; ++r) MAIA_ASSERT_OK(maiaGraphLaunch(exec, stream));
  MAIA_ASSERT_OK(maiaProfilerPopCorrelationId(nullptr));
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  MAIA_ASSERT_OK(maiaProfilerStop());
  std::vector<maiaActivityRecord> records = flushAll();
  uint64_t stream_id = 0;
  ASSERT_EQ(records.size(), kReplays * (expected.size() + 1)) << "one per command, one per replay";

  // One stream, replays in order: each replay's commands complete (and
  // publish) in capture order, then the replay itself.
  int kernels = 0;
  for (int r = 0; r < kReplays; ++r) {
    const maiaActivityRecord* replay = &records[(r + 1) * (expected.size() + 1) - 1];
    EXPECT_EQ(replay->kind, maiaActivityGraph);
    EXPECT_STREQ(replay->name, "Graph launch");
    if (r == 0) stream_id = replay->stream_id;
    EXPECT_NE(stream_id, 0u) << "the stream the graph was launched on, not the default";
    for (size_t j = 0; j < expected.size(); ++j) {
      const maiaActivityRecord& record = records[r * (expected.size() + 1) + j];
      SCOPED_TRACE("replay " + std::to_string(r) + ", command " + std::to_string(j));
      EXPECT_EQ(record.kind, expected[j].first);
      EXPECT_EQ(std::string(record.name), expected[j].second);
      EXPECT_EQ(record.device, 0);
      EXPECT_EQ(record.stream_id, stream_id);
      EXPECT_EQ(record.correlation_id, kCorrelation);
      EXPECT_EQ(record.host_thread, replay->host_thread);
      EXPECT_EQ(record.enqueue_ns, replay->enqueue_ns);
      EXPECT_LE(record.enqueue_ns, record.start_ns);
      EXPECT_LE(record.start_ns, record.end_ns);
      EXPECT_LE(replay->start_ns, record.start_ns);
      EXPECT_LE(record.end_ns, replay->end_ns);
      if (j > 0) {
        EXPECT_LE(records[r * (expected.size() + 1) + j - 1].end_ns, record.start_ns);
      }
      const bool copy_or_fill = record.kind == maiaActivityMemcpyDtoD ||
                                record.kind == maiaActivityMemset;
      EXPECT_EQ(record.bytes, copy_or_fill ? (std::string(record.name) == "Fill"
                                                  ? 4 * sizeof(int64_t)
                                                  : n * sizeof(int64_t))
                                           : 0u);
      kernels += record.kind == maiaActivityKernel;
    }
    if (r > 0) {
      EXPECT_LE(records[r * (expected.size() + 1) - 1].end_ns, replay->start_ns);
    }
  }
  EXPECT_EQ(kernels, kReplays * kKernels);

  // With no profiler active a replay records nothing, nor does one
  // enqueued before the profiler started and run after.
  MAIA_ASSERT_OK(maiaGraphLaunch(exec, stream));
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  size_t waiting = 1;
  MAIA_ASSERT_OK(maiaProfilerFlush(nullptr, 0, &waiting));
  EXPECT_EQ(waiting, 0u);
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, Gate::wait, &gate));
  MAIA_ASSERT_OK(maiaGraphLaunch(exec, stream));
  MAIA_ASSERT_OK(maiaProfilerStart());
  gate.open = true;
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  MAIA_ASSERT_OK(maiaProfilerStop());
  EXPECT_TRUE(flushAll().empty());

  MAIA_ASSERT_OK(maiaGraphExecDestroy(exec));
  MAIA_ASSERT_OK(maiaGraphDestroy(graph));
  MAIA_ASSERT_OK(maiaEventDestroy(event));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(a));
  MAIA_ASSERT_OK(maiaFree(b));
}

TEST(ProfilerTest, NamedHostFunctionRejectsNullFunction) {
  EXPECT_EQ(maiaLaunchHostFuncNamed(nullptr, nullptr, nullptr, "x"), maiaErrorInvalidValue);
  EXPECT_NE(std::string(maiaGetLastErrorMessage()).find("fn is NULL"), std::string::npos);
}

}  // namespace
