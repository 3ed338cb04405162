// Status: the driver's internal error value, and the bridge to the C API's
// per-thread "last error".
#pragma once

#include <maia/runtime.h>

#include <atomic>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace maia::driver {

/// A result code with a message naming the problem. Cheap when ok.
class Status {
 public:
  Status() = default;
  Status(maiaError_t code, std::string message)
      : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == maiaSuccess; }
  maiaError_t code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  maiaError_t code_ = maiaSuccess;
  std::string message_;
};

/// Builds an error Status whose message is the concatenation of parts.
template <typename... Parts>
Status makeError(maiaError_t code, const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return Status(code, os.str());
}

/// text with every byte that is not printable ASCII or part of a
/// well-formed UTF-8 character (control characters, stray bytes of a
/// corrupt file) escaped as \xNN: always valid UTF-8.
std::string printableText(std::string_view text);

/// Records status as this thread's last error (if it is one) and returns its
/// code: every C API function ends in this.
maiaError_t report(const Status& status);

/// Fails after fork() in a child that inherited an initialized driver.
Status checkNotForked();
/// Records this process as the driver's owner (at initialization).
void markDriverInitialized();
/// True once the driver initialized in this process, false again in a
/// forked child: the C API's entry check reads only this, so that a call
/// on the common path builds no Status.
extern std::atomic<bool> g_driver_ready;

}  // namespace maia::driver

#define MAIA_RETURN_IF_ERROR(expr)                 \
  do {                                             \
    ::maia::driver::Status maia_status_ = (expr);  \
    if (!maia_status_.ok()) return maia_status_;   \
  } while (0)

/// Entry-point guard for C API functions: rejects use after fork and a null
/// out pointer with a message naming the parameter.
#define MAIA_CHECK_OUT(ptr)                                                      \
  do {                                                                           \
    if ((ptr) == nullptr)                                                        \
      return ::maia::driver::report(::maia::driver::makeError(                   \
          maiaErrorInvalidValue, __func__, ": output parameter '" #ptr "' is NULL")); \
  } while (0)
