#include "device.h"

#include <cstdlib>

#include "fault.h"
#include "graph_capture.h"
#include "handle_registry.h"
#include "scheduler.h"

namespace maia::driver {
namespace {

struct Driver {
  Config config;
  std::vector<std::unique_ptr<Device>> devices;
  std::unique_ptr<Scheduler> scheduler;
};

// Deliberately never destroyed: user code may call the driver from static
// destructors. The worker threads are stopped at exit (see initialize).
Driver* g_driver = nullptr;

Status initialize() {
  auto driver = std::make_unique<Driver>();
  MAIA_RETURN_IF_ERROR(readConfig(&driver->config));
  installFaultHandlers();
  driver->scheduler =
      std::make_unique<Scheduler>(driver->config.core_count, driver->config.spin_us);
  for (int i = 0; i < driver->config.device_count; ++i) {
    std::unique_ptr<MemoryArena> arena;
    MAIA_RETURN_IF_ERROR(MemoryArena::create(i, driver->config.memory_per_device, &arena));
    driver->devices.push_back(std::make_unique<Device>(i, std::move(arena)));
  }
  g_driver = driver.release();
  for (auto& device : g_driver->devices) {
    std::shared_ptr<Stream> stream;
    MAIA_RETURN_IF_ERROR(createStream(device.get(), 0, /*is_default=*/true, &stream));
    device->setDefaultStream(std::move(stream));
  }
  markDriverInitialized();
  std::atexit([] { g_driver->scheduler->shutdown(); });
  return {};
}

}  // namespace

Status ensureInitialized() {
  MAIA_RETURN_IF_ERROR(checkNotForked());
  static const Status status = initialize();
  return status;
}

const Config& config() { return g_driver->config; }
Scheduler& scheduler() { return *g_driver->scheduler; }
int deviceCount() { return static_cast<int>(g_driver->devices.size()); }

int& currentDeviceIndex() {
  thread_local int index = 0;
  return index;
}

Status deviceAt(int index, Device** out) {
  int count = deviceCount();
  if (index < 0 || index >= count)
    return makeError(maiaErrorInvalidDevice, "device index ", index, " is out of range: ",
                     count == 0 ? std::string("no MAIA devices are visible")
                                : "valid indices are 0.." + std::to_string(count - 1));
  *out = g_driver->devices[index].get();
  return {};
}

Status currentDevice(Device** out) { return deviceAt(currentDeviceIndex(), out); }

Device* deviceOwning(const void* p) {
  for (auto& device : g_driver->devices)
    if (device->arena().owns(p)) return device.get();
  return nullptr;
}

void Device::addStream(std::shared_ptr<Stream> stream) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  streams_.push_back(std::move(stream));
}

void Device::removeStream(Stream* stream) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  std::erase_if(streams_, [&](const auto& s) { return s.get() == stream; });
}

std::vector<std::shared_ptr<Stream>> Device::streams() const {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  return streams_;
}

Status synchronizeDevice(Device* device, bool report_sticky) {
  std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> targets;
  for (auto& stream : device->streams()) {
    if (stream->capturing.load(std::memory_order_acquire)) [[unlikely]]
      MAIA_RETURN_IF_ERROR(captureViolation(stream.get(),
                                            "synchronizing its device (maiaDeviceSynchronize, "
                                            "maiaFree, maiaDeviceReset)"));
    targets.emplace_back(stream, stream->commands.enqueued());
  }
  scheduler().waitUntil(
      [&] {
        for (auto& [stream, target] : targets)
          if (stream->commands.completed() < target) return false;
        return true;
      },
      nullptr);
  if (report_sticky) return device->stickyError();
  return {};
}

Status Device::stickyError() const {
  if (!faulted()) return {};
  std::lock_guard<std::mutex> lock(fault_mutex_);
  return makeError(maiaErrorLaunchFailure, "maia:", index_,
                   " is in an error state from earlier asynchronous work: ", fault_message_,
                   " (sticky until maiaDeviceReset)");
}

void Device::recordFault(const std::string& message) {
  std::lock_guard<std::mutex> lock(fault_mutex_);
  if (faulted_.load()) return;  // the first fault is the one to report
  fault_message_ = message;
  faulted_.store(true, std::memory_order_release);
}

void Device::clearFault() {
  std::lock_guard<std::mutex> lock(fault_mutex_);
  fault_message_.clear();
  faulted_.store(false, std::memory_order_release);
}

}  // namespace maia::driver
