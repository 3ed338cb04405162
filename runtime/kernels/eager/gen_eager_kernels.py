#!/usr/bin/env python3
"""Generates the eager kernel binary's sources from the kernel table below:
one C++ entry point per (operator, dtype) and the binary's metadata JSON.

Usage: gen_eager_kernels.py OUT_DIR ISA   (ISA: the -march level, e.g. x86-64-v3)
Writes OUT_DIR/{cast,binary,unary,fold,metadata}.gen.cpp. The kernel names are
the contract with runtime/torch/csrc/ops/EagerKernels.cpp:
    <op>_<dtype>            e.g. add_f32, eq_bf16, where_i64
    cast_<from>_<to>        e.g. cast_f16_f32
    fold<N>_<op>_<dtype>    e.g. fold4_sum_f32 (the collectives' reductions)
Every memref argument is rank 4 with dynamic strides (see elementwise.h)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import kernel_binary_gen  # noqa: E402
from kernel_binary_gen import (COMPLEX, DTYPES, FLOAT, INTEGRAL, NUMERIC,  # noqa: E402
                               entry_point, kernel, scalar, write_binary_sources)


INTEGERS = [d for d in INTEGRAL if d[3] != "bool"]
# The CPU computes the rarer special functions for these two only.
SINGLE_DOUBLE = [d for d in FLOAT if d[0] in ("f32", "f64")]

BINARY = [  # op, functor, dtypes, output is bool
    ("mul", "op::Mul{}", DTYPES + COMPLEX, False),
    ("div", "op::Div{}", FLOAT + COMPLEX, False),
    ("div_trunc", "op::DivTrunc{}", NUMERIC, False),
    ("div_floor", "op::DivFloor{}", NUMERIC, False),
    ("maximum", "op::Maximum{}", DTYPES, False),
    ("minimum", "op::Minimum{}", DTYPES, False),
    ("pow", "op::Pow{}", DTYPES, False),
    ("eq", "op::Eq{}", DTYPES + COMPLEX, True),
    ("ne", "op::Ne{}", DTYPES + COMPLEX, True),
    ("lt", "op::Lt{}", DTYPES, True),
    ("le", "op::Le{}", DTYPES, True),
    ("gt", "op::Gt{}", DTYPES, True),
    ("ge", "op::Ge{}", DTYPES, True),
    ("logical_and", "op::LogicalAnd{}", DTYPES, True),
    ("logical_or", "op::LogicalOr{}", DTYPES, True),
    ("logical_xor", "op::LogicalXor{}", DTYPES, True),
    ("bitwise_and", "op::BitwiseAnd{}", INTEGRAL, False),
    ("bitwise_or", "op::BitwiseOr{}", INTEGRAL, False),
    ("bitwise_xor", "op::BitwiseXor{}", INTEGRAL, False),
    ("remainder", "op::Remainder{}", NUMERIC, False),
    ("fmod", "op::Fmod{}", NUMERIC, False),
    ("fmax", "op::Fmax{}", DTYPES, False),
    ("fmin", "op::Fmin{}", DTYPES, False),
    ("atan2", "op::Atan2{}", FLOAT, False),
    ("logaddexp", "op::Logaddexp{}", FLOAT, False),
    ("xlogy", "op::Xlogy{}", FLOAT, False),
    ("tanh_backward", "op::TanhBackward{}", FLOAT, False),
    ("sigmoid_backward", "op::SigmoidBackward{}", FLOAT, False),
    ("gelu_erf_backward", "op::GeluErfBackward{}", FLOAT, False),
    ("gelu_tanh_backward", "op::GeluTanhBackward{}", FLOAT, False),
    ("mish_backward", "op::MishBackward{}", FLOAT, False),
    ("hardswish_backward", "op::HardswishBackward{}", FLOAT, False),
    ("hardsigmoid_backward", "op::HardsigmoidBackward{}", FLOAT, False),
    ("log_sigmoid_backward", "op::LogSigmoidBackward{}", FLOAT, False),
    ("glu", "op::Glu{}", FLOAT, False),  # (first half, second half)
    ("glu_backward_first", "op::GluBackwardFirst<{t}>{}", FLOAT, False),  # (b, grad)
    ("prelu", "op::Prelu{}", FLOAT, False),  # (x, weight)
    ("copysign", "op::Copysign{}", FLOAT, False),
    ("hypot", "op::Hypot{}", FLOAT, False),
    ("logaddexp2", "op::Logaddexp2{}", FLOAT, False),
    ("special_xlog1py", "op::Xlog1py{}", FLOAT, False),
    ("heaviside", "op::Heaviside{}", DTYPES, False),
    ("nextafter", "op::Nextafter<{t}>{}", FLOAT, False),
    ("gcd", "op::Gcd{}", INTEGERS, False),
    ("lcm", "op::Lcm{}", INTEGERS, False),
    ("special_zeta", "op::Zeta{}", SINGLE_DOUBLE, False),
    ("igamma", "op::IncompleteGamma<false>{}", FLOAT, False),
    ("igammac", "op::IncompleteGamma<true>{}", FLOAT, False),
    ("squared_error", "op::SquaredError{}", FLOAT, False),  # mse_loss
    ("binary_cross_entropy", "op::BinaryCrossEntropy{}", FLOAT, False),  # (x, target)
]
UNARY = [  # op, functor, dtypes, output is bool
    ("neg", "op::Neg{}", NUMERIC + COMPLEX, False),
    ("abs", "op::Abs{}", NUMERIC, False),
    ("sign", "op::Sign{}", DTYPES + COMPLEX, False),  # sgn (complex: z / |z|)
    ("conj", "op::Conj{}", COMPLEX, False),  # conj_physical
    ("relu", "op::Relu{}", NUMERIC, False),
    ("ceil", "op::Ceil{}", NUMERIC, False),
    ("floor", "op::Floor{}", NUMERIC, False),
    ("trunc", "op::Trunc{}", NUMERIC, False),
    ("round", "op::Round{}", NUMERIC, False),
    ("exp", "op::Exp{}", FLOAT + COMPLEX, False),
    ("log", "op::Log{}", FLOAT + COMPLEX, False),
    ("log2", "op::Log2{}", FLOAT, False),
    ("log10", "op::Log10{}", FLOAT, False),
    ("log1p", "op::Log1p{}", FLOAT, False),
    ("expm1", "op::Expm1{}", FLOAT, False),
    ("sqrt", "op::Sqrt{}", FLOAT + COMPLEX, False),
    ("rsqrt", "op::Rsqrt{}", FLOAT, False),
    ("sin", "op::Sin{}", FLOAT, False),
    ("cos", "op::Cos{}", FLOAT, False),
    ("tanh", "op::Tanh{}", FLOAT, False),
    ("sigmoid", "op::Sigmoid{}", FLOAT + COMPLEX, False),
    ("silu", "op::Silu{}", FLOAT, False),
    ("erf", "op::Erf{}", FLOAT, False),
    ("reciprocal", "op::Reciprocal{}", FLOAT + COMPLEX, False),
    ("gelu_erf", "op::GeluErf{}", FLOAT, False),
    ("gelu_tanh", "op::GeluTanh{}", FLOAT, False),
    ("logical_not", "op::LogicalNot{}", DTYPES, True),
    ("isnan", "op::IsNan{}", DTYPES, True),
    ("signbit", "op::Signbit{}", DTYPES, True),
    ("bitwise_not", "op::BitwiseNot{}", INTEGRAL, False),
    ("tan", "op::Tan{}", FLOAT, False),
    ("lgamma", "op::Lgamma{}", FLOAT, False),
    ("digamma", "op::Digamma{}", FLOAT, False),
    ("asin", "op::Asin{}", FLOAT, False),
    ("acos", "op::Acos{}", FLOAT, False),
    ("atan", "op::Atan{}", FLOAT, False),
    ("sinh", "op::Sinh{}", FLOAT, False),
    ("cosh", "op::Cosh{}", FLOAT, False),
    ("asinh", "op::Asinh{}", FLOAT, False),
    ("acosh", "op::Acosh{}", FLOAT, False),
    ("atanh", "op::Atanh{}", FLOAT, False),
    ("mish", "op::Mish{}", FLOAT, False),
    ("hardswish", "op::Hardswish{}", FLOAT, False),
    ("hardsigmoid", "op::Hardsigmoid{}", FLOAT, False),
    ("log_sigmoid", "op::LogSigmoid{}", FLOAT, False),
    ("erfc", "op::Erfc{}", FLOAT, False),
    ("erfinv", "op::Erfinv{}", FLOAT, False),
    ("exp2", "op::Exp2{}", FLOAT, False),
    ("frac", "op::Frac{}", FLOAT, False),
    ("sinc", "op::Sinc{}", FLOAT, False),
    ("special_entr", "op::Entr{}", FLOAT, False),
    ("i0", "op::BesselI<0, false>{}", FLOAT, False),
    ("special_i0e", "op::BesselI<0, true>{}", FLOAT, False),
    ("special_i1", "op::BesselI<1, false>{}", FLOAT, False),
    ("special_i1e", "op::BesselI<1, true>{}", FLOAT, False),
    ("special_bessel_j0", "op::BesselJY<op::BesselKind::J0>{}", SINGLE_DOUBLE, False),
    ("special_bessel_j1", "op::BesselJY<op::BesselKind::J1>{}", SINGLE_DOUBLE, False),
    ("special_bessel_y0", "op::BesselJY<op::BesselKind::Y0>{}", SINGLE_DOUBLE, False),
    ("special_bessel_y1", "op::BesselJY<op::BesselKind::Y1>{}", SINGLE_DOUBLE, False),
    ("special_modified_bessel_k0", "op::BesselK<0, false>{}", SINGLE_DOUBLE, False),
    ("special_modified_bessel_k1", "op::BesselK<1, false>{}", SINGLE_DOUBLE, False),
    ("special_scaled_modified_bessel_k0", "op::BesselK<0, true>{}", SINGLE_DOUBLE, False),
    ("special_scaled_modified_bessel_k1", "op::BesselK<1, true>{}", SINGLE_DOUBLE, False),
    ("special_spherical_bessel_j0", "op::SphericalBesselJ0{}", SINGLE_DOUBLE, False),
    ("special_airy_ai", "op::AiryAi{}", SINGLE_DOUBLE, False),
    ("special_erfcx", "op::Erfcx{}", SINGLE_DOUBLE, False),
    ("special_log_ndtr", "op::LogNdtr{}", SINGLE_DOUBLE, False),
    ("special_ndtri", "op::Ndtri{}", SINGLE_DOUBLE, False),
]
# Unary kernels whose result is the real dtype of a complex input (float
# for complex64) and the input's dtype otherwise: op, functor, dtypes.
TO_REAL = [
    ("abs", "op::Abs{}", COMPLEX),  # real dtypes: abs in UNARY
    ("angle", "op::Angle{}", FLOAT + COMPLEX),
]
REAL_PART = {"c64": ("float", "f32"), "c128": ("double", "f64")}
TERNARY = [  # op, functor, dtypes
    ("lerp", "op::Lerp{}", FLOAT),  # lerp.Tensor
    ("glu_backward_second", "op::GluBackwardSecond<{t}>{}", FLOAT),  # (a, b, grad)
    ("binary_cross_entropy_backward", "op::BinaryCrossEntropyBackward{}", FLOAT),  # (x, t, g)
]
# Two outputs from three inputs: op, functor (returns a pair), dtypes.
TWO_OUTPUTS = [
    ("prelu_backward", "op::PreluBackward{}", FLOAT),  # (grad_x, grad_w) of (x, w, grad)
]
# Kernels with scalar parameters: op, functor template (instantiated with the
# compute type C), number of tensor inputs, the scalars' names (the functor's
# members in order), dtypes. The scalars follow the memrefs, as f64 for
# floating dtypes and i64 for the others, converted to C as PyTorch does.
WITH_SCALARS = [
    ("add", "op::Add", 2, ["alpha"], DTYPES),  # bool: a || (alpha && b), as PyTorch
    ("add", "op::AddComplex", 2, ["alpha_real", "alpha_imag"], COMPLEX),
    ("threshold_backward", "op::ThresholdBackward", 2, ["threshold"], NUMERIC),
    ("clamp", "op::Clamp", 1, ["lo", "hi"], NUMERIC),
    ("leaky_relu", "op::LeakyRelu", 1, ["negval"], FLOAT),
    ("leaky_relu_backward", "op::LeakyReluBackward", 2, ["negval"], FLOAT),
    ("elu", "op::Elu", 1, ["alpha", "scale", "input_scale"], FLOAT),
    ("elu_backward", "op::EluBackward", 2, ["alpha", "scale", "input_scale"], FLOAT),
    ("elu_backward_result", "op::EluBackwardResult", 2, ["alpha", "scale", "input_scale"],
     FLOAT),
    ("hardtanh_backward", "op::HardtanhBackward", 2, ["lo", "hi"], FLOAT),
    ("softplus", "op::Softplus", 1, ["beta", "threshold"], FLOAT),
    ("softplus_backward", "op::SoftplusBackward", 2, ["beta", "threshold"], FLOAT),
    ("addcmul", "op::Addcmul", 3, ["value"], NUMERIC),
    ("addcdiv", "op::Addcdiv", 3, ["value"], FLOAT),
    ("lerp_scalar", "op::LerpScalar", 2, ["weight"], FLOAT),
    ("logit", "op::Logit", 1, ["lo", "hi"], FLOAT),  # lo < 0: no eps
    ("polygamma", "op::Polygamma", 1, ["n"], FLOAT),  # n >= 1 (0 is digamma)
    ("logit_backward", "op::LogitBackward", 2, ["lo", "hi"], FLOAT),  # (grad, self)
    ("round_decimals", "op::RoundDecimals", 1, ["ten_pow", "negative"], FLOAT),
    ("nan_to_num", "op::NanToNum", 1, ["nan", "posinf", "neginf"], FLOAT),
    ("hardshrink", "op::Hardshrink", 1, ["lambd"], FLOAT),
    ("softshrink", "op::Softshrink", 1, ["lambd"], FLOAT),
    ("shrink_backward", "op::ShrinkBackward", 2, ["lambd"], FLOAT),  # (grad, self)
    ("threshold", "op::Threshold", 1, ["threshold", "value"], NUMERIC),
    # Pointwise losses: forward (self, target), backward (self, target, grad).
    ("smooth_l1", "op::SmoothL1", 2, ["beta"], FLOAT),
    ("huber", "op::Huber", 2, ["delta"], FLOAT),
    ("mse_backward", "op::MseBackward", 3, ["norm"], FLOAT),
    ("smooth_l1_backward", "op::SmoothL1Backward", 3, ["norm", "beta"], FLOAT),
    ("huber_backward", "op::HuberBackward", 3, ["norm", "delta"], FLOAT),
]
# The reductions of the collectives (runtime/torch/distributed): fold<N>_<op>
# reduces N same-shape tensors in one pass, in their order. Only the dtypes
# reductions travel in (MaiaBackend.cpp's wireDtype: float16/bfloat16 reduce
# in float32, bool as uint8, int16 as int32): op, functor, dtypes.
WIRE = [d for d in DTYPES if d[0] in ("f32", "f64", "i64", "i32", "i8", "u8")]
FOLDS = [
    ("sum", "op::Plus{}", WIRE),
    ("prod", "op::Mul{}", WIRE),
    ("min", "op::Minimum{}", WIRE),
    ("max", "op::Maximum{}", WIRE),
    ("band", "op::BitwiseAnd{}", [d for d in WIRE if d[3] == "int"]),
    ("bor", "op::BitwiseOr{}", [d for d in WIRE if d[3] == "int"]),
    ("bxor", "op::BitwiseXor{}", [d for d in WIRE if d[3] == "int"]),
]
FOLD_ARITIES = (3, 4)
# The elementwise loop (elementwise.h) of each number of tensor inputs, for storage type t.
LOOPS = {1: lambda t: f"unary<{t}, {t}>", 2: lambda t: f"binary<{t}, {t}, {t}>",
         3: lambda t: f"ternary<{t}>"}

HEADER = """// Generated by gen_eager_kernels.py: do not edit.
#include "bessel_ops.h"
#include "elementwise.h"
#include "gamma_ops.h"
#include "loss_ops.h"
#include "math_ops.h"
#include "normal_ops.h"
#include "ops.h"

using namespace maia_eager;
"""


def instantiate(functor, t):
    """The functor for storage type t: "{t}" in its template arguments names
    it (functors that round through the storage type)."""
    return functor.replace("{t}", t)


def memref(meta):
    return kernel_binary_gen.memref(meta, 4)


def main(out_dir, isa):
    kernels = []
    cast, binary, unary, fold = [HEADER], [HEADER], [HEADER], [HEADER]

    def add(name, args, source, code):
        kernels.append(kernel(name, args))
        source.append(entry_point(name, code))

    for src, src_t, src_m, _ in DTYPES:
        for dst, dst_t, dst_m, _ in DTYPES:
            add(f"cast_{src}_{dst}", [memref(dst_m), memref(src_m)], cast,
                f"unary<{dst_t}, {src_t}>(args, grid, op::Identity{{}});")
    for op, functor, arity, names, dtypes in WITH_SCALARS:
        for name, t, meta, kind in dtypes:  # scalars in the compute type
            real = kind in ("float", "complex")  # complex kernels take real scalars
            scalar_meta, scalar_t = ("f64", "double") if real else ("i64", "int64_t")
            code = [f"using C = compute_t<{t}>;"]
            code += [f"C {n} = static_cast<C>(maia_kernel::scalar<{scalar_t}>(args, {index}));"
                     for index, n in enumerate(names, start=arity + 1)]
            code.append(f"{LOOPS[arity](t)}(args, grid, {functor}<C>{{{', '.join(names)}}});")
            add(f"{op}_{name}", [memref(meta)] * (arity + 1) + [scalar(scalar_meta)] * len(names),
                unary if arity == 1 else binary, "\n  ".join(code))
    for op, functor, dtypes, to_bool in BINARY:
        for name, t, meta, _ in dtypes:
            if op == "div_trunc" and t in ("Half", "BFloat16"):
                functor = f"op::DivTruncRounded<{t}>{{}}"
            elif op == "div_trunc":
                functor = "op::DivTrunc{}"
            out_t, out_m = ("bool", "i1") if to_bool else (t, meta)
            add(f"{op}_{name}", [memref(out_m), memref(meta), memref(meta)], binary,
                f"binary<{out_t}, {t}, {t}>(args, grid, {instantiate(functor, t)});")
    for op, functor, dtypes, to_bool in UNARY:
        for name, t, meta, _ in dtypes:
            out_t, out_m = ("bool", "i1") if to_bool else (t, meta)
            add(f"{op}_{name}", [memref(out_m), memref(meta)], unary,
                f"unary<{out_t}, {t}>(args, grid, {functor});")
    for op, functor, dtypes in TO_REAL:
        for name, t, meta, _ in dtypes:
            out_t, out_m = REAL_PART.get(name, (t, meta))
            add(f"{op}_{name}", [memref(out_m), memref(meta)], unary,
                f"unary<{out_t}, {t}>(args, grid, {functor});")
    for op, functor, dtypes in TERNARY:
        for name, t, meta, _ in dtypes:
            add(f"{op}_{name}", [memref(meta)] * 4, binary,
                f"{LOOPS[3](t)}(args, grid, {instantiate(functor, t)});")
    for op, functor, dtypes in TWO_OUTPUTS:
        for name, t, meta, _ in dtypes:
            add(f"{op}_{name}", [memref(meta)] * 5, binary,
                f"ternaryTwoOutputs<{t}>(args, grid, {functor});")
    for name, t, meta, _ in DTYPES + COMPLEX:
        add(f"where_{name}", [memref(meta), memref("i1"), memref(meta), memref(meta)], unary,
            f"ternarySelect<{t}>(args, grid, [](bool c, {t} a, {t} b) {{ return c ? a : b; }});")

    for arity in FOLD_ARITIES:
        for op, functor, dtypes in FOLDS:
            for name, t, meta, _ in dtypes:
                add(f"fold{arity}_{op}_{name}", [memref(meta)] * (arity + 1), fold,
                    f"fold<{t}, {arity}>(args, grid, {functor});")

    write_binary_sources(out_dir, isa, "gen_eager_kernels.py", kernels, {
        "fold.gen.cpp": "".join(fold),
        "cast.gen.cpp": "".join(cast),
        "binary.gen.cpp": "".join(binary),
        "unary.gen.cpp": "".join(unary),
    })

if __name__ == "__main__":
    main(*sys.argv[1:])
