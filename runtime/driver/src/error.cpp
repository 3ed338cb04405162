#include "error.h"

#include <unistd.h>

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

// The pid that initialized the driver (0 before): a child of fork() differs.
std::atomic<pid_t> g_owner_pid{0};

}  // namespace

maiaError_t report(const Status& status) {
  if (!status.ok()) {
    t_last_error = status.code();
    t_last_message = status.message();
  }
  return status.code();
}

void markDriverInitialized() { g_owner_pid.store(getpid()); }

Status checkNotForked() {
  pid_t owner = g_owner_pid.load(std::memory_order_relaxed);
  if (owner == 0 || owner == getpid()) return {};
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
