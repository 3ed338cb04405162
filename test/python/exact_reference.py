"""Values of special functions to (much) more than double precision, from
mpmath (a dependency of torch, through sympy): the judge where maia and the
CPU disagree beyond float64 tolerances. ATen's float64 Bessel J/Y and Airy
functions are only accurate to ~1e-6 near their range boundaries (|x| ~ 5,
x ~ -2.09); maia computes them to ~1e-15, so the CPU cannot be the
reference there."""

import math

import mpmath
import torch

_DIGITS = 40


def _real(value):
    return float(mpmath.re(value))


def _positive_only(fn):
    """Y and K are NaN below 0 on the CPU (complex in mpmath)."""
    return lambda x: fn(x) if x > 0 else math.nan


# op_db names (OpInfo.name) -> (mpmath function of the float64 arguments,
# number of tensor arguments). Only finite arguments are evaluated; the
# special values are the CPU's conventions, compared with the CPU exactly.
FUNCTIONS = {
    "special.bessel_j0": (lambda x: mpmath.besselj(0, x), 1),
    "special.bessel_j1": (lambda x: mpmath.besselj(1, x), 1),
    "special.bessel_y0": (_positive_only(lambda x: mpmath.bessely(0, x)), 1),
    "special.bessel_y1": (_positive_only(lambda x: mpmath.bessely(1, x)), 1),
    "special.modified_bessel_k0": (_positive_only(lambda x: mpmath.besselk(0, x)), 1),
    "special.modified_bessel_k1": (_positive_only(lambda x: mpmath.besselk(1, x)), 1),
    "special.scaled_modified_bessel_k0":
        (_positive_only(lambda x: mpmath.besselk(0, x) * mpmath.exp(x)), 1),
    "special.scaled_modified_bessel_k1":
        (_positive_only(lambda x: mpmath.besselk(1, x) * mpmath.exp(x)), 1),
    "special.spherical_bessel_j0": (lambda x: mpmath.sin(x) / x if x != 0 else 1, 1),
    "special.airy_ai": (mpmath.airyai, 1),
    "special.erfcx": (lambda x: mpmath.exp(mpmath.mpf(x) ** 2) * mpmath.erfc(x), 1),
    "special.log_ndtr": (lambda x: mpmath.log(mpmath.ncdf(x)), 1),
    "special.ndtri":
        (lambda p: mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(p) - 1) if 0 < p < 1
         else math.nan, 1),
    "igamma": (lambda a, x: mpmath.gammainc(a, 0, x, regularized=True), 2),
    "igammac": (lambda a, x: mpmath.gammainc(a, x, mpmath.inf, regularized=True), 2),
}


def exact(name, *args):
    """The function's values at the float64 tensors args (broadcast), as a
    float64 tensor; NaN where an argument is not finite or outside the
    real domain."""
    function, arity = FUNCTIONS[name]
    assert len(args) == arity
    grids = torch.broadcast_tensors(*[a.double() for a in args])
    values = []
    for point in zip(*[g.flatten().tolist() for g in grids]):
        if not all(math.isfinite(v) for v in point):
            values.append(math.nan)
            continue
        digits = _DIGITS
        if name == "special.ndtri" and 0 < point[0] < 1:  # 2p - 1 must keep p's digits
            digits += int(-math.log10(min(point[0], 1 - point[0])))
        try:
            with mpmath.workdps(digits):
                values.append(_real(function(*point)))
        except (ValueError, ZeroDivisionError):
            values.append(math.nan)
    return torch.tensor(values, dtype=torch.float64).reshape(grids[0].shape)
