// Running ATen's structured meta functions for maia operators (Pooling.cpp,
// Sorting.cpp, Upsample.cpp, Glu.cpp, Linalg*.cpp): the checks, output shapes, dtypes and
// layouts come from ATen itself, so maia raises the CPU's errors and returns
// the strides compiled graphs expect.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <array>
#include <type_traits>

#include "ops/MaiaOps.h"

namespace torch_maia::ops {

/// A result as a meta function describes it: a new tensor, contiguous (no
/// dispatch), in the requested memory format, or with the given strides.
inline at::Tensor allocateOutput(c10::IntArrayRef sizes, c10::IntArrayRef strides,
                                 const at::TensorOptions& options) {
  if (!strides.empty()) {
    return emptyStrided(sizes, strides, c10::typeMetaToScalarType(options.dtype()),
                        options.layout(), options.device(), std::nullopt);
  }
  const auto format = options.memory_format_opt().value_or(c10::MemoryFormat::Contiguous);
  if (format == c10::MemoryFormat::Contiguous)
    return newEmpty(sizes, options.memory_format(std::nullopt));
  return at::empty(sizes, options);
}

/// Runs structured operator Meta's meta function for maia: the outputs it
/// declares are allocated, or, for out= variants, the given tensors are
/// checked and resized (and restrided when resized) as ATen's generated
/// out= wrappers do. Not for metas that are TensorIterators: some (glu's)
/// borrow tensors that die with the meta function, which only the CPU's
/// raw-pointer loops survive.
template <class Meta, size_t N>
struct Structured final : Meta {
  static_assert(!std::is_base_of_v<at::TensorIteratorBase, Meta>);

  explicit Structured(std::array<at::Tensor*, N> given = {}) : given_(given) {
    for (size_t i = 0; i < N; ++i)
      if (given_[i] != nullptr) outputs[i] = *given_[i];
  }

  void set_output_raw_strided(int64_t i, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                              at::TensorOptions options) override {
    at::Tensor* out = given_[i];
    if (out == nullptr) {
      outputs[i] = allocateOutput(sizes, strides, options);
    } else {
      TORCH_CHECK(options.dtype() == out->dtype(), "Expected out tensor to have dtype ",
                  options.dtype(), ", but got ", out->dtype(), " instead");
      TORCH_CHECK(options.device() == out->device(), "Expected out tensor to have device ",
                  options.device(), ", but got ", out->device(), " instead");
      if (at::native::resize_output(*out, sizes)) {
        if (!strides.empty())
          out->as_strided_(sizes, strides);
        else if (options.memory_format_opt().has_value())
          out->unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
      }
    }
  }
  // Metas that ask for given strides (linalg's column-major batches): an
  // out= tensor of other strides is used as it is, no proxy; maia's
  // implementations take any strides.
  void set_output_strided(int64_t i, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                          at::TensorOptions options) override {
    set_output_raw_strided(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t i) override { return outputs[i]; }

  std::array<at::Tensor, N> outputs;

 private:
  std::array<at::Tensor*, N> given_;
};

}  // namespace torch_maia::ops
