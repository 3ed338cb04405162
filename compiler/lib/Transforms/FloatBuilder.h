//===- FloatBuilder.h - float arithmetic for math approximations -*- C++ -*-===//
//
// The builder maia-approximate-math writes its approximations with: one
// float shape, constants splatted to it, and the few control-flow and bit
// helpers the approximations need.
//
//===----------------------------------------------------------------------===//

#ifndef MAIA_TRANSFORMS_FLOATBUILDER_H
#define MAIA_TRANSFORMS_FLOATBUILDER_H

#include "maia/Dialect/Maia/MaiaDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::maia {

/// Marks a math op emitted by an approximation that must be left to the
/// upstream approximation (its input is already range reduced).
constexpr llvm::StringLiteral kReducedAttr = "maia.reduced";
/// Marks a math op left to libm (maia-math-to-libm) on purpose.
constexpr llvm::StringLiteral kLibmAttr = MaiaDialect::getLibmCallAttrName();

/// Builds float arithmetic on one float shape (a scalar or a fixed-length
/// vector): f32 for the patterns, f64 (`wide()`) for their exact cores.
struct FloatBuilder {
  ImplicitLocOpBuilder &b;
  Type type;

  Type boolType() const {
    if (auto vector = dyn_cast<VectorType>(type))
      return VectorType::get(vector.getShape(), b.getI1Type());
    return b.getI1Type();
  }
  Value c(double value) {
    auto attr = FloatAttr::get(getElementTypeOrSelf(type), value);
    if (auto vector = dyn_cast<VectorType>(type))
      return b.create<arith::ConstantOp>(DenseElementsAttr::get(vector, attr));
    return b.create<arith::ConstantOp>(attr);
  }
  Value add(Value x, Value y) { return b.create<arith::AddFOp>(x, y); }
  Value sub(Value x, Value y) { return b.create<arith::SubFOp>(x, y); }
  Value mul(Value x, Value y) { return b.create<arith::MulFOp>(x, y); }
  Value div(Value x, Value y) { return b.create<arith::DivFOp>(x, y); }
  Value fma(Value x, Value y, Value z) { return b.create<math::FmaOp>(x, y, z); }
  Value abs(Value x) { return b.create<math::AbsFOp>(x); }
  Value sqrt(Value x) { return b.create<math::SqrtOp>(x); }
  Value copysign(Value x, Value sign) {
    return b.create<math::CopySignOp>(x, sign);
  }
  Value cmp(arith::CmpFPredicate predicate, Value x, Value y) {
    return b.create<arith::CmpFOp>(predicate, x, y);
  }
  Value lt(Value x, double y) { return cmp(arith::CmpFPredicate::OLT, x, c(y)); }
  Value gt(Value x, double y) { return cmp(arith::CmpFPredicate::OGT, x, c(y)); }
  Value select(Value condition, Value x, Value y) {
    return b.create<arith::SelectOp>(condition, x, y);
  }
  Value both(Value x, Value y) { return b.create<arith::AndIOp>(x, y); }
  Value signbit(Value x) { // true for -0 and negative NaN too
    return lt(copysign(c(1.0), x), 0.0);
  }
  /// The same shape with f64 elements.
  Type wideType() const {
    if (auto vector = dyn_cast<VectorType>(type))
      return VectorType::get(vector.getShape(), b.getF64Type());
    return b.getF64Type();
  }
  FloatBuilder wide() const { return FloatBuilder{b, wideType()}; }
  Value extend(Value x) { return b.create<arith::ExtFOp>(wideType(), x); }
  Value truncate(Value x) { return b.create<arith::TruncFOp>(type, x); }
  /// The same shape with `width`-bit integer elements.
  Type intType(unsigned width) const {
    if (auto vector = dyn_cast<VectorType>(type))
      return VectorType::get(vector.getShape(), b.getIntegerType(width));
    return b.getIntegerType(width);
  }
  Value ci(int64_t value, unsigned width) {
    Type intType = this->intType(width);
    auto attr = IntegerAttr::get(getElementTypeOrSelf(intType), value);
    if (auto vector = dyn_cast<VectorType>(intType))
      return b.create<arith::ConstantOp>(DenseElementsAttr::get(vector, attr));
    return b.create<arith::ConstantOp>(attr);
  }
  Value isnan(Value x) { return cmp(arith::CmpFPredicate::UNO, x, x); }
  Value eq(Value x, double y) { return cmp(arith::CmpFPredicate::OEQ, x, c(y)); }
  /// x clamped to [lo, hi]; NaN stays NaN.
  Value clamp(Value x, double lo, double hi) {
    return b.create<arith::MinimumFOp>(b.create<arith::MaximumFOp>(x, c(lo)),
                                       c(hi));
  }
  /// Horner, coefficients from the highest degree down.
  Value poly(Value x, ArrayRef<double> coefficients) {
    Value acc = c(coefficients.front());
    for (double coefficient : coefficients.drop_front())
      acc = fma(acc, x, c(coefficient));
    return acc;
  }
  template <typename Op> Value reduced(Value x) {
    auto op = b.create<Op>(x);
    op->setAttr(kReducedAttr, b.getUnitAttr());
    return op;
  }
  /// `Op` computed by libm (maia-math-to-libm), not approximated.
  template <typename Op> Value libm(Value x) {
    auto op = b.create<Op>(x);
    op->setAttr(kLibmAttr, b.getUnitAttr());
    return op;
  }
  /// True when `condition` holds in any lane.
  Value any(Value condition) {
    auto vector = dyn_cast<VectorType>(condition.getType());
    if (!vector)
      return condition;
    if (vector.getRank() != 1)
      condition = b.create<vector::ShapeCastOp>(
          VectorType::get({vector.getNumElements()}, b.getI1Type()), condition);
    return b.create<vector::ReductionOp>(vector::CombiningKind::OR, condition);
  }
  /// `slow()` in the lanes where `rare` holds, `fast` elsewhere; `slow` runs
  /// only when some lane needs it.
  Value unlessRare(Value rare, Value fast, function_ref<Value()> slow) {
    auto branch = b.create<scf::IfOp>(TypeRange{fast.getType()}, any(rare),
                                      /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&branch.getThenRegion().front());
    b.create<scf::YieldOp>(select(rare, slow(), fast));
    b.setInsertionPointToStart(&branch.getElseRegion().front());
    b.create<scf::YieldOp>(fast);
    return branch.getResult(0);
  }
  // These go through the patterns below (and then upstream).
  Value exp(Value x) { return b.create<math::ExpOp>(x); }
  Value expm1(Value x) { return b.create<math::ExpM1Op>(x); }
  Value log(Value x) { return b.create<math::LogOp>(x); }
  Value log1p(Value x) { return b.create<math::Log1pOp>(x); }
};


} // namespace mlir::maia

#endif // MAIA_TRANSFORMS_FLOATBUILDER_H
