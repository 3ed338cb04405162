#!/usr/bin/env python3
"""The polynomials of the float32 erf (kErfF32Small, kErfcF32 in
compiler/include/maia/Transforms/MathCoefficients.h), fitted and checked.

erf(a), a = |x|, in float32 arithmetic:
  a < 1:       a + a q(a^2), q(z) fitted to erf(sqrt z)/sqrt z - 1 (degree 6)
  1 <= a <= 4: 1 - e(a - 2.5), e fitted to erfc (degree 14); erfc <= 0.16
               there, so Horner's roundings are those of small values
  a > 4:       1
Fit: least squares at 4000 Chebyshev nodes against math.erf/math.erfc
(float64; the reference of the check is torch.erf in float64), then each coefficient, highest degree first, rounded to float32
and the lower ones fitted again, so the float32 polynomial is the fitted
one. Check: the algorithm emulated in numpy (float32 roundings, fma as a
float64 product-sum rounded once: exact but for rare double roundings) on
every float32 in [0, 4.5] (--stride to sample), largest distance in ulp from
the correctly rounded result. ~3 minutes for all of them. The kernels are
checked on every input by tools/conformance/math_ulp_sweep.py --functions erf.

Usage: fit_float32_erf.py [--stride 1]
"""

import argparse
import math

import numpy as np
import torch
from math_ulp_sweep import ulp_distance

F32 = np.float32
SMALL_DEGREE, LARGE_DEGREE, THRESHOLD, CENTER, LIMIT = 6, 14, 1.0, 2.5, 4.0

erf64 = np.vectorize(math.erf, otypes=[np.float64])
erfc64 = np.vectorize(math.erfc, otypes=[np.float64])


def q_exact(z: np.ndarray) -> np.ndarray:
    a = np.sqrt(z)
    safe = np.where(a > 0, a, 1.0)
    return np.where(a > 0, erf64(safe) / safe - 1, 2 / math.sqrt(math.pi) - 1)


def fit(function, lo: float, hi: float, degree: int, center: float = 0.0) -> list[float]:
    """Coefficients, highest degree first, each a float32 value."""
    nodes = 4000
    k = np.arange(nodes)
    x = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    t = x - center
    basis = np.vander(t, degree + 1)
    rest = function(x)
    fixed = []
    for power in range(degree, -1, -1):
        solution, *_ = np.linalg.lstsq(basis, rest, rcond=None)
        coefficient = float(F32(solution[0]))
        fixed.append(coefficient)
        rest = rest - coefficient * t**power
        basis = basis[:, 1:]
    return fixed


def fma32(a, b, c):
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(F32)


def horner32(x, coefficients):
    acc = np.full(x.shape, F32(coefficients[0]), dtype=F32)
    for coefficient in coefficients[1:]:
        acc = fma32(acc, x, np.full(x.shape, F32(coefficient)))
    return acc


def erf32(x, small, large):
    a = np.abs(x)
    near_zero = fma32(a, horner32(a * a, small), a)
    t = np.clip(a, F32(THRESHOLD), F32(LIMIT)) - F32(CENTER)
    near_one = F32(1) - horner32(t, large)
    r = np.where(a < F32(THRESHOLD), near_zero, near_one)
    return np.where(a > F32(LIMIT), F32(1), r)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stride", type=int, default=1, help="check every n-th float32")
    args = parser.parse_args()
    small = fit(q_exact, 0.0, THRESHOLD**2, SMALL_DEGREE)
    large = fit(erfc64, THRESHOLD, LIMIT, LARGE_DEGREE, CENTER)
    print("kErfF32Small =", ", ".join(repr(c) for c in small))
    print("kErfcF32 =", ", ".join(repr(c) for c in large))
    first = int(np.float32(1e-45).view(np.int32))
    last = int(np.float32(4.5).view(np.int32))
    worst, worst_x = 0, 0.0
    chunk = 1 << 24
    for start in range(first, last, chunk):
        bits = np.arange(start, min(start + chunk, last), args.stride, dtype=np.int64)
        x = bits.astype(np.int32).view(F32)
        reference = torch.erf(torch.from_numpy(x.astype(np.float64))).float()
        distance = ulp_distance(torch.from_numpy(erf32(x, small, large)), reference).numpy()
        if distance.max() > worst:
            worst, worst_x = int(distance.max()), float(x[distance.argmax()])
    print(f"largest distance from the correctly rounded erf on [0, 4.5]: {worst} ulp "
          f"(at {worst_x!r})")


if __name__ == "__main__":
    main()
