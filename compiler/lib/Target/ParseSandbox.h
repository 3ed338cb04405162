//===- ParseSandbox.h - Parse MLIR in a forked child ------------*- C++ -*-===//
//
// Private to libMaiaCompiler: a first parse of the input in a child process,
// so that input crashing MLIR 19's parser never reaches the compiler's own.
//
//===----------------------------------------------------------------------===//

#ifndef MAIA_LIB_TARGET_PARSESANDBOX_H
#define MAIA_LIB_TARGET_PARSESANDBOX_H

#include <sys/types.h>
#include <vector>

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace maia::compiler {

/// Forks a child per parse and reaps the children it forked, waiting for
/// the stragglers when it is destroyed.
class ParseSandbox {
public:
  ParseSandbox() = default;
  ~ParseSandbox();
  ParseSandbox(const ParseSandbox &) = delete;
  ParseSandbox &operator=(const ParseSandbox &) = delete;

  /// Parses the main buffer of `sourceMgr` with `context` in a forked
  /// child; false (with the diagnostics written to `diagnostics`) if that
  /// fails. True without a parse when no child can be started.
  bool preparse(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &context,
                llvm::raw_ostream &diagnostics);

private:
  /// Collects exited children (all of them if `wait`).
  void reapChildren(bool wait);

  std::vector<pid_t> children;
};

} // namespace maia::compiler

#endif // MAIA_LIB_TARGET_PARSESANDBOX_H
