// Reflection and replication padding on maia (nn.functional.pad with
// mode="reflect" or "replicate", ReflectionPad*d, ReplicationPad*d) and
// their backwards: one index_select per padded dimension, whose source index
// for every output position is computed on the host (a vector of the padded
// length, a few hundred bytes copied to the device); the backward sums the
// gradient back with index_add, dimension by dimension in reverse. Both are
// native device kernels (IndexSelect.cpp), so nothing runs on the host
// fallback. Negative padding crops, as on the CPU.
#include <ATen/ops/index_add.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

enum class PadMode { Reflect, Replicate };

const char* padName(PadMode mode) {
  return mode == PadMode::Reflect ? "reflection_pad" : "replication_pad";
}

/// The input position each output position of a dimension of size n,
/// padded by before/after (negative: cropped), reads.
std::vector<int64_t> sourceIndex(PadMode mode, int64_t n, int64_t before, int64_t after) {
  std::vector<int64_t> index;
  index.reserve(static_cast<size_t>(std::max<int64_t>(n + before + after, 0)));
  for (int64_t i = -before; i < n + after; ++i) {
    int64_t j = i;
    if (mode == PadMode::Replicate) {
      j = std::clamp<int64_t>(i, 0, n - 1);
    } else {
      if (j < 0) j = -j;
      if (j >= n) j = 2 * (n - 1) - j;
    }
    index.push_back(j);
  }
  return index;
}

/// The checks ATen's CPU kernels make, with their messages.
void checkPadding(PadMode mode, int dims, const Tensor& self, c10::IntArrayRef padding) {
  const char* name = padName(mode);
  TORCH_CHECK(static_cast<int64_t>(padding.size()) == 2 * dims, name, dims,
              "d: padding size is expected to be ", 2 * dims, ", but got: ", padding.size());
  const int64_t rank = self.dim();
  TORCH_CHECK(rank == dims + 1 || rank == dims + 2, "Expected ", dims + 1, "D or ", dims + 2,
              "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions "
              "for input, but got: ", self.sizes());
  for (int64_t d = (rank == dims + 2 ? 1 : 0); d < rank - dims; ++d)  // the batch may be 0
    TORCH_CHECK(self.size(d) != 0, name, dims,
                "d: expected non-empty channel dimension, got input of size ", self.sizes());
  for (int k = 0; k < dims; ++k) {
    const int64_t d = rank - 1 - k, n = self.size(d);
    const int64_t before = padding[2 * k], after = padding[2 * k + 1];
    TORCH_CHECK(n > 0, name, dims, "d: expected input of non-zero size in the padded "
                "dimensions, got ", self.sizes());
    if (mode == PadMode::Reflect)
      TORCH_CHECK(before < n && after < n, "Argument #4: Padding size should be less than the "
                  "corresponding input dimension, but got: padding (", before, ", ", after,
                  ") at dimension ", d, " of input ", self.sizes());
    TORCH_CHECK(n + before + after >= 1, "input (", self.sizes(), ") is too small. Calculated "
                "output size along dimension ", d, " is ", n + before + after,
                ", which should be at least 1");
  }
}

Tensor deviceIndex(PadMode mode, const Tensor& self, int64_t d, int64_t before, int64_t after) {
  return int64Tensor(sourceIndex(mode, self.size(d), before, after), self.device());
}

Tensor padForward(PadMode mode, int dims, const Tensor& self, c10::SymIntArrayRef padding_sym) {
  const c10::IntArrayRef padding = C10_AS_INTARRAYREF_SLOW(padding_sym);
  checkPadding(mode, dims, self, padding);
  Tensor out = self;
  for (int k = 0; k < dims; ++k) {
    const int64_t d = self.dim() - 1 - k;
    out = at::index_select(out, d, deviceIndex(mode, self, d, padding[2 * k], padding[2 * k + 1]));
  }
  return out;
}

Tensor padBackward(PadMode mode, int dims, const Tensor& grad_output, const Tensor& self,
                   c10::SymIntArrayRef padding_sym) {
  const c10::IntArrayRef padding = C10_AS_INTARRAYREF_SLOW(padding_sym);
  checkPadding(mode, dims, self, padding);
  Tensor grad = grad_output;
  for (int k = dims - 1; k >= 0; --k) {  // the forward's selections, undone last first
    const int64_t d = self.dim() - 1 - k;
    std::vector<int64_t> sizes = grad.sizes().vec();
    sizes[d] = self.size(d);
    grad = at::zeros(sizes, grad.options())
               .index_add_(d, deviceIndex(mode, self, d, padding[2 * k], padding[2 * k + 1]),
                           grad);
  }
  return grad;
}

template <PadMode kMode, int kDims>
struct Pad {
  static Tensor forward(const Tensor& self, c10::SymIntArrayRef padding) {
    return padForward(kMode, kDims, self, padding);
  }
  static Tensor& forwardOut(const Tensor& self, c10::SymIntArrayRef padding, Tensor& out) {
    return resultInto(out, padForward(kMode, kDims, self, padding));
  }
  static Tensor backward(const Tensor& grad, const Tensor& self, c10::SymIntArrayRef padding) {
    return padBackward(kMode, kDims, grad, self, padding);
  }
  static Tensor& backwardOut(const Tensor& grad, const Tensor& self,
                             c10::SymIntArrayRef padding, Tensor& grad_input) {
    return resultInto(grad_input, padBackward(kMode, kDims, grad, self, padding));
  }
};

using ReflectionPad1d = Pad<PadMode::Reflect, 1>;
using ReflectionPad2d = Pad<PadMode::Reflect, 2>;
using ReflectionPad3d = Pad<PadMode::Reflect, 3>;
using ReplicationPad1d = Pad<PadMode::Replicate, 1>;
using ReplicationPad2d = Pad<PadMode::Replicate, 2>;
using ReplicationPad3d = Pad<PadMode::Replicate, 3>;

#define MAIA_PAD(NAME, IMPL)                                                            \
  m.impl(NAME, TORCH_FN(IMPL::forward));                                                \
  m.impl(NAME ".out", TORCH_FN(IMPL::forwardOut));                                      \
  m.impl(NAME "_backward", TORCH_FN(IMPL::backward));                                   \
  m.impl(NAME "_backward.grad_input", TORCH_FN(IMPL::backwardOut))

MAIA_NATIVE_KERNELS(m) {
  MAIA_PAD("reflection_pad1d", ReflectionPad1d);
  MAIA_PAD("reflection_pad2d", ReflectionPad2d);
  MAIA_PAD("reflection_pad3d", ReflectionPad3d);
  MAIA_PAD("replication_pad1d", ReplicationPad1d);
  MAIA_PAD("replication_pad2d", ReplicationPad2d);
  MAIA_PAD("replication_pad3d", ReplicationPad3d);
}

}  // namespace
}  // namespace torch_maia::ops
