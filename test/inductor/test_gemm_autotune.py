"""mode="max-autotune" for GEMM templates (maia_inductor/gemm_autotune.py):
tile configurations and the extern kernel timed on the device, the choice
cached in memory and on disk; every configuration, forced, against eager
CPU."""

import json

import pytest
import torch
import torch.nn.functional as F
from compile_support import assert_compiled_matches, to_maia
from test_gemm_template import UKERNEL_CALL, wrapper_and_kernels
from torch._inductor import config as inductor_config
from torch._inductor.utils import run_and_get_code

from maia_inductor import config, gemm_autotune
from maia_inductor.gemm_configs import CHOICE_NAMES, CONFIGS, EXTERN
from maia_inductor.testing import capture_kernel_sources


def bmm_bias_gelu(a, b, bias):
    return F.gelu(torch.bmm(a, b) + bias)


def linear_gelu_add(x, w, b, r):
    return F.gelu(F.linear(x, w, b)) + r


def plain_bmm(a, b):
    return torch.bmm(a, b)


# Shapes with several row and column blocks under the small configuration,
# a program's rows spanning batches, odd sizes.
CASES = {
    "bmm_bias_gelu": (bmm_bias_gelu, (torch.randn(3, 300, 70), torch.randn(3, 70, 600),
                                      torch.randn(600))),
    "linear_gelu_add": (linear_gelu_add, (torch.randn(301, 90), torch.randn(700, 90),
                                          torch.randn(700), torch.randn(301, 700))),
    "plain_bmm": (plain_bmm, (torch.randn(5, 130, 40), torch.randn(5, 40, 530))),
}


@pytest.fixture
def fresh_autotune_cache(tmp_path, monkeypatch):
    """An empty Inductor cache dir (so an empty autotune cache on disk) and
    an empty memory cache."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    gemm_autotune.clear_memory_cache()
    yield tmp_path
    gemm_autotune.clear_memory_cache()


def compile_with_max_autotune(fn, args):
    torch._dynamo.reset()
    with inductor_config.patch(max_autotune=True, fx_graph_cache=False):
        return torch.compile(fn)(*to_maia(args))


class TestMaxAutotune:
    def test_chooses_by_timing_and_caches_the_choice(self, fresh_autotune_cache):
        fn, args = CASES["bmm_bias_gelu"]
        before = gemm_autotune.benchmarks
        result = compile_with_max_autotune(fn, args)
        torch.testing.assert_close(result.cpu(), fn(*args), atol=1e-4, rtol=1e-4)
        timed = gemm_autotune.benchmarks - before
        # every distinct configuration and the extern kernel were timed
        assert 2 <= timed <= len(CONFIGS) + 1
        files = list((fresh_autotune_cache / "maia" / "autotune").glob("*.json"))
        assert len(files) == 1
        decision = json.loads(files[0].read_text())
        assert decision["choice"] in CHOICE_NAMES
        assert {"default", EXTERN} <= set(decision["timings"])
        timings = decision["timings"]
        fastest = min(timings, key=timings.get)
        # the untuned choice stays unless beaten by more than the margin
        assert decision["choice"] in (fastest, "default")
        if decision["choice"] != fastest:
            assert timings[fastest] > timings["default"] * (1 - gemm_autotune.MARGIN)

        # Second compile of the same graph: the memory cache answers.
        compile_with_max_autotune(fn, args)
        assert gemm_autotune.benchmarks - before == timed
        # A new process (empty memory cache): the disk cache answers.
        gemm_autotune.clear_memory_cache()
        result = compile_with_max_autotune(fn, args)
        assert gemm_autotune.benchmarks - before == timed
        torch.testing.assert_close(result.cpu(), fn(*args), atol=1e-4, rtol=1e-4)

    def test_another_shape_is_tuned_again(self, fresh_autotune_cache):
        fn, (a, b, bias) = CASES["bmm_bias_gelu"]
        compile_with_max_autotune(fn, (a, b, bias))
        before = gemm_autotune.benchmarks
        compile_with_max_autotune(fn, (a[:, :200], b, bias))
        assert gemm_autotune.benchmarks > before

    def test_the_decision_is_followed(self, fresh_autotune_cache):
        # A decision on disk (here: extern) is what the graph is built with.
        fn, args = CASES["linear_gelu_add"]
        compile_with_max_autotune(fn, args)
        (path,) = (fresh_autotune_cache / "maia" / "autotune").glob("*.json")
        for choice, expect_template in (("extern", False), ("small", True)):
            path.write_text(json.dumps({"choice": choice, "timings": {}}))
            gemm_autotune.clear_memory_cache()
            torch._dynamo.reset()
            # not wrapper_and_kernels: force_disable_caches moves the cache dir
            with (inductor_config.patch(max_autotune=True, fx_graph_cache=False),
                  capture_kernel_sources() as kernels):
                _, (wrapper,) = run_and_get_code(torch.compile(fn), *to_maia(args))
            templates = [k for k in kernels if UKERNEL_CALL in k.mlir]
            assert bool(templates) == expect_template
            assert ("extern_kernels.mm(" in wrapper) != expect_template

    def test_mode_max_autotune_end_to_end(self, fresh_autotune_cache):
        fn, args = CASES["linear_gelu_add"]
        assert_compiled_matches(fn, *args, mode="max-autotune")

    def test_dynamic_shapes(self, fresh_autotune_cache):
        fn, (a, b, bias) = CASES["bmm_bias_gelu"]
        torch._dynamo.reset()
        with inductor_config.patch(max_autotune=True, fx_graph_cache=False):
            compiled = torch.compile(fn, dynamic=True)
            for rows in (300, 77):
                got = compiled(*to_maia((a[:, :rows], b, bias)))
                torch.testing.assert_close(got.cpu(), fn(a[:, :rows], b, bias),
                                           atol=1e-4, rtol=1e-4)

    def test_a_choice_must_beat_the_untuned_one_by_the_margin(self):
        timings = {"default": 1.0, "small": 0.99, EXTERN: 1.2}
        assert gemm_autotune._fastest(timings, "default") == "default"
        assert gemm_autotune._fastest({**timings, "small": 0.9}, "default") == "small"
        assert gemm_autotune._fastest({**timings, "small": 0.9}, EXTERN) == "small"
        assert gemm_autotune._fastest({"default": 0.95, EXTERN: 1.0}, EXTERN) == "default"

    def test_the_maia_benchmarker_times_device_work(self):
        from torch._inductor.runtime.benchmarking import benchmarker

        x = torch.randn(256, 256, device="maia")
        assert benchmarker.benchmark(lambda: x @ x, device="maia") > 0


class TestForcedConfigs:
    @pytest.mark.parametrize("choice", CHOICE_NAMES)
    @pytest.mark.parametrize("case", sorted(CASES))
    def test_every_config_matches_cpu(self, case, choice, monkeypatch):
        monkeypatch.setattr(config, "gemm_config", choice)
        fn, args = CASES[case]
        wrapper, kernels = wrapper_and_kernels(fn, *args)
        templates = [k for k in kernels if UKERNEL_CALL in k.mlir]
        assert len(templates) == (0 if choice == EXTERN else 1)
        if choice == "small":
            assert "arith.constant 126 : index" in templates[0].mlir
        assert_compiled_matches(fn, *args, maia_kernels=bool(kernels))

    def test_unknown_config_is_a_clear_error(self, monkeypatch):
        monkeypatch.setattr(config, "gemm_config", "huge")
        fn, args = CASES["plain_bmm"]
        with pytest.raises(Exception, match="unknown GEMM template config 'huge'"):
            torch.compile(fn)(*to_maia(args))
