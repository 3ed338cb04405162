// The autocast policy for maia: what torch.autocast("maia") does to each
// operator. Autocast mode puts AutocastPrivateUse1 in the dispatch key set of
// every maia tensor; a key with no kernel for an operator makes the call fail
// ("Could not run ... from the 'Autocastmaia' backend"), so this key needs a
// kernel, or a fallthrough, for every operator.
//
// maia follows CUDA's policy: the same op lists (ATen/autocast_mode.h shares
// them so that backends agree) under the same cast policies, and the same ban
// on binary_cross_entropy. Models written for CUDA AMP then cast the same way
// on maia, and the upstream AMP recipes (GradScaler, loss choices) carry over.
// The lower-precision dtype is torch.get_autocast_dtype("maia"), float16 by
// default, as CUDA.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace torch_maia {
namespace {

using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

// binary_cross_entropy takes probabilities, usually from a sigmoid computed in
// the lower precision, where it loses too much to be safe; CUDA refuses it
// under autocast rather than silently giving a poor loss, and so do we. The
// installed ATen does not export its own banned kernel, hence this one.
Tensor binaryCrossEntropyBanned(const Tensor& /*self*/, const Tensor& /*target*/,
                                const std::optional<Tensor>& /*weight*/, int64_t /*reduction*/) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are not safe "
              "under torch.autocast(\"maia\") (nor under CUDA's autocast): apply the sigmoid "
              "inside the loss with torch.nn.functional.binary_cross_entropy_with_logits or "
              "torch.nn.BCEWithLogitsLoss, which autocast runs in float32.");
}

// Every operator that is in none of the lists below runs unchanged: its inputs
// keep their dtypes and the call goes on to the next key (autograd, then the
// maia kernels). Without this, ops such as add, relu or normal_ fail.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

// The KERNEL_* macros expand to m.impl(...) calls on this `m`, each wrapping
// the aten op in at::autocast::WrapFunction for the PrivateUse1 device type:
// it casts the floating-point maia tensor arguments by the policy, excludes
// AutocastPrivateUse1, and redispatches.
TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  // Matmuls and convolutions: tensor-core style work whose accuracy holds in
  // float16/bfloat16, run in the autocast dtype. (CUDA adds its cudnn_*
  // convolutions here; maia has no such ops.)
#define MAIA_AUTOCAST_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(MAIA_AUTOCAST_LOWER_PRECISION_FP)
#undef MAIA_AUTOCAST_LOWER_PRECISION_FP

  // Ops whose range or accumulated error needs float32 (exp/log families,
  // norms, losses): inputs are cast up to float32, and so is the output.
#define MAIA_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(MAIA_AUTOCAST_FP32)
#undef MAIA_AUTOCAST_FP32

  // Reductions with an optional dtype argument (sum, prod, cumsum, softmax):
  // autocast passes dtype=float32 when the caller gave none, so they
  // accumulate in float32 without a separate cast of the input; an explicit
  // dtype from the caller is respected.
#define MAIA_AUTOCAST_FP32_SET_OPT_DTYPE(...) \
  KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(MAIA_AUTOCAST_FP32_SET_OPT_DTYPE)
#undef MAIA_AUTOCAST_FP32_SET_OPT_DTYPE

  // norm's overloads without a dtype argument: redispatched to the overload
  // that takes one, with float32 appended. The overloads that already take a
  // dtype are left alone, since an explicit dtype is the caller's decision.
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)

  // Multi-input ops whose kernels want one dtype: all floating-point inputs
  // are cast to the widest of them, instead of failing on a mix of a float16
  // activation and a float32 parameter.
#define MAIA_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(MAIA_AUTOCAST_PROMOTE)
#undef MAIA_AUTOCAST_PROMOTE

  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(binaryCrossEntropyBanned));
}

}  // namespace
}  // namespace torch_maia
