// Device selection for the torch glue (thin, checked wrappers over the
// driver's per-thread current device).
#pragma once

#include <c10/core/Device.h>

namespace torch_maia {

/// Number of maia devices; 0 if the driver cannot start (never throws).
c10::DeviceIndex deviceCount() noexcept;
c10::DeviceIndex currentDevice();
void setDevice(c10::DeviceIndex index);
/// Sets index as current; returns the previous one.
c10::DeviceIndex exchangeDevice(c10::DeviceIndex index);
/// Throws a clear RuntimeError if index is not a maia device.
void checkDeviceIndex(c10::DeviceIndex index);
/// index, or the current device if index is -1.
c10::DeviceIndex resolveDevice(c10::DeviceIndex index);

}  // namespace torch_maia
