#include "MaiaFunctions.h"

#include <atomic>

#include "MaiaCheck.h"

namespace torch_maia {

c10::DeviceIndex deviceCount() noexcept {
  // Fixed once the driver initialized: every device index check reads it.
  static std::atomic<int> known{0};
  if (int count = known.load(std::memory_order_relaxed); count > 0)
    return static_cast<c10::DeviceIndex>(count);
  int count = 0;
  if (maiaGetDeviceCount(&count) != maiaSuccess) {
    maiaGetLastError();
    return 0;
  }
  known.store(count, std::memory_order_relaxed);
  return static_cast<c10::DeviceIndex>(count);
}

c10::DeviceIndex currentDevice() {
  int index = 0;
  MAIA_CHECK(maiaGetDevice(&index));
  return static_cast<c10::DeviceIndex>(index);
}

void checkDeviceIndex(c10::DeviceIndex index) {
  c10::DeviceIndex count = deviceCount();
  // RuntimeError, as PyTorch's backends raise for a device ordinal.
  TORCH_CHECK(index >= 0 && index < count, "maia device index ",
                    static_cast<int>(index), " is out of range: ",
                    count == 0 ? std::string("no maia devices are available")
                               : "valid indices are 0.." + std::to_string(count - 1));
}

void setDevice(c10::DeviceIndex index) {
  checkDeviceIndex(index);
  MAIA_CHECK(maiaSetDevice(index));
}

c10::DeviceIndex exchangeDevice(c10::DeviceIndex index) {
  c10::DeviceIndex previous = currentDevice();
  if (index != previous) setDevice(index);
  return previous;
}

c10::DeviceIndex resolveDevice(c10::DeviceIndex index) {
  if (index == -1) return currentDevice();
  checkDeviceIndex(index);
  return index;
}

}  // namespace torch_maia
