// Reductions on maia: sum, mean, prod, amax/amin, max/min (values and
// indices), argmax/argmin, var/std (and var_mean/std_mean), vector norms,
// any/all, hash_tensor, cumsum, cumprod, logcumsumexp, cummax and cummin, computed by the reduce kernel binary on the current
// stream (runtime/kernels/reduce).
//
// The input is viewed as [outer, n, inner] with the reduced dimensions in the
// middle: reduced dimensions that are adjacent stay a view (any strides);
// others are first permuted behind the kept ones and made contiguous. The
// input is cast to the computation dtype first (a device kernel) so every
// kernel reads and writes one dtype. Results are computed into a fresh
// contiguous tensor; out= variants copy it into out.
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/hash_tensor_meta.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <cmath>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "MaiaCheck.h"
#include "MaiaStream.h"
#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"
#include "ops/Structured.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using DimList = at::OptionalIntArrayRef;
using IntList = c10::IntArrayRef;

/// The input viewed as [outer, n, inner] and the result's shape.
struct Plan {
  Tensor in3;            // the view, when it had to be made (else undefined)
  maiaKernelArg input{};  // memref of the [outer, n, inner] view
  c10::SmallVector<int64_t, 6> shape;
  c10::SmallVector<bool, 6> reduced;
  int64_t outer = 1, n = 1, inner = 1;

  /// Views input (keeping it alive in in3) as [outer, n, inner]. A
  /// contiguous input needs no view: the memref is computed, saving a
  /// reshape dispatch per small reduction.
  void viewInput(const Tensor& x) {
    if (x.is_contiguous()) {
      input = rowMajorMemref(x, {outer, n, inner});
      return;
    }
    in3 = x.reshape({outer, n, inner});
    input = memrefOf(in3);
  }

  /// A fresh (contiguous) result of the kept dimensions as [outer, inner].
  maiaKernelArg rows(const Tensor& result) const { return rowMajorMemref(result, {outer, inner}); }
};

/// dims: the reduced dimensions; nullopt or empty reduces all of them.
Plan makePlan(const Tensor& self, DimList dims, bool keepdim) {
  Plan p;
  const int64_t nd = self.dim();
  p.reduced.assign(nd, false);
  if (!dims.has_value() || dims->empty()) {
    p.reduced.assign(nd, true);
  } else {
    for (int64_t d : *dims) {
      int64_t w = at::maybe_wrap_dim(d, nd);
      if (nd == 0) continue;
      TORCH_CHECK(!p.reduced[w], "dim ", w, " appears multiple times in the list of dims");
      p.reduced[w] = true;
    }
  }
  for (int64_t d = 0; d < nd; ++d) {
    if (!p.reduced[d]) p.shape.push_back(self.size(d));
    else if (keepdim) p.shape.push_back(1);
  }
  if (nd == 0) {
    p.viewInput(self);
    return p;
  }
  int64_t first = -1, last = -1;
  for (int64_t d = 0; d < nd; ++d)
    if (p.reduced[d]) {
      if (first < 0) first = d;
      last = d;
    }
  bool adjacent = true;
  for (int64_t d = first; d <= last; ++d) adjacent = adjacent && p.reduced[d];
  if (adjacent) {
    for (int64_t d = 0; d < nd; ++d) {
      if (d < first) p.outer *= self.size(d);
      else if (d > last) p.inner *= self.size(d);
      else p.n *= self.size(d);
    }
    p.viewInput(self);
  } else {
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < nd; ++d)
      if (!p.reduced[d]) {
        perm.push_back(d);
        p.outer *= self.size(d);
      }
    for (int64_t d = 0; d < nd; ++d)
      if (p.reduced[d]) {
        perm.push_back(d);
        p.n *= self.size(d);
      }
    p.in3 = self.permute(perm).reshape({p.outer, p.n, 1});
    p.input = memrefOf(p.in3);
  }
  return p;
}

/// For reductions without an identity: a reduced dimension may not be empty.
void checkNonEmpty(const char* op, const Tensor& self, const Plan& p, bool dim_given) {
  if (self.dim() == 0) return;
  if (!dim_given) {
    TORCH_CHECK(self.numel() != 0, op, "(): Expected reduction dim to be specified for "
                "input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
    return;
  }
  for (int64_t d = 0; d < self.dim(); ++d)
    TORCH_CHECK_INDEX(!p.reduced[d] || self.size(d) != 0, op, "(): Expected reduction dim ", d,
                      " to have non-zero size.");
}

maiaKernelArg f64Arg(double v) { return maiaKernelArgFloat(maiaDtypeF64, v); }

/// Launches kernel "<op>_<dtype>" of the reduction library on programs
/// programs.
void launchOn(const char* op, c10::ScalarType dtype, c10::ArrayRef<maiaKernelArg> args,
              int64_t programs, const Tensor& ref) {
  launchPrograms(reduceKernel(op, dtype), args, programs, ref.device().index());
}

/// Launches kernel "<op>_<dtype>" of the reduction library over p's outputs.
void launch(const char* op, c10::ScalarType dtype, c10::ArrayRef<maiaKernelArg> args,
            const Plan& p, const Tensor& ref) {
  const int64_t outputs = p.outer * p.inner;
  if (outputs == 0) return;
  launchOn(op, dtype, args, programsFor(outputs, outputs * std::max<int64_t>(p.n, 1)), ref);
}

/// Whether a reduction of p to one value splits its line over the cores:
/// a kernel gives each program whole outputs, so one output would run on
/// one core (a 16M-element sum read at 0.57 of a STREAM triad). Only ops
/// whose partial results combine with the op itself qualify, and dtypes
/// whose partials are stored exactly (accumulator = storage type).
bool splitsLine(const char* op, c10::ScalarType dtype, const Plan& p) {
  const std::string_view name(op);
  const bool associative = name == "sum" || name == "prod" || name == "amax" || name == "amin" ||
                           name == "xor_sum";
  const bool exact = dtype == c10::ScalarType::Float || dtype == c10::ScalarType::Double ||
                     dtype == c10::ScalarType::Long;
  return associative && exact && p.outer * p.inner == 1 && splitsOneLine(p.n);
}

/// The reduction of p's single line into result in two passes: one program
/// per core reduces a contiguous part of the line (the remainder is one more
/// part), then one program reduces those partial results.
void launchSplitLine(const char* op, c10::ScalarType dtype, const Plan& p, const Tensor& result,
                     const Tensor& ref) {
  const int64_t parts = deviceCores(), part = p.n / parts, rest = p.n - parts * part;
  const int64_t stride = p.input.strides[1];
  Tensor partials = newEmpty({parts + (rest > 0 ? 1 : 0)}, ref.options());
  maiaKernelArg lines = p.input;  // [parts, part, 1]
  lines.sizes[0] = parts;
  lines.sizes[1] = part;
  lines.strides[0] = part * stride;
  launchOn(op, dtype, {rowMajorMemref(partials, {parts, 1}), lines}, parts, ref);
  if (rest > 0) {
    maiaKernelArg tail = p.input;  // [1, rest, 1] after the parts
    tail.offset += parts * part * stride;
    tail.sizes[1] = rest;
    maiaKernelArg slot = rowMajorMemref(partials, {1, 1});
    slot.offset += parts;
    launchOn(op, dtype, {slot, tail}, 1, ref);
  }
  launchOn(op, dtype, {p.rows(result), rowMajorMemref(partials, {1, partials.numel(), 1})}, 1,
           ref);
}

/// kernel "<op>_<dtype>" over self cast to dtype; result of dtype.
Tensor reduceAs(const char* op, const Tensor& self, DimList dims, bool keepdim,
                c10::ScalarType dtype, c10::ArrayRef<maiaKernelArg> scalars = {}) {
  c10::MaybeOwned<Tensor> x = castTo(self, dtype);
  Plan p = makePlan(*x, dims, keepdim);
  Tensor result = newEmpty(p.shape, x->options());
  if (scalars.empty() && splitsLine(op, dtype, p)) {
    launchSplitLine(op, dtype, p, result, *x);
    return result;
  }
  c10::SmallVector<maiaKernelArg, 4> args = {p.rows(result), p.input};
  args.append(scalars.begin(), scalars.end());
  launch(op, dtype, args, p, *x);
  return result;
}

// ---------------------------------------------------------------- dtypes

c10::ScalarType sumDtype(const Tensor& self, std::optional<c10::ScalarType> dtype,
                         const Tensor& out = Tensor()) {
  if (dtype.has_value()) return *dtype;
  if (out.defined()) return out.scalar_type();
  return c10::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? c10::ScalarType::Long
                                                                         : self.scalar_type();
}

c10::ScalarType meanDtype(const Tensor& self, std::optional<c10::ScalarType> dtype,
                          const Tensor& out = Tensor()) {
  c10::ScalarType result = dtype ? *dtype : out.defined() ? out.scalar_type() : self.scalar_type();
  TORCH_CHECK(c10::isFloatingType(result), "mean(): could not infer output dtype. ",
              dtype ? "Optional" : "Input", " dtype must be either a floating point or complex "
              "dtype. Got: ", result);
  return result;
}

// ---------------------------------------------------------------- operators

Tensor sumOp(const Tensor& self, DimList dims, bool keepdim, std::optional<c10::ScalarType> dtype,
           const Tensor& out = Tensor()) {
  return reduceAs("sum", self, dims, keepdim, sumDtype(self, dtype, out));
}

Tensor meanOp(const Tensor& self, DimList dims, bool keepdim,
            std::optional<c10::ScalarType> dtype, const Tensor& out = Tensor()) {
  return reduceAs("mean", self, dims, keepdim, meanDtype(self, dtype, out));
}

Tensor prodOp(const Tensor& self, DimList dims, bool keepdim,
            std::optional<c10::ScalarType> dtype, const Tensor& out = Tensor()) {
  return reduceAs("prod", self, dims, keepdim, sumDtype(self, dtype, out));
}

Tensor extreme(const char* op, const Tensor& self, c10::IntArrayRef dims, bool keepdim) {
  Plan p = makePlan(self, dims, keepdim);
  checkNonEmpty(op, self, p, !dims.empty());
  return reduceAs(op, self, dims, keepdim, self.scalar_type());
}

/// max/min over all elements (max(), min()).
Tensor extremeAll(bool is_max, const Tensor& self) {
  TORCH_CHECK(self.numel() != 0, is_max ? "max" : "min", "(): Expected reduction dim to be "
              "specified for input.numel() == 0. Specify the reduction dim with the 'dim' "
              "argument.");
  return reduceAs(is_max ? "amax" : "amin", self, c10::IntArrayRef{}, false,
                  self.scalar_type());
}

/// Values and indices of max/min (argmax/argmin when only indices matter).
std::tuple<Tensor, Tensor> withIndex(bool is_max, const char* op, const Tensor& self,
                                     std::optional<int64_t> dim, bool keepdim) {
  std::vector<int64_t> dims;
  if (dim.has_value()) dims.push_back(*dim);
  TORCH_CHECK(std::string(op).rfind("arg", 0) != 0 || self.scalar_type() != c10::ScalarType::Bool,
              op, "(): does not support bool input");
  Plan p = makePlan(self, dims, keepdim);
  if (dim.has_value()) {
    checkNonEmpty(op, self, p, true);
  } else {
    TORCH_CHECK_INDEX(self.numel() != 0, op, "(): Expected reduction dim to be specified for "
                      "input.numel() == 0.");
    if (keepdim) p.shape.assign(self.dim(), 1);
  }
  Tensor values = newEmpty(p.shape, self.options());
  Tensor indices = newEmpty(p.shape, self.options().dtype(c10::ScalarType::Long));
  launch(is_max ? "argmax" : "argmin", self.scalar_type(),
         {p.rows(values), p.rows(indices), p.input}, p, self);
  return {values, indices};
}

/// var or std, and the mean.
std::tuple<Tensor, Tensor> moments(bool take_sqrt, const Tensor& self, DimList dims,
                                   const std::optional<at::Scalar>& correction, bool keepdim) {
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()),
              "std and var only support floating point and complex dtypes");
  Plan p = makePlan(self, dims, keepdim);
  Tensor var = newEmpty(p.shape, self.options());
  Tensor mean = newEmpty(p.shape, self.options());
  double c = correction.has_value() ? correction->toDouble() : 1.0;
  launch("moments", self.scalar_type(),
         {p.rows(var), p.rows(mean), p.input, f64Arg(c), intArg(take_sqrt ? 1 : 0)},
         p, self);
  return {var, mean};
}

Tensor vectorNorm(const Tensor& self, const at::Scalar& ord, DimList dims, bool keepdim,
                  std::optional<c10::ScalarType> dtype) {
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()),
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
              self.scalar_type());
  c10::ScalarType result = dtype ? *dtype : self.scalar_type();
  TORCH_CHECK(c10::isFloatingType(result), "linalg.vector_norm: dtype should be floating point, "
              "but got ", result);
  double p = ord.toDouble();
  if (p < 0 || std::isinf(p)) {
    Plan plan = makePlan(self, dims, keepdim);
    bool all = !dims.has_value() || dims->empty();
    if (all) {
      TORCH_CHECK(self.numel() != 0, "linalg.vector_norm cannot compute the ", ord,
                  " norm on an empty tensor because the operation does not have an identity");
    } else {
      for (int64_t d = 0; d < self.dim(); ++d)
        TORCH_CHECK(!plan.reduced[d] || self.size(d) != 0, "linalg.vector_norm cannot compute "
                    "the ", ord, " norm on the dimension ", d, "because this dimension is "
                    "empty and the operation does not have an identity");
    }
  }
  return reduceAs("norm", self, dims, keepdim, result, {f64Arg(p)});
}

/// any/all: dims nullopt reduces everything; an empty list reduces nothing.
Tensor anyAll(bool is_any, const Tensor& self, DimList dims, bool keepdim) {
  const bool u8 = self.scalar_type() == c10::ScalarType::Byte;
  if (dims.has_value() && dims->empty()) {
    return u8 ? self.ne(0).to(c10::ScalarType::Byte) : self.ne(0);
  }
  Plan p = makePlan(self, dims, keepdim);
  Tensor result =
      newEmpty(p.shape, self.options().dtype(u8 ? c10::ScalarType::Byte : c10::ScalarType::Bool));
  launch(is_any ? "any" : "all", self.scalar_type(), {p.rows(result), p.input}, p, self);
  return result;
}

Tensor withoutNan(const Tensor& self) {
  if (!at::isFloatingType(self.scalar_type())) return self;
  return at::where(self.isnan(), at::zeros({}, self.options()), self);
}

/// cumsum or cumprod (kernel), with sum's dtype promotion.
Tensor scanOp(const char* kernel, const Tensor& self, int64_t dim,
              std::optional<c10::ScalarType> dtype, const Tensor& out = Tensor()) {
  c10::ScalarType result_dtype = sumDtype(self, dtype, out);
  TORCH_CHECK(result_dtype != c10::ScalarType::Bool, kernel, ": bool results are not "
              "supported on maia");
  c10::MaybeOwned<Tensor> x = castTo(self, result_dtype);
  const int64_t nd = x->dim();
  int64_t d = at::maybe_wrap_dim(dim, nd);
  Plan p;
  if (nd > 0) {
    for (int64_t i = 0; i < nd; ++i) {
      if (i < d) p.outer *= x->size(i);
      else if (i > d) p.inner *= x->size(i);
      else p.n = x->size(i);
    }
  }
  p.viewInput(*x);
  Tensor result = newEmpty(x->sizes(), x->options());
  launch(kernel, result_dtype, {rowMajorMemref(result, {p.outer, p.n, p.inner}), p.input}, p,
         *x);
  return result;
}

/// _cummax_helper/_cummin_helper: values and indices already have self's
/// shape (cummax's out= resizes them; self is neither 0-dim nor empty).
void scanWithIndex(const char* kernel, const Tensor& self, Tensor& values, Tensor& indices,
                   int64_t dim) {
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  Plan p;
  p.outer = prod(self.sizes(), 0, d);
  p.n = self.size(d);
  p.inner = prod(self.sizes(), d + 1, self.dim());
  p.viewInput(self);
  const bool direct = values.is_contiguous() && indices.is_contiguous();
  Tensor v = direct ? values : newEmpty(self.sizes(), values.options());
  Tensor i = direct ? indices : newEmpty(self.sizes(), indices.options());
  launch(kernel, self.scalar_type(),
         {rowMajorMemref(v, {p.outer, p.n, p.inner}), rowMajorMemref(i, {p.outer, p.n, p.inner}),
          p.input},
         p, self);
  if (!direct) {
    values.copy_(v);
    indices.copy_(i);
  }
}

std::vector<int64_t> oneDim(int64_t dim) { return {dim}; }

/// hash_tensor, mode 0: the exclusive or of the elements' 64-bit patterns,
/// floats widened to float64 and integers to int64 first (as the CPU's
/// xor_sum reads them), into out (uint64, shaped by ATen's meta function).
void hashTensorInto(const Tensor& self, IntList dims, bool keepdim, Tensor& out) {
  TORCH_CHECK(!self.is_complex(), "\"xor_sum_cpu\" not implemented for '",
              self.scalar_type(), "'");
  const Tensor bits = at::isFloatingType(self.scalar_type())
                          ? self.to(c10::ScalarType::Double).view(c10::ScalarType::Long)
                          : self.to(c10::ScalarType::Long);
  const Tensor hashed = reduceAs("xor_sum", bits, dims, keepdim, c10::ScalarType::Long);
  out.view(c10::ScalarType::Long).copy_(hashed.view(out.sizes()));
}

// ---------------------------------------------------------------- registration

/// NAME, NAME.out and NAME_ of a scan.
#define MAIA_SCAN(NAME)                                                                    \
  m.impl(NAME, [](const Tensor& self, int64_t dim, ST dtype) {                             \
    return scanOp(NAME, self, dim, dtype);                                                 \
  });                                                                                      \
  m.impl(NAME ".out", [](const Tensor& self, int64_t dim, ST dtype, Tensor& out) -> Tensor& {\
    return resultInto(out, scanOp(NAME, self, dim, dtype, out));                           \
  });                                                                                      \
  m.impl(NAME "_", [](Tensor& self, int64_t dim, ST dtype) -> Tensor& {                    \
    return self.copy_(scanOp(NAME, self, dim, dtype, self));                               \
  })

MAIA_NATIVE_KERNELS(m) {
  using ST = std::optional<c10::ScalarType>;
  // sum, mean, prod
  m.impl("sum.dim_IntList", [](const Tensor& self, DimList dim, bool keepdim, ST dtype) {
    return sumOp(self, dim, keepdim, dtype);
  });
  m.impl("sum.IntList_out", [](const Tensor& self, DimList dim, bool keepdim, ST dtype,
                               Tensor& out) -> Tensor& {
    return resultInto(out, sumOp(self, dim, keepdim, dtype, out));
  });
  m.impl("mean.dim", [](const Tensor& self, DimList dim, bool keepdim, ST dtype) {
    return meanOp(self, dim, keepdim, dtype);
  });
  m.impl("mean.out", [](const Tensor& self, DimList dim, bool keepdim, ST dtype,
                        Tensor& out) -> Tensor& {
    return resultInto(out, meanOp(self, dim, keepdim, dtype, out));
  });
  m.impl("prod", [](const Tensor& self, ST dtype) {
    return prodOp(self, c10::IntArrayRef{}, false, dtype);
  });
  m.impl("prod.dim_int", [](const Tensor& self, int64_t dim, bool keepdim, ST dtype) {
    return prodOp(self, oneDim(dim), keepdim, dtype);
  });
  m.impl("prod.int_out", [](const Tensor& self, int64_t dim, bool keepdim, ST dtype,
                            Tensor& out) -> Tensor& {
    return resultInto(out, prodOp(self, oneDim(dim), keepdim, dtype, out));
  });
  // amax, amin, max, min
  m.impl("amax", [](const Tensor& self, c10::IntArrayRef dim, bool keepdim) {
    return extreme("amax", self, dim, keepdim);
  });
  m.impl("amax.out", [](const Tensor& self, c10::IntArrayRef dim, bool keepdim,
                        Tensor& out) -> Tensor& {
    return resultInto(out, extreme("amax", self, dim, keepdim));
  });
  m.impl("amin", [](const Tensor& self, c10::IntArrayRef dim, bool keepdim) {
    return extreme("amin", self, dim, keepdim);
  });
  m.impl("amin.out", [](const Tensor& self, c10::IntArrayRef dim, bool keepdim,
                        Tensor& out) -> Tensor& {
    return resultInto(out, extreme("amin", self, dim, keepdim));
  });
  m.impl("max", [](const Tensor& self) { return extremeAll(true, self); });
  m.impl("min", [](const Tensor& self) { return extremeAll(false, self); });
  m.impl("max.unary_out", [](const Tensor& self, Tensor& out) -> Tensor& {
    return resultInto(out, extremeAll(true, self));
  });
  m.impl("min.unary_out", [](const Tensor& self, Tensor& out) -> Tensor& {
    return resultInto(out, extremeAll(false, self));
  });
  m.impl("max.dim", [](const Tensor& self, int64_t dim, bool keepdim) {
    return withIndex(true, "max", self, dim, keepdim);
  });
  m.impl("min.dim", [](const Tensor& self, int64_t dim, bool keepdim) {
    return withIndex(false, "min", self, dim, keepdim);
  });
  m.impl("max.dim_max", [](const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
                           Tensor& indices) -> std::tuple<Tensor&, Tensor&> {
    auto [v, i] = withIndex(true, "max", self, dim, keepdim);
    resultInto(values, v);
    resultInto(indices, i);
    return {values, indices};
  });
  m.impl("min.dim_min", [](const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
                           Tensor& indices) -> std::tuple<Tensor&, Tensor&> {
    auto [v, i] = withIndex(false, "min", self, dim, keepdim);
    resultInto(values, v);
    resultInto(indices, i);
    return {values, indices};
  });
  m.impl("argmax", [](const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
    return std::get<1>(withIndex(true, "argmax", self, dim, keepdim));
  });
  m.impl("argmax.out", [](const Tensor& self, std::optional<int64_t> dim, bool keepdim,
                          Tensor& out) -> Tensor& {
    return resultInto(out, std::get<1>(withIndex(true, "argmax", self, dim, keepdim)));
  });
  m.impl("argmin", [](const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
    return std::get<1>(withIndex(false, "argmin", self, dim, keepdim));
  });
  m.impl("argmin.out", [](const Tensor& self, std::optional<int64_t> dim, bool keepdim,
                          Tensor& out) -> Tensor& {
    return resultInto(out, std::get<1>(withIndex(false, "argmin", self, dim, keepdim)));
  });
  // var, std
  m.impl("var.correction", [](const Tensor& self, DimList dim,
                              const std::optional<at::Scalar>& correction, bool keepdim) {
    return std::get<0>(moments(false, self, dim, correction, keepdim));
  });
  m.impl("var.correction_out", [](const Tensor& self, DimList dim,
                                  const std::optional<at::Scalar>& correction, bool keepdim,
                                  Tensor& out) -> Tensor& {
    return resultInto(out, std::get<0>(moments(false, self, dim, correction, keepdim)));
  });
  m.impl("std.correction", [](const Tensor& self, DimList dim,
                              const std::optional<at::Scalar>& correction, bool keepdim) {
    return std::get<0>(moments(true, self, dim, correction, keepdim));
  });
  m.impl("std.correction_out", [](const Tensor& self, DimList dim,
                                  const std::optional<at::Scalar>& correction, bool keepdim,
                                  Tensor& out) -> Tensor& {
    return resultInto(out, std::get<0>(moments(true, self, dim, correction, keepdim)));
  });
  m.impl("var_mean.correction", [](const Tensor& self, DimList dim,
                                   const std::optional<at::Scalar>& correction, bool keepdim) {
    return moments(false, self, dim, correction, keepdim);
  });
  m.impl("std_mean.correction", [](const Tensor& self, DimList dim,
                                   const std::optional<at::Scalar>& correction, bool keepdim) {
    return moments(true, self, dim, correction, keepdim);
  });
  // norms
  m.impl("linalg_vector_norm", [](const Tensor& self, const at::Scalar& ord, DimList dim,
                                  bool keepdim, ST dtype) {
    return vectorNorm(self, ord, dim, keepdim, dtype);
  });
  m.impl("linalg_vector_norm.out", [](const Tensor& self, const at::Scalar& ord, DimList dim,
                                      bool keepdim, ST dtype, Tensor& out) -> Tensor& {
    return resultInto(out, vectorNorm(self, ord, dim, keepdim, dtype));
  });
  // any, all
  m.impl("any", [](const Tensor& self) { return anyAll(true, self, std::nullopt, false); });
  m.impl("all", [](const Tensor& self) { return anyAll(false, self, std::nullopt, false); });
  // torch.equal: same sizes and every element equal (NaN is not), dtypes
  // promoted as the CPU does; one host read of the answer.
  m.impl("equal", [](const Tensor& self, const Tensor& other) -> bool {
    TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different "
                "devices. Got: ", self.device(), " and ", other.device());
    if (!self.is_same_size(other)) return false;
    return anyAll(false, at::eq(self, other), std::nullopt, false).item<bool>();
  });
  m.impl("any.dim", [](const Tensor& self, int64_t dim, bool keepdim) {
    return anyAll(true, self, oneDim(dim), keepdim);
  });
  m.impl("all.dim", [](const Tensor& self, int64_t dim, bool keepdim) {
    return anyAll(false, self, oneDim(dim), keepdim);
  });
  m.impl("any.dims", [](const Tensor& self, DimList dim, bool keepdim) {
    return anyAll(true, self, dim, keepdim);
  });
  m.impl("all.dims", [](const Tensor& self, DimList dim, bool keepdim) {
    return anyAll(false, self, dim, keepdim);
  });
  m.impl("any.all_out", [](const Tensor& self, Tensor& out) -> Tensor& {
    return resultInto(out, anyAll(true, self, std::nullopt, false));
  });
  m.impl("all.all_out", [](const Tensor& self, Tensor& out) -> Tensor& {
    return resultInto(out, anyAll(false, self, std::nullopt, false));
  });
  m.impl("any.out", [](const Tensor& self, int64_t dim, bool keepdim, Tensor& out) -> Tensor& {
    return resultInto(out, anyAll(true, self, oneDim(dim), keepdim));
  });
  m.impl("all.out", [](const Tensor& self, int64_t dim, bool keepdim, Tensor& out) -> Tensor& {
    return resultInto(out, anyAll(false, self, oneDim(dim), keepdim));
  });
  m.impl("any.dims_out", [](const Tensor& self, DimList dim, bool keepdim,
                            Tensor& out) -> Tensor& {
    return resultInto(out, anyAll(true, self, dim, keepdim));
  });
  m.impl("all.dims_out", [](const Tensor& self, DimList dim, bool keepdim,
                            Tensor& out) -> Tensor& {
    return resultInto(out, anyAll(false, self, dim, keepdim));
  });
  // nansum: a sum with NaN read as zero (integers have none).
  m.impl("nansum", [](const Tensor& self, DimList dim, bool keepdim, ST dtype) {
    return sumOp(withoutNan(self), dim, keepdim, dtype);
  });
  m.impl("nansum.out", [](const Tensor& self, DimList dim, bool keepdim, ST dtype,
                          Tensor& out) -> Tensor& {
    return resultInto(out, sumOp(withoutNan(self), dim, keepdim, dtype));
  });
  MAIA_SCAN("cumsum");
  MAIA_SCAN("cumprod");
  m.impl("_logcumsumexp", [](const Tensor& self, int64_t dim) {
    checkFloatDtype("logcumsumexp_out_cpu", self.scalar_type());
    return scanOp("logcumsumexp", self, dim, self.scalar_type());
  });
  m.impl("_logcumsumexp.out", [](const Tensor& self, int64_t dim, Tensor& out) -> Tensor& {
    checkFloatDtype("logcumsumexp_out_cpu", self.scalar_type());
    return resultInto(out, scanOp("logcumsumexp", self, dim, self.scalar_type(), out));
  });
  m.impl("_cummax_helper", [](const Tensor& self, Tensor& values, Tensor& indices, int64_t dim) {
    scanWithIndex("cummax", self, values, indices, dim);
  });
  m.impl("_cummin_helper", [](const Tensor& self, Tensor& values, Tensor& indices, int64_t dim) {
    scanWithIndex("cummin", self, values, indices, dim);
  });
  m.impl("hash_tensor", [](const Tensor& self, IntList dim, bool keepdim, int64_t mode) {
    Structured<at::meta::structured_hash_tensor, 1> op;
    op.meta(self, dim, keepdim, mode);
    hashTensorInto(self, dim, keepdim, op.outputs[0]);
    return op.outputs[0];
  });
  m.impl("hash_tensor.out", [](const Tensor& self, IntList dim, bool keepdim, int64_t mode,
                               Tensor& out) -> Tensor& {
    Structured<at::meta::structured_hash_tensor, 1> op({&out});
    op.meta(self, dim, keepdim, mode);
    hashTensorInto(self, dim, keepdim, out);
    return out;
  });
  // The legacy norm (dist, triplet losses): linalg_vector_norm, p = 2 by default.
  m.impl("norm.out", [](const Tensor& self, const std::optional<at::Scalar>& p, IntList dim,
                        bool keepdim, Tensor& out) -> Tensor& {
    return resultInto(out, vectorNorm(self, p.value_or(2.0), dim, keepdim, std::nullopt));
  });
  m.impl("norm.dtype_out", [](const Tensor& self, const std::optional<at::Scalar>& p,
                              IntList dim, bool keepdim, c10::ScalarType dtype,
                              Tensor& out) -> Tensor& {
    return resultInto(out, vectorNorm(self, p.value_or(2.0), dim, keepdim, dtype));
  });
}

}  // namespace
}  // namespace torch_maia::ops
