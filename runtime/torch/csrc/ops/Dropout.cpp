// Dropout on maia: native_dropout (what F.dropout calls in training for
// 0 < p < 1) and native_dropout_backward, launched from the NN kernel binary
// (runtime/kernels/nn/dropout.h).
//
// The keep mask comes from a counter-based generator on the device, keyed by
// the maia generator's (seed, offset); each call consumes one offset, so
// torch.maia.manual_seed reproduces a run and consecutive calls differ.
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones_like.h>
#include <torch/library.h>

#include <mutex>
#include <tuple>

#include "MaiaGenerator.h"
#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

// Each element costs a share of a Philox block (10 rounds per 4 elements):
// split over cores at fewer elements than a plain elementwise kernel.
constexpr int64_t kWorkPerElement = 4;

std::pair<uint64_t, uint64_t> nextStream(const c10::Device& device) {
  at::Generator generator = defaultGenerator(device.index());
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get<MaiaGeneratorImpl>()->nextDeviceStream();
}

std::tuple<Tensor, Tensor> nativeDropout(const Tensor& input, double p,
                                         std::optional<bool> train) {
  // As the CPU kernel: an empty input is returned as is, with an empty mask.
  if (input.numel() == 0) return {input, at::empty_like(input, input.options())};
  if (train.has_value() && !*train)
    return {input.clone(), at::ones_like(input, input.options().dtype(c10::ScalarType::Bool))};
  TORCH_CHECK(at::isFloatingType(input.scalar_type()), "native_dropout: expected a floating "
              "point input, got ", input.scalar_type());
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  Tensor x = input.contiguous();
  Tensor out = newEmpty(x.sizes(), x.options());
  Tensor mask = newEmpty(x.sizes(), x.options().dtype(c10::ScalarType::Bool));
  const double keep = 1.0 - p;
  const double scale = keep == 0 ? 0.0 : 1.0 / keep;  // p = 1: zeros, no division by zero
  auto [seed, offset] = nextStream(x.device());
  const int64_t numel = x.numel();
  launchNn("dropout", x.scalar_type(),
           {memrefOf(out.view({-1})), memrefOf(mask.view({-1})), memrefOf(x.view({-1})),
            maiaKernelArgFloat(maiaDtypeF64, keep), maiaKernelArgFloat(maiaDtypeF64, scale),
            intArg(static_cast<int64_t>(seed)), intArg(static_cast<int64_t>(offset))},
           programsFor(numel, numel * kWorkPerElement), x.device());
  return {out, mask};
}

Tensor nativeDropoutBackward(const Tensor& grad, const Tensor& mask, double scale) {
  const bool fused = mask.scalar_type() == c10::ScalarType::Bool &&
                     at::isFloatingType(grad.scalar_type()) && mask.sizes() == grad.sizes() &&
                     mask.device() == grad.device();
  // Other masks (any dtype, broadcasting) follow the CPU's definition with
  // the native elementwise kernels.
  if (!fused) return grad.mul(mask).mul(scale);
  Tensor g = grad.contiguous(), m = mask.contiguous();
  Tensor out = newEmpty(g.sizes(), g.options());
  if (out.numel() == 0) return out;
  launchNn("dropout_bwd", g.scalar_type(),
           {memrefOf(out.view({-1})), memrefOf(g.view({-1})), memrefOf(m.view({-1})),
            maiaKernelArgFloat(maiaDtypeF64, scale)},
           programsFor(out.numel(), out.numel()), g.device());
  return out;
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("native_dropout", TORCH_FN(nativeDropout));
  m.impl("native_dropout_backward", TORCH_FN(nativeDropoutBackward));
}

}  // namespace
}  // namespace torch_maia::ops
