// Batch normalization over (N, C, L) memrefs (L: the spatial elements),
// forward (training and evaluation, with the running statistics update) and
// backward. Templated over the storage type, instantiated per floating dtype
// by gen_nn_kernels.py.
//
// Each program owns a contiguous block of channels and does all of a
// channel's work: the statistics, the running update and the normalization
// (no second launch, no partial sums to combine). Sums accumulate in double
// in a fixed order, so results do not depend on the program count. The
// arithmetic follows PyTorch's CPU kernels (batch_norm_cpu_transform_input,
// batch_norm_backward_cpu_template): out = x * alpha + beta with
// alpha = invstd * weight and beta = bias - mean * alpha.
#pragma once

#include <cmath>
#include <cstdint>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

/// Calls f(value pointer of element (n, c, l), l stride) for each row n of
/// channel c: the channel's elements, row by row in order.
template <typename T, typename Row>
void forChannelRows(const MemRef<T, 3>& m, int64_t c, Row&& row) {
  for (int64_t n = 0; n < m.sizes[0]; ++n)
    row(m.aligned + m.offset + n * m.strides[0] + c * m.strides[1], m.strides[2]);
}

// args: out, x (N, C, L); save_mean, save_invstd, weight, bias, running_mean,
// running_var (C; undefined ones are not read: see flags); eps, momentum;
// training, flags (bit 0 weight, 1 bias, 2 running_mean, 3 running_var).
// Training: batch statistics (biased variance for invstd), written to
// save_mean/save_invstd, and the running statistics updated in place
// (unbiased variance). Evaluation: the running statistics normalize, and
// save_mean/save_invstd receive the running mean and its invstd. The saved
// statistics are of the compute type (float32 for float16/bfloat16): what
// PyTorch's native_batch_norm returns on accelerators.
template <typename T>
void batchNorm(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& out = memref<T, 3>(args, 0);
  const auto& x = memref<T, 3>(args, 1);
  const auto& save_mean = memref<C, 1>(args, 2);
  const auto& save_invstd = memref<C, 1>(args, 3);
  const auto& weight = memref<T, 1>(args, 4);
  const auto& bias = memref<T, 1>(args, 5);
  const auto& running_mean = memref<T, 1>(args, 6);
  const auto& running_var = memref<T, 1>(args, 7);
  const double eps = scalar<double>(args, 8), momentum = scalar<double>(args, 9);
  const bool training = scalar<int64_t>(args, 10) != 0;
  const int64_t flags = scalar<int64_t>(args, 11);
  const int64_t length = x.sizes[2];
  const double count = static_cast<double>(x.sizes[0] * length);
  auto slice = maia_kernel::programSlice(grid, x.sizes[1]);
  for (int64_t c = slice.begin; c < slice.end; ++c) {
    C mean, invstd;
    if (training) {
      double sum = 0;
      forChannelRows(x, c, [&](const T* p, int64_t s) {
        for (int64_t l = 0; l < length; ++l) sum += static_cast<double>(load(p[l * s]));
      });
      const double m = sum / count;
      double squares = 0;
      forChannelRows(x, c, [&](const T* p, int64_t s) {
        for (int64_t l = 0; l < length; ++l) {
          const double d = static_cast<double>(load(p[l * s])) - m;
          squares += d * d;
        }
      });
      mean = static_cast<C>(m);
      invstd = static_cast<C>(1.0 / std::sqrt(squares / count + eps));
      if (flags & 4)
        at1(running_mean, c) = store<T>(
            momentum * m + (1 - momentum) * static_cast<double>(load(at1(running_mean, c))));
      if (flags & 8)
        at1(running_var, c) = store<T>(
            momentum * squares / (count - 1) +
            (1 - momentum) * static_cast<double>(load(at1(running_var, c))));
    } else {
      mean = static_cast<C>(load(at1(running_mean, c)));
      invstd = static_cast<C>(
          1.0 / std::sqrt(static_cast<double>(load(at1(running_var, c))) + eps));
    }
    at1(save_mean, c) = mean;
    at1(save_invstd, c) = invstd;
    const C w = (flags & 1) ? static_cast<C>(load(at1(weight, c))) : C(1);
    const C b = (flags & 2) ? static_cast<C>(load(at1(bias, c))) : C(0);
    const C alpha = invstd * w, beta = b - mean * alpha;
    for (int64_t n = 0; n < x.sizes[0]; ++n) {
      const T* src = x.aligned + x.offset + n * x.strides[0] + c * x.strides[1];
      T* dst = out.aligned + out.offset + n * out.strides[0] + c * out.strides[1];
      const int64_t ss = x.strides[2], sd = out.strides[2];
      for (int64_t l = 0; l < length; ++l)
        dst[l * sd] = store<T>(static_cast<C>(load(src[l * ss])) * alpha + beta);
    }
  }
}

// args: grad_input, grad_out, x (N, C, L); grad_weight, grad_bias, weight,
// mean, invstd_or_var (C, of the compute type); eps; training; flags (bit 0 weight defined,
// 1 grad_input wanted, 2 grad_weight wanted, 3 grad_bias wanted).
// Training: mean/invstd are the forward's saved statistics; evaluation:
// the running mean and variance.
template <typename T>
void batchNormBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gi = memref<T, 3>(args, 0);
  const auto& dy = memref<T, 3>(args, 1);
  const auto& x = memref<T, 3>(args, 2);
  const auto& gw = memref<T, 1>(args, 3);
  const auto& gb = memref<T, 1>(args, 4);
  const auto& weight = memref<T, 1>(args, 5);
  const auto& mean_in = memref<C, 1>(args, 6);
  const auto& stat = memref<C, 1>(args, 7);
  const double eps = scalar<double>(args, 8);
  const bool training = scalar<int64_t>(args, 9) != 0;
  const int64_t flags = scalar<int64_t>(args, 10);
  const int64_t batch = x.sizes[0], length = x.sizes[2];
  const double count = static_cast<double>(batch * length);
  auto slice = maia_kernel::programSlice(grid, x.sizes[1]);
  for (int64_t c = slice.begin; c < slice.end; ++c) {
    const double mean = static_cast<double>(at1(mean_in, c));
    const double s = static_cast<double>(at1(stat, c));
    const double invstd = training ? s : 1.0 / std::sqrt(s + eps);
    double sum_dy = 0, dot = 0;
    for (int64_t n = 0; n < batch; ++n) {
      const T* pg = dy.aligned + dy.offset + n * dy.strides[0] + c * dy.strides[1];
      const T* px = x.aligned + x.offset + n * x.strides[0] + c * x.strides[1];
      for (int64_t l = 0; l < length; ++l) {
        const double g = static_cast<double>(load(pg[l * dy.strides[2]]));
        sum_dy += g;
        dot += g * (static_cast<double>(load(px[l * x.strides[2]])) - mean);
      }
    }
    if (flags & 4) at1(gw, c) = store<T>(dot * invstd);
    if (flags & 8) at1(gb, c) = store<T>(sum_dy);
    if (!(flags & 2)) continue;
    const double w = (flags & 1) ? static_cast<double>(load(at1(weight, c))) : 1.0;
    // grad_input = (dy - mean(dy) - (x - mean) * k) * invstd * w in training
    // (k = dot * invstd^2 / count), dy * invstd * w in evaluation.
    const C scale = static_cast<C>(invstd * w);
    const C k = training ? static_cast<C>(dot * invstd * invstd / count) : C(0);
    const C grad_mean = training ? static_cast<C>(sum_dy / count) : C(0);
    const C m = static_cast<C>(mean);
    for (int64_t n = 0; n < batch; ++n) {
      const T* pg = dy.aligned + dy.offset + n * dy.strides[0] + c * dy.strides[1];
      const T* px = x.aligned + x.offset + n * x.strides[0] + c * x.strides[1];
      T* po = gi.aligned + gi.offset + n * gi.strides[0] + c * gi.strides[1];
      for (int64_t l = 0; l < length; ++l) {
        const C g = static_cast<C>(load(pg[l * dy.strides[2]]));
        const C xm = static_cast<C>(load(px[l * x.strides[2]])) - m;
        po[l * gi.strides[2]] = store<T>((g - grad_mean - xm * k) * scale);
      }
    }
  }
}

}  // namespace maia_nn
