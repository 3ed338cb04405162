// Which dtypes maia tensors may have, and which of them maia's eager
// kernels compute.
#pragma once

#include <c10/core/ScalarType.h>

namespace torch_maia {

/// Storage dtypes: float16/bfloat16/float32/float64, bool, u8..u64, i8..i64,
/// complex32/64/128 (quantized, float8 and bit types are not supported).
bool isSupportedDtype(c10::ScalarType dtype);
/// Throws a clear TypeError naming dtype if it is not supported.
void checkSupportedDtype(c10::ScalarType dtype);

/// Dtypes the eager kernel binary computes: the supported ones except the
/// complex and wider unsigned types, whose operators run on the host
/// fallback (ops/HostRouting.h) apart from copies, fills and views.
bool hasNativeKernels(c10::ScalarType dtype);
/// complex64/complex128: native for the operators HostRouting.cpp lists
/// (elementwise arithmetic), host fallback for the others.
bool hasComplexKernels(c10::ScalarType dtype);

}  // namespace torch_maia
