"""Eager exp, tanh and erf, and the activations built on them (sigmoid,
silu, glu, GELU and their backwards) compute float32 in arithmetic the host
compiler vectorizes (runtime/kernels/eager/exponential.h, error_function.h,
wide_math.h), not one libm call per element: exp, tanh and erf must stay
within 1 ulp of the correctly rounded result over float32's whole range (a
sweep of bit patterns, every binade and both signs;
tools/conformance/math_ulp_sweep.py checks all 2^32), exp within 1 ulp of the CPU's too, with inf, 0,
subnormal results and NaN as on the CPU."""

import pathlib
import sys

import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "conformance"))
from math_ulp_sweep import ulp_distance  # noqa: E402


def bit_pattern_sweep(step: int = 97) -> torch.Tensor:
    """Every step-th float32 bit pattern (step odd: every residue of the low
    mantissa bits is hit), plus the edges of exp's range."""
    patterns = torch.arange(0, 2**32, step, dtype=torch.int64).to(torch.int32)
    edges = torch.tensor([88.72283172607421875, 88.7228393554687500, -87.33654022216796875,
                          -103.972076416015625, -103.97208404541015625, -104.0, 89.0, 0.0,
                          -0.0, 1e-30, -1e-30, float("inf"), float("-inf"), float("nan")])
    return torch.cat([patterns.view(torch.float32), edges])


@pytest.mark.parametrize("name", ["exp", "tanh", "erf"])
def test_within_1_ulp_of_the_exact_result(name):
    fn = getattr(torch, name)
    x = bit_pattern_sweep()
    actual = fn(x.to("maia")).cpu()
    exact = fn(x.double()).float()
    assert torch.equal(torch.isnan(actual), torch.isnan(exact))
    from_exact = ulp_distance(actual, exact)
    worst = int(from_exact.argmax())
    assert int(from_exact.max()) <= 1, f"{name}({x[worst].item()!r}) = {actual[worst].item()!r}"
    if name == "exp":
        assert int(ulp_distance(actual, torch.exp(x)).max()) <= 1


@pytest.mark.parametrize("name", ["exp", "tanh", "erf"])
def test_eager_equals_compiled(name):
    # One algorithm, two implementations (C++ in the eager kernels, MLIR in
    # the compiler): the same bits.
    fn = getattr(torch, name)
    x = bit_pattern_sweep(step=7919).to("maia")
    torch._dynamo.reset()
    torch.testing.assert_close(fn(x).cpu(), torch.compile(fn)(x).cpu(), rtol=0, atol=0,
                               equal_nan=True)


def test_exp_saturates_and_reaches_the_subnormals_as_the_cpu():
    x = torch.tensor([88.72283172607421875, 88.7228393554687500, 100.0, -87.5, -100.0, -103.9,
                      -103.98, -200.0, float("inf"), float("-inf"), float("nan"), -0.0])
    torch.testing.assert_close(torch.exp(x.to("maia")).cpu(), torch.exp(x), rtol=0, atol=0,
                               equal_nan=True)


@pytest.mark.parametrize("fn", [
    torch.sigmoid, F.silu, lambda t: F.glu(t.view(-1, 2), -1), F.gelu,
    lambda t: F.gelu(t, approximate="tanh"),
    lambda t: torch.ops.aten.gelu_backward(torch.ones_like(t), t),
    lambda t: torch.ops.aten.gelu_backward(torch.ones_like(t), t, approximate="tanh"),
    lambda t: torch.ops.aten.tanh_backward(torch.ones_like(t), torch.tanh(t))],
    ids=["sigmoid", "silu", "glu", "gelu", "gelu_tanh", "gelu_backward", "gelu_tanh_backward",
         "tanh_backward"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_activations_match_the_cpu(fn, dtype):
    x = (torch.linspace(-120, 120, 200_002) ** 3 / 14400).to(dtype)
    torch.testing.assert_close(fn(x.to("maia")).cpu(), fn(x), equal_nan=True)


def test_the_avx2_binary_gives_the_same_bits(tmp_path):
    # Hosts without AVX-512 load maia_eager_kernels_v3.maiabin: a kernel
    # directory without the v4 binary makes this host do the same.
    import os
    import subprocess
    import sys

    kernels = tmp_path / "kernels"
    kernels.mkdir()
    source = os.environ["MAIA_KERNEL_DIR"]
    for name in os.listdir(source):
        if name != "maia_eager_kernels_v4.maiabin":
            (kernels / name).symlink_to(os.path.join(source, name))
    script = (
        "import sys, torch\n"
        "import torch.nn.functional as F\n"
        "x = torch.load(sys.argv[1]).to('maia')\n"
        "out = [f(x).cpu() for f in (torch.exp, torch.tanh, torch.erf, F.gelu, F.silu,\n"
        "                            lambda t: t * 3 + 1, lambda t: t.to(torch.bfloat16))]\n"
        "torch.save(out, sys.argv[2])\n")
    x = bit_pattern_sweep(step=4099)
    torch.save(x, tmp_path / "x.pt")
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "x.pt"),
                             str(tmp_path / "out.pt")],
                            env={**os.environ, "MAIA_KERNEL_DIR": str(kernels)},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    avx2 = torch.load(tmp_path / "out.pt")
    xm = x.to("maia")
    here = [f(xm).cpu() for f in (torch.exp, torch.tanh, torch.erf, F.gelu, F.silu,
                                  lambda t: t * 3 + 1, lambda t: t.to(torch.bfloat16))]
    for a, b in zip(avx2, here):
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)
