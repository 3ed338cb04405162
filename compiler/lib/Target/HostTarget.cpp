//===- HostTarget.cpp - LLVM target machines for MAIA kernels -------------===//
//
// LLVM's one-time set-up, the host CPU's name and features, and target
// machines for the CPU and features a compilation asks for. Names are
// validated here because LLVM only warns about unknown ones and carries on.
//
//===----------------------------------------------------------------------===//

#include "HostTarget.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <mutex>
#include <set>

namespace mc = ::maia::compiler;

namespace {

/// The ISA feature names LLVM knows for this architecture (what host
/// detection reports, enabled or not); tuning flags are not among them.
const std::set<std::string> &getISAFeatureNames() {
  static const std::set<std::string> names = [] {
    std::set<std::string> result;
    for (const auto &entry : llvm::sys::getHostCPUFeatures())
      result.insert(entry.first().str());
    return result;
  }();
  return names;
}

std::string getHostFeatureString() {
  std::string features;
  for (const auto &entry : llvm::sys::getHostCPUFeatures()) {
    features += features.empty() ? "" : ",";
    features += (entry.second ? "+" : "-") + entry.first().str();
  }
  return features;
}

} // namespace

void mc::initializeLLVMOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::CrashRecoveryContext::Enable();
  });
}

std::string mc::getHostCPU() { return llvm::sys::getHostCPUName().str(); }

std::vector<std::string> mc::getHostCPUFeatures() {
  std::vector<std::string> features;
  for (const auto &entry : llvm::sys::getHostCPUFeatures())
    if (entry.second)
      features.push_back(entry.first().str());
  std::sort(features.begin(), features.end());
  return features;
}

//===----------------------------------------------------------------------===//
// TargetCache
//===----------------------------------------------------------------------===//

mc::TargetCache::TargetCache() : triple(llvm::sys::getProcessTriple()) {}

const mc::Target *mc::TargetCache::getTarget(const CompileOptions &options,
                                             std::string &error) {
  if (options.optLevel < 0 || options.optLevel > 3) {
    error = "optimization level " + std::to_string(options.optLevel) +
            " is not in 0..3";
    return nullptr;
  }
  std::string key = options.targetCPU + "|" + options.targetFeatures + "|" +
                    std::to_string(options.optLevel);
  if (auto it = targets.find(key); it != targets.end())
    return &it->second;

  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target) {
    error = "no LLVM target for " + triple + ": " + lookupError;
    return nullptr;
  }
  bool host = options.targetCPU.empty() || options.targetCPU == "host";
  std::string cpu = host ? getHostCPU() : options.targetCPU;

  // Validate names up front: LLVM only warns on stderr and ignores them.
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!info->isCPUStringValid(cpu)) {
    error = "unknown target CPU '" + cpu + "' for " + triple;
    return nullptr;
  }
  std::set<std::string> known;
  for (const llvm::SubtargetFeatureKV &feature :
       info->getAllProcessorFeatures())
    known.insert(feature.Key);
  llvm::SmallVector<llvm::StringRef> requested;
  llvm::StringRef(options.targetFeatures)
      .split(requested, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  std::string extraFeatures;
  for (llvm::StringRef feature : requested) {
    feature = feature.trim();
    if (feature.size() < 2 || (feature[0] != '+' && feature[0] != '-')) {
      error = "target feature '" + feature.str() +
              "' must be written +name or -name";
      return nullptr;
    }
    if (!known.count(feature.drop_front().str())) {
      error = "unknown target feature '" + feature.drop_front().str() + "'";
      return nullptr;
    }
    extraFeatures += (extraFeatures.empty() ? "" : ",") + feature.str();
  }
  std::string features = host ? getHostFeatureString() : std::string();
  if (!extraFeatures.empty())
    features += (features.empty() ? "" : ",") + extraFeatures;

  static const llvm::CodeGenOptLevel levels[] = {
      llvm::CodeGenOptLevel::None, llvm::CodeGenOptLevel::Less,
      llvm::CodeGenOptLevel::Default, llvm::CodeGenOptLevel::Aggressive};
  llvm::TargetOptions targetOptions;
  Target result;
  result.machine.reset(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      levels[options.optLevel]));
  if (!result.machine) {
    error = "cannot create an LLVM target machine for " + cpu;
    return nullptr;
  }
  result.cpu = cpu;
  // Record every ISA feature the generated code may use, implied ones
  // included: the driver refuses binaries whose features the host lacks.
  const llvm::MCSubtargetInfo *subtarget = result.machine->getMCSubtargetInfo();
  const std::set<std::string> &isa = getISAFeatureNames();
  for (const llvm::SubtargetFeatureKV &feature :
       subtarget->getAllProcessorFeatures())
    if (subtarget->getFeatureBits().test(feature.Value) &&
        isa.count(feature.Key))
      result.features.push_back(feature.Key);
  // A worker may see many option combinations: keep the cache small.
  if (targets.size() >= 16)
    targets.clear();
  return &targets.emplace(key, std::move(result)).first->second;
}
