// Element types of the GEMM kernels and their conversions to and from the
// fp32 the microkernel computes in. bf16 and f16 inputs are widened while
// they are packed (exact); results are rounded once, to nearest even, when
// they are stored.
#pragma once

#include <cstdint>
#include <cstring>

namespace maia_gemm {

/// bfloat16 as its bit pattern (the top half of an IEEE fp32).
struct bf16 {
  uint16_t bits;
};

/// IEEE binary16. GCC 12 has _Float16 on x86 and converts it with F16C
/// instructions (part of x86-64-v3) in vectorized loops.
using f16 = _Float16;

inline float toFloat(float x) { return x; }
inline float toFloat(f16 x) { return static_cast<float>(x); }
inline float toFloat(bf16 x) {
  uint32_t bits = static_cast<uint32_t>(x.bits) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <typename T>
T fromFloat(float x);

template <>
inline float fromFloat<float>(float x) {
  return x;
}
template <>
inline f16 fromFloat<f16>(float x) {
  return static_cast<f16>(x);
}
/// Round to nearest even; NaN stays a (quiet) NaN instead of rounding into
/// an infinity.
template <>
inline bf16 fromFloat<bf16>(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return bf16{static_cast<uint16_t>((bits >> 16) | 0x40u)};
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return bf16{static_cast<uint16_t>(bits >> 16)};
}

}  // namespace maia_gemm
