//===- HostTarget.h - LLVM target machines for MAIA kernels -----*- C++ -*-===//
//
// Private to libMaiaCompiler: LLVM's one-time set-up and the target machines
// a Compiler generates code with, validated and cached per option set.
//
//===----------------------------------------------------------------------===//

#ifndef MAIA_LIB_TARGET_HOSTTARGET_H
#define MAIA_LIB_TARGET_HOSTTARGET_H

#include "maia/Compiler/Compiler.h"

#include "llvm/Target/TargetMachine.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace maia::compiler {

/// Initializes the native target and crash recovery; safe to call from any
/// number of Compiler instances.
void initializeLLVMOnce();

/// A target machine and what gets recorded about it in binaries.
struct Target {
  std::unique_ptr<llvm::TargetMachine> machine;
  std::string cpu;
  std::vector<std::string> features;
};

/// The target machines of one Compiler, keyed by the options that shape
/// them: building one costs more than a small kernel's codegen.
class TargetCache {
public:
  TargetCache();

  /// The (cached) target machine for the options; null with `error` set.
  const Target *getTarget(const CompileOptions &options, std::string &error);

  /// Drops every machine, e.g. after a crash that may have corrupted one.
  void clear() { targets.clear(); }

  /// The triple of this process, which every machine generates code for.
  const std::string &getTriple() const { return triple; }

private:
  std::string triple;
  std::map<std::string, Target> targets;
};

} // namespace maia::compiler

#endif // MAIA_LIB_TARGET_HOSTTARGET_H
