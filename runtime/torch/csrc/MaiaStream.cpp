#include "MaiaStream.h"
#include "maia/torch.h"  // the public declarations, checked against the definitions

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include "MaiaCheck.h"
#include "MaiaFunctions.h"

namespace torch_maia {
namespace {

constexpr int kMaxDevices = 16;
constexpr int kMaxStreamsPerDevice = 1024;
// Streams handed out per device and priority, round-robin like CUDA's pool:
// torch.maia.Stream() and getStreamFromPool take a pooled stream, so a
// program creating a stream per step never runs out of driver streams.
constexpr int kPoolSize = 32;
constexpr int kMaxPriorityLevels = 8;

/// One priority level's pool; each stream is created the first time it is
/// handed out (idle streams still cost the scheduler a look).
struct StreamPool {
  std::array<std::atomic<c10::StreamId>, kPoolSize> ids{};
  std::atomic<uint32_t> next{0};
};

/// The streams of one device, by StreamId. Append-only: an id stays valid
/// for the life of the process.
struct DeviceStreams {
  std::mutex mutex;
  std::array<std::atomic<maiaStream_t>, kMaxStreamsPerDevice> handles{};
  std::atomic<int> count{0};
  std::mutex pool_mutex;  // creates a pool's stream once (createStream takes mutex)
  std::array<StreamPool, kMaxPriorityLevels> pools;  // by level: 0 is the least priority
};

/// The driver handle of device's default stream (a valid index). Default
/// streams live as long as the driver: their handles are cached at first use.
maiaStream_t defaultDriverStream(c10::DeviceIndex device) {
  static const auto* defaults = [] {
    auto* handles = new std::array<maiaStream_t, kMaxDevices>{};
    for (c10::DeviceIndex d = 0; d < deviceCount(); ++d)
      MAIA_CHECK(maiaStreamGetDefault(&(*handles)[d], d));
    return handles;
  }();
  return (*defaults)[device];
}

DeviceStreams& streamsOf(c10::DeviceIndex device) {
  static auto* all = new std::array<DeviceStreams, kMaxDevices>();  // outlives exit
  return (*all)[device];
}

thread_local std::array<c10::StreamId, kMaxDevices> t_current_stream{};

c10::Stream makeStream(c10::DeviceIndex device, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), id);
}

/// Creates a driver stream on device and gives it the next id.
c10::StreamId createStream(c10::DeviceIndex device, int priority) {
  DeviceStreams& streams = streamsOf(device);
  std::lock_guard<std::mutex> lock(streams.mutex);
  int id = std::max(1, streams.count.load());
  TORCH_CHECK(id < kMaxStreamsPerDevice, "maia:", static_cast<int>(device), " has ",
              kMaxStreamsPerDevice - 1,
              " streams already, the most one device supports; reuse streams "
              "(torch.maia.Stream objects) instead of creating them per operation");
  c10::DeviceIndex previous = exchangeDevice(device);
  maiaStream_t handle = nullptr;
  maiaError_t error = maiaStreamCreate(&handle, priority);
  exchangeDevice(previous);
  MAIA_CHECK(error);
  streams.handles[id].store(handle, std::memory_order_release);
  streams.count.store(id + 1, std::memory_order_release);
  return id;
}

}  // namespace

std::pair<int, int> priorityRange() {
  // Fixed by the driver: asked once, not on every stream request.
  static const std::pair<int, int> range = [] {
    int least = 0, greatest = 0;
    MAIA_CHECK(maiaDeviceGetStreamPriorityRange(&least, &greatest));
    return std::pair<int, int>{least, greatest};
  }();
  return range;
}

maiaStream_t driverStream(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "expected a maia stream, got a stream of ", stream.device());
  c10::DeviceIndex device = stream.device_index();
  checkDeviceIndex(device);
  c10::StreamId id = stream.id();
  if (id == 0) return defaultDriverStream(device);
  DeviceStreams& streams = streamsOf(device);
  TORCH_CHECK(id > 0 && id < streams.count.load(std::memory_order_acquire),
              "maia stream id ", id, " does not name a stream of maia:", static_cast<int>(device));
  return streams.handles[id].load(std::memory_order_acquire);
}

c10::Stream defaultStream(c10::DeviceIndex device) {
  return makeStream(resolveDevice(device), 0);
}

maiaStream_t currentDriverStream(c10::DeviceIndex device) {
  TORCH_INTERNAL_ASSERT(device >= 0 && device < deviceCount(), "maia device index ",
                        static_cast<int>(device), " is not a device's");
  const c10::StreamId id = t_current_stream[device];
  if (id != 0) return streamsOf(device).handles[id].load(std::memory_order_acquire);
  return defaultDriverStream(device);
}

c10::Stream currentStream(c10::DeviceIndex device) {
  device = resolveDevice(device);
  return makeStream(device, t_current_stream[device]);
}

c10::Stream exchangeStream(const c10::Stream& stream) {
  driverStream(stream);  // validates
  c10::DeviceIndex device = stream.device_index();
  c10::Stream previous = makeStream(device, t_current_stream[device]);
  t_current_stream[device] = stream.id();
  return previous;
}

c10::Stream streamFromPool(bool high_priority, c10::DeviceIndex device) {
  auto [least, greatest] = priorityRange();
  return newStream(device, high_priority ? greatest : least);
}

c10::Stream newStream(c10::DeviceIndex device, int priority) {
  device = resolveDevice(device);
  auto [least, greatest] = priorityRange();
  priority = std::clamp(priority, greatest, least);
  int level = least - priority;
  TORCH_INTERNAL_ASSERT(level < kMaxPriorityLevels, "the driver has more stream priorities (",
                        least - greatest + 1, ") than maia pools (", kMaxPriorityLevels, ")");
  DeviceStreams& streams = streamsOf(device);
  StreamPool& pool = streams.pools[level];
  std::atomic<c10::StreamId>& slot = pool.ids[pool.next.fetch_add(1) % kPoolSize];
  c10::StreamId id = slot.load(std::memory_order_acquire);
  if (id == 0) {
    std::lock_guard<std::mutex> lock(streams.pool_mutex);
    id = slot.load(std::memory_order_relaxed);
    if (id == 0) {
      id = createStream(device, priority);
      slot.store(id, std::memory_order_release);
    }
  }
  return makeStream(device, id);
}

bool isStreamCapturing(const c10::Stream& stream) {
  int capturing = 0;
  MAIA_CHECK(maiaStreamIsCapturing(driverStream(stream), &capturing));
  return capturing != 0;
}

int streamPriority(const c10::Stream& stream) {
  int priority = 0;
  MAIA_CHECK(maiaStreamGetPriority(driverStream(stream), &priority));
  return priority;
}

}  // namespace torch_maia
