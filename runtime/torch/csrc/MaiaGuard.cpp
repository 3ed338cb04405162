// The device guard for maia (c10::impl::DeviceGuardImplInterface): current
// device, streams, events and device capability, for c10::DeviceGuard,
// torch.Stream/torch.Event and torch.accelerator.
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "MaiaCachingAllocator.h"
#include "MaiaCheck.h"
#include "MaiaDtypes.h"
#include "MaiaFunctions.h"
#include "MaiaStream.h"

namespace torch_maia {
namespace {

c10::Device maiaDevice(c10::DeviceIndex index) {
  return c10::Device(c10::DeviceType::PrivateUse1, index);
}

struct MaiaGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return kType; }

  c10::Device exchangeDevice(c10::Device device) const override {
    return maiaDevice(torch_maia::exchangeDevice(device.index()));
  }
  c10::Device getDevice() const override { return maiaDevice(currentDevice()); }
  void setDevice(c10::Device device) const override { torch_maia::setDevice(device.index()); }
  void uncheckedSetDevice(c10::Device device) const noexcept override {
    if (maiaSetDevice(device.index()) != maiaSuccess) maiaGetLastError();
  }
  c10::DeviceIndex deviceCount() const noexcept override { return torch_maia::deviceCount(); }

  c10::Stream getStream(c10::Device device) const override {
    return currentStream(device.index());
  }
  c10::Stream getDefaultStream(c10::Device device) const override {
    return defaultStream(device.index());
  }
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool high_priority) const override {
    return streamFromPool(high_priority, device.index());
  }
  c10::Stream getNewStream(c10::Device device, int priority) const override {
    return newStream(device.index(), priority);
  }
  c10::Stream exchangeStream(c10::Stream stream) const override {
    return torch_maia::exchangeStream(stream);
  }
  void* getStreamNativeHandle(const c10::Stream stream) const override {
    return driverStream(stream);
  }
  bool queryStream(const c10::Stream& stream) const override {
    maiaError_t status = maiaStreamQuery(driverStream(stream));
    if (status == maiaErrorNotReady) return false;
    MAIA_CHECK(status);
    return true;
  }
  void synchronizeStream(const c10::Stream& stream) const override {
    MAIA_CHECK(maiaStreamSynchronize(driverStream(stream)));
  }
  bool isStreamCapturing(const c10::Stream& stream) const override {
    return torch_maia::isStreamCapturing(stream);
  }
  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    c10::DeviceIndex previous = torch_maia::exchangeDevice(device_index);
    maiaError_t status = maiaDeviceSynchronize();
    torch_maia::exchangeDevice(previous);
    MAIA_CHECK(status);
  }

  // Events: the void* is a maiaEvent_t, created on first record.
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                "event device index ", static_cast<int>(device_index),
                " does not match the stream's device ", stream.device());
    auto* handle = static_cast<maiaEvent_t*>(static_cast<void*>(event));
    if (*handle == nullptr) {
      unsigned flags =
          flag == c10::EventFlag::BACKEND_DEFAULT ? maiaEventDefault : maiaEventDisableTiming;
      MAIA_CHECK(maiaEventCreate(handle, flags));
    }
    MAIA_CHECK(maiaEventRecord(*handle, driverStream(stream)));
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) return;  // never recorded: nothing to wait for
    MAIA_CHECK(maiaStreamWaitEvent(driverStream(stream), static_cast<maiaEvent_t>(event)));
  }
  bool queryEvent(void* event) const override {
    if (event == nullptr) return true;
    maiaError_t status = maiaEventQuery(static_cast<maiaEvent_t>(event));
    if (status == maiaErrorNotReady) return false;
    MAIA_CHECK(status);
    return true;
  }
  void synchronizeEvent(void* event) const override {
    if (event == nullptr) return;
    MAIA_CHECK(maiaEventSynchronize(static_cast<maiaEvent_t>(event)));
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    if (event != nullptr && maiaEventDestroy(static_cast<maiaEvent_t>(event)) != maiaSuccess)
      maiaGetLastError();
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start != nullptr && end != nullptr,
                "both events must be recorded before measuring elapsed time");
    float ms = 0;
    MAIA_CHECK(maiaEventElapsedTime(&ms, static_cast<maiaEvent_t>(start),
                                    static_cast<maiaEvent_t>(end)));
    return ms;
  }

  void recordDataPtrOnStream(const c10::DataPtr& data_ptr,
                             const c10::Stream& stream) const override {
    getMaiaCachingAllocator()->recordStream(data_ptr, stream);
  }

  c10::DeviceCapability getDeviceCapability(c10::Device) const override {
    c10::DeviceCapability capability;
    capability.capability_data.capability_bits = 0;
    for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
      auto dtype = static_cast<c10::ScalarType>(i);
      if (isSupportedDtype(dtype) && i < static_cast<int>(c10::NUMBER_OF_DEVICE_CAPABILITIES))
        capability.capability_data.capability_bits |= uint64_t{1} << i;
    }
    return capability;
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, MaiaGuardImpl);

}  // namespace

}  // namespace torch_maia
