// Device: one simulated MAIA device, and the process-wide driver state
// (configuration, devices, core pool), initialized on first use.
#pragma once

#include <maia/runtime.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "config.h"
#include "error.h"
#include "memory_arena.h"
#include "stream.h"

namespace maia::driver {

class Scheduler;

class Device {
 public:
  Device(int index, std::unique_ptr<MemoryArena> arena)
      : index_(index), arena_(std::move(arena)) {}

  int index() const { return index_; }
  MemoryArena& arena() { return *arena_; }
  Stream* defaultStream() const { return default_stream_.get(); }
  const std::shared_ptr<Stream>& defaultStreamRef() const { return default_stream_; }
  void setDefaultStream(std::shared_ptr<Stream> stream) { default_stream_ = std::move(stream); }

  /// Every live stream of this device (for device-wide synchronization).
  void addStream(std::shared_ptr<Stream> stream);
  void removeStream(Stream* stream);
  std::vector<std::shared_ptr<Stream>> streams() const;

  /// Sticky error: the first failure of device work, kept until reset.
  bool faulted() const { return faulted_.load(std::memory_order_acquire); }
  Status stickyError() const;
  void recordFault(const std::string& message);
  void clearFault();

 private:
  const int index_;
  std::unique_ptr<MemoryArena> arena_;
  std::shared_ptr<Stream> default_stream_;
  mutable std::mutex streams_mutex_;
  std::vector<std::shared_ptr<Stream>> streams_;
  std::atomic<bool> faulted_{false};
  mutable std::mutex fault_mutex_;
  std::string fault_message_;
};

/// Initializes the driver on first call (thread-safe); later calls return
/// the same result. Also rejects use after fork.
Status ensureInitialized();
const Config& config();
Scheduler& scheduler();
int deviceCount();

/// Device by index, with a clear error if out of range.
Status deviceAt(int index, Device** out);
/// This host thread's current device.
Status currentDevice(Device** out);
int& currentDeviceIndex();
/// The device whose address space holds p, or nullptr.
Device* deviceOwning(const void* p);

/// Waits for all work queued so far on every stream of device. With
/// report_sticky, then reports the device's sticky error.
Status synchronizeDevice(Device* device, bool report_sticky = true);

/// The first line of every C API function: initialization, fork check.
#define MAIA_API_ENTER()                                                        \
  do {                                                                          \
    if (!::maia::driver::g_driver_ready.load(std::memory_order_acquire))        \
      MAIA_RETURN_REPORT(::maia::driver::ensureInitialized());                  \
  } while (0)

#define MAIA_RETURN_REPORT(expr)                                   \
  do {                                                             \
    ::maia::driver::Status maia_status_ = (expr);                  \
    if (!maia_status_.ok()) return ::maia::driver::report(maia_status_); \
  } while (0)

}  // namespace maia::driver
