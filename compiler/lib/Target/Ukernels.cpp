//===- Ukernels.cpp - Find the micro-kernel library of a target -----------===//
//
// The archive is chosen by ISA level, not per CPU: it is built ahead of time
// (-march=x86-64-v4 / -v3) and a kernel may only link code whose features
// its own target has, since the driver checks the binary's recorded
// features against the host, not the archive's.
//
//===----------------------------------------------------------------------===//

#include "Ukernels.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>

namespace mc = ::maia::compiler;

namespace {

struct IsaLevel {
  const char *name;
  std::vector<const char *> features;
};

/// The levels of the archives, best first, with the features each needs
/// (psABI x86-64 micro-architecture levels).
const IsaLevel kLevels[] = {
    {"v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx2",
            "fma", "f16c", "bmi2"}},
    {"v3", {"avx2", "fma", "f16c", "bmi", "bmi2", "lzcnt", "movbe"}},
};

/// maia/kernels beside this library (where libMaiaCompiler.so is).
std::string kernelDirBesideLibrary() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&mc::findUkernelLibrary), &info) ||
      !info.dli_fname)
    return {};
  llvm::SmallString<256> dir(info.dli_fname);
  llvm::sys::path::remove_filename(dir);
  llvm::sys::path::append(dir, "maia", "kernels");
  return dir.str().str();
}

} // namespace

mc::UkernelLibrary
mc::findUkernelLibrary(const std::vector<std::string> &targetFeatures) {
  auto has = [&](const char *feature) {
    return std::find(targetFeatures.begin(), targetFeatures.end(), feature) !=
           targetFeatures.end();
  };
  const IsaLevel *level = nullptr;
  for (const IsaLevel &candidate : kLevels)
    if (std::all_of(candidate.features.begin(), candidate.features.end(), has)) {
      level = &candidate;
      break;
    }
  UkernelLibrary result;
  if (!level) {
    result.missingReason = "the target has neither x86-64-v4 nor x86-64-v3 "
                           "features, for which the micro-kernels are built";
    return result;
  }
  const char *fromEnvironment = std::getenv("MAIA_KERNEL_DIR");
  std::string dir = fromEnvironment && *fromEnvironment
                        ? std::string(fromEnvironment)
                        : kernelDirBesideLibrary();
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, std::string("libmaia_ukernels_") +
                                    level->name + ".a");
  if (!llvm::sys::fs::exists(path)) {
    result.missingReason = "the micro-kernel library " + path.str().str() +
                           " does not exist";
    return result;
  }
  result.path = path.str().str();
  return result;
}
