// Matrix products on maia: mm, addmm, bmm, baddbmm, addbmm (and through them
// matmul and linear) as GEMM kernels on the device cores, on the current
// stream. float32, bfloat16 and float16 (accumulated in float32), float64
// and the integer dtypes (wrapping, as the CPU) run on the device; complex
// products are computed on the host.
#include <ATen/Dispatch.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "MaiaCheck.h"
#include "MaiaStream.h"
#include "WorkSplit.h"
#include "gemm_launch.h"
#include "ops/EagerKernels.h"
#include "ops/Fallback.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

bool hasGemmKernel(c10::ScalarType dtype) {
  return at::isFloatingType(dtype) || (at::isIntegralType(dtype, /*includeBool=*/false));
}

/// alpha or beta as the kernel of dtype takes it: float32 for the fp32 and
/// half-precision kernels, float64 for float64; the integer kernels take
/// the value converted to the dtype, as the CPU's kernel converts it
/// (0.5 -> 0; out of range -> the same error).
maiaKernelArg gemmScalar(const at::Scalar& value, c10::ScalarType dtype) {
  if (dtype == at::kDouble) return maiaKernelArgFloat(maiaDtypeF64, value.toDouble());
  if (at::isFloatingType(dtype)) return maiaKernelArgFloat(maiaDtypeF32, value.toDouble());
  int64_t converted = AT_DISPATCH_INTEGRAL_TYPES(dtype, "gemm", [&] {
    return static_cast<int64_t>(value.to<scalar_t>());
  });
  return maiaKernelArgInt(maiaDtypeI64, converted);
}

void checkOperands(const char* op, const Tensor& a, const Tensor& b, int64_t rank) {
  TORCH_CHECK(a.dim() == rank && b.dim() == rank, op, ": expected ", rank, "-D tensors, got ",
              a.dim(), "-D and ", b.dim(), "-D");
  TORCH_CHECK(a.device() == b.device(), op, ": expected all tensors to be on the same device, "
              "but found at least two devices, ", a.device(), " and ", b.device());
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), op,
              ": expected both operands to have the same dtype, but got ", a.scalar_type(),
              " and ", b.scalar_type());
  TORCH_CHECK(a.size(rank - 1) == b.size(rank - 2), op, ": shapes cannot be multiplied (",
              a.sizes(), " and ", b.sizes(), ")");
}

/// out = beta * bias + alpha * (a @ m) for 3-D operands (bias broadcast).
Tensor& addmmInto(const Tensor& bias, const Tensor& a, const Tensor& m, const at::Scalar& beta,
                  const at::Scalar& alpha, Tensor& out) {
  std::vector<int64_t> shape = {a.size(0), a.size(1), m.size(2)};
  double beta_value = beta.toDouble();
  if (&out != &bias) {
    at::native::resize_output(out, shape);
    if (beta_value != 0.0) out.copy_(bias.expand(shape));
  }
  gemm(a, m, out, alpha, beta, "aten::baddbmm");
  return out;
}

Tensor& mmOut(const Tensor& a, const Tensor& b, Tensor& out) {
  checkOperands("mm", a, b, 2);
  at::native::resize_output(out, {a.size(0), b.size(1)});
  gemm(a, b, out, 1.0, 0.0, "aten::mm");
  return out;
}

Tensor& bmmOut(const Tensor& a, const Tensor& b, Tensor& out) {
  checkOperands("bmm", a, b, 3);
  TORCH_CHECK(a.size(0) == b.size(0), "bmm: batch sizes differ: ", a.size(0), " and ",
              b.size(0));
  at::native::resize_output(out, {a.size(0), a.size(1), b.size(2)});
  gemm(a, b, out, 1.0, 0.0, "aten::bmm");
  return out;
}

Tensor& addmmOut(const Tensor& bias, const Tensor& a, const Tensor& b, const at::Scalar& beta,
                 const at::Scalar& alpha, Tensor& out) {
  checkOperands("addmm", a, b, 2);
  at::native::resize_output(out, {a.size(0), b.size(1)});
  if (beta.toDouble() != 0.0 && !out.is_same(bias)) out.copy_(bias.expand(out.sizes()));
  gemm(a, b, out, alpha, beta, "aten::addmm");
  return out;
}

Tensor& baddbmmOut(const Tensor& bias, const Tensor& a, const Tensor& b, const at::Scalar& beta,
                   const at::Scalar& alpha, Tensor& out) {
  checkOperands("baddbmm", a, b, 3);
  return addmmInto(bias, a, b, beta, alpha, out);
}

/// addbmm as the CPU computes it: out = bias, then one addmm per batch
/// (beta on the first only), so each batch's product rounds into out in
/// turn; no batches leave beta * bias.
Tensor& addbmmOut(const Tensor& bias, const Tensor& a, const Tensor& m, const at::Scalar& beta,
                  const at::Scalar& alpha, Tensor& out) {
  TORCH_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(m.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(a.size(0) == m.size(0), "batch1 and batch2 must have same number of batches, got ",
              a.size(0), " and ", m.size(0));
  TORCH_CHECK(a.size(2) == m.size(1), "Incompatible matrix sizes for bmm (", a.size(1), "x",
              a.size(2), " and ", m.size(1), "x", m.size(2), ")");
  if (!out.is_same(bias)) {
    at::native::resize_output(out, {a.size(1), m.size(2)});
    out.copy_(bias.expand(out.sizes()));
  }
  if (a.size(0) == 0) {
    if (beta.toDouble() != 0.0) return out.mul_(beta);
    return out.zero_();
  }
  for (int64_t b = 0; b < a.size(0); ++b)
    addmmOut(out, a.select(0, b), m.select(0, b), b == 0 ? beta : at::Scalar(1), alpha, out);
  return out;
}

void checkDot(const Tensor& a, const Tensor& b) {
  TORCH_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ",
              b.dim(), "D tensors");
  TORCH_CHECK(a.size(0) == b.size(0), "inconsistent tensor size, expected tensor [", a.size(0),
              "] and src [", b.size(0), "] to have the same number of elements, but got ",
              a.size(0), " and ", b.size(0), " elements respectively");
  checkOperands("dot", a.unsqueeze(0), b.unsqueeze(1), 2);
}

Tensor& dotOut(const Tensor& a, const Tensor& b, Tensor& out) {
  checkDot(a, b);
  at::native::resize_output(out, {});
  gemm(a.view({1, -1}), b.view({-1, 1}), out.view({1, 1}), 1.0, 0.0, "aten::dot");
  return out;
}

Tensor& addmvOut(const Tensor& bias, const Tensor& mat, const Tensor& vec,
                 const at::Scalar& beta, const at::Scalar& alpha, Tensor& out) {
  TORCH_CHECK(mat.dim() == 2 && vec.dim() == 1, "vector + matrix @ vector expected, got ",
              bias.dim(), ", ", mat.dim(), ", ", vec.dim());
  checkOperands("addmv", mat, vec.unsqueeze(1), 2);
  at::native::resize_output(out, {mat.size(0)});
  if (beta.toDouble() != 0.0 && !out.is_same(bias)) out.copy_(bias.expand(out.sizes()));
  gemm(mat, vec.view({-1, 1}), out.view({-1, 1}), alpha, beta, "aten::addmv");
  return out;
}

Tensor emptyResult(const Tensor& a, std::initializer_list<int64_t> shape) {
  return newEmpty(shape, a.options());
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("mm", [](const Tensor& a, const Tensor& b) {
    Tensor out = emptyResult(a, {a.size(0), b.dim() > 1 ? b.size(1) : 0});
    return mmOut(a, b, out);
  });
  m.impl("mm.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return mmOut(a, b, out);
  });
  m.impl("dot", [](const Tensor& a, const Tensor& b) {
    // ZeroTensors (which hold no memory) reach dot: ATen's ZeroTensor key
    // lets it through. Their product is one, as on the CPU and CUDA.
    if (a._is_zerotensor() || b._is_zerotensor()) {
      checkDot(a, b);
      return efficientZeroTensor({}, a.scalar_type(), std::nullopt, a.device(), std::nullopt);
    }
    Tensor out = newEmpty({}, a.options());
    return dotOut(a, b, out);
  });
  // vdot of real vectors is dot (complex ones take the host path: no complex GEMM).
  m.impl("vdot", [](const Tensor& a, const Tensor& b) {
    Tensor out = emptyResult(a, {});
    return dotOut(a, b, out);
  });
  m.impl("vdot.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return dotOut(a, b, out);
  });
  m.impl("dot.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return dotOut(a, b, out);
  });
  m.impl("addmv", [](const Tensor& bias, const Tensor& mat, const Tensor& vec,
                     const at::Scalar& beta, const at::Scalar& alpha) {
    Tensor out = newEmpty({0}, mat.options());
    return addmvOut(bias, mat, vec, beta, alpha, out);
  });
  m.impl("addmv.out", [](const Tensor& bias, const Tensor& mat, const Tensor& vec,
                         const at::Scalar& beta, const at::Scalar& alpha, Tensor& out) -> Tensor& {
    return addmvOut(bias, mat, vec, beta, alpha, out);
  });
  m.impl("addmv_", [](Tensor& self, const Tensor& mat, const Tensor& vec, const at::Scalar& beta,
                      const at::Scalar& alpha) -> Tensor& {
    return addmvOut(self, mat, vec, beta, alpha, self);
  });
  m.impl("bmm", [](const Tensor& a, const Tensor& b) {
    Tensor out = newEmpty({0}, a.options());
    return bmmOut(a, b, out);
  });
  m.impl("bmm.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return bmmOut(a, b, out);
  });
  m.impl("addmm", [](const Tensor& bias, const Tensor& a, const Tensor& b,
                     const at::Scalar& beta, const at::Scalar& alpha) {
    Tensor out = newEmpty({0}, a.options());
    return addmmOut(bias, a, b, beta, alpha, out);
  });
  m.impl("addmm.out", [](const Tensor& bias, const Tensor& a, const Tensor& b,
                         const at::Scalar& beta, const at::Scalar& alpha, Tensor& out) -> Tensor& {
    return addmmOut(bias, a, b, beta, alpha, out);
  });
  m.impl("addmm_", [](Tensor& self, const Tensor& a, const Tensor& b, const at::Scalar& beta,
                      const at::Scalar& alpha) -> Tensor& {
    return addmmOut(self, a, b, beta, alpha, self);
  });
  m.impl("addbmm", [](const Tensor& bias, const Tensor& a, const Tensor& b,
                      const at::Scalar& beta, const at::Scalar& alpha) {
    Tensor out = newEmpty({0}, a.options());
    return addbmmOut(bias, a, b, beta, alpha, out);
  });
  m.impl("addbmm.out", [](const Tensor& bias, const Tensor& a, const Tensor& b,
                          const at::Scalar& beta, const at::Scalar& alpha,
                          Tensor& out) -> Tensor& {
    return addbmmOut(bias, a, b, beta, alpha, out);
  });
  m.impl("addbmm_", [](Tensor& self, const Tensor& a, const Tensor& b, const at::Scalar& beta,
                       const at::Scalar& alpha) -> Tensor& {
    return addbmmOut(self, a, b, beta, alpha, self);
  });
  m.impl("baddbmm", [](const Tensor& bias, const Tensor& a, const Tensor& b,
                       const at::Scalar& beta, const at::Scalar& alpha) {
    Tensor out = newEmpty({0}, a.options());
    return baddbmmOut(bias, a, b, beta, alpha, out);
  });
  m.impl("baddbmm.out", [](const Tensor& bias, const Tensor& a, const Tensor& b,
                           const at::Scalar& beta, const at::Scalar& alpha,
                           Tensor& out) -> Tensor& {
    return baddbmmOut(bias, a, b, beta, alpha, out);
  });
  m.impl("baddbmm_", [](Tensor& self, const Tensor& a, const Tensor& b, const at::Scalar& beta,
                        const at::Scalar& alpha) -> Tensor& {
    return baddbmmOut(self, a, b, beta, alpha, self);
  });
}

}  // namespace

// 2-D operands pass as rank-3 memrefs (no unsqueezed views: each would
// cost a dispatch).
void gemm(const Tensor& a, const Tensor& m, const Tensor& out, const at::Scalar& alpha,
          const at::Scalar& beta, const char* op) {
  if (out.numel() == 0) return;
  const int64_t batch = out.dim() == 3 ? out.size(0) : 1;
  const int64_t rows = out.size(-2), cols = out.size(-1);
  if (!hasGemmKernel(out.scalar_type())) {
    // Complex (and bool, which the CPU refuses) products: no device kernel;
    // computed on the host and counted as a host fallback of the calling
    // operator.
    noteHostFallback(op);
    auto batched = [batch](const Tensor& t) {
      Tensor host = t.dim() == 3 ? t.cpu() : t.cpu().unsqueeze(0);
      return host.expand({batch, host.size(1), host.size(2)});
    };
    Tensor host = at::baddbmm(batched(out), batched(a), batched(m), beta, alpha);
    out.copy_(host.view(out.sizes()));
    return;
  }
  // A bias (or out=) on maia decides the dispatch; the operands must be there too.
  TORCH_CHECK(out.device().is_privateuseone() && a.device() == out.device() &&
                  m.device() == out.device(),
              "expected all tensors to be on the same maia device, but found ", a.device(), ", ",
              m.device(), " (operands) and ", out.device(), " (result)");
  // The stream is named explicitly: no device guard needed to launch on it.
  const c10::ScalarType dtype = out.scalar_type();
  maiaKernelArg args[5] = {memrefOf(a, 3), memrefOf(m, 3), memrefOf(out, 3),
                           gemmScalar(alpha, dtype), gemmScalar(beta, dtype)};
  int64_t grid[3];
  maia_gemm_grid(rows, cols, a.size(-1), batch, deviceCores(), grid);
  MAIA_CHECK(maiaLaunchKernel(gemmKernel(dtype), grid, args, 5,
                              currentDriverStream(out.device().index())));
}

}  // namespace torch_maia::ops
