// Events: record, query, synchronize, timing, cross-stream and
// cross-device ordering, misuse.
#include <chrono>
#include <thread>
#include <vector>

#include "test_util.h"

using namespace maia_test;

namespace {

TEST(EventTest, RecordQueryAndSynchronize) {
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  maiaEvent_t event;
  MAIA_ASSERT_OK(maiaEventCreate(&event, maiaEventDefault));
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, Gate::wait, &gate));
  MAIA_ASSERT_OK(maiaEventRecord(event, stream));
  EXPECT_EQ(maiaEventQuery(event), maiaErrorNotReady);
  gate.open = true;
  MAIA_ASSERT_OK(maiaEventSynchronize(event));
  EXPECT_EQ(maiaEventQuery(event), maiaSuccess);
  MAIA_ASSERT_OK(maiaEventDestroy(event));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
}

TEST(EventTest, ElapsedTimeCoversTheWorkBetweenTheEvents) {
  maiaEvent_t start, end;
  MAIA_ASSERT_OK(maiaEventCreate(&start, maiaEventDefault));
  MAIA_ASSERT_OK(maiaEventCreate(&end, maiaEventDefault));
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, 8 * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaEventRecord(start, nullptr));
  axpb(d, 8, 1, 0, nullptr, 5'000'000, 1);  // busy for at least 5 ms
  MAIA_ASSERT_OK(maiaEventRecord(end, nullptr));
  MAIA_ASSERT_OK(maiaEventSynchronize(end));
  float ms = 0;
  MAIA_ASSERT_OK(maiaEventElapsedTime(&ms, start, end));
  EXPECT_GE(ms, 5.0f);  // a lower bound the kernel guarantees, not a timing guess
  MAIA_ASSERT_OK(maiaEventElapsedTime(&ms, end, start));
  EXPECT_LE(ms, -5.0f);
  for (auto e : {start, end}) MAIA_ASSERT_OK(maiaEventDestroy(e));
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(EventTest, MisuseIsAClearError) {
  maiaEvent_t never, untimed, timed;
  MAIA_ASSERT_OK(maiaEventCreate(&never, maiaEventDefault));
  MAIA_ASSERT_OK(maiaEventCreate(&untimed, maiaEventDisableTiming));
  MAIA_ASSERT_OK(maiaEventCreate(&timed, maiaEventDefault));
  MAIA_EXPECT_ERROR(maiaStreamWaitEvent(nullptr, never), maiaErrorEventNotRecorded,
                    "was never recorded");
  MAIA_EXPECT_ERROR(maiaEventSynchronize(never), maiaErrorEventNotRecorded, "never recorded");
  MAIA_EXPECT_ERROR(maiaEventQuery(never), maiaErrorEventNotRecorded, "never recorded");
  MAIA_ASSERT_OK(maiaEventRecord(untimed, nullptr));
  MAIA_ASSERT_OK(maiaEventRecord(timed, nullptr));
  MAIA_ASSERT_OK(maiaEventSynchronize(timed));
  float ms = 0;
  MAIA_EXPECT_ERROR(maiaEventElapsedTime(&ms, untimed, timed), maiaErrorEventNoTiming,
                    "start event was created with maiaEventDisableTiming");
  MAIA_EXPECT_ERROR(maiaEventElapsedTime(&ms, timed, never), maiaErrorEventNotRecorded,
                    "(end)");
  MAIA_EXPECT_ERROR(maiaEventCreate(&never, 0x80), maiaErrorInvalidValue, "unknown flags");
  for (auto e : {never, untimed, timed}) MAIA_ASSERT_OK(maiaEventDestroy(e));
  MAIA_EXPECT_ERROR(maiaEventDestroy(timed), maiaErrorInvalidHandle, "not a live event");
  MAIA_EXPECT_ERROR(maiaEventRecord(timed, nullptr), maiaErrorInvalidHandle, "not a live event");
}

TEST(EventTest, AWaitOrdersWorkAcrossStreams) {
  const int64_t n = 256;
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(d, 0, n * sizeof(int64_t)));
  maiaStream_t first, second;
  MAIA_ASSERT_OK(maiaStreamCreate(&first, 0));
  MAIA_ASSERT_OK(maiaStreamCreate(&second, 0));
  maiaEvent_t done;
  MAIA_ASSERT_OK(maiaEventCreate(&done, maiaEventDisableTiming));
  axpb(d, n, 1, 7, first, 10'000'000);  // slow: 10 ms per program
  MAIA_ASSERT_OK(maiaEventRecord(done, first));
  MAIA_ASSERT_OK(maiaStreamWaitEvent(second, done));
  axpb(d, n, 3, 0, second);  // must see the first stream's result
  MAIA_ASSERT_OK(maiaStreamSynchronize(second));
  EXPECT_EQ(download(d, n), std::vector<int64_t>(n, 21));
  MAIA_ASSERT_OK(maiaEventDestroy(done));
  MAIA_ASSERT_OK(maiaStreamDestroy(first));
  MAIA_ASSERT_OK(maiaStreamDestroy(second));
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(EventTest, AWaitOrdersWorkAcrossDevices) {
  const int64_t n = 300;
  const size_t bytes = n * sizeof(int64_t);
  void *on0 = nullptr, *on1 = nullptr;
  MAIA_ASSERT_OK(maiaSetDevice(0));
  MAIA_ASSERT_OK(maiaMalloc(&on0, bytes));
  MAIA_ASSERT_OK(maiaMemset(on0, 0, bytes));
  maiaEvent_t produced;
  MAIA_ASSERT_OK(maiaEventCreate(&produced, maiaEventDefault));
  axpb(on0, n, 1, 4, nullptr, 5'000'000);
  MAIA_ASSERT_OK(maiaEventRecord(produced, nullptr));
  MAIA_ASSERT_OK(maiaSetDevice(1));
  MAIA_ASSERT_OK(maiaMalloc(&on1, bytes));
  MAIA_ASSERT_OK(maiaStreamWaitEvent(nullptr, produced));
  MAIA_ASSERT_OK(maiaMemcpyAsync(on1, on0, bytes, maiaMemcpyDeviceToDevice, nullptr));
  axpb(on1, n, 2, 1, nullptr);
  MAIA_ASSERT_OK(maiaDeviceSynchronize());
  EXPECT_EQ(download(on1, n), std::vector<int64_t>(n, 9));
  MAIA_ASSERT_OK(maiaFree(on1));
  MAIA_ASSERT_OK(maiaSetDevice(0));
  MAIA_ASSERT_OK(maiaFree(on0));
  MAIA_ASSERT_OK(maiaEventDestroy(produced));
}

TEST(EventTest, DestroyingAnEventWithARecordPendingIsSafe) {
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  maiaEvent_t event;
  MAIA_ASSERT_OK(maiaEventCreate(&event, maiaEventDefault));
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, Gate::wait, &gate));
  MAIA_ASSERT_OK(maiaEventRecord(event, stream));
  MAIA_ASSERT_OK(maiaEventDestroy(event));
  gate.open = true;
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
}

TEST(EventTest, ReRecordingTracksTheLatestRecord) {
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  maiaEvent_t event;
  MAIA_ASSERT_OK(maiaEventCreate(&event, maiaEventDefault));
  MAIA_ASSERT_OK(maiaEventRecord(event, stream));
  MAIA_ASSERT_OK(maiaEventSynchronize(event));
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, Gate::wait, &gate));
  MAIA_ASSERT_OK(maiaEventRecord(event, stream));
  EXPECT_EQ(maiaEventQuery(event), maiaErrorNotReady);
  gate.open = true;
  MAIA_ASSERT_OK(maiaEventSynchronize(event));
  EXPECT_EQ(maiaEventQuery(event), maiaSuccess);
  MAIA_ASSERT_OK(maiaEventDestroy(event));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
}

// A wait holds the record it was enqueued for: recording the same event
// again on another stream, which completes first, must not release it.
TEST(EventTest, AWaitIsForTheRecordItWasEnqueuedFor) {
  maiaStream_t slow, fast, waiter;
  MAIA_ASSERT_OK(maiaStreamCreate(&slow, 0));
  MAIA_ASSERT_OK(maiaStreamCreate(&fast, 0));
  MAIA_ASSERT_OK(maiaStreamCreate(&waiter, 0));
  maiaEvent_t event;
  MAIA_ASSERT_OK(maiaEventCreate(&event, maiaEventDisableTiming));
  Gate gate, released;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(slow, Gate::wait, &gate));
  MAIA_ASSERT_OK(maiaEventRecord(event, slow));
  MAIA_ASSERT_OK(maiaStreamWaitEvent(waiter, event));
  MAIA_ASSERT_OK(maiaLaunchHostFunc(
      waiter, [](void* flag) { static_cast<Gate*>(flag)->open = true; }, &released));
  MAIA_ASSERT_OK(maiaEventRecord(event, fast));
  MAIA_ASSERT_OK(maiaStreamSynchronize(fast));
  EXPECT_EQ(maiaEventQuery(event), maiaSuccess) << "query follows the latest record";
  // The waiter had every chance to run if it were (wrongly) released.
  for (int i = 0; i < 200 && !released.open.load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(released.open.load()) << "the wait was released by a later record";
  gate.open = true;
  MAIA_ASSERT_OK(maiaStreamSynchronize(waiter));
  EXPECT_TRUE(released.open.load());
  MAIA_ASSERT_OK(maiaEventDestroy(event));
  for (maiaStream_t s : {slow, fast, waiter}) MAIA_ASSERT_OK(maiaStreamDestroy(s));
}

}  // namespace
