"""A fixed slice of the differential fuzzer (tools/fuzz): random programs
compiled on maia against eager CPU. Seeds are fixed, so a failure here is
reproducible with `tools/fuzz/fuzz_compile.py --show <seed>`.

Known wrong results that are not fixed yet are listed in KNOWN_BAD with the
reason and a minimal reproducer; they xfail strictly, so a fix shows up as
XPASS and the entry must go.
"""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "fuzz"))

from program_gen import DTYPES_WITH_FLOAT64, generate  # noqa: E402
from runner import run  # noqa: E402

SEEDS = range(0, 120)  # about 60 s on 2 cores with a cold Inductor cache
# fuzz_compile.py --float64: a mix in which half the programs use float64.
# 61, 67 and 72 found float64 Welford reductions accumulated in float32
# (test_reductions.py::test_float64_welford_accumulates_in_float64).
FLOAT64_SEEDS = sorted(set(range(0, 40)) | {61, 67, 72})

# Seeds found failing by longer runs (tools/fuzz/fuzz_compile.py), kept in the
# slice so the bugs stay visible; each with a minimal reproducer.
# Seeds that found bugs since fixed (the fix's own test is named beside each).
FIXED = {
    515,  # full argmax of a permuted input: test_reductions.py::test_full_arg_reduction_*
}
KNOWN_BAD = {
    1046: "upstream Inductor, pytorch/pytorch#177821 (Inductor CPU gives the same wrong "
          "result: ConcatKernel makes cat inputs views of its output, then an in-place "
          "reuse mutates one): a cat reading a "
          "buffer that a later index_add mutates in place reads the mutated values: "
          "v0 = torch.index_add(a0, 0, a1, a2); v4 = torch.index_add(v0, 1, a4, a5, alpha=2); "
          "torch.cat([v0, v0 * 2], 1) with 1x1 int32 inputs gives [[21, 14]], eager [[7, 14]]",
}


@pytest.mark.parametrize("seed", [
    pytest.param(seed, marks=pytest.mark.xfail(reason=KNOWN_BAD[seed], strict=True))
    if seed in KNOWN_BAD else seed for seed in sorted(set(SEEDS) | FIXED | set(KNOWN_BAD))])
def test_compiled_matches_eager(seed):
    program = generate(seed)
    outcome = run(program)
    assert outcome.ok, f"{outcome.status}: {outcome.message}\n\n{program.source()}"


@pytest.mark.parametrize("seed", FLOAT64_SEEDS)
def test_compiled_matches_eager_with_float64(seed):
    program = generate(seed, dtypes=DTYPES_WITH_FLOAT64)
    outcome = run(program)
    assert outcome.ok, f"{outcome.status}: {outcome.message}\n\n{program.source()}"
