// max_unpool2d and max_unpool3d on maia (functional and out=; F.max_unpool1d
// is max_unpool2d of height 1): every (batch, channel) plane of the output
// is zeros with each input value scattered to the position its index names,
// one launch of the scatter kernel over the planes (ScatterGather.cpp), so
// duplicate indices resolve as on the CPU (in input order, the last wins)
// and an index outside its plane traps like any scatter index. The
// gradient is ATen's max_pool_double_backward (a gather, native).
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <vector>

#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

/// The CPU's argument checks of max_unpooling{2,3}d (MaxUnpooling.cpp).
void checkUnpool(int spatial, const Tensor& self, const Tensor& indices,
                 c10::IntArrayRef output_size) {
  const char* dims = spatial == 2 ? "(height, width)" : "(depth, height, width)";
  const char* count = spatial == 2 ? "two" : "three";
  TORCH_CHECK(indices.scalar_type() == at::kLong,
              "elements in indices should be type int64 but got: ", indices.scalar_type());
  TORCH_CHECK(static_cast<int>(output_size.size()) == spatial, "There should be exactly ", count,
              " elements ", dims, " in output_size, but got ", output_size.size(), " elements.");
  TORCH_CHECK(self.dim() == spatial + 1 || self.dim() == spatial + 2, "Input to max_unpooling",
              spatial, "d should be a ", spatial + 1, "d or ", spatial + 2,
              "d Tensor, but got a tensor with ", self.dim(), " dimensions.");
  TORCH_CHECK(self.sizes() == indices.sizes(),
              "Expected shape of indices to be same as that of the input tensor (", self.sizes(),
              ") but got indices tensor with shape: ", indices.sizes());
  for (int64_t d = 1; d < self.dim(); ++d)
    TORCH_CHECK(self.size(d) > 0, "max_unpooling", spatial,
                "d_forward_out_cpu(): Expected input to have non-zero size for non-batch "
                "dimensions, but got ", self.sizes(), " with dimension ", d, " being empty.");
  checkFloatDtype(spatial == 2 ? "max_unpool2d" : "max_unpool3d", self.scalar_type());
  for (int64_t size : output_size)
    TORCH_CHECK(size >= 0, "max_unpooling", spatial,
                "d(): output_size must contain non-negative spatial dimensions, but got "
                "output_size=", output_size);
}

Tensor& maxUnpoolOut(int spatial, const Tensor& self, const Tensor& indices,
                     c10::IntArrayRef output_size, Tensor& out) {
  checkUnpool(spatial, self, indices, output_size);
  const int64_t leading = self.dim() - spatial;  // (C) or (N, C)
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().begin() + leading);
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  const int64_t plane = prod(output_size, 0, spatial);
  const int64_t plane_count = prod(self.sizes(), 0, leading);
  Tensor dense = newEmpty({plane_count, plane}, self.options());
  dense.zero_();
  if (self.numel() > 0 && plane > 0)
    dense.scatter_(1, indices.reshape({plane_count, -1}), self.reshape({plane_count, -1}));
  // The CPU keeps the input's layout (channels-last in, channels-last out).
  const at::MemoryFormat format =
      self.dim() == spatial + 2 ? self.suggest_memory_format() : at::MemoryFormat::Contiguous;
  out.resize_(shape, format);
  return out.copy_(dense.view(shape));
}

Tensor maxUnpool2d(const Tensor& self, const Tensor& indices, c10::IntArrayRef output_size) {
  Tensor out = newEmpty({0}, self.options());
  return maxUnpoolOut(2, self, indices, output_size, out);
}

Tensor maxUnpool3d(const Tensor& self, const Tensor& indices, c10::IntArrayRef output_size,
                   c10::IntArrayRef stride, c10::IntArrayRef padding) {
  TORCH_CHECK(stride.size() == 3,
              "There should be exactly three elements (depth, height, width) in stride, but "
              "got: ", stride.size(), " elements.");
  TORCH_CHECK(padding.size() == 3,
              "There should be exactly three elements (depth, height, width) in padding, but "
              "got: ", padding.size(), " elements.");
  for (int64_t s : stride)
    TORCH_CHECK(s > 0, "strides should be greater than zero, but got stride: ", stride);
  Tensor out = newEmpty({0}, self.options());
  return maxUnpoolOut(3, self, indices, output_size, out);
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("max_unpool2d", TORCH_FN(maxUnpool2d));
  m.impl("max_unpool2d.out",
         [](const Tensor& self, const Tensor& indices, c10::IntArrayRef output_size,
            Tensor& out) -> Tensor& { return maxUnpoolOut(2, self, indices, output_size, out); });
  m.impl("max_unpool3d", TORCH_FN(maxUnpool3d));
}

}  // namespace
}  // namespace torch_maia::ops
