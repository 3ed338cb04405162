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
    case maiaErrorPeerExited:
      return {"maiaErrorPeerExited", "the process that shared the IPC handle exited"};
    case maiaErrorStreamCaptureUnsupported:
      return {"maiaErrorStreamCaptureUnsupported", "operation not allowed while a stream captures"};
    case maiaErrorStreamCaptureInvalidated:
      return {"maiaErrorStreamCaptureInvalidated", "the stream capture was invalidated"};
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

/// Length of the well-formed UTF-8 sequence of a multi-byte character at
/// the start of text (RFC 3629: no overlong forms, no surrogates, at most
/// U+10FFFF), or 0 if it does not start with one.
size_t utf8SequenceLength(std::string_view text) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  size_t length;
  unsigned char low = 0x80, high = 0xbf;  // range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  return length;
}

}  // namespace

std::atomic<bool> g_driver_ready{false};

std::string printableText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
    } else if (size_t length = c >= 0x80 ? utf8SequenceLength(text.substr(i)) : 0) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      static constexpr char kDigits[] = "0123456789abcdef";
      out += "\\x";
      out += kDigits[c >> 4];
      out += kDigits[c & 0xf];
      ++i;
    }
  }
  return out;
}

maiaError_t report(const Status& status) {
  if (!status.ok()) {
    t_last_error = status.code();
    // Messages quote untrusted bytes (names and JSON from a corrupt kernel
    // binary, loader messages about it): callers such as Python decode
    // them as UTF-8, so they must be valid UTF-8 whatever the bytes.
    t_last_message = printableText(status.message());
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
