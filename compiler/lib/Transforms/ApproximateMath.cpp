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
                                            std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
