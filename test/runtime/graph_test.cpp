// Graph capture and replay: what a capture records, replays that match eager
// execution, replays that read changed inputs, calls refused during capture,
// handle lifetimes, faults inside a replay, and the host cost of a replay.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "test_util.h"

using namespace maia_test;

namespace {

/// A stream for capturing, destroyed at the end of the test.
struct CaptureStream {
  maiaStream_t handle = nullptr;
  CaptureStream() { EXPECT_EQ(maiaStreamCreate(&handle, 0), maiaSuccess); }
  ~CaptureStream() {
    maiaStreamSynchronize(handle);
    maiaStreamDestroy(handle);
  }
};

/// The work the replay tests capture and run eagerly: kernels split over
/// 1..5 programs (so replays run chunks of one kernel on several cores),
/// a device-device copy, a memset and a pattern fill.
void enqueueWork(void* a, void* b, int64_t n, maiaStream_t stream) {
  for (int64_t step = 0; step < 12; ++step) axpb(a, n, 1 + step % 3, step, stream, 0, 1 + step % 5);
  ASSERT_EQ(maiaMemcpyAsync(b, a, n * sizeof(int64_t), maiaMemcpyDeviceToDevice, stream),
            maiaSuccess);
  ASSERT_EQ(maiaMemsetAsync(a, 0, n / 2 * sizeof(int64_t), stream), maiaSuccess);
  const int64_t seven = 7;
  ASSERT_EQ(maiaMemsetPatternAsync(static_cast<int64_t*>(b) + n - 3, &seven, sizeof(seven), 3,
                                   stream),
            maiaSuccess);
  axpb(b, n, 5, 1, stream, 0, 4);
}

TEST(GraphTest, CaptureRecordsWorkWithoutRunningIt) {
  const int64_t n = 1000;
  void *a = nullptr, *b = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&a, n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMalloc(&b, n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(a, 0, n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(b, 0, n * sizeof(int64_t)));
  CaptureStream stream;
  int capturing = -1;
  MAIA_ASSERT_OK(maiaStreamIsCapturing(stream.handle, &capturing));
  EXPECT_EQ(capturing, 0);
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  MAIA_ASSERT_OK(maiaStreamIsCapturing(stream.handle, &capturing));
  EXPECT_EQ(capturing, 1);
  enqueueWork(a, b, n, stream.handle);
  maiaGraph_t graph = nullptr;
  MAIA_ASSERT_OK(maiaStreamEndCapture(stream.handle, &graph));
  MAIA_ASSERT_OK(maiaStreamIsCapturing(stream.handle, &capturing));
  EXPECT_EQ(capturing, 0);
  size_t nodes = 0;
  MAIA_ASSERT_OK(maiaGraphGetNodeCount(graph, &nodes));
  EXPECT_EQ(nodes, 16u);
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream.handle));
  EXPECT_EQ(maiaStreamQuery(stream.handle), maiaSuccess);
  EXPECT_EQ(download(a, n), std::vector<int64_t>(n, 0)) << "captured work must not run";
  EXPECT_EQ(download(b, n), std::vector<int64_t>(n, 0));
  MAIA_ASSERT_OK(maiaGraphDestroy(graph));
  MAIA_ASSERT_OK(maiaFree(a));
  MAIA_ASSERT_OK(maiaFree(b));
}

TEST(GraphTest, ReplayGivesTheSameResultsAsEagerExecution) {
  const int64_t n = 100'003;  // several chunks per kernel, uneven split
  void *a = nullptr, *b = nullptr, *ea = nullptr, *eb = nullptr;
  for (void** p : {&a, &b, &ea, &eb}) {
    MAIA_ASSERT_OK(maiaMalloc(p, n * sizeof(int64_t)));
    MAIA_ASSERT_OK(maiaMemset(*p, 0, n * sizeof(int64_t)));
  }
  std::vector<int64_t> start(n);
  for (int64_t i = 0; i < n; ++i) start[i] = i * 31 - 5;
  MAIA_ASSERT_OK(maiaMemcpy(a, start.data(), n * sizeof(int64_t), maiaMemcpyHostToDevice));
  MAIA_ASSERT_OK(maiaMemcpy(ea, start.data(), n * sizeof(int64_t), maiaMemcpyHostToDevice));
  CaptureStream stream;
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  enqueueWork(a, b, n, stream.handle);
  maiaGraph_t graph = nullptr;
  MAIA_ASSERT_OK(maiaStreamEndCapture(stream.handle, &graph));
  maiaGraphExec_t exec = nullptr;
  MAIA_ASSERT_OK(maiaGraphInstantiate(&exec, graph));
  MAIA_ASSERT_OK(maiaGraphLaunch(exec, stream.handle));
  enqueueWork(ea, eb, n, nullptr);
  MAIA_ASSERT_OK(maiaDeviceSynchronize());
  std::vector<int64_t> expected_a = download(ea, n), expected_b = download(eb, n);
  EXPECT_EQ(download(a, n), expected_a);
  EXPECT_EQ(download(b, n), expected_b);
  // A second replay continues from the first one's results, as a second
  // eager run would.
  MAIA_ASSERT_OK(maiaGraphLaunch(exec, stream.handle));
  enqueueWork(ea, eb, n, nullptr);
  MAIA_ASSERT_OK(maiaDeviceSynchronize());
  EXPECT_EQ(download(a, n), download(ea, n));
  EXPECT_EQ(download(b, n), download(eb, n));
  MAIA_ASSERT_OK(maiaGraphExecDestroy(exec));
  MAIA_ASSERT_OK(maiaGraphDestroy(graph));
  for (void* p : {a, b, ea, eb}) MAIA_ASSERT_OK(maiaFree(p));
}

TEST(GraphTest, ReplaysManyTimesInStreamOrder) {
  const int64_t n = 4096;
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(d, 0, n * sizeof(int64_t)));
  CaptureStream stream;
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  axpb(d, n, 1, 1, stream.handle, 0, 3);
  axpb(d, n, 3, 0, stream.handle, 0, 2);
  maiaGraph_t graph = nullptr;
  MAIA_ASSERT_OK(maiaStreamEndCapture(stream.handle, &graph));
  maiaGraphExec_t exec = nullptr;
  MAIA_ASSERT_OK(maiaGraphInstantiate(&exec, graph));
  int64_t expected = 0;
  for (int i = 0; i < 2000; ++i) {
    MAIA_ASSERT_OK(maiaGraphLaunch(exec, stream.handle));
    expected = axpbValue(axpbValue(expected, 1, 1), 3, 0);
    if (i % 500 == 0) axpb(d, n, 1, 2, stream.handle);  // eager work between replays
    if (i % 500 == 0) expected = axpbValue(expected, 1, 2);
  }
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream.handle));
  EXPECT_EQ(download(d, n), std::vector<int64_t>(n, expected));
  MAIA_ASSERT_OK(maiaGraphExecDestroy(exec));
  MAIA_ASSERT_OK(maiaGraphDestroy(graph));
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(GraphTest, ReplayReadsInputsChangedSinceTheCapture) {
  const int64_t n = 64;
  void *in = nullptr, *out = nullptr, *pinned = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&in, n * sizeof(float)));
  MAIA_ASSERT_OK(maiaMalloc(&out, n * sizeof(float)));
  MAIA_ASSERT_OK(maiaHostAlloc(&pinned, n * sizeof(float)));
  auto* host = static_cast<float*>(pinned);
  CaptureStream stream;
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  // in <- pinned host buffer; out = in + in; pinned <- out.
  MAIA_ASSERT_OK(
      maiaMemcpyAsync(in, pinned, n * sizeof(float), maiaMemcpyHostToDevice, stream.handle));
  maiaKernelArg args[3] = {vectorArg(in, maiaDtypeF32, n), vectorArg(in, maiaDtypeF32, n),
                           vectorArg(out, maiaDtypeF32, n)};
  int64_t grid[3] = {4, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("add_f32"), grid, args, 3, stream.handle));
  MAIA_ASSERT_OK(
      maiaMemcpyAsync(pinned, out, n * sizeof(float), maiaMemcpyDeviceToHost, stream.handle));
  maiaGraph_t graph = nullptr;
  MAIA_ASSERT_OK(maiaStreamEndCapture(stream.handle, &graph));
  maiaGraphExec_t exec = nullptr;
  MAIA_ASSERT_OK(maiaGraphInstantiate(&exec, graph));
  for (int round = 1; round <= 5; ++round) {
    for (int64_t i = 0; i < n; ++i) host[i] = static_cast<float>(round * 100 + i);
    MAIA_ASSERT_OK(maiaGraphLaunch(exec, stream.handle));
    MAIA_ASSERT_OK(maiaStreamSynchronize(stream.handle));
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(host[i], 2.0f * static_cast<float>(round * 100 + i)) << "round " << round;
  }
  MAIA_ASSERT_OK(maiaGraphExecDestroy(exec));
  MAIA_ASSERT_OK(maiaGraphDestroy(graph));
  MAIA_ASSERT_OK(maiaFreeHost(pinned));
  MAIA_ASSERT_OK(maiaFree(in));
  MAIA_ASSERT_OK(maiaFree(out));
}

TEST(GraphTest, SynchronizingTheCapturingStreamFailsAndInvalidatesTheCapture) {
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, 16 * sizeof(int64_t)));
  CaptureStream stream;
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  axpb(d, 16, 1, 1, stream.handle);
  MAIA_EXPECT_ERROR(maiaStreamSynchronize(stream.handle), maiaErrorStreamCaptureUnsupported,
                    "synchronizing the stream");
  // Later work on the stream is refused, naming what invalidated it.
  int64_t grid[3] = {1, 1, 1};
  MAIA_EXPECT_ERROR(maiaLaunchKernel(basicKernel("empty"), grid, nullptr, 0, stream.handle),
                    maiaErrorStreamCaptureInvalidated, "synchronizing the stream");
  maiaGraph_t graph = nullptr;
  MAIA_EXPECT_ERROR(maiaStreamEndCapture(stream.handle, &graph),
                    maiaErrorStreamCaptureInvalidated, "no graph was made");
  EXPECT_EQ(graph, nullptr);
  // Capture mode ended: the stream works again.
  int capturing = -1;
  MAIA_ASSERT_OK(maiaStreamIsCapturing(stream.handle, &capturing));
  EXPECT_EQ(capturing, 0);
  MAIA_ASSERT_OK(maiaMemset(d, 0, 16 * sizeof(int64_t)));
  axpb(d, 16, 1, 4, stream.handle);
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream.handle));
  EXPECT_EQ(download(d, 16), std::vector<int64_t>(16, 4));
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(GraphTest, DeviceSynchronizeAndHostCopiesDuringCaptureFail) {
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, 16 * sizeof(int64_t)));
  CaptureStream stream;
  maiaGraph_t graph = nullptr;

  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  MAIA_EXPECT_ERROR(maiaDeviceSynchronize(), maiaErrorStreamCaptureUnsupported,
                    "synchronizing its device");
  MAIA_EXPECT_ERROR(maiaStreamEndCapture(stream.handle, &graph),
                    maiaErrorStreamCaptureInvalidated, "maiaDeviceSynchronize");

  // A copy to pageable host memory is synchronous: refused, not run.
  std::vector<int64_t> host(16, -1);
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  MAIA_EXPECT_ERROR(maiaMemcpyAsync(host.data(), d, 16 * sizeof(int64_t),
                                    maiaMemcpyDeviceToHost, stream.handle),
                    maiaErrorStreamCaptureUnsupported, "pageable host memory");
  EXPECT_EQ(host, std::vector<int64_t>(16, -1));
  MAIA_EXPECT_ERROR(maiaStreamEndCapture(stream.handle, &graph),
                    maiaErrorStreamCaptureInvalidated, "pageable");

  // So is a wait on an event recorded outside the capture.
  maiaEvent_t outside = nullptr;
  MAIA_ASSERT_OK(maiaEventCreate(&outside, maiaEventDisableTiming));
  MAIA_ASSERT_OK(maiaEventRecord(outside, nullptr));
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  MAIA_EXPECT_ERROR(maiaStreamWaitEvent(stream.handle, outside),
                    maiaErrorStreamCaptureUnsupported, "not recorded in this capture");
  MAIA_EXPECT_ERROR(maiaStreamEndCapture(stream.handle, &graph),
                    maiaErrorStreamCaptureInvalidated, "not recorded in this capture");
  MAIA_ASSERT_OK(maiaEventDestroy(outside));
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(GraphTest, MisuseOfCaptureCallsIsRefused) {
  maiaStream_t default_stream = nullptr;
  MAIA_ASSERT_OK(maiaStreamGetDefault(&default_stream, 0));
  MAIA_EXPECT_ERROR(maiaStreamBeginCapture(nullptr), maiaErrorInvalidValue,
                    "default stream of maia:0 cannot capture");
  MAIA_EXPECT_ERROR(maiaStreamBeginCapture(default_stream), maiaErrorInvalidValue,
                    "cannot capture");
  CaptureStream stream;
  maiaGraph_t graph = nullptr;
  MAIA_EXPECT_ERROR(maiaStreamEndCapture(stream.handle, &graph), maiaErrorInvalidValue,
                    "is not capturing");
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  MAIA_EXPECT_ERROR(maiaStreamBeginCapture(stream.handle), maiaErrorInvalidValue,
                    "already capturing");
  MAIA_EXPECT_ERROR(maiaStreamDestroy(stream.handle), maiaErrorStreamCaptureUnsupported,
                    "end the capture first");
  MAIA_ASSERT_OK(maiaStreamEndCapture(stream.handle, &graph));
  maiaGraphExec_t exec = nullptr;
  MAIA_ASSERT_OK(maiaGraphInstantiate(&exec, graph));
  // An empty graph replays as a no-op; not into a capture, not on another device.
  MAIA_ASSERT_OK(maiaGraphLaunch(exec, stream.handle));
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream.handle));
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  MAIA_EXPECT_ERROR(maiaGraphLaunch(exec, stream.handle), maiaErrorStreamCaptureUnsupported,
                    "capturing");
  maiaGraph_t inner = nullptr;
  MAIA_ASSERT_OK(maiaStreamEndCapture(stream.handle, &inner));
  maiaStream_t other_device = nullptr;
  MAIA_ASSERT_OK(maiaStreamGetDefault(&other_device, 1));
  MAIA_EXPECT_ERROR(maiaGraphLaunch(exec, other_device), maiaErrorInvalidValue,
                    "captured on maia:0 but the stream is on maia:1");
  MAIA_ASSERT_OK(maiaGraphExecDestroy(exec));
  MAIA_ASSERT_OK(maiaGraphDestroy(graph));
  MAIA_ASSERT_OK(maiaGraphDestroy(inner));
}

TEST(GraphTest, DestroyedHandlesAreRejectedAndQueuedReplaysStillRun) {
  const int64_t n = 256;
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(d, 0, n * sizeof(int64_t)));
  CaptureStream stream;
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  axpb(d, n, 1, 1, stream.handle, 0, 4);
  maiaGraph_t graph = nullptr;
  MAIA_ASSERT_OK(maiaStreamEndCapture(stream.handle, &graph));
  maiaGraphExec_t exec = nullptr;
  MAIA_ASSERT_OK(maiaGraphInstantiate(&exec, graph));
  // The executable does not need its graph, nor the replays their executable.
  MAIA_ASSERT_OK(maiaGraphDestroy(graph));
  size_t count = 0;
  MAIA_EXPECT_ERROR(maiaGraphGetNodeCount(graph, &count), maiaErrorInvalidHandle, "not a live");
  MAIA_EXPECT_ERROR(maiaGraphDestroy(graph), maiaErrorInvalidHandle, "already destroyed");
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream.handle, Gate::wait, &gate));
  for (int i = 0; i < 3; ++i) MAIA_ASSERT_OK(maiaGraphLaunch(exec, stream.handle));
  MAIA_ASSERT_OK(maiaGraphExecDestroy(exec));
  MAIA_EXPECT_ERROR(maiaGraphLaunch(exec, stream.handle), maiaErrorInvalidHandle, "not live");
  MAIA_EXPECT_ERROR(maiaGraphExecDestroy(exec), maiaErrorInvalidHandle, "already destroyed");
  gate.open = true;
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream.handle));
  EXPECT_EQ(download(d, n), std::vector<int64_t>(n, 3));
  MAIA_ASSERT_OK(maiaFree(d));
}

// Replays keep their progress in the replay command, not in the graph: one
// executable replays on two streams at once, each replay in order, without
// hanging or skipping a command.
TEST(GraphTest, OneExecutableReplaysOnTwoStreamsAtOnce) {
  const int64_t n = 50'000;
  void *b = nullptr, *t = nullptr, *out = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&b, n * sizeof(float)));
  MAIA_ASSERT_OK(maiaMalloc(&t, n * sizeof(float)));
  MAIA_ASSERT_OK(maiaMalloc(&out, n * sizeof(float)));
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 1000);
  MAIA_ASSERT_OK(maiaMemcpy(b, values.data(), n * sizeof(float), maiaMemcpyHostToDevice));
  MAIA_ASSERT_OK(maiaMemset(t, 0, n * sizeof(float)));
  MAIA_ASSERT_OK(maiaMemset(out, 0, n * sizeof(float)));
  CaptureStream capture, other;
  // t = b + b; out = t + b. Concurrent replays write the same values.
  auto add = [&](void* x, void* y, void* z) {
    maiaKernelArg args[3] = {vectorArg(x, maiaDtypeF32, n), vectorArg(y, maiaDtypeF32, n),
                             vectorArg(z, maiaDtypeF32, n)};
    int64_t grid[3] = {8, 1, 1};
    EXPECT_EQ(maiaLaunchKernel(basicKernel("add_f32"), grid, args, 3, capture.handle),
              maiaSuccess);
  };
  MAIA_ASSERT_OK(maiaStreamBeginCapture(capture.handle));
  add(b, b, t);
  add(t, b, out);
  maiaGraph_t graph = nullptr;
  MAIA_ASSERT_OK(maiaStreamEndCapture(capture.handle, &graph));
  maiaGraphExec_t exec = nullptr;
  MAIA_ASSERT_OK(maiaGraphInstantiate(&exec, graph));
  for (int i = 0; i < 200; ++i) {
    MAIA_ASSERT_OK(maiaGraphLaunch(exec, capture.handle));
    MAIA_ASSERT_OK(maiaGraphLaunch(exec, other.handle));
  }
  MAIA_ASSERT_OK(maiaDeviceSynchronize());
  std::vector<float> result(n);
  MAIA_ASSERT_OK(maiaMemcpy(result.data(), out, n * sizeof(float), maiaMemcpyDeviceToHost));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(result[i], 3 * values[i]) << "element " << i;
  MAIA_ASSERT_OK(maiaGraphExecDestroy(exec));
  MAIA_ASSERT_OK(maiaGraphDestroy(graph));
  for (void* p : {b, t, out}) MAIA_ASSERT_OK(maiaFree(p));
}

TEST(GraphTest, EventsRecordedInACaptureCompleteOnEveryReplay) {
  const int64_t n = 128;
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(d, 0, n * sizeof(int64_t)));
  maiaEvent_t done = nullptr;
  MAIA_ASSERT_OK(maiaEventCreate(&done, maiaEventDefault));
  CaptureStream stream;
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  axpb(d, n, 1, 1, stream.handle, 0, 2);
  MAIA_ASSERT_OK(maiaEventRecord(done, stream.handle));
  MAIA_ASSERT_OK(maiaStreamWaitEvent(stream.handle, done));  // met by replay order
  axpb(d, n, 2, 0, stream.handle, 0, 2);
  maiaGraph_t graph = nullptr;
  MAIA_ASSERT_OK(maiaStreamEndCapture(stream.handle, &graph));
  size_t nodes = 0;
  MAIA_ASSERT_OK(maiaGraphGetNodeCount(graph, &nodes));
  EXPECT_EQ(nodes, 3u) << "the wait needs no node";
  maiaGraphExec_t exec = nullptr;
  MAIA_ASSERT_OK(maiaGraphInstantiate(&exec, graph));
  int64_t expected = 0;
  for (int round = 0; round < 3; ++round) {
    Gate gate;
    MAIA_ASSERT_OK(maiaLaunchHostFunc(stream.handle, Gate::wait, &gate));
    MAIA_ASSERT_OK(maiaGraphLaunch(exec, stream.handle));
    // The event refers to this replay's record: not complete until it runs.
    EXPECT_EQ(maiaEventQuery(done), maiaErrorNotReady);
    gate.open = true;
    MAIA_ASSERT_OK(maiaEventSynchronize(done));
    expected = axpbValue(expected, 1, 1);
    // Another stream can wait on the replay's record.
    MAIA_ASSERT_OK(maiaStreamWaitEvent(nullptr, done));
    MAIA_ASSERT_OK(maiaStreamSynchronize(stream.handle));
    expected = axpbValue(expected, 2, 0);
    EXPECT_EQ(download(d, n), std::vector<int64_t>(n, expected));
  }
  MAIA_ASSERT_OK(maiaGraphExecDestroy(exec));
  MAIA_ASSERT_OK(maiaGraphDestroy(graph));
  MAIA_ASSERT_OK(maiaEventDestroy(done));
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(GraphTest, AFaultInAReplayIsStickyAndNamesTheCommand) {
  void* flags = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&flags, 16 * sizeof(int32_t)));
  maiaEvent_t done = nullptr;
  MAIA_ASSERT_OK(maiaEventCreate(&done, maiaEventDisableTiming));
  CaptureStream stream;
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  int64_t grid[3] = {1, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("empty"), grid, nullptr, 0, stream.handle));
  maiaKernelArg args[2] = {vectorArg(flags, maiaDtypeI32, 16), scalarArg(maiaDtypeI64, int64_t{5})};
  int64_t trap_grid[3] = {16, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("trap_at"), trap_grid, args, 2, stream.handle));
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("empty"), grid, nullptr, 0, stream.handle));
  MAIA_ASSERT_OK(maiaEventRecord(done, stream.handle));
  maiaGraph_t graph = nullptr;
  MAIA_ASSERT_OK(maiaStreamEndCapture(stream.handle, &graph));
  maiaGraphExec_t exec = nullptr;
  MAIA_ASSERT_OK(maiaGraphInstantiate(&exec, graph));
  MAIA_ASSERT_OK(maiaGraphLaunch(exec, stream.handle));
  MAIA_EXPECT_ERROR(maiaStreamSynchronize(stream.handle), maiaErrorLaunchFailure,
                    "graph replay, command 1 of 4: kernel 'trap_at'");
  // The record after the fault completes anyway: nothing waits forever.
  MAIA_EXPECT_ERROR(maiaEventSynchronize(done), maiaErrorLaunchFailure, "trap_at");
  MAIA_ASSERT_OK(maiaDeviceReset(0));
  MAIA_ASSERT_OK(maiaGraphExecDestroy(exec));
  MAIA_ASSERT_OK(maiaGraphDestroy(graph));
  MAIA_ASSERT_OK(maiaEventDestroy(done));
  MAIA_ASSERT_OK(maiaFree(flags));
}

// Replay is one command whatever the kernel count: a 5000-kernel graph fits
// on a stream whose queue holds far fewer commands, behind a host function
// that holds it, without the enqueue waiting for the queue to drain. (Its
// host cost is measured by maia-driver-bench --only graph, not here.)
TEST(GraphTest, AReplayIsOneCommandWhateverTheKernelCount) {
  CaptureStream stream;
  int64_t grid[3] = {1, 1, 1};
  maiaGraph_t graph = nullptr;
  maiaGraphExec_t exec = nullptr;
  MAIA_ASSERT_OK(maiaStreamBeginCapture(stream.handle));
  for (int i = 0; i < 5000; ++i)
    MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("empty"), grid, nullptr, 0, stream.handle));
  MAIA_ASSERT_OK(maiaStreamEndCapture(stream.handle, &graph));
  size_t nodes = 0;
  MAIA_ASSERT_OK(maiaGraphGetNodeCount(graph, &nodes));
  EXPECT_EQ(nodes, 5000u);
  MAIA_ASSERT_OK(maiaGraphInstantiate(&exec, graph));
  MAIA_ASSERT_OK(maiaGraphDestroy(graph));
  std::atomic<bool> open{false}, queued{false};
  auto hold = [](void* flag) {
    while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::yield();
  };
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream.handle, hold, &open));
  // If a replay were one queue entry per kernel, the launches below would
  // wait for a queue held by the host function; the opener releases it
  // after 10 s at the latest, so the test fails instead of hanging.
  std::thread opener([&] {
    for (int i = 0; i < 1000 && !queued.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    open = true;
  });
  for (int i = 0; i < 3; ++i) MAIA_ASSERT_OK(maiaGraphLaunch(exec, stream.handle));
  const bool queued_while_held = !open.load();
  queued = true;
  opener.join();
  EXPECT_TRUE(queued_while_held) << "3 replays of 5000 kernels did not fit the stream's queue";
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream.handle));
  MAIA_ASSERT_OK(maiaGraphExecDestroy(exec));
}

}  // namespace
