//===- ApproximateMath.cpp - vectorizable math approximations -------------===//
//
// Implements maia-approximate-math: see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "maia/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::maia {
#define GEN_PASS_DEF_MAIAAPPROXIMATEMATH
#include "maia/Transforms/Passes.h.inc"
} // namespace mlir::maia

using namespace mlir;

namespace {

struct ApproximateMathPass
    : public maia::impl::MaiaApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathAlgebraicSimplificationPatterns(patterns);
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(),
                                            std::move(patterns)))) {
      getOperation()->emitError("math approximation did not converge");
      return signalPassFailure();
    }
    warnAboutScalarizedMath();
  }

  /// What is left of these on vectors lowers to one libm call per lane
  /// (f64 has no approximation upstream): say so, since it is slow.
  void warnAboutScalarizedMath() {
    static const llvm::StringLiteral libmOps[] = {
        "math.acos",  "math.asin",  "math.atan", "math.atan2", "math.cbrt",
        "math.cos",   "math.cosh",  "math.erf",  "math.exp",   "math.exp2",
        "math.expm1", "math.fpowi", "math.log",  "math.log10", "math.log1p",
        "math.log2",  "math.powf",  "math.sin",  "math.sinh",  "math.tan",
        "math.tanh"};
    getOperation()->walk([&](Operation *op) {
      if (op->getNumResults() != 1 ||
          !isa<VectorType>(op->getResult(0).getType()) ||
          !llvm::is_contained(libmOps, op->getName().getStringRef()))
        return;
      op->emitWarning("'")
          << op->getName() << "' on " << op->getResult(0).getType()
          << " has no vector approximation: it becomes one scalar libm call "
             "per lane";
    });
  }
};

} // namespace
