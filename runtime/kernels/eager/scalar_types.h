// Element types of eager kernels: storage types and the type each computes in.
// float16 and bfloat16 are stored as 16-bit patterns and computed in float.
#pragma once

#include <cmath>

#include <immintrin.h>

#include <bit>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace maia_eager {

struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

inline float toFloat(Half h) { return _cvtsh_ss(h.bits); }
inline Half toHalf(float f) {
  return Half{static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT))};
}
inline float toFloat(BFloat16 b) { return std::bit_cast<float>(uint32_t{b.bits} << 16); }
inline BFloat16 toBFloat16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return BFloat16{static_cast<uint16_t>((bits >> 16) | 0x40u)};
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even, as PyTorch does
  return BFloat16{static_cast<uint16_t>(bits >> 16)};
}

template <typename T>
struct IsComplex : std::false_type {};
template <typename R>
struct IsComplex<std::complex<R>> : std::true_type {};

/// The type a kernel computes in for storage type T.
template <typename T>
struct Compute {
  using type = T;
};
template <>
struct Compute<Half> {
  using type = float;
};
template <>
struct Compute<BFloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename Compute<T>::type;

/// Whether T is a 16-bit float type computed in float (float16, bfloat16).
template <typename T>
inline constexpr bool kIsReducedFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// Loads a storage value as its compute type.
template <typename T>
inline compute_t<T> load(const T& v) {
  if constexpr (kIsReducedFloat<T>)
    return toFloat(v);
  else
    return v;
}

/// Converts any arithmetic value to storage type T (PyTorch's conversions:
/// to bool is != 0; float to integer truncates).
template <typename T, typename V>
inline T store(V v) {
  if constexpr (std::is_same_v<T, Half>)
    return toHalf(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, BFloat16>)
    return toBFloat16(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, bool>)
    return v != V(0);
  else if constexpr (IsComplex<T>::value)
    return T(v);
  else
    return static_cast<T>(v);
}

/// float arithmetic rounded to 16-bit storage type T after every operation:
/// what c10::Half/c10::BFloat16 arithmetic does, for kernels that must
/// reproduce the CPU's 16-bit code paths computing in scalar_t (e.g. its
/// grid sampler fallback), not in float.
template <typename T>
struct StorageArithmetic {
  float value;

  static float round(float x) { return load(store<T>(x)); }
  StorageArithmetic() = default;
  StorageArithmetic(float x) : value(round(x)) {}  // NOLINT: converts like c10::Half
  StorageArithmetic(double x) : value(round(static_cast<float>(x))) {}  // NOLINT
  StorageArithmetic(int x) : value(round(static_cast<float>(x))) {}  // NOLINT
  StorageArithmetic(int64_t x) : value(round(static_cast<float>(x))) {}  // NOLINT
  explicit operator float() const { return value; }
  explicit operator int64_t() const { return static_cast<int64_t>(value); }
  explicit operator int() const { return static_cast<int>(value); }

  friend StorageArithmetic operator+(StorageArithmetic a, StorageArithmetic b) {
    return StorageArithmetic(a.value + b.value);
  }
  friend StorageArithmetic operator-(StorageArithmetic a, StorageArithmetic b) {
    return StorageArithmetic(a.value - b.value);
  }
  friend StorageArithmetic operator*(StorageArithmetic a, StorageArithmetic b) {
    return StorageArithmetic(a.value * b.value);
  }
  friend StorageArithmetic operator/(StorageArithmetic a, StorageArithmetic b) {
    return StorageArithmetic(a.value / b.value);
  }
  friend StorageArithmetic operator-(StorageArithmetic a) { return StorageArithmetic(-a.value); }
  StorageArithmetic& operator+=(StorageArithmetic b) { return *this = *this + b; }
  StorageArithmetic& operator-=(StorageArithmetic b) { return *this = *this - b; }
  StorageArithmetic& operator*=(StorageArithmetic b) { return *this = *this * b; }
  friend bool operator<(StorageArithmetic a, StorageArithmetic b) { return a.value < b.value; }
  friend bool operator<=(StorageArithmetic a, StorageArithmetic b) { return a.value <= b.value; }
  friend bool operator>(StorageArithmetic a, StorageArithmetic b) { return a.value > b.value; }
  friend bool operator>=(StorageArithmetic a, StorageArithmetic b) { return a.value >= b.value; }
  friend bool operator==(StorageArithmetic a, StorageArithmetic b) { return a.value == b.value; }
  friend bool operator!=(StorageArithmetic a, StorageArithmetic b) { return a.value != b.value; }
  // The math functions, found by argument-dependent lookup.
  friend StorageArithmetic floor(StorageArithmetic a) { return std::floor(a.value); }
  friend StorageArithmetic fabs(StorageArithmetic a) { return std::fabs(a.value); }
  friend StorageArithmetic nearbyint(StorageArithmetic a) { return std::nearbyint(a.value); }
  friend StorageArithmetic fmod(StorageArithmetic a, StorageArithmetic b) {
    return std::fmod(a.value, b.value);
  }
};

}  // namespace maia_eager
