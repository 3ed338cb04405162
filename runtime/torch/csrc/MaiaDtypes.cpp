#include "MaiaDtypes.h"

#include <c10/util/Exception.h>

namespace torch_maia {

bool hasNativeKernels(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Half:
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Float:
    case c10::ScalarType::Double:
    case c10::ScalarType::Bool:
    case c10::ScalarType::Byte:
    case c10::ScalarType::Char:
    case c10::ScalarType::Short:
    case c10::ScalarType::Int:
    case c10::ScalarType::Long:
      return true;
    default:
      return false;
  }
}

bool hasComplexKernels(c10::ScalarType dtype) {
  return dtype == c10::ScalarType::ComplexFloat || dtype == c10::ScalarType::ComplexDouble;
}

bool isSupportedDtype(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::UInt16:
    case c10::ScalarType::UInt32:
    case c10::ScalarType::UInt64:
    case c10::ScalarType::ComplexHalf:
    case c10::ScalarType::ComplexFloat:
    case c10::ScalarType::ComplexDouble:
      return true;
    default:
      return hasNativeKernels(dtype);
  }
}

void checkSupportedDtype(c10::ScalarType dtype) {
  TORCH_CHECK_TYPE(isSupportedDtype(dtype), "maia tensors do not support dtype ", dtype,
                   "; supported: float16, bfloat16, float32, float64, bool, uint8, uint16, "
                   "uint32, uint64, int8, int16, int32, int64, complex32, complex64, "
                   "complex128");
}

}  // namespace torch_maia
