// Random fills on maia: uniform_ (torch.rand) and normal_ (torch.randn),
// launched from the NN kernel binary (runtime/kernels/nn/random.h).
//
// The numbers come from Philox on the device, keyed by the (seed, offset) of
// the maia generator (the one passed, else the device's default); each call
// consumes one offset, so torch.maia.manual_seed reproduces a run and
// consecutive calls differ. Nothing is drawn on the host.
#include <ATen/core/Generator.h>
#include <ATen/ops/view_as_real.h>
#include <torch/library.h>

#include <limits>
#include <mutex>
#include <optional>

#include "MaiaGenerator.h"
#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

// Work per element for the launch split: a share of a Philox block, and
// for normal_ a log, sqrt and sin/cos per pair.
constexpr int64_t kUniformWork = 4;
constexpr int64_t kNormalWork = 16;

/// (seed, offset) of the next random operation of gen (or of the default
/// generator of device), advancing its offset.
std::pair<uint64_t, uint64_t> nextStream(const std::optional<at::Generator>& gen,
                                         const c10::Device& device) {
  auto* impl = at::get_generator_or_default<MaiaGeneratorImpl>(
      gen, defaultGenerator(device.index()));
  std::lock_guard<std::mutex> lock(impl->mutex_);
  return impl->nextDeviceStream();
}

/// Fills self with kernel name's draws (a, b its two parameters): in place
/// when self is contiguous, else into a dense temporary copied in.
Tensor& randomFill(Tensor& self, const char* name, double a, double b,
                   const std::optional<at::Generator>& gen, int64_t work) {
  if (self.numel() == 0) return self;
  const bool dense = self.is_contiguous();
  Tensor target = dense ? self : newEmpty(self.sizes(), self.options());
  auto [seed, offset] = nextStream(gen, self.device());
  const int64_t numel = target.numel();
  launchNn(name, target.scalar_type(),
           {rowMajorMemref(target, {numel}), maiaKernelArgFloat(maiaDtypeF64, a),
            maiaKernelArgFloat(maiaDtypeF64, b), intArg(static_cast<int64_t>(seed)),
            intArg(static_cast<int64_t>(offset))},
           programsFor(numel, numel * work), target.device());
  if (!dense) self.copy_(target);
  return self;
}

Tensor& uniform(Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  if (self.is_complex()) {  // as the CPU: each of the real and imaginary parts
    Tensor parts = at::view_as_real(self);
    uniform(parts, from, to, std::move(gen));
    return self;
  }
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "\"uniform_\" not implemented for '",
              self.scalar_type(), "'");
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=",
              from, " > to=", to);
  const double limit = self.scalar_type() == c10::ScalarType::Double
                           ? std::numeric_limits<double>::max()
                           : static_cast<double>(std::numeric_limits<float>::max());
  TORCH_CHECK(to - from <= limit, "uniform_ expects to-from <= std::numeric_limits<",
              self.scalar_type(), ">::max(), but found to=", to, " and from=", from,
              " which result in to-from to exceed the limit");
  return randomFill(self, "uniform", from, to, gen, kUniformWork);
}

Tensor& normal(Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  if (self.is_complex()) {  // as the CPU: variance std^2 split between the parts
    Tensor parts = at::view_as_real(self);
    normal(parts, mean, std / std::sqrt(2.0), std::move(gen));
    return self;
  }
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "\"normal_kernel_cpu\" not implemented "
              "for '", self.scalar_type(), "'");
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  return randomFill(self, "normal", mean, std, gen, kNormalWork);
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("uniform_", &uniform);
  m.impl("normal_", &normal);
}

}  // namespace
}  // namespace torch_maia::ops
