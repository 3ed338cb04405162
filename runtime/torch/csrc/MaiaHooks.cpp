// PrivateUse1 hooks: how ATen asks the maia backend for initialization,
// generators, pinned memory and the device of a pointer.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/DeviceType.h>

#include "MaiaCheck.h"
#include "MaiaFunctions.h"
#include "MaiaGenerator.h"
#include "MaiaHostAllocator.h"
#include "ops/MaiaOps.h"

namespace torch_maia {
namespace {

struct MaiaHooks final : public at::PrivateUse1HooksInterface {
  void init() const override {
    // Starting the driver reports a bad configuration (or use after fork)
    // here, at the first real use, with the driver's message.
    int count = 0;
    MAIA_CHECK(maiaGetDeviceCount(&count));
  }
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return deviceCount() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override {
    return device_index >= 0 && device_index < deviceCount();
  }
  c10::DeviceIndex deviceCount() const override { return torch_maia::deviceCount(); }
  void setCurrentDevice(c10::DeviceIndex device) const override { setDevice(device); }
  c10::DeviceIndex getCurrentDevice() const override { return currentDevice(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    return torch_maia::exchangeDevice(device);
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return torch_maia::exchangeDevice(device);
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return defaultGenerator(device_index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override {
    return newGenerator(device_index);
  }

  at::Device getDeviceFromPtr(void* data) const override {
    maiaPointerAttributes attributes;
    MAIA_CHECK(maiaPointerGetAttributes(&attributes, data));
    TORCH_CHECK(attributes.type == maiaMemoryTypeDevice, "pointer ", data,
                " is not maia device memory");
    return at::Device(at::DeviceType::PrivateUse1,
                      static_cast<c10::DeviceIndex>(attributes.device));
  }
  bool isPinnedPtr(const void* data) const override { return torch_maia::isPinnedPtr(data); }
  at::Allocator* getPinnedMemoryAllocator() const override { return getMaiaHostAllocator(); }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    ops::resizeStorageBytes(storage, new_bytes);
  }
};

// Registered when the library loads, before any maia tensor can exist. The
// backend's name too: a C++ program that links libtorch and never starts
// Python parses "maia" as PrivateUse1 from here on (torch_maia's Python
// rename_privateuse1_backend then only renames Python-side names).
const bool g_registered = [] {
  c10::register_privateuse1_backend("maia");
  at::RegisterPrivateUse1HooksInterface(new MaiaHooks());
  return true;
}();

}  // namespace
}  // namespace torch_maia
