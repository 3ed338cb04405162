//===- MathToLibm.cpp - float64 math to libm calls ------------------------===//
//
// Implements maia-math-to-libm: see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "maia/Transforms/Passes.h"

#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::maia {
#define GEN_PASS_DEF_MAIAMATHTOLIBM
#include "maia/Transforms/Passes.h.inc"
} // namespace mlir::maia

using namespace mlir;

namespace {

bool isF64Math(Operation *op) {
  if (!isa<math::MathDialect>(op->getDialect()) || op->getNumResults() != 1)
    return false;
  return getElementTypeOrSelf(op->getResult(0).getType()).isF64();
}

struct MathToLibmPass
    : public maia::impl::MaiaMathToLibmBase<MathToLibmPass> {
  void runOnOperation() override {
    // Upstream's conversion pass marks every op it knows illegal, f32
    // vectors and integer math.absi included: apply its patterns to the
    // f64 ops only (and to the scalar ops they unroll vectors into).
    SmallVector<Operation *> f64Ops;
    getOperation()->walk([&](Operation *op) {
      if (isF64Math(op))
        f64Ops.push_back(op);
    });
    if (f64Ops.empty())
      return;
    RewritePatternSet patterns(&getContext());
    populateMathToLibmConversionPatterns(patterns);
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
    if (failed(applyOpPatternsAndFold(f64Ops, std::move(patterns), config))) {
      getOperation()->emitError("float64 math to libm did not converge");
      return signalPassFailure();
    }
  }
};

} // namespace
