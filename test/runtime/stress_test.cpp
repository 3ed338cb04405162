// Correctness under load: many host threads driving many streams and
// events on both devices at once; every result is checked.
#include <random>
#include <thread>
#include <vector>

#include "test_util.h"

using namespace maia_test;

namespace {

// Each thread runs a pipeline over a ring of streams on its device: stage
// k waits on stage k-1's event, then transforms the shared buffer. Any
// ordering bug changes the final value.
TEST(StressTest, ManyThreadsStreamsAndEventsOnBothDevices) {
  const int kThreads = 8, kStreams = 4, kRounds = 60;
  const int64_t n = 512;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto fail = [&] { ++failures[t]; };
      if (maiaSetDevice(t % 2) != maiaSuccess) return fail();
      void* data = nullptr;
      if (maiaMalloc(&data, n * sizeof(int64_t)) != maiaSuccess) return fail();
      maiaMemset(data, 0, n * sizeof(int64_t));
      std::vector<maiaStream_t> streams(kStreams);
      std::vector<maiaEvent_t> events(kStreams);
      for (int s = 0; s < kStreams; ++s) {
        maiaStreamCreate(&streams[s], -(s % 3));
        maiaEventCreate(&events[s], maiaEventDisableTiming);
      }
      std::mt19937 rng(t);
      int64_t expected = 0;
      int previous = -1;
      for (int round = 0; round < kRounds; ++round) {
        int s = static_cast<int>(rng() % kStreams);
        if (previous >= 0 && maiaStreamWaitEvent(streams[s], events[previous]) != maiaSuccess)
          return fail();
        int64_t mul = 1 + static_cast<int64_t>(rng() % 3), add = static_cast<int64_t>(rng() % 7);
        axpb(data, n, mul, add, streams[s], round % 7 == 0 ? 200'000 : 0, 1 + round % 4);
        expected = axpbValue(expected, mul, add);
        if (maiaEventRecord(events[s], streams[s]) != maiaSuccess) return fail();
        previous = s;
      }
      if (maiaEventSynchronize(events[previous]) != maiaSuccess) return fail();
      std::vector<int64_t> out(n);
      // Read back on another stream, ordered by the last event only.
      maiaStream_t reader = streams[(previous + 1) % kStreams];
      maiaStreamWaitEvent(reader, events[previous]);
      maiaMemcpyAsync(out.data(), data, n * sizeof(int64_t), maiaMemcpyDeviceToHost, reader);
      for (int64_t v : out)
        if (v != expected) return fail();
      for (int s = 0; s < kStreams; ++s) {
        if (maiaStreamSynchronize(streams[s]) != maiaSuccess) return fail();
        maiaStreamDestroy(streams[s]);
        maiaEventDestroy(events[s]);
      }
      maiaFree(data);
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(StressTest, ConcurrentAllocationsKeepTheirContents) {
  const int kThreads = 6, kIterations = 200;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      maiaSetDevice(t % 2);
      std::mt19937 rng(100 + t);
      std::vector<std::pair<void*, std::vector<uint8_t>>> live;
      for (int i = 0; i < kIterations; ++i) {
        if (live.size() < 8 && rng() % 3 != 0) {
          size_t size = 1 + rng() % (1 << 18);
          std::vector<uint8_t> bytes(size, static_cast<uint8_t>(rng()));
          void* p = nullptr;
          if (maiaMalloc(&p, size) != maiaSuccess ||
              maiaMemcpyAsync(p, bytes.data(), size, maiaMemcpyHostToDevice, nullptr) !=
                  maiaSuccess) {
            ++failures[t];
            return;
          }
          live.emplace_back(p, std::move(bytes));
        } else if (!live.empty()) {
          auto& [p, bytes] = live.back();
          std::vector<uint8_t> out(bytes.size());
          maiaMemcpy(out.data(), p, out.size(), maiaMemcpyDeviceToHost);
          if (out != bytes) ++failures[t];
          maiaFree(p);
          live.pop_back();
        }
      }
      for (auto& [p, bytes] : live) maiaFree(p);
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(StressTest, HostFunctionsAndKernelsInterleaveAcrossManyStreams) {
  const int kStreams = 16, kPerStream = 50;
  std::vector<maiaStream_t> streams(kStreams);
  std::vector<std::atomic<int>> counters(kStreams);
  for (auto& s : streams) MAIA_ASSERT_OK(maiaStreamCreate(&s, 0));
  struct Step {
    std::atomic<int>* counter;
    int expected;
    std::atomic<int>* errors;
  };
  std::atomic<int> errors{0};
  std::vector<Step> steps;
  steps.reserve(kStreams * kPerStream);
  for (int i = 0; i < kPerStream; ++i)
    for (int s = 0; s < kStreams; ++s) {
      steps.push_back({&counters[s], i, &errors});
      MAIA_ASSERT_OK(maiaLaunchHostFunc(
          streams[s],
          [](void* p) {
            auto* step = static_cast<Step*>(p);
            // In-order: step i of a stream sees exactly i earlier steps.
            if (step->counter->fetch_add(1) != step->expected) step->errors->fetch_add(1);
          },
          &steps.back()));
      int64_t grid[3] = {3, 1, 1};
      MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("empty"), grid, nullptr, 0, streams[s]));
    }
  MAIA_ASSERT_OK(maiaDeviceSynchronize());
  EXPECT_EQ(errors.load(), 0);
  for (auto& c : counters) EXPECT_EQ(c.load(), kPerStream);
  for (auto& s : streams) MAIA_ASSERT_OK(maiaStreamDestroy(s));
}

}  // namespace
