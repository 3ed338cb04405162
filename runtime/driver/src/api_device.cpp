// C API: devices.
#include <cstdio>
#include <cstring>

#include "device.h"
#include "scheduler.h"

using namespace maia::driver;

namespace {

constexpr int kPriorityLeast = 0;
constexpr int kPriorityGreatest = -2;

/// The x86-64 microarchitecture level the host CPU reaches: part of the
/// compute capability, since compiled kernels target the host CPU.
const char* hostIsaLevel() {
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "x86-64-v4";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "x86-64-v3";
  return "x86-64";
}

}  // namespace

extern "C" {

maiaError_t maiaGetDeviceCount(int* out_count) {
  MAIA_CHECK_OUT(out_count);
  MAIA_API_ENTER();
  *out_count = deviceCount();
  return maiaSuccess;
}

maiaError_t maiaGetDevice(int* out_device) {
  MAIA_CHECK_OUT(out_device);
  MAIA_API_ENTER();
  *out_device = currentDeviceIndex();
  return maiaSuccess;
}

maiaError_t maiaSetDevice(int device) {
  MAIA_API_ENTER();
  Device* target = nullptr;
  MAIA_RETURN_REPORT(deviceAt(device, &target));
  currentDeviceIndex() = device;
  return maiaSuccess;
}

maiaError_t maiaGetDeviceProperties(maiaDeviceProp* out_prop, int device) {
  MAIA_CHECK_OUT(out_prop);
  MAIA_API_ENTER();
  Device* target = nullptr;
  MAIA_RETURN_REPORT(deviceAt(device, &target));
  maiaDeviceProp prop = {};
  std::snprintf(prop.name, sizeof(prop.name), "MAIA simulated device");
  std::snprintf(prop.compute_capability, sizeof(prop.compute_capability), "maia-sim-1.0+%s",
                hostIsaLevel());
  prop.total_memory = target->arena().capacity();
  prop.core_count = scheduler().cores();
  prop.device_index = device;
  prop.stream_priority_least = kPriorityLeast;
  prop.stream_priority_greatest = kPriorityGreatest;
  *out_prop = prop;
  return maiaSuccess;
}

maiaError_t maiaDeviceSynchronize(void) {
  MAIA_API_ENTER();
  Device* device = nullptr;
  MAIA_RETURN_REPORT(currentDevice(&device));
  return report(synchronizeDevice(device));
}

maiaError_t maiaDeviceReset(int device) {
  MAIA_API_ENTER();
  Device* target = nullptr;
  MAIA_RETURN_REPORT(deviceAt(device, &target));
  MAIA_RETURN_REPORT(synchronizeDevice(target, /*report_sticky=*/false));
  target->clearFault();
  return maiaSuccess;
}

maiaError_t maiaDeviceGetStreamPriorityRange(int* out_least, int* out_greatest) {
  MAIA_CHECK_OUT(out_least);
  MAIA_CHECK_OUT(out_greatest);
  MAIA_API_ENTER();
  *out_least = kPriorityLeast;
  *out_greatest = kPriorityGreatest;
  return maiaSuccess;
}

}  // extern "C"
