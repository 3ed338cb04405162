//===- maia-opt.cpp - The maia optimizer driver ---------------------------===//
//
// MlirOptMain with the maia dialect, the maia passes and pipeline, and the
// upstream dialects and passes kernels go through.
//
//===----------------------------------------------------------------------===//

#include "maia/Pipeline/Pipeline.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::registerConversionPasses();
  mlir::memref::registerMemRefPasses();
  mlir::arith::registerArithPasses();
  mlir::affine::registerAffinePasses();
  mlir::maia::registerMaiaPassesAndPipelines();

  mlir::DialectRegistry registry;
  mlir::maia::registerMaiaKernelDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "maia optimizer driver\n", registry));
}
