// Streams: order, asynchrony, default streams, priorities, destruction,
// host functions, bounded queues, and MAIA_LAUNCH_BLOCKING mode.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "test_util.h"

using namespace maia_test;

namespace {

TEST(StreamTest, WorkOnAStreamRunsInOrder) {
  const int64_t n = 777;
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(d, 0, n * sizeof(int64_t)));
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  int64_t expected = 0;
  for (int64_t step = 0; step < 200; ++step) {
    int64_t mul = 1 + step % 3, add = step;
    axpb(d, n, mul, add, stream, step % 10 == 0 ? 100'000 : 0, 1 + step % 5);
    expected = axpbValue(expected, mul, add);
  }
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  EXPECT_EQ(download(d, n), std::vector<int64_t>(n, expected));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(StreamTest, WorkIsAsynchronousToTheHost) {
  maiaGetLastError();  // start from a clean last error
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  MAIA_ASSERT_OK(maiaStreamQuery(stream));
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, Gate::wait, &gate));
  EXPECT_EQ(maiaStreamQuery(stream), maiaErrorNotReady);
  EXPECT_EQ(maiaGetLastError(), maiaSuccess) << "not-ready is not an error";
  gate.open = true;
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  MAIA_ASSERT_OK(maiaStreamQuery(stream));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
}

void recordThread(void* out) { *static_cast<std::thread::id*>(out) = std::this_thread::get_id(); }

TEST(StreamTest, WorkRunsOnDeviceCoresNotOnTheCallingThread) {
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  std::thread::id ran_on;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, recordThread, &ran_on));
  // Poll rather than synchronize: a synchronizing host may help run work.
  while (maiaStreamQuery(stream) == maiaErrorNotReady) std::this_thread::yield();
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_NE(ran_on, std::thread::id());
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
}

// A host that polls never runs work itself: every launch must reach a core,
// including one enqueued just as the cores decide to park (they park while a
// synchronizing host runs the work, so the rounds alternate). Each launch
// gets seconds to complete; a lost wake-up leaves it queued for good.
TEST(StreamTest, PolledLaunchesAlwaysReachACore) {
  int64_t grid[3] = {1, 1, 1};
  for (int round = 0; round < 60; ++round) {
    for (int i = 0; i < 1000; ++i) {
      MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("empty"), grid, nullptr, 0, nullptr));
      MAIA_ASSERT_OK(maiaStreamSynchronize(nullptr));
    }
    for (int i = 0; i < 1000; ++i) {
      MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("empty"), grid, nullptr, 0, nullptr));
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (maiaStreamQuery(nullptr) == maiaErrorNotReady)
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "launch " << i << " never ran";
    }
  }
}

TEST(StreamTest, EachDeviceHasADefaultStreamAndNullMeansTheCurrentOne) {
  maiaStream_t s0, s1;
  MAIA_ASSERT_OK(maiaStreamGetDefault(&s0, 0));
  MAIA_ASSERT_OK(maiaStreamGetDefault(&s1, 1));
  EXPECT_NE(s0, s1);
  int device = -1;
  MAIA_ASSERT_OK(maiaStreamGetDevice(s1, &device));
  EXPECT_EQ(device, 1);
  MAIA_ASSERT_OK(maiaSetDevice(1));
  MAIA_ASSERT_OK(maiaStreamGetDevice(nullptr, &device));
  EXPECT_EQ(device, 1);
  maiaStream_t created;
  MAIA_ASSERT_OK(maiaStreamCreate(&created, 0));
  MAIA_ASSERT_OK(maiaStreamGetDevice(created, &device));
  EXPECT_EQ(device, 1);
  MAIA_ASSERT_OK(maiaStreamDestroy(created));
  MAIA_ASSERT_OK(maiaSetDevice(0));
  MAIA_EXPECT_ERROR(maiaStreamDestroy(s0), maiaErrorInvalidHandle, "cannot be destroyed");
  MAIA_EXPECT_ERROR(maiaStreamDestroy(nullptr), maiaErrorInvalidHandle, "cannot be destroyed");
}

TEST(StreamTest, PrioritiesAreClampedToTheDeviceRange) {
  int least = 0, greatest = 0;
  MAIA_ASSERT_OK(maiaDeviceGetStreamPriorityRange(&least, &greatest));
  maiaStream_t high, low;
  MAIA_ASSERT_OK(maiaStreamCreate(&high, -100));
  MAIA_ASSERT_OK(maiaStreamCreate(&low, 100));
  int priority = 1;
  MAIA_ASSERT_OK(maiaStreamGetPriority(high, &priority));
  EXPECT_EQ(priority, greatest);
  MAIA_ASSERT_OK(maiaStreamGetPriority(low, &priority));
  EXPECT_EQ(priority, least);
  MAIA_ASSERT_OK(maiaStreamDestroy(high));
  MAIA_ASSERT_OK(maiaStreamDestroy(low));
}

TEST(StreamTest, DestroyingAStreamWithPendingWorkIsRefused) {
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, Gate::wait, &gate));
  MAIA_EXPECT_ERROR(maiaStreamDestroy(stream), maiaErrorStreamBusy,
                    "1 command(s) still pending; synchronize it first");
  // The stream is untouched and still usable.
  Gate second;
  second.open = true;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, Gate::wait, &second));
  gate.open = true;
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_EXPECT_ERROR(maiaStreamSynchronize(stream), maiaErrorInvalidHandle, "not a live stream");
  MAIA_EXPECT_ERROR(maiaStreamDestroy(stream), maiaErrorInvalidHandle, "not a live stream");
}

TEST(StreamTest, ForeignHandlesAreRejected) {
  int not_a_stream = 0;
  auto foreign = reinterpret_cast<maiaStream_t>(&not_a_stream);
  MAIA_EXPECT_ERROR(maiaStreamQuery(foreign), maiaErrorInvalidHandle, "not a live stream");
  MAIA_EXPECT_ERROR(maiaLaunchHostFunc(foreign, Gate::wait, nullptr), maiaErrorInvalidHandle,
                    "not a live stream");
  MAIA_EXPECT_ERROR(maiaLaunchHostFunc(nullptr, nullptr, nullptr), maiaErrorInvalidValue,
                    "fn is NULL");
  MAIA_EXPECT_ERROR(maiaStreamCreate(nullptr, 0), maiaErrorInvalidValue, "out_stream");
}

TEST(StreamTest, DeviceSynchronizeWaitsForEveryStreamOfTheDevice) {
  const int64_t n = 64;
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, 4 * n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(d, 0, 4 * n * sizeof(int64_t)));
  std::vector<maiaStream_t> streams(4);
  for (int i = 0; i < 4; ++i) {
    MAIA_ASSERT_OK(maiaStreamCreate(&streams[i], 0));
    axpb(static_cast<int64_t*>(d) + i * n, n, 1, i + 1, streams[i], 2'000'000);
  }
  MAIA_ASSERT_OK(maiaDeviceSynchronize());
  for (auto s : streams) EXPECT_EQ(maiaStreamQuery(s), maiaSuccess);
  auto out = download(d, 4 * n);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i * n], i + 1);
  for (auto s : streams) MAIA_ASSERT_OK(maiaStreamDestroy(s));
  MAIA_ASSERT_OK(maiaFree(d));
}

// A stream holds MAIA_QUEUE_DEPTH commands; the child process sets a depth
// of 4 before the driver starts.
TEST(StreamQueueTest, AnEnqueueOnAFullStreamWaitsUntilACommandCompletes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("MAIA_QUEUE_DEPTH", "4", 1);
        const int64_t n = 64;
        const int64_t launches = 10;
        void* d = nullptr;
        maiaStream_t stream;
        if (maiaMalloc(&d, n * sizeof(int64_t)) != maiaSuccess ||
            maiaMemset(d, 0, n * sizeof(int64_t)) != maiaSuccess ||
            maiaStreamCreate(&stream, 0) != maiaSuccess)
          std::exit(10);
        Gate gate;
        maiaLaunchHostFunc(stream, Gate::wait, &gate);
        std::atomic<int> returned{0};
        std::thread enqueuer([&] {
          for (int64_t i = 0; i < launches; ++i) {
            axpb(d, n, 2, i, stream);
            returned.fetch_add(1);
          }
        });
        // The gate and three launches fill the queue; the fourth waits.
        while (returned.load() < 3) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (returned.load() != 3) std::exit(11);
        gate.open = true;
        enqueuer.join();
        maiaStreamSynchronize(stream);
        int64_t expected = 0;
        for (int64_t i = 0; i < launches; ++i) expected = axpbValue(expected, 2, i);
        bool all_expected = true;
        for (int64_t value : download(d, n)) all_expected &= value == expected;
        std::exit(all_expected ? 0 : 12);
      },
      ::testing::ExitedWithCode(0), "");
}

/// Host functions that record the order they ran in.
struct OrderLog {
  struct Entry {
    OrderLog* log;
    int index;
  };
  std::vector<Entry> entries;
  std::vector<int> ran;

  explicit OrderLog(int n) {
    for (int i = 0; i < n; ++i) entries.push_back({this, i});
  }
  static void record(void* entry) {
    auto* e = static_cast<Entry*>(entry);
    e->log->ran.push_back(e->index);
  }
};

// A stream's ring of commands starts small and grows with the backlog: a
// backlog built behind a gate, starting mid-ring (after earlier commands
// completed), runs complete and in order.
TEST(StreamQueueTest, ABacklogLongerThanTheRingRunsInOrder) {
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  const int before = 37, backlog = 900;  // below the default depth (1024): never waits
  OrderLog log(before + backlog);
  for (int i = 0; i < before; ++i)
    MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, OrderLog::record, &log.entries[i]));
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, Gate::wait, &gate));
  for (int i = before; i < before + backlog; ++i)
    MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, OrderLog::record, &log.entries[i]));
  EXPECT_EQ(maiaStreamQuery(stream), maiaErrorNotReady);
  maiaGetLastError();
  gate.open = true;
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  ASSERT_EQ(log.ran.size(), static_cast<size_t>(before + backlog));
  for (int i = 0; i < before + backlog; ++i) ASSERT_EQ(log.ran[i], i);
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
}

TEST(StreamQueueTest, AMalformedDepthIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("MAIA_QUEUE_DEPTH", "0", 1);
        int count = 0;
        maiaError_t error = maiaGetDeviceCount(&count);
        std::fprintf(stderr, "%s\n", maiaGetLastErrorMessage());
        std::exit(error == maiaErrorInitialization ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "MAIA_QUEUE_DEPTH='0' is not a number of commands");
}

void setFlag(void* flag) { static_cast<std::atomic<int>*>(flag)->store(1); }

// Runs only with MAIA_LAUNCH_BLOCKING=1 (registered so by CMakeLists.txt).
TEST(LaunchBlockingTest, EveryCallReturnsAfterItsWorkCompleted) {
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  std::atomic<int> flag{0};
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, setFlag, &flag));
  EXPECT_EQ(flag.load(), 1);
  const int64_t n = 100;
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemsetAsync(d, 0, n * sizeof(int64_t), stream));
  axpb(d, n, 1, 5, stream, 5'000'000);
  EXPECT_EQ(maiaStreamQuery(stream), maiaSuccess);
  EXPECT_EQ(download(d, n), std::vector<int64_t>(n, 5));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(LaunchBlockingTest, AKernelFaultIsReportedByTheLaunchItself) {
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, 64 * sizeof(int32_t)));
  maiaKernelArg args[2] = {vectorArg(d, maiaDtypeI32, 64), scalarArg(maiaDtypeI64, int64_t{0})};
  int64_t grid[3] = {8, 1, 1};
  MAIA_EXPECT_ERROR(maiaLaunchKernel(basicKernel("trap_at"), grid, args, 2, nullptr),
                    maiaErrorLaunchFailure, "kernel 'trap_at'");
  MAIA_ASSERT_OK(maiaDeviceReset(0));
  MAIA_ASSERT_OK(maiaFree(d));
}

}  // namespace

namespace {

/// Appends tag to a shared log when its host function runs.
struct LogEntry {
  std::vector<int>* log;
  std::atomic<int>* done;
  int tag;
  static void append(void* self) {
    auto* entry = static_cast<LogEntry*>(self);
    entry->log->push_back(entry->tag);
    entry->done->fetch_add(1);
  }
};

}  // namespace

/// Child body: exits 0 when the high-priority stream's commands ran first.
[[noreturn]] void runTwoPrioritiesOnOneCore() {
  setenv("MAIA_NUM_CORES", "1", 1);
  int least = 0, greatest = 0;
  maiaStream_t gate_stream, low, high;
  maiaEvent_t opened;
  if (maiaDeviceGetStreamPriorityRange(&least, &greatest) != maiaSuccess ||
      maiaStreamCreate(&gate_stream, least) != maiaSuccess ||
      maiaStreamCreate(&low, least) != maiaSuccess ||
      maiaStreamCreate(&high, greatest) != maiaSuccess ||
      maiaEventCreate(&opened, maiaEventDisableTiming) != maiaSuccess)
    std::exit(10);
  Gate gate;
  maiaLaunchHostFunc(gate_stream, Gate::wait, &gate);
  maiaEventRecord(opened, gate_stream);
  maiaStreamWaitEvent(low, opened);
  maiaStreamWaitEvent(high, opened);
  std::vector<int> log;
  std::atomic<int> done{0};
  std::vector<LogEntry> entries;
  for (int i = 0; i < 6; ++i) entries.push_back(LogEntry{&log, &done, i < 3 ? 0 : 1});
  for (int i = 0; i < 6; ++i)
    maiaLaunchHostFunc(i < 3 ? low : high, LogEntry::append, &entries[i]);
  gate.open = true;
  while (done.load() < 6) std::this_thread::yield();
  maiaStreamSynchronize(low);
  maiaStreamSynchronize(high);
  const std::vector<int> high_first{1, 1, 1, 0, 0, 0};
  std::exit(log == high_first ? 0 : 11);
}

// With one core and two streams made ready by the same event, the core runs
// the higher-priority stream's work first. The child process sets one core
// before the driver starts; the host does not synchronize (it would help run
// the work) until every command ran.
TEST(StreamPriorityTest, AHigherPriorityStreamRunsFirstWhenBothAreReady) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(runTwoPrioritiesOnOneCore(), testing::ExitedWithCode(0), "");
}
