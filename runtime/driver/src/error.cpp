#include "error.h"

#include <pthread.h>

#include <atomic>

namespace maia::driver {
namespace {

thread_local maiaError_t t_last_error = maiaSuccess;
thread_local std::string t_last_message;

struct ErrorText {
  const char* name;
  const char* description;
};

ErrorText textOf(maiaError_t error) {
  switch (error) {
    case maiaSuccess: return {"maiaSuccess", "no error"};
    case maiaErrorInvalidValue: return {"maiaErrorInvalidValue", "invalid argument"};
    case maiaErrorInvalidDevice: return {"maiaErrorInvalidDevice", "invalid device index"};
    case maiaErrorOutOfMemory: return {"maiaErrorOutOfMemory", "out of memory"};
    case maiaErrorInvalidDevicePointer:
      return {"maiaErrorInvalidDevicePointer", "invalid device pointer"};
    case maiaErrorInvalidHandle: return {"maiaErrorInvalidHandle", "invalid handle"};
    case maiaErrorNotReady: return {"maiaErrorNotReady", "work not yet complete"};
    case maiaErrorStreamBusy: return {"maiaErrorStreamBusy", "stream has pending work"};
    case maiaErrorEventNotRecorded:
      return {"maiaErrorEventNotRecorded", "event was never recorded"};
    case maiaErrorEventNoTiming:
      return {"maiaErrorEventNoTiming", "event was created without timing"};
    case maiaErrorFileNotFound: return {"maiaErrorFileNotFound", "file cannot be read"};
    case maiaErrorInvalidImage:
      return {"maiaErrorInvalidImage", "invalid MAIA kernel binary"};
    case maiaErrorUnsupportedImage:
      return {"maiaErrorUnsupportedImage", "kernel binary not supported on this device"};
    case maiaErrorNotFound: return {"maiaErrorNotFound", "named kernel not found"};
    case maiaErrorInvalidLaunch:
      return {"maiaErrorInvalidLaunch", "launch does not match the kernel"};
    case maiaErrorLaunchFailure:
      return {"maiaErrorLaunchFailure", "device work failed (sticky error)"};
    case maiaErrorInitialization:
      return {"maiaErrorInitialization", "driver initialization failed"};
  }
  return {"maiaErrorUnknown", "unknown error code"};
}

// Set in a child of fork() once the driver was initialized in the parent.
// (getpid() is a syscall since glibc 2.25: too slow to call per launch.)
std::atomic<bool> g_initialized{false};
std::atomic<bool> g_forked_after_init{false};

void onForkInChild() {
  if (g_initialized.load(std::memory_order_relaxed)) {
    g_forked_after_init.store(true, std::memory_order_relaxed);
    g_driver_ready.store(false, std::memory_order_relaxed);
  }
}

}  // namespace

std::atomic<bool> g_driver_ready{false};

maiaError_t report(const Status& status) {
  if (!status.ok()) {
    t_last_error = status.code();
    t_last_message = status.message();
  }
  return status.code();
}

void markDriverInitialized() {
  static const int registered = pthread_atfork(nullptr, nullptr, onForkInChild);
  (void)registered;
  g_initialized.store(true);
  g_driver_ready.store(true, std::memory_order_release);
}

Status checkNotForked() {
  if (!g_forked_after_init.load(std::memory_order_relaxed)) return {};
  return makeError(maiaErrorInitialization,
                   "the MAIA driver was initialized in the parent process and cannot be "
                   "used in a forked child; start workers with the 'spawn' method");
}

}  // namespace maia::driver

using namespace maia::driver;

extern "C" {

const char* maiaGetErrorName(maiaError_t error) { return textOf(error).name; }
const char* maiaGetErrorString(maiaError_t error) { return textOf(error).description; }
const char* maiaGetLastErrorMessage(void) { return t_last_message.c_str(); }

maiaError_t maiaGetLastError(void) {
  maiaError_t error = t_last_error;
  t_last_error = maiaSuccess;
  return error;
}

maiaError_t maiaPeekAtLastError(void) { return t_last_error; }

}  // extern "C"
