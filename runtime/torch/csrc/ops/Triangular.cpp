// tril and triu on maia (functional, in-place and out=): one kernel of the
// NN binary (runtime/kernels/nn/triangular.h) over the matrices of the last
// two dimensions, any dtype, any batch. Causal attention masks (GPT-2,
// Llama) are built with them. tril_indices/triu_indices: another kernel of
// the same file.
#include <ATen/native/Resize.h>
#include <ATen/ops/tril_indices.h>
#include <ATen/ops/triu_indices.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <string>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/Fallback.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

Tensor& triangularOut(const char* name, bool upper, const Tensor& self, int64_t diagonal,
                      Tensor& out) {
  TORCH_CHECK(self.dim() >= 2, name, ": input tensor must have at least 2 dimensions");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), name, ": expected out to have dtype ",
              self.scalar_type(), ", but got ", out.scalar_type());
  TORCH_CHECK(out.device() == self.device(), name, ": expected out on ", self.device(),
              ", but got ", out.device());
  if (!out.is_same(self)) at::native::resize_output(out, self.sizes());
  if (self.numel() == 0) return out;
  const int64_t rows = self.size(-2), cols = self.size(-1);
  const int64_t batch = self.numel() / (rows * cols);
  // A view when the batch dimensions can be flattened, else a device copy.
  Tensor in = self.reshape({batch, rows, cols});
  // A strided out (e.g. tril_ of a transposed tensor) gets a dense result
  // copied in: the kernel writes rows of a (batch, rows, cols) memref.
  const bool dense = out.is_contiguous();
  Tensor target = dense ? out : newEmpty(self.sizes(), self.options());
  launchNn("triangular", self.scalar_type(),
           {rowMajorMemref(target, {batch, rows, cols}), memrefOf(in), intArg(diagonal),
            intArg(upper ? 1 : 0)},
           programsFor(batch * rows, self.numel()), self.device());
  if (!dense) out.copy_(target);
  return out;
}

template <bool Upper>
Tensor triangular(const Tensor& self, int64_t diagonal) {
  Tensor out = newEmpty(self.sizes(), self.options());
  return triangularOut(Upper ? "triu" : "tril", Upper, self, diagonal, out);
}

template <bool Upper>
Tensor& triangularInPlace(Tensor& self, int64_t diagonal) {
  return triangularOut(Upper ? "triu_" : "tril_", Upper, self, diagonal, self);
}

template <bool Upper>
Tensor& triangularOutVariant(const Tensor& self, int64_t diagonal, Tensor& out) {
  return triangularOut(Upper ? "triu" : "tril", Upper, self, diagonal, out);
}

/// tril_indices/triu_indices: the (2, count) coordinates tril/triu keep in
/// a row x col matrix, row by row, computed on the device. The CPU has them
/// for int32 and int64 only; other dtypes take the host path, which raises
/// its error.
template <bool Upper>
Tensor triangleIndices(int64_t row, int64_t col, int64_t offset,
                       std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                       std::optional<at::Device> device, std::optional<bool> pin_memory) {
  const char* name = Upper ? "triu_indices" : "tril_indices";
  const at::ScalarType type = dtype.value_or(at::kLong);
  const at::TensorOptions options =
      at::TensorOptions().dtype(type).layout(layout).device(device).pinned_memory(pin_memory);
  if (type != at::kLong && type != at::kInt) {
    noteHostFallback(std::string("aten::") + name);
    Tensor host = Upper ? at::triu_indices(row, col, offset, type)
                        : at::tril_indices(row, col, offset, type);
    return host.to(options.device());
  }
  TORCH_CHECK(row >= 0, "row must be non-negative, got", row);
  TORCH_CHECK(col >= 0, "col must be non-negative, got", col);
  TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided,
              "only support layout=torch.strided, got", layout.value_or(at::kStrided));
  // Row i keeps [0, clamp(i + offset + 1, 0, col)) (tril) or
  // [clamp(i + offset, 0, col), col) (triu): counted on the host, one add
  // per row, to size the output.
  int64_t count = 0;
  for (int64_t i = 0; i < row; ++i) {
    const int64_t edge = std::clamp<int64_t>(i + offset + (Upper ? 0 : 1), 0, col);
    count += Upper ? col - edge : edge;
  }
  Tensor out = newEmpty({2, count}, options.dtype(at::kLong));
  if (count > 0)
    launchNn("tri_indices", at::kLong,
             {memrefOf(out), intArg(row), intArg(col), intArg(offset), intArg(Upper ? 1 : 0)},
             programsFor(row, 2 * count), out.device());
  return type == at::kLong ? out : out.to(type);
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("tril_indices", TORCH_FN(triangleIndices<false>));
  m.impl("triu_indices", TORCH_FN(triangleIndices<true>));
  m.impl("tril", TORCH_FN(triangular<false>));
  m.impl("tril_", TORCH_FN(triangularInPlace<false>));
  m.impl("tril.out", TORCH_FN(triangularOutVariant<false>));
  m.impl("triu", TORCH_FN(triangular<true>));
  m.impl("triu_", TORCH_FN(triangularInPlace<true>));
  m.impl("triu.out", TORCH_FN(triangularOutVariant<true>));
}

}  // namespace
}  // namespace torch_maia::ops
