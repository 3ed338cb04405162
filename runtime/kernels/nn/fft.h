// The FFT kernels behind ATen's _fft_c2c, _fft_r2c and _fft_c2r: each
// transforms the lines along dimension 1 of (outer, n, inner) views, in
// double precision (fft_plan.h), scaling by the normalization factor the
// host passes. Complex tensors arrive as their view_as_real memrefs
// (a trailing dimension of 2). Multi-dimensional transforms are one
// launch per transformed dimension, composed by runtime/torch/csrc/ops/
// Fft.cpp. Programs own contiguous ranges of lines; every line is read
// into a private buffer before any of it is written, so c2c may run in
// place (out and in the same memref).
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

#include <maia/kernel_abi.h>

#include "fft_plan.h"
#include "nn.h"

namespace maia_nn {

/// Calls body(line_outer, line_inner) for the program's share of the
/// outer * inner lines.
template <typename Body>
void forEachLine(const maia_grid_t* grid, int64_t outer, int64_t inner, Body body) {
  auto slice = maia_kernel::programSlice(grid, outer * inner);
  for (int64_t line = slice.begin; line < slice.end; ++line) body(line / inner, line % inner);
}

template <typename T>
Complex complexAt(const MemRef<T, 4>& m, int64_t o, int64_t j, int64_t i) {
  const T* p = m.aligned + m.offset + o * m.strides[0] + j * m.strides[1] + i * m.strides[2];
  return Complex(static_cast<double>(p[0]), static_cast<double>(p[m.strides[3]]));
}

template <typename T>
void storeComplex(const MemRef<T, 4>& m, int64_t o, int64_t j, int64_t i, Complex value) {
  T* p = m.aligned + m.offset + o * m.strides[0] + j * m.strides[1] + i * m.strides[2];
  p[0] = static_cast<T>(value.real());
  p[m.strides[3]] = static_cast<T>(value.imag());
}

// args: out (outer, n, inner, 2), in (the same sizes; may be out),
// forward (i64), scale (f64).
template <typename T>
void fftC2c(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 4>(args, 0);
  const auto& in = memref<T, 4>(args, 1);
  const bool forward = scalar<int64_t>(args, 2) != 0;
  const double scale = scalar<double>(args, 3);
  const int64_t n = out.sizes[1];
  const FftPlan plan(n, forward);
  std::vector<Complex> line(n), scratch;
  forEachLine(grid, out.sizes[0], out.sizes[2], [&](int64_t o, int64_t i) {
    for (int64_t j = 0; j < n; ++j) line[j] = complexAt(in, o, j, i);
    plan.apply(line.data(), scratch);
    for (int64_t j = 0; j < n; ++j) storeComplex(out, o, j, i, line[j] * scale);
  });
}

// args: out (outer, m, inner, 2) with m = n / 2 + 1 (onesided) or n,
// in (outer, n, inner), scale (f64). The forward transform of real lines;
// the onesided output keeps the non-redundant half of the Hermitian
// spectrum.
template <typename T>
void fftR2c(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 4>(args, 0);
  const auto& in = memref<T, 3>(args, 1);
  const double scale = scalar<double>(args, 2);
  const int64_t n = in.sizes[1], kept = out.sizes[1];
  const FftPlan plan(n, true);
  std::vector<Complex> line(n), scratch;
  forEachLine(grid, in.sizes[0], in.sizes[2], [&](int64_t o, int64_t i) {
    for (int64_t j = 0; j < n; ++j) line[j] = Complex(static_cast<double>(at3(in, o, j, i)), 0);
    plan.apply(line.data(), scratch);
    for (int64_t j = 0; j < kept; ++j) storeComplex(out, o, j, i, line[j] * scale);
  });
}

// args: out (outer, n, inner), in (outer, n / 2 + 1, inner, 2), scale
// (f64). The inverse transform of the Hermitian spectrum whose first half
// `in` holds, real part only: as pocketfft's c2r, the imaginary parts of
// the zero and Nyquist bins do not contribute.
template <typename T>
void fftC2r(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 3>(args, 0);
  const auto& in = memref<T, 4>(args, 1);
  const double scale = scalar<double>(args, 2);
  const int64_t n = out.sizes[1], half = in.sizes[1];
  const FftPlan plan(n, false);
  std::vector<Complex> line(n), scratch;
  forEachLine(grid, out.sizes[0], out.sizes[2], [&](int64_t o, int64_t i) {
    for (int64_t j = 0; j < half; ++j) line[j] = complexAt(in, o, j, i);
    for (int64_t j = half; j < n; ++j) line[j] = std::conj(line[n - j]);
    plan.apply(line.data(), scratch);
    for (int64_t j = 0; j < n; ++j) at3(out, o, j, i) = static_cast<T>(line[j].real() * scale);
  });
}

}  // namespace maia_nn
