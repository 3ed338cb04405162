"""Runs a program compiled on maia and eagerly on CPU, and compares.

Outcome.status: "pass", "mismatch" (wrong values, shapes or dtypes),
"error" (compiling or running on maia raised), "invalid" (eager CPU raised:
not a program the fuzzer should produce), "upstream" (a mismatch or error
that Inductor CPU reproduces on maia's path through Inductor: the same
error, or the same wrong values).

float16/bfloat16 leniency: eager CPU rounds every intermediate to the
storage type, a fused kernel computes its chain in float32 and rounds at
the graph's conversions only. So a low-precision output also passes when
it is close to the same program run on inputs upcast to float32 (the
result cast back): a kernel that is right up to where it rounds passes
one of the two, a wrong kernel neither. Any float result failing these
still passes by PyTorch's own accuracy rule: its RMS error against the
program run in float64 is at most 3x eager's (_no_less_accurate).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import importlib.util
import pathlib
import re
import warnings

import torch

_SUPPORT = pathlib.Path(__file__).resolve().parents[2] / "test" / "inductor" / "compile_support.py"


def _tolerances():
    """The test suite's per-dtype tolerances (one source of truth)."""
    spec = importlib.util.spec_from_file_location("maia_compile_support", _SUPPORT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TOLERANCES


TOLERANCES = _tolerances()
LOW_PRECISION = (torch.float16, torch.bfloat16)


@dataclasses.dataclass
class Outcome:
    status: str
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "pass"

    def signature(self, whole: bool = False) -> str:
        """What groups failures of one cause: the status and the first line
        (whole: every line) of the message without numbers and names of
        values."""
        text = self.message if whole else (self.message.splitlines() or [""])[0]
        text = re.sub(r"\b(v|a|s|ks|tmp|buf)\d+\b", "#", text)
        text = re.sub(r"\b\d+(\.\d+)?(e[+-]?\d+)?\b", "N", text)
        return f"{self.status}: {text if whole else text[:160]}"


def run(program) -> Outcome:
    outcome, results = _run_compiled(program, "maia")
    if outcome.status in ("error", "mismatch") and not program.eager and \
            _inductor_cpu_fails_alike(program, outcome, results):
        return Outcome("upstream", "Inductor CPU fails alike (aten convolutions, no layout "
                       f"optimization: maia's path through Inductor): {outcome.message}")
    return outcome


def _run_compiled(program, device: str):
    """(outcome, the compiled results of the last call made) of the program
    compiled for device against eager CPU."""
    torch._dynamo.reset()
    try:
        module = program.load()
    except Exception as e:  # the generator printed bad source
        return Outcome("invalid", f"{type(e).__name__}: {e}"), None
    compiled = module.fn if program.eager else torch.compile(module.fn,
                                                             dynamic=program.compile_dynamic)
    actual = None
    for call, sizes in enumerate(program.size_sets()):
        try:
            args = module.make_inputs(**sizes)
            with warnings.catch_warnings():  # var of one element is NaN, and says so
                warnings.simplefilter("ignore")
                expected = module.run_fn(module.fn, args)
        except Exception as e:
            return Outcome("invalid", f"eager CPU: {type(e).__name__}: {e}"), None
        try:
            actual = module.run_fn(compiled, [a.to(device) for a in args])
            actual = [t.cpu() for t in actual]
        except Exception as e:
            _reset_after_sticky_error(str(e))
            return Outcome("error", f"{type(e).__name__}: {_first_lines(str(e))}"), None
        names = program.result_names()
        for i, (got, want) in enumerate(zip(actual, expected)):
            problem = _compare(got, want, _loosest(program, want.dtype),
                               lambda dtype: _upcast_result(module, args, i, dtype))
            if problem:
                return Outcome("mismatch", f"call {call} ({sizes}), {names[i]}: {problem}"), actual
    return Outcome("pass"), actual


def _inductor_cpu_fails_alike(program, outcome: Outcome, results) -> bool:
    """Whether Inductor CPU, on the path maia's graphs take through it (aten
    convolutions instead of oneDNN's, no layout optimization), raises the
    same error or computes the same wrong results: a bug of PyTorch's
    compiler, not of maia's."""
    from torch._inductor import config as inductor_config

    with torch.backends.mkldnn.flags(enabled=False), \
            inductor_config.patch(layout_optimization=False):
        cpu_outcome, cpu_results = _run_compiled(program, "cpu")
    if cpu_outcome.status != outcome.status:
        return False
    if outcome.status == "error":
        return cpu_outcome.signature(whole=True) == outcome.signature(whole=True)
    same_call = cpu_outcome.message.split(")")[0] == outcome.message.split(")")[0]
    return same_call and all(_compare(got, want, _loosest(program, want.dtype), None) is None
               for got, want in zip(results, cpu_results))


def _reset_after_sticky_error(message: str) -> None:
    """A kernel fault (an out-of-range index traps, as a device-side assert
    on CUDA) leaves its device failing every later call until
    maiaDeviceReset: reset it, so the programs after this one are tested."""
    if "sticky until maiaDeviceReset" not in message and "is in an error state" not in message:
        return
    driver = ctypes.CDLL("libmaia_runtime.so")  # loaded by torch_maia already
    for device in range(torch.maia.device_count()):
        driver.maiaDeviceReset(device)


def _loosest(program, dtype):
    """The tolerance of the least precise float a value may have passed
    through: an output of float32 computed from bfloat16 inputs (or casts)
    carries their rounding."""
    dtypes = {dtype} | {i.dtype for i in program.inputs}
    # casts: a float64 gradient flowing back through .to(torch.float32) has
    # float32's precision (seed 25848 of --eager --nn --grad)
    dtypes |= {d for d in LOW_PRECISION + (torch.float32,)
               if any(str(d) in op.expr for op in program.ops)}
    if dtype not in TOLERANCES:  # integers and bools compare exactly
        return 0, 0
    return max(TOLERANCES.get(d, (0, 0)) for d in dtypes)


def _compare(got, want, tolerance, upcast):
    """None if got (compiled) matches want (eager CPU), else the problem.
    upcast(dtype): this result of the program run on its float inputs
    converted to dtype (None: no leniency)."""
    atol, rtol = tolerance
    try:
        torch.testing.assert_close(got, want, atol=atol, rtol=rtol, equal_nan=True)
        return None
    except AssertionError as e:
        problem = _first_lines(str(e), 6)
    if upcast is None or got.shape != want.shape or got.dtype != want.dtype or \
            not got.dtype.is_floating_point:
        return problem
    if tolerance != TOLERANCES[torch.float32]:
        try:
            torch.testing.assert_close(got, upcast(torch.float32).to(want.dtype), atol=atol,
                                       rtol=rtol, equal_nan=True)
            return None
        except Exception:  # not close, or the program refuses upcast inputs (mixed dtypes)
            pass
    try:
        if _no_less_accurate(got, want, upcast(torch.float64), atol):
            return None
    except Exception:
        pass
    return problem


def _no_less_accurate(got, want, exact, atol) -> bool:
    """PyTorch's own accuracy rule (torch._dynamo.utils.same with a float64
    reference): the result's RMS error against the float64 run at most 3x
    eager CPU's, plus atol / 10. For what an elementwise tolerance cannot
    bound: a backward graph rounds its saved activations and incoming
    gradients to a low-precision type at other points than eager does, and
    a normalization of (nearly) constant values multiplies rounding noise
    by 1/sqrt(eps) (batch_norm over 2049 equal values: 0.02 apart in
    float32, each as far from the float64 result)."""
    exact = exact.double()
    finite = exact.isfinite()
    if not (torch.equal(got.isfinite(), finite) and torch.equal(want.isfinite(), finite)):
        return False

    def rmse(x):
        return torch.sqrt(torch.mean((x.double()[finite] - exact[finite]) ** 2)).item()

    return rmse(got) <= 3 * rmse(want) + atol / 10


def _upcast_result(module, args, i, dtype):
    """Result i of the program run on its float inputs converted to dtype
    (float32: only the low-precision ones). In float64, a cast the program
    makes to another float type rounds to it and comes back (_CastsRound):
    the reference is exact but where the program asks for rounding, and
    programs that cast (x.to(torch.bfloat16) feeding a float64 weight's
    convolution) do not fail on mixed dtypes."""
    upcast = [a.to(dtype) if a.dtype in LOW_PRECISION or (
        dtype == torch.float64 and a.dtype.is_floating_point) else a for a in args]
    with _CastsRound(dtype) if dtype == torch.float64 else contextlib.nullcontext():
        return module.run_fn(module.fn, upcast)[i]


class _CastsRound(torch.overrides.TorchFunctionMode):
    """Float results of Tensor.to (and .half(), .bfloat16(), .float()) are
    returned in `dtype`, after rounding to the type asked for."""

    _CASTS = {torch.Tensor.to, torch.Tensor.half, torch.Tensor.bfloat16, torch.Tensor.float}

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if func in self._CASTS and isinstance(result, torch.Tensor) and \
                result.dtype.is_floating_point and result.dtype != self.dtype:
            return result.to(self.dtype)
        return result


def _first_lines(text: str, n: int = 3) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[:n])
