//===- MathToLibm.cpp - math to libm calls --------------------------------===//
//
// Implements maia-math-to-libm: see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "maia/Transforms/Passes.h"

#include "maia/Dialect/Maia/MaiaDialect.h"

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

/// Ops that lower to one LLVM intrinsic the backend turns into vector
/// instructions (vfmadd, vroundpd, vsqrtpd, ...): never worth a call.
bool hasVectorInstruction(Operation *op) {
  return isa<math::FmaOp, math::RoundEvenOp, math::RoundOp, math::FloorOp,
             math::CeilOp, math::TruncOp, math::SqrtOp, math::AbsFOp,
             math::CopySignOp>(op);
}

/// f64 math without a vector instruction, and the f32 math
/// maia-approximate-math left to libm.
bool isLibmMath(Operation *op) {
  if (!isa<math::MathDialect>(op->getDialect()) || op->getNumResults() != 1)
    return false;
  if (op->hasAttr(maia::MaiaDialect::getLibmCallAttrName()))
    return true;
  return getElementTypeOrSelf(op->getResult(0).getType()).isF64() &&
         !hasVectorInstruction(op);
}

struct MathToLibmPass
    : public maia::impl::MaiaMathToLibmBase<MathToLibmPass> {
  void runOnOperation() override {
    // Upstream's conversion pass marks every op it knows illegal, f32
    // vectors and integer math.absi included: apply its patterns to the
    // libm ops only (and to the scalar ops they unroll vectors into).
    SmallVector<Operation *> libmOps;
    getOperation()->walk([&](Operation *op) {
      if (isLibmMath(op))
        libmOps.push_back(op);
    });
    if (libmOps.empty())
      return;
    RewritePatternSet patterns(&getContext());
    populateMathToLibmConversionPatterns(patterns);
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
    if (failed(applyOpPatternsAndFold(libmOps, std::move(patterns), config))) {
      getOperation()->emitError("math to libm did not converge");
      return signalPassFailure();
    }
  }
};

} // namespace
