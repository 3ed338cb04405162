#include "MaiaCheck.h"

namespace torch_maia {

void throwDriverError(maiaError_t error, const char* call) {
  const char* message = maiaGetLastErrorMessage();
  maiaGetLastError();  // consumed: reported here
  if (error == maiaErrorOutOfMemory)
    TORCH_CHECK_WITH(OutOfMemoryError, false, "MAIA out of memory: ", message);
  if (error == maiaErrorInvalidDevice) TORCH_CHECK(false, "MAIA: ", message);
  TORCH_CHECK(false, "MAIA error ", maiaGetErrorName(error), ": ", message, " (in ", call, ")");
}

}  // namespace torch_maia
