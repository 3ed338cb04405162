// Which dtypes maia tensors may have.
#pragma once

#include <c10/core/ScalarType.h>

namespace torch_maia {

/// float16/bfloat16/float32/float64, bool, u8, i8..i64 (unsigned wider types,
/// complex, quantized and float8 types are not supported by the device).
bool isSupportedDtype(c10::ScalarType dtype);
/// Throws a clear TypeError naming dtype if it is not supported.
void checkSupportedDtype(c10::ScalarType dtype);

}  // namespace torch_maia
