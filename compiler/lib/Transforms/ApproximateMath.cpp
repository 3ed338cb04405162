//===- ApproximateMath.cpp - vectorizable math approximations -------------===//
//
// Implements maia-approximate-math: see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "maia/Transforms/Passes.h"

#include "FloatBuilder.h"
#include "WideMath.h"

#include "maia/Dialect/Maia/MaiaDialect.h"
#include "maia/Transforms/MathCoefficients.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

namespace mlir::maia {
#define GEN_PASS_DEF_MAIAAPPROXIMATEMATH
#include "maia/Transforms/Passes.h.inc"
} // namespace mlir::maia

using namespace mlir;
using mlir::maia::FloatBuilder;
using mlir::maia::kLibmAttr;
using mlir::maia::kReducedAttr;

namespace {

/// f32 or a fixed-length vector of f32.
bool isF32Like(Type type) {
  if (auto vector = dyn_cast<VectorType>(type))
    return !vector.isScalable() && vector.getElementType().isF32();
  return type.isF32();
}

bool isHalfLike(Type type) {
  Type element = type;
  if (auto vector = dyn_cast<VectorType>(type)) {
    if (vector.isScalable())
      return false;
    element = vector.getElementType();
  }
  return element.isF16() || element.isBF16();
}

using namespace ::maia_math;

// pi/2 and pi as the nearest float plus the rest.
constexpr double kPio2Hi = 1.57079637050628662109375;
constexpr double kPio2Lo = kPi / 2 - kPio2Hi;
constexpr double kPiHi = 3.1415927410125732421875;
constexpr double kPiLo = kPi - kPiHi;

/// A pattern for one f32 op: `build` computes the result from the operands.
template <typename Op>
struct F32Pattern : public OpRewritePattern<Op> {
  using Build = Value (*)(FloatBuilder &, ValueRange);
  F32Pattern(MLIRContext *context, Build build)
      : OpRewritePattern<Op>(context, /*benefit=*/10), build(build) {}

  LogicalResult matchAndRewrite(Op op,
                                PatternRewriter &rewriter) const override {
    if (op->hasAttr(kReducedAttr) || op->hasAttr(kLibmAttr) ||
        op->getNumResults() != 1 ||
        !isF32Like(op->getResult(0).getType()))
      return rewriter.notifyMatchFailure(op, "not an f32 op to approximate");
    for (Value operand : op->getOperands())
      if (operand.getType() != op->getResult(0).getType())
        return rewriter.notifyMatchFailure(op, "mixed operand types");
    ImplicitLocOpBuilder b(op->getLoc(), rewriter);
    FloatBuilder f{b, op->getResult(0).getType()};
    rewriter.replaceOp(op, build(f, op->getOperands()));
    return success();
  }
  Build build;
};

/// asin on [0, 0.5] as s + s*z*P(z), z = s*s (Cephes asinf).
Value asinKernel(FloatBuilder &f, Value s, Value z) {
  Value p = f.poly(z, {4.2163199048E-2, 2.4181311049E-2, 4.5470025998E-2,
                       7.4953002686E-2, 1.6666752422E-1});
  return f.fma(f.mul(p, z), s, s);
}

/// `core(d, x)` in float64 on the float32 argument, rounded once.
template <typename Core>
Value inFloat64(FloatBuilder &f, Value x, Core core) {
  FloatBuilder d = f.wide();
  return f.truncate(core(d, f.extend(x)));
}

Value buildAsin(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value a = inFloat64(f, f.abs(x), maia::wide::asinOfAbs); // NaN beyond 1
  return f.copysign(a, x);
}

Value buildAcos(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value a = f.abs(x);
  Value big = f.gt(a, 0.5);
  Value negative = f.lt(x, 0.0);
  Value z = f.select(big, f.mul(f.c(0.5), f.sub(f.c(1.0), a)), f.mul(x, x));
  Value s = f.select(big, f.sqrt(z), x);
  Value p = asinKernel(f, s, z);
  Value twice = f.add(p, p);
  Value nearMinusOne = f.add(f.sub(f.c(kPiHi), twice), f.c(kPiLo));
  Value middle = f.add(f.sub(f.c(kPio2Hi), p), f.c(kPio2Lo));
  return f.select(big, f.select(negative, nearMinusOne, twice), middle);
}

/// atan(|x|) for a = |x| >= 0 (Cephes atanf: reduced to |t| <= tan(pi/8)).
Value atanOfAbs(FloatBuilder &f, Value a) {
  Value beyond = f.gt(a, 2.414213562373095);
  Value middle = f.gt(a, 0.4142135623730950);
  Value t = f.select(
      beyond, f.div(f.c(-1.0), a),
      f.select(middle, f.div(f.sub(a, f.c(1.0)), f.add(a, f.c(1.0))), a));
  // pi/2 or pi/4 as the nearest float plus the rest.
  Value offset = f.select(beyond, f.c(kPio2Hi),
                          f.select(middle, f.c(kPio2Hi / 2), f.c(0.0)));
  Value offsetLo = f.select(beyond, f.c(kPio2Lo),
                            f.select(middle, f.c(kPio2Lo / 2), f.c(0.0)));
  Value z = f.mul(t, t);
  Value p = f.poly(z, {8.05374449538e-2, -1.38776856032E-1, 1.99777106478E-1,
                       -3.33329491539E-1});
  return f.add(offset, f.add(f.fma(f.mul(p, z), t, t), offsetLo));
}

Value buildAtan(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  return f.copysign(inFloat64(f, f.abs(x), maia::wide::atanOfAbs), x);
}

// atan2(y, x) = atan(y / x), moved to the quadrant of (x, y); zeros and
// infinities as in C.
Value buildAtan2(FloatBuilder &f, ValueRange operands) {
  Value y = operands[0], x = operands[1];
  Value q = f.div(y, x);
  Value r = f.copysign(atanOfAbs(f, f.abs(q)), q);
  Value xNegative = f.signbit(x);
  Value turned = f.add(f.add(r, f.copysign(f.c(kPiLo), y)),
                       f.copysign(f.c(kPiHi), y));
  r = f.select(xNegative, turned, r);
  Value zeros = f.both(f.cmp(arith::CmpFPredicate::OEQ, y, f.c(0.0)),
                      f.cmp(arith::CmpFPredicate::OEQ, x, f.c(0.0)));
  r = f.select(zeros, f.select(xNegative, f.copysign(f.c(kPi), y), y), r);
  Value inf = f.c(std::numeric_limits<double>::infinity());
  Value infinities = f.both(f.cmp(arith::CmpFPredicate::OEQ, f.abs(y), inf),
                           f.cmp(arith::CmpFPredicate::OEQ, f.abs(x), inf));
  Value corner = f.select(xNegative, f.c(3 * kPi / 4), f.c(kPi / 4));
  return f.select(infinities, f.copysign(corner, y), r);
}

// sinh: expm1 below 1 (no cancellation), exp above, exp(x/2)^2 where exp(x)
// alone would overflow.
Value buildSinh(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value a = f.abs(x);
  Value m = f.expm1(a);
  Value small = f.mul(f.c(0.5), f.add(m, f.div(m, f.add(m, f.c(1.0)))));
  Value e = f.exp(a);
  Value middle = f.sub(f.mul(f.c(0.5), e), f.div(f.c(0.5), e));
  Value h = f.exp(f.mul(f.c(0.5), a));
  Value large = f.mul(f.mul(f.c(0.5), h), h);
  Value r = f.select(f.lt(a, 1.0), small, f.select(f.gt(a, 88.0), large, middle));
  return f.copysign(r, x);
}

Value buildCosh(FloatBuilder &f, ValueRange operands) {
  Value a = f.abs(operands[0]);
  Value e = f.exp(a);
  Value middle = f.add(f.mul(f.c(0.5), e), f.div(f.c(0.5), e));
  Value h = f.exp(f.mul(f.c(0.5), a));
  Value large = f.mul(f.mul(f.c(0.5), h), h);
  return f.select(f.gt(a, 88.0), large, middle);
}

// Up to this the f64 reduction below is exact (k < 2^17); larger arguments
// (rare in models) take libm's sinf/cosf, whose Payne-Hanek reduction is
// exact over float's whole range, as glibc's vector math does.
constexpr double kSinCosReductionLimit = 131072.0;

/// x = k pi/2 + r in float64, pi/2 in two parts (fma, Cody-Waite): k < 2^17
/// times the first part (33 bits) is exact, and r keeps its digits however
/// close x lies to a multiple of pi/2.
struct HalfPiReduction {
  Value k, r;
};
HalfPiReduction reduceByHalfPi(FloatBuilder &d, Value x) {
  Value k = d.b.create<math::RoundEvenOp>(d.mul(x, d.c(2 / kPi)));
  constexpr double p1 = 1.5707963267341256141662597656250;
  constexpr double p2 = 6.0771005065061922509705e-11;
  Value negK = d.sub(d.c(0.0), k);
  return {k, d.fma(negK, d.c(p2), d.fma(negK, d.c(p1), x))};
}

// sin/cos: x = k pi/2 + r, |r| <= pi/4, then upstream's polynomials on r
// and the quadrant k mod 4. Upstream reduces with one rounded f32 pi/2:
// sin(float(pi)) came out as 0.
template <bool isCos>
Value buildReducedSinCos(FloatBuilder &f, Value x) {
  FloatBuilder d = f.wide();
  auto [kd, rd] = reduceByHalfPi(d, f.extend(x));
  // r = rHi + rLo in floats; the polynomials take rHi.
  Value r = f.truncate(rd);
  Value rLo = f.truncate(d.sub(rd, f.extend(r)));
  Value k = f.truncate(kd);
  // Upstream's own reduction floors: on [-pi/4, 0) it goes through k = -1
  // and loses every digit of tiny r. Give it |r|.
  Value ar = f.abs(r);
  Value sHi = f.copysign(f.reduced<math::SinOp>(ar), r);
  Value cHi = f.reduced<math::CosOp>(ar);
  // sin(rHi + rLo) = sin(rHi) + cos(rHi) rLo, cos likewise, to first order.
  Value s = f.fma(cHi, rLo, sHi);
  Value c = f.fma(f.sub(f.c(0.0), sHi), rLo, cHi);
  // q = k mod 4 in [0, 4).
  Value q = f.sub(k, f.mul(f.c(4.0), f.b.create<math::FloorOp>(f.mul(k, f.c(0.25)))));
  if (isCos)
    q = f.add(q, f.c(1.0)); // cos(x) = sin(x + pi/2)
  Value q2 = f.sub(q, f.mul(f.c(4.0), f.b.create<math::FloorOp>(f.mul(q, f.c(0.25)))));
  Value odd = f.cmp(arith::CmpFPredicate::OEQ,
                    f.sub(q2, f.mul(f.c(2.0), f.b.create<math::FloorOp>(f.mul(q2, f.c(0.5))))),
                    f.c(1.0));
  Value v = f.select(odd, c, s);
  Value negate = f.cmp(arith::CmpFPredicate::OGE, q2, f.c(2.0));
  Value result = f.select(negate, f.sub(f.c(0.0), v), v);
  if (isCos)
    return result;
  return f.select(f.cmp(arith::CmpFPredicate::OEQ, x, f.c(0.0)), x, result);
}

/// Lanes beyond the reduction's exact range (inf too, not NaN).
Value beyondReduction(FloatBuilder &f, Value x) {
  return f.gt(f.abs(x), kSinCosReductionLimit);
}

template <bool isCos>
Value buildSinCos(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value beyond = beyondReduction(f, x);
  return f.unlessRare(beyond, buildReducedSinCos<isCos>(f, x), [&] {
    return isCos ? f.libm<math::CosOp>(x) : f.libm<math::SinOp>(x);
  });
}

Value buildTan(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value beyond = beyondReduction(f, x);
  FloatBuilder d = f.wide();
  auto [k, r] = reduceByHalfPi(d, f.extend(x));
  Value t = f.truncate(maia::wide::tanOfReduced(d, k, r));
  t = f.select(f.eq(x, 0.0), x, t); // -0
  return f.unlessRare(beyond, t, [&] { return f.libm<math::TanOp>(x); });
}

/// log1p(w) for float64 w with the special cases the core leaves out:
/// -inf at -1, NaN below.
Value log1pOrSpecial(FloatBuilder &d, Value w) {
  Value r = maia::wide::log1p(d, w);
  r = d.select(d.eq(w, -1.0), d.c(-std::numeric_limits<double>::infinity()), r);
  return d.select(d.lt(w, -1.0), d.c(std::numeric_limits<double>::quiet_NaN()),
                  r);
}

// asinh(a) = log1p(a + a^2 / (1 + sqrt(1 + a^2))): no cancellation, and
// a^2 neither rounds nor overflows in float64.
Value buildAsinh(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value r = inFloat64(f, f.abs(x), [](FloatBuilder &d, Value a) {
    Value a2 = d.mul(a, a);
    Value w = d.add(a, d.div(a2, d.add(d.c(1.0), d.sqrt(d.add(d.c(1.0), a2)))));
    return d.select(d.eq(a, std::numeric_limits<double>::infinity()), a,
                    log1pOrSpecial(d, w));
  });
  return f.copysign(r, x);
}

// acosh(x) = log1p(t + sqrt(t^2 + 2t)), t = x - 1 (exact in float64).
Value buildAcosh(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value r = inFloat64(f, x, [](FloatBuilder &d, Value xd) {
    Value t = d.sub(xd, d.c(1.0));
    return log1pOrSpecial(d, d.add(t, d.sqrt(d.fma(t, t, d.add(t, t)))));
  });
  return f.select(f.lt(x, 1.0), f.c(std::numeric_limits<double>::quiet_NaN()),
                  r);
}

// atanh(a) = log1p(2a / (1 - a)) / 2.
Value buildAtanh(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value a = f.abs(x);
  Value r = inFloat64(f, a, [](FloatBuilder &d, Value ad) {
    Value w = d.div(d.add(ad, ad), d.sub(d.c(1.0), ad));
    return d.mul(d.c(0.5), log1pOrSpecial(d, w));
  });
  r = f.select(f.gt(a, 1.0), f.c(std::numeric_limits<double>::quiet_NaN()), r);
  return f.copysign(r, x);
}

/// 2^k for integer k in [-126, 127], from the exponent bits.
Value pow2(FloatBuilder &f, Value k) {
  ImplicitLocOpBuilder &b = f.b;
  Value biased = b.create<arith::AddIOp>(k, f.ci(127, 32));
  return b.create<arith::BitcastOp>(
      f.type, b.create<arith::ShLIOp>(biased, f.ci(23, 32)));
}

// exp in float32 arithmetic: twice the lanes of a float64 core, and within
// 1 ulp of the correctly rounded result and of the CPU's exp for every
// float32 (both checked exhaustively). n = roundeven(x log2(e)); r = x - n
// ln(2) with ln(2) in two parts (n times the high part is exact); exp(r) by
// its degree-7 Taylor series (|r| <= ln(2)/2: truncation below 4e-9),
// summed as 1 + (r + r^2 q(r)) so that the one rounding that matters is the
// last; then 2^n in two halves, so that n = 128 (just below overflow) and
// subnormal results scale with one rounding. Below -104 the result is 0,
// selected: scaled, those lanes (a causal mask's -inf, half of an attention
// softmax) would make subnormals, and x86 takes a microcode assist (~100
// cycles) for each such multiplication, so they compute exp(0) and are
// discarded. Above 89: inf. The eager kernels run the same algorithm
// (runtime/kernels/eager/exponential.h).
Value buildExp(FloatBuilder &f, ValueRange operands) {
  ImplicitLocOpBuilder &b = f.b;
  Value x = operands[0];
  Value zero = f.lt(x, -104.0);
  Value clamped = f.select(
      zero, f.c(0.0), b.create<arith::MinimumFOp>(x, f.c(89.0))); // NaN stays
  Value n = b.create<math::RoundEvenOp>(f.mul(clamped, f.c(kLog2E)));
  Value r = f.fma(n, f.c(-kLn2HiF32), clamped);
  r = f.fma(n, f.c(-kLn2LoF32), r);
  Value q = f.poly(r, kExpTaylorF32);
  Value y = f.add(f.c(1.0), f.fma(f.mul(r, r), q, r));
  // NaN is selected below, never scaled: fptosi of NaN is poison.
  Value k = b.create<arith::FPToSIOp>(f.intType(32), n);
  Value half = b.create<arith::ShRSIOp>(k, f.ci(1, 32));
  Value rest = b.create<arith::SubIOp>(k, half);
  y = f.mul(f.mul(y, pow2(f, half)), pow2(f, rest));
  return f.select(zero, f.c(0.0), f.select(f.isnan(x), x, y));
}

Value buildExpm1(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value r = inFloat64(f, x, [](FloatBuilder &d, Value xd) {
    return maia::wide::expm1(d, d.clamp(xd, -200.0, 200.0));
  });
  return f.select(f.eq(x, 0.0), x, r); // -0
}

// tanh(a) = e / (e + 2), e = expm1(2a): no cancellation at either end.
Value buildTanh(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value r = inFloat64(f, f.abs(x), [](FloatBuilder &d, Value a) {
    Value e = maia::wide::expm1(d, d.mul(d.c(2.0), d.clamp(a, 0.0, 20.0)));
    return d.div(e, d.add(e, d.c(2.0)));
  });
  return f.copysign(r, x);
}

Value buildLog1p(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value r = inFloat64(f, x, log1pOrSpecial);
  return f.select(f.eq(x, 0.0), x, r); // -0
}

// erf in float32 arithmetic (all 16 lanes, no float64 core): a + a q(a^2)
// below 1, 1 - erfc(a) from 1 to 4, 1 beyond (1 in float32 from 3.92);
// MathCoefficients.h says why. Within 1 ulp of the correctly rounded result
// on every float32 (tools/conformance/math_ulp_sweep.py); the eager kernels
// run the same steps (runtime/kernels/eager/error_function.h).
Value buildErf(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value a = f.abs(x);
  Value nearZero = f.fma(a, f.poly(f.mul(a, a), kErfF32Small), a);
  Value t = f.sub(f.clamp(a, 1.0, 4.0), f.c(kErfcF32Center)); // NaN stays
  Value nearOne = f.sub(f.c(1.0), f.poly(t, kErfcF32));
  Value r = f.select(f.lt(a, 1.0), nearZero, nearOne);
  return f.copysign(f.select(f.gt(a, 4.0), f.c(1.0), r), x);
}

// erfc(-a) = 2 - erfc(a); beyond 12 erfc is 0 in float32.
Value buildErfc(FloatBuilder &f, ValueRange operands) {
  return inFloat64(f, operands[0], [](FloatBuilder &d, Value x) {
    Value a = d.clamp(d.abs(x), 0.0, 12.0);
    Value positive = d.select(d.lt(a, 1.0),
                              d.sub(d.c(1.0), maia::wide::erfOfSmall(d, a)),
                              maia::wide::erfcOfAbs(d, a));
    return d.select(d.signbit(x), d.sub(d.c(2.0), positive), positive);
  });
}

// log of a subnormal: upstream reads its exponent as -126; scale it by
// 2^24 first.
template <typename Op>
Value buildScaledLog(FloatBuilder &f, Value x, double log2Scale) {
  Value tiny = f.lt(x, 1.17549435e-38);
  Value l = f.reduced<Op>(f.select(tiny, f.mul(x, f.c(16777216.0)), x));
  return f.select(tiny, f.sub(l, f.c(log2Scale)), l);
}
Value buildLog(FloatBuilder &f, ValueRange operands) {
  return buildScaledLog<math::LogOp>(f, operands[0], 24 * kLn2);
}
Value buildLog2(FloatBuilder &f, ValueRange operands) {
  return buildScaledLog<math::Log2Op>(f, operands[0], 24.0);
}
// log10 = log / ln(10) in float64; 0, negatives, inf and NaN as C.
Value buildLog10(FloatBuilder &f, ValueRange operands) {
  Value x = operands[0];
  Value r = inFloat64(f, x, [](FloatBuilder &d, Value xd) {
    return d.mul(maia::wide::log(d, xd), d.c(0.43429448190325182765));
  });
  r = f.select(f.eq(x, 0.0), f.c(-std::numeric_limits<double>::infinity()), r);
  return f.select(f.lt(x, 0.0), f.c(std::numeric_limits<double>::quiet_NaN()),
                  r);
}

/// f16/bf16 ops that have an f32 pattern above compute in f32.
struct WidenHalf : public RewritePattern {
  WidenHalf(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/10, context) {}

  static bool handled(Operation *op) {
    return isa<math::AsinOp, math::AcosOp, math::AtanOp, math::Atan2Op,
               math::SinhOp, math::CoshOp, math::TanOp, math::AsinhOp,
               math::AcoshOp, math::AtanhOp, math::TanhOp, math::ErfOp,
               math::Log1pOp, maia::ErfcOp>(op);
  }

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!handled(op) || op->getNumResults() != 1 ||
        !isHalfLike(op->getResult(0).getType()))
      return failure();
    Type type = op->getResult(0).getType();
    for (Value operand : op->getOperands())
      if (operand.getType() != type)
        return failure();
    Type wide = rewriter.getF32Type();
    if (auto vector = dyn_cast<VectorType>(type))
      wide = VectorType::get(vector.getShape(), wide);
    SmallVector<Value> operands;
    for (Value operand : op->getOperands())
      operands.push_back(
          rewriter.create<arith::ExtFOp>(op->getLoc(), wide, operand));
    OperationState state(op->getLoc(), op->getName(), operands, {wide},
                         op->getAttrs());
    Operation *widened = rewriter.create(state);
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, type,
                                                 widened->getResult(0));
    return success();
  }
};

void populateMaiaMathPatterns(RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<WidenHalf>(context);
  patterns.add<F32Pattern<math::AsinOp>>(context, buildAsin);
  patterns.add<F32Pattern<math::AcosOp>>(context, buildAcos);
  patterns.add<F32Pattern<math::AtanOp>>(context, buildAtan);
  patterns.add<F32Pattern<math::Atan2Op>>(context, buildAtan2);
  patterns.add<F32Pattern<math::SinhOp>>(context, buildSinh);
  patterns.add<F32Pattern<math::CoshOp>>(context, buildCosh);
  patterns.add<F32Pattern<math::TanOp>>(context, buildTan);
  patterns.add<F32Pattern<math::SinOp>>(context, buildSinCos<false>);
  patterns.add<F32Pattern<math::CosOp>>(context, buildSinCos<true>);
  patterns.add<F32Pattern<math::AsinhOp>>(context, buildAsinh);
  patterns.add<F32Pattern<math::AcoshOp>>(context, buildAcosh);
  patterns.add<F32Pattern<math::AtanhOp>>(context, buildAtanh);
  patterns.add<F32Pattern<math::ExpOp>>(context, buildExp);
  patterns.add<F32Pattern<math::ExpM1Op>>(context, buildExpm1);
  patterns.add<F32Pattern<math::LogOp>>(context, buildLog);
  patterns.add<F32Pattern<math::Log2Op>>(context, buildLog2);
  patterns.add<F32Pattern<math::Log10Op>>(context, buildLog10);
  patterns.add<F32Pattern<math::Log1pOp>>(context, buildLog1p);
  patterns.add<F32Pattern<math::TanhOp>>(context, buildTanh);
  patterns.add<F32Pattern<math::ErfOp>>(context, buildErf);
  patterns.add<F32Pattern<maia::ErfcOp>>(context, buildErfc);
}

struct ApproximateMathPass
    : public maia::impl::MaiaApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    // First maia's own approximations and range reductions (they emit
    // exp/log/sin/... for upstream, marked where already reduced), then
    // upstream's polynomials.
    RewritePatternSet maiaPatterns(&getContext());
    populateMaiaMathPatterns(maiaPatterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(),
                                            std::move(maiaPatterns)))) {
      getOperation()->emitError("math approximation did not converge");
      return signalPassFailure();
    }
    // Upstream's patterns build invalid IR for tensors (an f32 constant
    // fma'd with a tensor): give them only math ops on scalars and vectors
    // (and what they create).
    SmallVector<Operation *> mathOps;
    getOperation()->walk([&](Operation *op) {
      if (!isa<math::MathDialect>(op->getDialect()) ||
          op->hasAttr(kLibmAttr))
        return;
      auto shaped = [](Type type) {
        return isa<ShapedType>(type) && !isa<VectorType>(type);
      };
      if (llvm::any_of(op->getOperandTypes(), shaped) ||
          llvm::any_of(op->getResultTypes(), shaped))
        return;
      mathOps.push_back(op);
    });
    RewritePatternSet patterns(&getContext());
    populateMathAlgebraicSimplificationPatterns(patterns);
    populateMathPolynomialApproximationPatterns(patterns);
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
    if (failed(applyOpPatternsAndFold(mathOps, std::move(patterns), config))) {
      getOperation()->emitError("math approximation did not converge");
      return signalPassFailure();
    }
    getOperation()->walk([](Operation *op) { op->removeAttr(kReducedAttr); });
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
      if (op->getNumResults() != 1 || op->hasAttr(kLibmAttr) ||
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
