// The caching device allocator and the pinned host allocator, through the
// c10 interfaces PyTorch calls. Run with MAIA_DEVICE_MEMORY=1G (ctest sets
// it); each test starts from an empty cache and reset statistics.
#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "MaiaCachingAllocator.h"
#include "MaiaCheck.h"
#include "MaiaFunctions.h"
#include "MaiaHostAllocator.h"
#include "MaiaStream.h"
#include "test_util.h"

namespace {

using c10::CachingDeviceAllocator::DeviceStats;
using torch_maia::driverStream;
using torch_maia::getMaiaCachingAllocator;
using torch_maia::getMaiaHostAllocator;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;
constexpr size_t kAll = 0, kSmall = 1, kLarge = 2;  // StatType indices

/// Holds a stream with a host function until release(): work queued behind it
/// cannot complete, without depending on timing.
class HeldStream {
 public:
  explicit HeldStream(c10::Stream stream) : stream_(stream) {
    MAIA_CHECK(maiaLaunchHostFunc(driverStream(stream), &maia_test::Gate::wait, &gate_));
  }
  ~HeldStream() { release(); }
  void release() {
    if (released_) return;
    released_ = true;
    gate_.open = true;
    MAIA_CHECK(maiaStreamSynchronize(driverStream(stream_)));
  }

 private:
  c10::Stream stream_;
  maia_test::Gate gate_;
  bool released_ = false;
};

/// Makes stream current for the scope.
class StreamScope {
 public:
  explicit StreamScope(c10::Stream stream) : previous_(torch_maia::exchangeStream(stream)) {}
  ~StreamScope() { torch_maia::exchangeStream(previous_); }

 private:
  c10::Stream previous_;
};

class CachingAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    torch_maia::setDevice(0);
    for (c10::DeviceIndex d = 0; d < torch_maia::deviceCount(); ++d) {
      torch_maia::exchangeStream(torch_maia::defaultStream(d));
      alloc->resetAccumulatedStats(d);
    }
    alloc->emptyCache();
    for (c10::DeviceIndex d = 0; d < torch_maia::deviceCount(); ++d) {
      alloc->resetAccumulatedStats(d);
      alloc->resetPeakStats(d);
    }
  }
  void TearDown() override { torch_maia::setDevice(0); }

  DeviceStats stats(c10::DeviceIndex device = 0) { return alloc->getDeviceStats(device); }

  c10::DeviceAllocator* alloc = getMaiaCachingAllocator();
};

TEST_F(CachingAllocatorTest, IsRegisteredForPrivateUse1) {
  EXPECT_EQ(c10::GetAllocator(c10::DeviceType::PrivateUse1), alloc);
  EXPECT_EQ(c10::getDeviceAllocator(c10::DeviceType::PrivateUse1), alloc);
  EXPECT_EQ(at::getHostAllocator(at::kPrivateUse1), getMaiaHostAllocator());
  EXPECT_TRUE(alloc->initialized());
}

TEST_F(CachingAllocatorTest, SmallAllocationStatsAreExact) {
  c10::DataPtr p = alloc->allocate(1000);
  ASSERT_NE(p.get(), nullptr);
  EXPECT_EQ(p.device(), c10::Device(c10::DeviceType::PrivateUse1, 0));
  DeviceStats s = stats();
  for (size_t t : {kAll, kSmall}) {
    EXPECT_EQ(s.requested_bytes[t].current, 1000);  // never rounded
    EXPECT_EQ(s.allocated_bytes[t].current, 1024);
    EXPECT_EQ(s.active_bytes[t].current, 1024);
    EXPECT_EQ(s.reserved_bytes[t].current, 2 * kMiB);
    EXPECT_EQ(s.allocation[t].current, 1);
    EXPECT_EQ(s.active[t].current, 1);
    EXPECT_EQ(s.segment[t].current, 1);
    EXPECT_EQ(s.inactive_split[t].current, 1);
    EXPECT_EQ(s.inactive_split_bytes[t].current, 2 * kMiB - 1024);
  }
  EXPECT_EQ(s.reserved_bytes[kLarge].current, 0);
  EXPECT_EQ(s.allocation[kLarge].allocated, 0);
  EXPECT_EQ(s.num_device_alloc, 1);

  p.clear();
  s = stats();
  EXPECT_EQ(s.requested_bytes[kAll].current, 0);
  EXPECT_EQ(s.allocated_bytes[kAll].current, 0);
  EXPECT_EQ(s.active_bytes[kAll].current, 0);
  EXPECT_EQ(s.active[kAll].current, 0);
  EXPECT_EQ(s.reserved_bytes[kAll].current, 2 * kMiB);  // cached, not returned
  EXPECT_EQ(s.inactive_split[kAll].current, 0);          // merged back whole
  EXPECT_EQ(s.inactive_split_bytes[kAll].current, 0);
  EXPECT_EQ(s.allocated_bytes[kAll].peak, 1024);
  EXPECT_EQ(s.allocated_bytes[kAll].allocated, 1024);
  EXPECT_EQ(s.allocated_bytes[kAll].freed, 1024);
  EXPECT_EQ(s.requested_bytes[kAll].freed, 1000);
  EXPECT_EQ(torch_maia::cachedBlockCount(0), 1u);
}

TEST_F(CachingAllocatorTest, ReuseDoesNotGrowReserved) {
  c10::DataPtr p = alloc->allocate(1000);
  void* first = p.get();
  p.clear();
  c10::DataPtr q = alloc->allocate(900);
  EXPECT_EQ(q.get(), first);
  DeviceStats s = stats();
  EXPECT_EQ(s.reserved_bytes[kAll].current, 2 * kMiB);
  EXPECT_EQ(s.num_device_alloc, 1);
  EXPECT_EQ(s.requested_bytes[kAll].current, 900);
  EXPECT_EQ(s.allocation[kAll].allocated, 2);
}

TEST_F(CachingAllocatorTest, EmptyCacheReleasesFreeSegmentsOnly) {
  c10::DataPtr kept = alloc->allocate(100);
  c10::DataPtr medium = alloc->allocate(5 * kMiB);  // 20 MiB segment
  c10::DataPtr large = alloc->allocate(16 * kMiB);  // its own segment
  EXPECT_EQ(stats().reserved_bytes[kAll].current, (2 + 20 + 16) * kMiB);
  EXPECT_EQ(stats().reserved_bytes[kLarge].current, 36 * kMiB);
  medium.clear();
  large.clear();
  alloc->emptyCache();
  DeviceStats s = stats();
  EXPECT_EQ(s.reserved_bytes[kAll].current, 2 * kMiB);  // kept's segment is in use
  EXPECT_EQ(s.segment[kAll].current, 1);
  EXPECT_EQ(s.num_device_free, 2);
  kept.clear();
  alloc->emptyCache();
  s = stats();
  EXPECT_EQ(s.reserved_bytes[kAll].current, 0);
  EXPECT_EQ(s.segment[kAll].current, 0);
  EXPECT_EQ(s.num_device_free, 3);
  EXPECT_EQ(torch_maia::cachedBlockCount(0), 0u);
}

TEST_F(CachingAllocatorTest, PeaksAndResetPeakStats) {
  c10::DataPtr a = alloc->allocate(kMiB);
  c10::DataPtr b = alloc->allocate(kMiB);
  b.clear();
  DeviceStats s = stats();
  EXPECT_EQ(s.allocated_bytes[kAll].current, kMiB);
  EXPECT_EQ(s.allocated_bytes[kAll].peak, 2 * kMiB);
  EXPECT_EQ(s.requested_bytes[kAll].peak, 2 * kMiB);
  EXPECT_EQ(s.allocation[kAll].peak, 2);
  alloc->resetPeakStats(0);
  s = stats();
  EXPECT_EQ(s.allocated_bytes[kAll].peak, kMiB);
  EXPECT_EQ(s.allocation[kAll].peak, 1);
  EXPECT_EQ(s.allocated_bytes[kAll].allocated, 2 * kMiB);  // accumulated survive
  alloc->resetAccumulatedStats(0);
  s = stats();
  EXPECT_EQ(s.allocated_bytes[kAll].allocated, 0);
  EXPECT_EQ(s.allocated_bytes[kAll].freed, 0);
  EXPECT_EQ(s.num_device_alloc, 0);
  EXPECT_EQ(s.allocated_bytes[kAll].current, kMiB);
}

TEST_F(CachingAllocatorTest, LargeAllocationsGetTheirOwnSegment) {
  c10::DataPtr a = alloc->allocate(12 * kMiB);
  c10::DataPtr b = alloc->allocate(12 * kMiB);
  DeviceStats s = stats();
  EXPECT_EQ(s.segment[kLarge].current, 2);
  EXPECT_EQ(s.reserved_bytes[kLarge].current, 24 * kMiB);
  EXPECT_EQ(s.inactive_split[kLarge].current, 0);
  EXPECT_EQ(s.segment[kSmall].current, 0);
  // 1-10 MiB requests share 20 MiB segments, split while > 1 MiB remains.
  c10::DataPtr c = alloc->allocate(3 * kMiB);
  c10::DataPtr d = alloc->allocate(3 * kMiB + 1);
  s = stats();
  EXPECT_EQ(s.segment[kLarge].current, 3);
  EXPECT_EQ(static_cast<char*>(d.get()), static_cast<char*>(c.get()) + 3 * kMiB);
  EXPECT_EQ(s.allocated_bytes[kLarge].current, 24 * kMiB + 6 * kMiB + 512);
  EXPECT_EQ(s.requested_bytes[kLarge].current, 24 * kMiB + 6 * kMiB + 1);
  EXPECT_EQ(s.inactive_split_bytes[kLarge].current, 14 * kMiB - 512);
}

TEST_F(CachingAllocatorTest, SplitsAndMergesNeighbours) {
  c10::DataPtr a = alloc->allocate(1000);
  c10::DataPtr b = alloc->allocate(2000);
  c10::DataPtr c = alloc->allocate(3000);
  char* base = static_cast<char*>(a.get());
  EXPECT_EQ(b.get(), base + 1024);
  EXPECT_EQ(c.get(), base + 1024 + 2048);
  EXPECT_EQ(stats().inactive_split_bytes[kAll].current, 2 * kMiB - 6144);
  b.clear();  // a hole between two allocations
  DeviceStats s = stats();
  EXPECT_EQ(s.inactive_split[kAll].current, 2);
  EXPECT_EQ(s.inactive_split_bytes[kAll].current, 2 * kMiB - 6144 + 2048);
  c10::DataPtr d = alloc->allocate(1500);  // best fit: the hole, split again
  EXPECT_EQ(d.get(), base + 1024);
  s = stats();
  EXPECT_EQ(s.inactive_split[kAll].current, 2);
  EXPECT_EQ(s.inactive_split_bytes[kAll].current, 2 * kMiB - 6144 + 512);
  a.clear();
  c.clear();
  d.clear();
  s = stats();
  EXPECT_EQ(s.inactive_split[kAll].current, 0);
  EXPECT_EQ(s.inactive_split_bytes[kAll].current, 0);
  EXPECT_EQ(torch_maia::cachedBlockCount(0), 1u);  // one whole segment again
  c10::DataPtr whole = alloc->allocate(kMiB);
  EXPECT_EQ(whole.get(), base);
}

TEST_F(CachingAllocatorTest, BlocksAreReusedOnlyOnTheirStreamWhileItIsBusy) {
  c10::Stream side = torch_maia::newStream(0, 0);
  c10::DataPtr p;
  {
    StreamScope scope(side);
    p = alloc->allocate(1000);
  }
  void* first = p.get();
  HeldStream held(side);
  p.clear();  // free, but side may still be using it
  c10::DataPtr q = alloc->allocate(1000);  // on the default stream
  EXPECT_NE(q.get(), first);
  EXPECT_EQ(stats().segment[kAll].current, 2);
  held.release();
  StreamScope scope(side);
  c10::DataPtr r = alloc->allocate(1000);
  EXPECT_EQ(r.get(), first);
}

TEST_F(CachingAllocatorTest, IdleStreamsSegmentsMoveToOtherStreams) {
  c10::Stream side = torch_maia::newStream(0, 0);
  c10::DataPtr p;
  {
    StreamScope scope(side);
    p = alloc->allocate(1000);
  }
  void* first = p.get();
  p.clear();
  MAIA_CHECK(maiaStreamSynchronize(driverStream(side)));  // idle: reuse is safe
  c10::DataPtr q = alloc->allocate(1000);
  EXPECT_EQ(q.get(), first);
  EXPECT_EQ(stats().reserved_bytes[kAll].current, 2 * kMiB);
}

TEST_F(CachingAllocatorTest, RecordStreamDelaysReuseUntilTheStreamsWorkIsDone) {
  c10::Stream side = torch_maia::newStream(0, 0);
  c10::DataPtr p = alloc->allocate(1000);
  void* first = p.get();
  HeldStream held(side);
  alloc->recordStream(p, side);
  alloc->recordStream(p, torch_maia::currentStream(0));  // the allocation stream: no-op
  p.clear();
  DeviceStats s = stats();
  EXPECT_EQ(s.allocated_bytes[kAll].current, 0);
  EXPECT_EQ(s.active[kAll].current, 1);  // still in use by side
  EXPECT_EQ(s.requested_bytes[kAll].current, 1000);
  c10::DataPtr q = alloc->allocate(1000);
  EXPECT_NE(q.get(), first);
  held.release();
  c10::DataPtr r = alloc->allocate(1000);  // pending events are processed first
  EXPECT_EQ(r.get(), first);
  s = stats();
  EXPECT_EQ(s.active[kAll].current, 2);
  EXPECT_EQ(s.requested_bytes[kAll].current, 2000);
}

TEST_F(CachingAllocatorTest, EmptyCacheWaitsForRecordedStreams) {
  c10::Stream side = torch_maia::newStream(0, 0);
  c10::DataPtr p = alloc->allocate(12 * kMiB);
  alloc->recordStream(p, side);
  p.clear();
  alloc->emptyCache();
  DeviceStats s = stats();
  EXPECT_EQ(s.reserved_bytes[kAll].current, 0);
  EXPECT_EQ(s.active[kAll].current, 0);
}

TEST_F(CachingAllocatorTest, OutOfMemoryNamesTheRequestAndTheProcessKeepsWorking) {
  c10::DataPtr kept = alloc->allocate(kMiB);
  std::vector<int64_t> data(kMiB / 8, 7);
  MAIA_CHECK(maiaMemcpy(kept.get(), data.data(), kMiB, maiaMemcpyHostToDevice));
  try {
    alloc->allocate(2048 * kMiB);
    FAIL() << "allocating 2 GiB of a 1 GiB device succeeded";
  } catch (const c10::OutOfMemoryError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("2.00 GiB (2147483648 bytes)"), std::string::npos) << message;
    EXPECT_NE(message.find("maia:0"), std::string::npos) << message;
    EXPECT_NE(message.find("total capacity of 1024.00 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("1024.00 KiB is allocated by PyTorch"), std::string::npos) << message;
    EXPECT_NE(message.find("2.00 MiB is reserved by PyTorch"), std::string::npos) << message;
    EXPECT_NE(message.find("Driver: out of memory on maia:0"), std::string::npos) << message;
  }
  DeviceStats s = stats();
  EXPECT_EQ(s.num_ooms, 1);
  EXPECT_EQ(s.num_alloc_retries, 1);
  c10::DataPtr after = alloc->allocate(100 * kMiB);
  EXPECT_NE(after.get(), nullptr);
  std::vector<int64_t> back(kMiB / 8, 0);
  MAIA_CHECK(maiaMemcpy(back.data(), kept.get(), kMiB, maiaMemcpyDeviceToHost));
  EXPECT_EQ(back, data);
}

TEST_F(CachingAllocatorTest, DeviceOutOfMemoryReleasesTheCacheAndRetries) {
  c10::DataPtr p = alloc->allocate(600 * kMiB);
  p.clear();  // cached: 600 MiB of the 1 GiB stays reserved
  c10::DataPtr q = alloc->allocate(700 * kMiB);
  DeviceStats s = stats();
  EXPECT_EQ(s.num_alloc_retries, 1);
  EXPECT_EQ(s.num_ooms, 0);
  EXPECT_EQ(s.num_device_free, 1);
  EXPECT_EQ(s.reserved_bytes[kAll].current, 700 * kMiB);
}

TEST_F(CachingAllocatorTest, GetMemoryInfoAsksTheDevice) {
  auto [free_before, total] = alloc->getMemoryInfo(0);
  EXPECT_EQ(total, static_cast<size_t>(1024 * kMiB));
  c10::DataPtr p = alloc->allocate(12 * kMiB);
  EXPECT_EQ(alloc->getMemoryInfo(0).first, free_before - 12 * kMiB);
  if (torch_maia::deviceCount() > 1) {
    EXPECT_EQ(alloc->getMemoryInfo(1).second, static_cast<size_t>(1024 * kMiB));
    EXPECT_EQ(torch_maia::currentDevice(), 0);  // restored
  }
}

TEST_F(CachingAllocatorTest, AllocatesOnTheCurrentDevice) {
  if (torch_maia::deviceCount() < 2) GTEST_SKIP() << "needs two maia devices";
  torch_maia::setDevice(1);
  c10::DataPtr p = alloc->allocate(1000);
  c10::DataPtr empty = alloc->allocate(0);
  torch_maia::setDevice(0);
  EXPECT_EQ(p.device(), c10::Device(c10::DeviceType::PrivateUse1, 1));
  EXPECT_EQ(empty.device(), c10::Device(c10::DeviceType::PrivateUse1, 1));
  maiaPointerAttributes attributes;
  MAIA_CHECK(maiaPointerGetAttributes(&attributes, p.get()));
  EXPECT_EQ(attributes.device, 1);
  EXPECT_EQ(stats(1).allocated_bytes[kAll].current, 1024);
  EXPECT_EQ(stats(0).allocated_bytes[kAll].allocated, 0);
  p.clear();  // freed from device 0 into device 1's cache
  EXPECT_EQ(stats(1).allocated_bytes[kAll].current, 0);
  EXPECT_EQ(stats(1).reserved_bytes[kAll].current, 2 * kMiB);
  alloc->emptyCache();
  EXPECT_EQ(stats(1).reserved_bytes[kAll].current, 0);
}

TEST_F(CachingAllocatorTest, ZeroSizeAllocationIsNullOnTheDevice) {
  c10::DataPtr p = alloc->allocate(0);
  EXPECT_EQ(p.get(), nullptr);
  EXPECT_EQ(p.device(), c10::Device(c10::DeviceType::PrivateUse1, 0));
  EXPECT_EQ(stats().allocation[kAll].allocated, 0);
}

TEST_F(CachingAllocatorTest, RawAllocateCopyDataAndClone) {
  void* a = alloc->raw_allocate(4096);
  std::vector<int64_t> data(512);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int64_t>(i * 3);
  MAIA_CHECK(maiaMemcpy(a, data.data(), 4096, maiaMemcpyHostToDevice));
  c10::DataPtr copy = alloc->clone(a, 4096);
  std::vector<int64_t> back(512);
  MAIA_CHECK(maiaMemcpy(back.data(), copy.get(), 4096, maiaMemcpyDeviceToHost));
  EXPECT_EQ(back, data);
  alloc->raw_deallocate(a);
  EXPECT_EQ(stats().allocation[kAll].current, 1);
  int unknown = 0;
  EXPECT_THROW(alloc->raw_deallocate(&unknown), c10::Error);
}

TEST_F(CachingAllocatorTest, ConcurrentAllocateAndFreeNeverOverlap) {
  constexpr int kThreads = 4, kIterations = 1500;
  std::mutex live_mutex;
  std::map<uintptr_t, uintptr_t> live;  // start -> end of every live allocation
  std::atomic<int> overlaps{0};
  auto worker = [&](int id) {
    torch_maia::setDevice(0);
    std::vector<c10::DataPtr> held(8);
    for (int i = 0; i < kIterations; ++i) {
      size_t size = 1 + static_cast<size_t>((i * 7919 + id * 104729) % (3 * kMiB));
      c10::DataPtr& slot = held[static_cast<size_t>(i) % held.size()];
      if (slot) {
        std::lock_guard<std::mutex> lock(live_mutex);
        live.erase(reinterpret_cast<uintptr_t>(slot.get()));
      }
      slot.clear();
      slot = alloc->allocate(size);
      uintptr_t start = reinterpret_cast<uintptr_t>(slot.get());
      std::lock_guard<std::mutex> lock(live_mutex);
      auto next = live.lower_bound(start);
      if (next != live.end() && next->first < start + size) overlaps++;
      if (next != live.begin() && std::prev(next)->second > start) overlaps++;
      live[start] = start + size;
    }
    std::lock_guard<std::mutex> lock(live_mutex);
    for (auto& ptr : held) live.erase(reinterpret_cast<uintptr_t>(ptr.get()));
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(overlaps.load(), 0);
  DeviceStats s = stats();
  EXPECT_EQ(s.allocation[kAll].allocated, kThreads * kIterations);
  EXPECT_EQ(s.allocation[kAll].current, 0);
  EXPECT_EQ(s.allocated_bytes[kAll].current, 0);
  EXPECT_EQ(s.requested_bytes[kAll].current, 0);
  EXPECT_EQ(s.active_bytes[kAll].current, 0);
  EXPECT_EQ(s.inactive_split[kAll].current, 0);
  alloc->emptyCache();
  EXPECT_EQ(stats().reserved_bytes[kAll].current, 0);
}

class HostAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    torch_maia::setDevice(0);
    host->empty_cache();
    host->reset_accumulated_stats();
  }
  at::HostAllocator* host = getMaiaHostAllocator();
};

TEST_F(HostAllocatorTest, AllocatesPinnedMemoryAndCachesIt) {
  c10::DataPtr p = host->allocate(1000);
  ASSERT_NE(p.get(), nullptr);
  EXPECT_EQ(p.device().type(), c10::DeviceType::CPU);
  EXPECT_TRUE(torch_maia::isPinnedPtr(p.get()));
  EXPECT_TRUE(torch_maia::isPinnedPtr(static_cast<char*>(p.get()) + 999));
  std::memset(p.get(), 1, 1000);  // host memory: writable from the host
  void* first = p.get();
  p.clear();
  c10::DataPtr q = host->allocate(900);  // same power-of-two bucket
  EXPECT_EQ(q.get(), first);
  at::HostStats s = host->get_stats();
  EXPECT_EQ(s.allocations.current, 1);
  EXPECT_EQ(s.num_host_alloc, 1);
  q.clear();
  host->empty_cache();
  s = host->get_stats();
  EXPECT_EQ(s.allocations.current, 0);
  EXPECT_EQ(s.num_host_free, 1);
}

TEST_F(HostAllocatorTest, IsPinnedPtrRejectsOtherMemory) {
  EXPECT_FALSE(torch_maia::isPinnedPtr(nullptr));
  std::vector<char> pageable(100);
  EXPECT_FALSE(torch_maia::isPinnedPtr(pageable.data()));
  c10::DataPtr device = getMaiaCachingAllocator()->allocate(100);
  EXPECT_FALSE(torch_maia::isPinnedPtr(device.get()));
}

TEST_F(HostAllocatorTest, RecordEventDelaysReuseUntilTheStreamsWorkIsDone) {
  c10::Stream side = torch_maia::newStream(0, 0);
  c10::DataPtr p = host->allocate(1000);
  void* first = p.get();
  HeldStream held(side);
  EXPECT_TRUE(host->record_event(p.get(), p.get_context(), side));
  p.clear();
  c10::DataPtr q = host->allocate(1000);
  EXPECT_NE(q.get(), first);
  held.release();
  c10::DataPtr r = host->allocate(1000);
  EXPECT_EQ(r.get(), first);
}

TEST_F(HostAllocatorTest, PinnedCopiesAreAsynchronousAndOrdered) {
  c10::Stream side = torch_maia::newStream(0, 0);
  c10::DataPtr pinned = host->allocate(4096);
  c10::DataPtr device = getMaiaCachingAllocator()->allocate(4096);
  std::memset(pinned.get(), 5, 4096);
  {
    HeldStream held(side);
    MAIA_CHECK(maiaMemcpyAsync(device.get(), pinned.get(), 4096, maiaMemcpyHostToDevice,
                               driverStream(side)));
    // Queued behind the held stream, so not done: the call did not block.
    EXPECT_EQ(maiaStreamQuery(driverStream(side)), maiaErrorNotReady);
  }
  std::vector<char> back(4096);
  MAIA_CHECK(maiaMemcpy(back.data(), device.get(), 4096, maiaMemcpyDeviceToHost));
  EXPECT_EQ(back, std::vector<char>(4096, 5));
}

}  // namespace
