//===- Ukernels.h - Find the micro-kernel library of a target ---*- C++ -*-===//
//
// Private to libMaiaCompiler: which archive of hand-written micro-kernels
// (runtime/kernels/ukernels) a kernel compiled for a target links against.
//
//===----------------------------------------------------------------------===//

#ifndef MAIA_LIB_TARGET_UKERNELS_H
#define MAIA_LIB_TARGET_UKERNELS_H

#include <string>
#include <vector>

namespace maia::compiler {

/// Where the micro-kernel archive for code with `targetFeatures` (ISA
/// feature names without '+') is, or why there is none usable.
struct UkernelLibrary {
  /// The archive, empty when none fits the target or none was found.
  std::string path;
  /// Why `path` is empty, for the link error of a kernel that calls one.
  std::string missingReason;
};

/// The archive of the highest ISA level (x86-64-v4, then -v3) whose
/// features the target has, looked up in MAIA_KERNEL_DIR if set, else in
/// maia/kernels beside libMaiaCompiler (the build tree links it to
/// build/<config>/kernels; installed it is lib/maia/kernels, beside the
/// eager kernel binaries).
UkernelLibrary findUkernelLibrary(const std::vector<std::string> &targetFeatures);

} // namespace maia::compiler

#endif // MAIA_LIB_TARGET_UKERNELS_H
