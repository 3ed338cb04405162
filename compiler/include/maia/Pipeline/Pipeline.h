//===- Pipeline.h - The maia lowering pipeline ------------------*- C++ -*-===//

#ifndef MAIA_PIPELINE_PIPELINE_H
#define MAIA_PIPELINE_PIPELINE_H

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir

namespace mlir::maia {

/// Options of the kernel lowering pipeline.
struct LowerToLLVMOptions {
  /// Let vector reductions reassociate floating-point additions (a tree
  /// instead of a serial chain).
  bool reassociateFPReductions = true;
};

/// Appends the whole lowering of maia kernels (func/arith/math/memref/
/// vector/scf/affine/index/cf + maia) to the LLVM dialect, ready for
/// translation to LLVM IR. This is the one place the pipeline is assembled.
void buildLowerToLLVMPipeline(OpPassManager &pm,
                              const LowerToLLVMOptions &options = {});

/// Registers the pipeline as `maia-lower-to-llvm` (for maia-opt) and the
/// maia passes.
void registerMaiaPassesAndPipelines();

/// Adds every dialect kernels may use (and the maia dialect) to `registry`.
void registerMaiaKernelDialects(DialectRegistry &registry);

} // namespace mlir::maia

#endif // MAIA_PIPELINE_PIPELINE_H
