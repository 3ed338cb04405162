// Functors of the pointwise losses (mse, smooth L1, Huber, binary cross
// entropy): the elementwise loss before the reduction, and the backward
// (self, target, grad) -> grad_input with `norm` the reduction's scale
// (2/N or 1/N for a mean, as the CPU's kernels fold it in).
#pragma once

#include <algorithm>
#include <cmath>

namespace maia_eager::op {

struct SquaredError {
  template <typename C> C operator()(C a, C b) const {
    const C diff = a - b;
    return diff * diff;
  }
};
template <typename C>
struct MseBackward {
  C norm;
  C operator()(C x, C t, C g) const { return norm * (x - t) * g; }
};

template <typename C>
struct SmoothL1 {
  C beta;
  C operator()(C a, C b) const {
    const C z = std::fabs(a - b);
    return z < beta ? C(0.5) * z * z / beta : z - C(0.5) * beta;
  }
};
template <typename C>
struct SmoothL1Backward {
  C norm, beta;
  C operator()(C a, C b, C g) const {
    const C x = a - b;
    if (x <= -beta) return -norm * g;
    if (x >= beta) return norm * g;
    return norm * x * g / beta;
  }
};

template <typename C>
struct Huber {
  C delta;
  C operator()(C a, C b) const {
    const C z = std::fabs(a - b);
    return z < delta ? C(0.5) * z * z : delta * (z - C(0.5) * delta);
  }
};
template <typename C>
struct HuberBackward {
  C norm, delta;
  C operator()(C a, C b, C g) const {
    const C x = a - b;
    if (x <= -delta) return -norm * g * delta;
    if (x >= delta) return norm * g * delta;
    return norm * x * g;
  }
};

/// -(t log(x) + (1 - t) log(1 - x)), each log clamped at -100 as PyTorch.
/// An input outside [0, 1] (or NaN) traps: the driver reports a sticky
/// device error naming the kernel, as an out-of-range index does (the CPU
/// checks on the host, which would synchronize here).
struct BinaryCrossEntropy {
  template <typename C> C operator()(C x, C t) const {
    if (!(x >= C(0) && x <= C(1))) __builtin_trap();
    return (t - C(1)) * std::max(C(std::log1p(-x)), C(-100)) -
           t * std::max(C(std::log(x)), C(-100));
  }
};
/// (x, t, g) -> g (x - t) / max((1 - x) x, 1e-12), as the CPU.
struct BinaryCrossEntropyBackward {
  template <typename C> C operator()(C x, C t, C g) const {
    return g * (x - t) / std::max((C(1) - x) * x, C(1e-12));
  }
};

}  // namespace maia_eager::op
