// The one place where driver errors become PyTorch errors.
#pragma once

#include <maia/runtime.h>

#include <c10/util/Exception.h>

namespace torch_maia {

/// Throws the c10 error for a failed driver call: c10::OutOfMemoryError for
/// out-of-memory (Python: torch.OutOfMemoryError), c10::Error (RuntimeError,
/// as other backends raise for a bad device ordinal) otherwise; the message is
/// the driver's.
[[noreturn]] void throwDriverError(maiaError_t error, const char* call);

}  // namespace torch_maia

#define MAIA_CHECK(expr)                                          \
  do {                                                            \
    maiaError_t maia_check_error_ = (expr);                       \
    if (C10_UNLIKELY(maia_check_error_ != maiaSuccess))           \
      ::torch_maia::throwDriverError(maia_check_error_, #expr);   \
  } while (0)
