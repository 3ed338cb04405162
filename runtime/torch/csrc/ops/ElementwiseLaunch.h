// The launch path shared by the elementwise operator files (Elementwise.cpp,
// MathElementwise.cpp, PointwiseLoss.cpp): type promotion as PyTorch defines
// it, operands moved to the device in the common dtype, and one launch of an
// eager kernel ("<op>_<dtype>") over the broadcast shape, dense or through a
// TensorIterator.
#pragma once

#include <maia/runtime.h>

#include <ATen/core/Tensor.h>
#include <c10/util/MaybeOwned.h>

#include <array>
#include <functional>
#include <initializer_list>

namespace torch_maia::ops {

enum class Result {
  Common,         // the common dtype of the inputs
  Bool,           // comparisons and logical operators
  FloatOnly,      // integer inputs are promoted to the default float dtype
  Real,           // complex inputs give their real dtype (abs)
  FloatReal,      // FloatOnly, and complex inputs give their real dtype (angle)
};

/// The default floating dtype (torch.get_default_dtype()).
c10::ScalarType defaultFloat();

/// t as a maia tensor of dtype on ref's device: casts on the device, and
/// turns a CPU scalar into a 0-dim maia tensor filled on the stream.
/// t itself (borrowed, see castTo) when it is already a maia tensor of dtype.
c10::MaybeOwned<at::Tensor> onDevice(const at::Tensor& t, const at::Tensor& ref,
                                     c10::ScalarType dtype);

/// The maia operand among a, b (a CPU scalar cannot decide the device).
const at::Tensor& deviceOperand(const at::Tensor& a, const at::Tensor& b);

/// Input tensors by reference (see onDevice: no copies of Python's tensors).
using TensorRefs = std::initializer_list<std::reference_wrapper<const at::Tensor>>;

/// Runs kernel writing out (resized to the broadcast shape); when out's
/// dtype differs from result_dtype, writes a temporary and casts.
at::Tensor& launchInto(at::Tensor& out, c10::ScalarType result_dtype, maiaKernel_t kernel,
                       TensorRefs inputs, c10::ArrayRef<maiaKernelArg> scalars = {});

/// Refuses an out= (or in-place) result of a dtype result cannot cast to.
void checkOutputCast(c10::ScalarType result, const at::Tensor& out);

/// An in-place result (out is self) keeps its shape: the other operands
/// must broadcast to it, as ATen checks. (launchInto would resize a
/// result it writes through a cast, as for out=.)
void checkInPlaceShape(const at::Tensor& self, const at::Tensor& out, TensorRefs others);

/// out = op(a, b) in the common dtype (FloatOnly: integers promote to float).
at::Tensor& binaryOut(const char* op, Result result, const at::Tensor& a, const at::Tensor& b,
                      at::Tensor& out, c10::ArrayRef<maiaKernelArg> scalars = {});

/// out = op(self), with result dtype rule result.
at::Tensor& unaryOut(const char* op, Result result, const at::Tensor& self, at::Tensor& out,
                     c10::ArrayRef<maiaKernelArg> scalars = {});

/// A scalar kernel argument in dtype's kind (f64 for floating, i64 otherwise),
/// negated for subtraction.
maiaKernelArg alphaArg(const at::Scalar& alpha, c10::ScalarType dtype, bool negate);

/// Up to three scalars as f64 kernel arguments: the parameters of the
/// floating-only kernels (the kernel converts them to its compute type).
class FloatArgs {
 public:
  FloatArgs(std::initializer_list<at::Scalar> values) {
    for (const at::Scalar& value : values) args_[size_++] = alphaArg(value, at::kDouble, false);
  }
  operator c10::ArrayRef<maiaKernelArg>() const { return {args_.data(), size_}; }

 private:
  std::array<maiaKernelArg, 3> args_{};
  size_t size_ = 0;
};

/// The dtype type promotion gives a, b, c together.
c10::ScalarType resultType(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c);

/// out = f(a, b, c) with scalars, in the common dtype of a, b, c.
at::Tensor& ternaryOut(const char* op, c10::ScalarType common, const at::Tensor& a,
                       const at::Tensor& b, const at::Tensor& c, at::Tensor& out,
                       c10::ArrayRef<maiaKernelArg> scalars = {});

}  // namespace torch_maia::ops

// Registration of the common operator shapes in a MAIA_NATIVE_KERNELS(m)
// block (with `using at::Tensor` in scope).

#define MAIA_BINARY(NAME, KERNEL, RESULT) MAIA_BINARY_OUT(NAME, KERNEL, RESULT, ".out")

/// OUT: the out variant's overload (".out", or ".Tensor_out" for ops that
/// also have Scalar forms, e.g. bitwise_and).
#define MAIA_BINARY_OUT(NAME, KERNEL, RESULT, OUT)                                         \
  m.impl(NAME ".Tensor", [](const Tensor& a, const Tensor& b) {                            \
    Tensor out;                                                                            \
    return binaryOut(KERNEL, RESULT, a, b, out);                                           \
  });                                                                                      \
  m.impl(NAME "_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {                       \
    return binaryOut(KERNEL, RESULT, a, b, a);                                             \
  });                                                                                      \
  m.impl(NAME OUT, [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {          \
    return binaryOut(KERNEL, RESULT, a, b, out);                                           \
  })

#define MAIA_PLAIN_BINARY(NAME, RESULT)                                                    \
  m.impl(NAME, [](const Tensor& a, const Tensor& b) {                                      \
    Tensor out;                                                                            \
    return binaryOut(NAME, RESULT, a, b, out);                                             \
  });                                                                                      \
  m.impl(NAME ".out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {        \
    return binaryOut(NAME, RESULT, a, b, out);                                             \
  })

#define MAIA_UNARY(NAME, RESULT) MAIA_UNARY_KERNEL(NAME, NAME, RESULT)

/// NAME, NAME_ and NAME.out computed by the unary KERNEL.
#define MAIA_UNARY_KERNEL(NAME, KERNEL, RESULT)                                            \
  m.impl(NAME, [](const Tensor& a) {                                                       \
    Tensor out;                                                                            \
    return unaryOut(KERNEL, RESULT, a, out);                                               \
  });                                                                                      \
  m.impl(NAME "_", [](Tensor& a) -> Tensor& { return unaryOut(KERNEL, RESULT, a, a); });    \
  m.impl(NAME ".out", [](const Tensor& a, Tensor& out) -> Tensor& {                         \
    return unaryOut(KERNEL, RESULT, a, out);                                               \
  })
