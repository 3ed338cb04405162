// ProfilerStubs for maia: what torch.autograd.profiler.profile(
// use_device="maia") (the KINETO_PRIVATEUSE1_FALLBACK state) calls around
// every operator. Each operator gets a driver event recorded on the current
// stream when it starts and another when it ends; the elapsed time between
// them, measured by the device, is the operator's device time.
// Without these stubs torch logs "PrivateUse1 used in profiler but not
// enabled" for every operator and reports garbage times.
#include <maia/runtime.h>

#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include "MaiaCheck.h"
#include "MaiaFunctions.h"
#include "MaiaStream.h"

namespace torch_maia::profiler {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

struct MaiaProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    const c10::DeviceIndex index = currentDevice();
    if (device != nullptr) *device = index;
    maiaEvent_t handle = nullptr;
    MAIA_CHECK(maiaEventCreate(&handle, maiaEventDefault));
    *event = std::shared_ptr<void>(handle, [](void* e) {
      maiaEventDestroy(static_cast<maiaEvent_t>(e));  // noexcept: a failure is ignored
    });
    // CPU time first, as CUDA's stubs do: the event then marks the device
    // side of the same moment.
    if (cpu_ns != nullptr) *cpu_ns = c10::getTime();
    MAIA_CHECK(maiaEventRecord(handle, currentDriverStream(index)));
  }

  /// Microseconds, like CUDA's stubs.
  float elapsed(const ProfilerVoidEventStub* event1,
                const ProfilerVoidEventStub* event2) const override {
    auto start = static_cast<maiaEvent_t>(event1->get());
    auto end = static_cast<maiaEvent_t>(event2->get());
    MAIA_CHECK(maiaEventSynchronize(start));
    MAIA_CHECK(maiaEventSynchronize(end));
    float ms = 0;
    MAIA_CHECK(maiaEventElapsedTime(&ms, start, end));
    return ms * 1000.0f;
  }

  // Ranges and marks are for external tools (NVTX on CUDA); maia has none.
  void mark(const char* /*name*/) const override {}
  void rangePush(const char* /*name*/) const override {}
  void rangePop() const override {}

  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    const c10::DeviceIndex previous = currentDevice();
    for (c10::DeviceIndex device = 0; device < deviceCount(); ++device) {
      setDevice(device);
      op(device);
    }
    setDevice(previous);
  }

  void synchronize() const override { MAIA_CHECK(maiaDeviceSynchronize()); }
};

struct RegisterStubs {
  RegisterStubs() {
    static MaiaProfilerStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
};
RegisterStubs register_stubs;

}  // namespace
}  // namespace torch_maia::profiler
