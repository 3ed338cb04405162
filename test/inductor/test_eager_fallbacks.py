"""Operators without an MLIR lowering run as eager maia operators inside the
compiled graph (maia_inductor/eager_fallbacks.py): right results, a warning
naming the operator, and the rest of the graph still compiled."""

import os
import subprocess
import sys
import warnings

import pytest
import torch
from compile_support import assert_compiled_matches

from maia_inductor import eager_fallbacks
from maia_inductor.runtime import MaiaCompiledKernel

POSITIVE = torch.rand(300) * 5 + 0.1
UNIT = torch.rand(300) * 1.8 - 0.9

# (name, function with a compiled pointwise tail, input)
CASES = [
    ("lgamma", lambda a: torch.lgamma(a) * 2 + 1, POSITIVE),
    ("digamma", lambda a: torch.digamma(a).exp(), POSITIVE),
    ("erfinv", lambda a: torch.erfinv(a) - a, UNIT),
    ("special_zeta", lambda a: torch.special.zeta(a + 1, 2.0) * a, POSITIVE),
    ("polygamma", lambda a: torch.polygamma(2, a) + 1, POSITIVE),
    ("frexp", lambda a: torch.frexp(a * 3)[0] + torch.frexp(a)[1], POSITIVE),
    ("special_bessel_j0", lambda a: torch.special.bessel_j0(a).sin(), POSITIVE),
    ("special_i1e", lambda a: torch.special.i1e(a) * a, POSITIVE),
    ("nextafter", lambda a: torch.nextafter(a, a + 1) - a, POSITIVE),
    ("hypot", lambda a: torch.hypot(a, a * 2) + 1, POSITIVE),
    ("igamma", lambda a: torch.igamma(a, a * 0.5) * 3, POSITIVE),
    ("special_ndtri", lambda a: torch.special.ndtri(a.abs() * 0.5 + 0.01) + 1, UNIT),
    ("mvlgamma", lambda a: torch.mvlgamma(a + 2, 3) + 1, POSITIVE),  # decomposes to lgamma
]


@pytest.mark.parametrize("name,fn,x", CASES, ids=[c[0] for c in CASES])
def test_unlowered_op_runs_eagerly_inside_the_compiled_graph(name, fn, x):
    torch._dynamo.reset()
    eager_fallbacks._warned.clear()
    launches = MaiaCompiledKernel.launches
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_compiled_matches(fn, x, atol=1e-5, rtol=1e-5)
    assert MaiaCompiledKernel.launches > launches  # the tail is a MAIA kernel
    messages = [str(w.message) for w in caught if str(w.message).startswith("maia:")]
    expected = "lgamma" if name == "mvlgamma" else name
    assert any(f"aten.{expected}" in m and "no MLIR lowering" in m for m in messages), messages


def test_gradients_flow_through_an_eager_operator():
    x = POSITIVE.clone().requires_grad_()
    xm = POSITIVE.to("maia").requires_grad_()
    torch.compile(lambda a: (torch.lgamma(a) * a).sum())(xm).backward()
    (torch.lgamma(x) * x).sum().backward()
    torch.testing.assert_close(xm.grad.cpu(), x.grad, rtol=1e-5, atol=1e-5)


def test_every_unlowered_op_has_eager_twins():
    # A new OpsHandler op without a lowering must come with its twin, or
    # graphs using it fail to compile again.
    from maia_inductor.overrides import MaiaOverrides

    unimplemented = {n for n in dir(MaiaOverrides)
                     if getattr(getattr(MaiaOverrides, n, None), "is_unimplemented", False)}
    not_aten = {"rand_eager"}  # Inductor's own helper op, never lowered from an aten op
    assert unimplemented - not_aten == set(eager_fallbacks.UNLOWERED_OPS)
    twins = eager_fallbacks.twins()
    covered = {op._schema.name.split("::")[1].removeprefix("special_") for op in twins}
    assert covered == set(eager_fallbacks.UNLOWERED_OPS)  # each has an aten operator
    for aten_op, twin in twins.items():
        assert str(twin._schema).split("::")[1] == str(aten_op._schema).split("::")[1]


def test_a_cached_graph_finds_the_eager_operators_in_a_fresh_process(tmp_path):
    script = ("import torch\n"
              "x = torch.rand(64, device='maia') + 0.5\n"
              "y = torch.compile(lambda a: torch.lgamma(a) + 1)(x)\n"
              "torch.testing.assert_close(y.cpu(), torch.lgamma(x.cpu()) + 1)\n"
              "from torch._dynamo.utils import counters\n"
              "print(counters['inductor']['fxgraph_cache_hit'])\n")
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env=env, timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert [r.stdout.split()[-1] for r in runs] == ["0", "1"]
