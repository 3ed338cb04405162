#include "ops/Fallback.h"
#include "maia/torch.h"  // the public declarations, checked against the definitions

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "MaiaGenerator.h"

namespace torch_maia::ops {
namespace {

std::mutex g_mutex;
std::map<std::string, int64_t>& counts() {
  static auto* map = new std::map<std::string, int64_t>();  // outlives exit
  return *map;
}

std::atomic<bool>& warningsEnabled() {
  static std::atomic<bool> enabled{[] {
    const char* env = std::getenv("MAIA_FALLBACK_WARNINGS");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }()};
  return enabled;
}

/// Counts the call; true if this is the operator's first fallback.
bool countFallback(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return counts()[name]++ == 0;
}

/// The device all maia tensor arguments are on; rejects a mix of maia
/// devices, or maia with non-scalar CPU tensors, as a CUDA op would.
std::optional<c10::Device> commonDevice(const c10::OperatorHandle& op,
                                        const torch::jit::Stack& stack, size_t arguments) {
  std::optional<c10::Device> maia, cpu;
  auto visit = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    if (t.device().is_privateuseone()) {
      TORCH_CHECK(!maia || *maia == t.device(), op.schema().name(),
                  ": expected all tensors to be on the same device, but found at least two "
                  "devices, ", *maia, " and ", t.device());
      maia = t.device();
    } else if (t.device().is_cpu() && t.dim() > 0) {
      cpu = t.device();
    }
  };
  for (size_t i = stack.size() - arguments; i < stack.size(); ++i) {
    const c10::IValue& value = stack[i];
    if (value.isTensor()) visit(value.toTensor());
    if (value.isTensorList())
      for (const at::Tensor& t : value.toTensorList().vec()) visit(t);
    if (value.isOptionalTensorList())
      for (const std::optional<at::Tensor>& t : value.toOptionalTensorList().vec())
        if (t) visit(*t);
  }
  TORCH_CHECK(!(maia && cpu), op.schema().name(),
              ": expected all tensors to be on the same device, but found at least two "
              "devices, ", *maia, " and cpu");
  return maia;
}

/// Random operators: the CPU kernel must draw from the maia generator's
/// stream, not from the CPU default generator. Replaces each Generator
/// argument (given, or defaulted to the device's default generator) by the
/// host generator that the maia generator hands out for this operation.
void substituteGenerators(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                          size_t arguments, std::optional<c10::Device> device) {
  const auto& schema_args = op.schema().arguments();
  size_t base = stack->size() - arguments;
  for (size_t i = 0; i < schema_args.size(); ++i) {
    const c10::TypePtr& type = schema_args[i].type();
    bool is_generator = type->kind() == c10::TypeKind::GeneratorType ||
                        (type->kind() == c10::TypeKind::OptionalType &&
                         type->castRaw<c10::OptionalType>()->getElementType()->kind() ==
                             c10::TypeKind::GeneratorType);
    if (!is_generator) continue;
    c10::IValue& value = (*stack)[base + i];
    at::Generator generator = value.isGenerator()
                                  ? value.toGenerator()
                                  : defaultGenerator(device ? device->index() : -1);
    if (generator.device().is_cpu()) continue;  // the caller asked for the CPU stream
    TORCH_CHECK(generator.device().is_privateuseone(), op.schema().name(),
                ": a generator for ", generator.device(), " cannot drive a maia operation");
    auto* maia = generator.get<MaiaGeneratorImpl>();
    std::lock_guard<std::mutex> lock(generator.mutex());
    value = c10::IValue(maia->nextHostGenerator());
  }
}

void countAndWarn(const std::string& name) {
  if (countFallback(name) && warningsEnabled().load()) {
    TORCH_WARN(name, " has no maia kernel: it runs on the host (copy in, compute on the CPU, "
               "copy out). torch.maia.fallback_counts() lists such operators; "
               "torch.maia.set_fallback_warnings(False) silences this warning.");
  }
}

void maiaFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = c10::toString(op.schema().operator_name());
  size_t arguments = op.schema().arguments().size();
  std::optional<c10::Device> device = commonDevice(op, *stack, arguments);
  countAndWarn(name);
  substituteGenerators(op, stack, arguments, device);
  at::native::cpu_fallback(op, stack);
}

}  // namespace

void hostFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  maiaFallback(op, stack);
}

void noteHostFallback(const std::string& name) { countAndWarn(name); }

std::map<std::string, int64_t> fallbackCounts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return counts();
}

void resetFallbackCounts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  counts().clear();
}

void setFallbackWarnings(bool enabled) { warningsEnabled().store(enabled); }
bool fallbackWarnings() { return warningsEnabled().load(); }

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&maiaFallback>());
}

}  // namespace torch_maia::ops
