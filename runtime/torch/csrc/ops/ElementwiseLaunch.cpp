// The elementwise launch path (ElementwiseLaunch.h).
#include "ops/ElementwiseLaunch.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ScalarOps.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>

#include "ops/EagerKernels.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {

using at::Tensor;

namespace {

/// Whether inputs and out (if defined) can skip the TensorIterator: all
/// contiguous on one device with one shape (0-dim inputs broadcast), out not
/// partially overlapping an input. The common case of small eager ops, where
/// building a TensorIterator costs more than the launch.
bool isDenseCase(const Tensor& out, TensorRefs inputs, c10::IntArrayRef* shape) {
  const Tensor* ref = nullptr;
  for (const Tensor& t : inputs) {
    if (!t.is_contiguous()) return false;
    if (t.dim() == 0) continue;
    if (ref != nullptr && (t.sizes() != ref->sizes() || t.device() != ref->device())) return false;
    ref = &t;
  }
  if (ref == nullptr) ref = &inputs.begin()->get();  // all 0-dim
  for (const Tensor& t : inputs)
    if (t.device() != ref->device()) return false;
  *shape = ref->sizes();
  if (!out.defined()) return true;
  if (!out.is_contiguous() || out.sizes() != *shape || out.device() != ref->device())
    return false;
  for (const Tensor& t : inputs)
    if (at::get_overlap_status(out, t) == at::MemOverlapStatus::Partial) return false;
  return true;
}

}  // namespace

void checkOutputCast(c10::ScalarType result, const Tensor& out) {
  TORCH_CHECK(!out.defined() || c10::canCast(result, out.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", out.scalar_type());
}

c10::ScalarType defaultFloat() { return c10::typeMetaToScalarType(at::get_default_dtype()); }

c10::MaybeOwned<Tensor> onDevice(const Tensor& t, const Tensor& ref, c10::ScalarType dtype) {
  if (t.device().is_cpu()) {
    TORCH_CHECK(t.dim() == 0, "Expected all tensors to be on the same device, but found at "
                "least two devices, ", ref.device(), " and cpu! (only 0-dim CPU tensors mix "
                "with maia tensors)");
    Tensor scalar = at::empty({}, ref.options().dtype(dtype));
    fill(scalar, t.item());
    return c10::MaybeOwned<Tensor>::owned(std::move(scalar));
  }
  return castTo(t, dtype);
}

const Tensor& deviceOperand(const Tensor& a, const Tensor& b) {
  return a.device().is_privateuseone() ? a : b;
}

Tensor& launchInto(Tensor& out, c10::ScalarType result_dtype, maiaKernel_t kernel,
                   TensorRefs inputs,
                   c10::ArrayRef<maiaKernelArg> scalars) {
  if (out.defined() && out.scalar_type() != result_dtype) {
    checkOutputCast(result_dtype, out);
    Tensor result;
    launchInto(result, result_dtype, kernel, inputs, scalars);
    at::native::resize_output(out, result.sizes());
    out.copy_(result);
    return out;
  }
  c10::IntArrayRef shape;
  if (isDenseCase(out, inputs, &shape)) {
    if (!out.defined())
      out = newEmpty(shape, inputs.begin()->get().options().dtype(result_dtype));
    std::array<const Tensor*, 4> operands;
    size_t count = 0;
    operands[count++] = &out;
    for (const Tensor& t : inputs) operands[count++] = &t;
    launchDense(kernel, c10::ArrayRef<const Tensor*>(operands.data(), count), out.numel(),
                scalars);
    return out;
  }
  if (!out.defined()) out = newEmpty({0}, inputs.begin()->get().options().dtype(result_dtype));
  at::TensorIteratorConfig config;
  config.set_check_mem_overlap(true).check_all_same_dtype(false).add_output(out);
  for (const Tensor& input : inputs) config.add_const_input(input);
  at::TensorIterator iter = config.build();
  launchElementwise(kernel, iter, scalars);
  return out;
}

void checkInPlaceShape(const Tensor& self, const Tensor& out, TensorRefs others) {
  if (!out.is_same(self)) return;
  at::DimVector shape(self.sizes());
  for (const Tensor& t : others) shape = at::infer_size_dimvector(shape, t.sizes());
  TORCH_CHECK(c10::IntArrayRef(shape) == self.sizes(), "output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", c10::IntArrayRef(shape));
}

Tensor& binaryOut(const char* op, Result result, const Tensor& a, const Tensor& b, Tensor& out,
                  c10::ArrayRef<maiaKernelArg> scalars) {
  checkInPlaceShape(a, out, {b});
  c10::ScalarType common = at::native::result_type(a, b);
  if (result == Result::FloatOnly && c10::isIntegralType(common, /*includeBool=*/true))
    common = defaultFloat();
  const Tensor& ref = deviceOperand(a, b);
  c10::MaybeOwned<Tensor> x = onDevice(a, ref, common), y = onDevice(b, ref, common);
  c10::ScalarType result_dtype = result == Result::Bool ? c10::ScalarType::Bool : common;
  return launchInto(out, result_dtype, eagerKernel(op, common), {*x, *y}, scalars);
}

Tensor& unaryOut(const char* op, Result result, const Tensor& self, Tensor& out,
                 c10::ArrayRef<maiaKernelArg> scalars) {
  c10::ScalarType common = self.scalar_type();
  const bool to_real = result == Result::Real || result == Result::FloatReal;
  if ((result == Result::FloatOnly || result == Result::FloatReal) &&
      c10::isIntegralType(common, /*includeBool=*/true))
    common = defaultFloat();
  TORCH_CHECK(!(to_real && c10::isComplexType(common) && out.is_same(self)), "In-place ", op,
              " is not supported for complex tensors.");
  c10::MaybeOwned<Tensor> x = onDevice(self, self, common);
  c10::ScalarType result_dtype = result == Result::Bool ? c10::ScalarType::Bool
                                 : to_real              ? c10::toRealValueType(common)
                                                        : common;
  return launchInto(out, result_dtype, eagerKernel(op, common), {*x}, scalars);
}

maiaKernelArg alphaArg(const at::Scalar& alpha, c10::ScalarType dtype, bool negate) {
  maiaKernelArg arg{};
  arg.kind = maiaArgScalar;
  if (c10::isFloatingType(dtype)) {
    arg.dtype = maiaDtypeF64;
    arg.scalar.f = negate ? -alpha.toDouble() : alpha.toDouble();
  } else {
    TORCH_CHECK(dtype != c10::ScalarType::Bool || !negate,
                "subtraction, the - operator, with two bool tensors is not supported");
    arg.dtype = maiaDtypeI64;
    arg.scalar.i = negate ? -alpha.toLong() : alpha.toLong();
  }
  return arg;
}

c10::ScalarType resultType(const Tensor& a, const Tensor& b, const Tensor& c) {
  at::native::ResultTypeState state;
  for (const Tensor& t : TensorRefs{a, b, c})
    state = at::native::update_result_type_state(t, state);
  return at::native::result_type(state);
}

Tensor& ternaryOut(const char* op, c10::ScalarType common, const Tensor& a, const Tensor& b,
                   const Tensor& c, Tensor& out, c10::ArrayRef<maiaKernelArg> scalars) {
  checkInPlaceShape(a, out, {b, c});
  const Tensor& ref = a.device().is_privateuseone() ? a : deviceOperand(b, c);
  c10::MaybeOwned<Tensor> x = onDevice(a, ref, common), y = onDevice(b, ref, common),
                          z = onDevice(c, ref, common);
  return launchInto(out, common, eagerKernel(op, common), {*x, *y, *z}, scalars);
}

}  // namespace torch_maia::ops
