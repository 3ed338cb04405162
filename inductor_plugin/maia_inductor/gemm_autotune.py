"""mode="max-autotune" for GEMM template kernels: the tile configuration
(gemm_configs.py) of each product, or the extern kernel, chosen by timing
them on the maia device, cached per kernel.

Where: when the template's kernel is generated (codegen_template), not
when the product is lowered. Only then are the fused epilogue nodes known,
and the epilogue decides the contest: the template's gain is the pass over
C that the epilogue saves, so a product alone against the extern kernel
alone would time the wrong thing. Each candidate is the whole work of the
product and its epilogue: a template kernel per configuration (product +
epilogue, one launch), and the extern GEMM followed by the epilogue as a
kernel of its own. Upstream's AlgorithmSelectorCache times choices at
lowering, before fusion, and benchmarks epilogues only for Triton's
MultiTemplateBuffer; what the plugin takes from upstream is the timing
(`Benchmarker.benchmark` with a maia benchmarker registered through
`register_benchmarker`, the registry torch.compile's autotuning uses).

Cache: in memory and on disk beside the Inductor cache
(<cache dir>/maia/autotune/<key>.json), keyed by the template kernel's
MLIR (which holds the shapes, strides, dtypes and the epilogue), the size
hints of dynamic shapes, the configuration set, the core count, the
compiler and the CPU. The second compile of the same product times nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time

import sympy
import torch
from torch._inductor import config as inductor_config
from torch._inductor.virtualized import V

from .gemm_configs import CONFIGS, DEFAULT, EXTERN, config_named
from .gemm_grid import _core_count, maia_gemm_grid

log = logging.getLogger(__name__)

# Durations in ms, as upstream's CPU benchmarker takes them: run for warmup,
# then time runs for rep (at least MIN_RUNS); the minimum is the result.
WARMUP_MS, REP_MS, MIN_RUNS = 5.0, 40.0, 3
# The candidates are timed in turn, ROUNDS times, REP_MS / ROUNDS each.
ROUNDS = 4
# How much faster than the untuned choice another candidate must be.
MARGIN = 0.03
CACHE_VERSION = 1

# Candidates timed in this process (tests count them: a cache hit times none).
benchmarks = 0
# key -> {"choice": name, "timings": {name: ms}}: decisions of this process
# and those read from disk.
decisions: dict[str, dict] = {}


def benchmark_on_maia(benchmarker, fn, *, warmup=WARMUP_MS, rep=REP_MS, **kwargs) -> float:
    """Inductor's benchmarker for maia (registered for the device type):
    real launches on the current maia stream, each run synchronized, the
    minimum over the runs in ms (the machine is shared: the minimum is the
    least disturbed run)."""

    def timed() -> float:
        start = time.perf_counter()
        fn()
        torch.maia.synchronize()
        return (time.perf_counter() - start) * 1e3

    torch.maia.synchronize()
    began = time.perf_counter()
    timed()
    while (time.perf_counter() - began) * 1e3 < warmup:
        timed()
    timings, began = [], time.perf_counter()
    while len(timings) < MIN_RUNS or (time.perf_counter() - began) * 1e3 < rep:
        timings.append(timed())
    return min(timings)


def register_benchmarker() -> None:
    from torch._inductor.runtime.benchmarking import register_benchmarker as register

    register("maia", benchmark_on_maia, override=True)


def autotuning() -> bool:
    return bool(inductor_config.max_autotune or inductor_config.max_autotune_gemm)


def choose(scheduling, template_node, epilogue):
    """The GemmConfig a product's template kernel is generated with, or
    EXTERN. A forced choice (maia_inductor.config.gemm_config) wins; without
    max-autotune a product with an epilogue takes the default tiles and one
    without is the extern kernel (the template would only add packing)."""
    from . import config

    if config.gemm_config:
        return config_named(config.gemm_config)
    if not autotuning():
        return DEFAULT if epilogue else EXTERN
    return _Autotuner(scheduling, template_node, epilogue).choose()


def clear_memory_cache() -> None:
    decisions.clear()


class _Autotuner:
    def __init__(self, scheduling, template_node, epilogue) -> None:
        self.scheduling = scheduling
        self.template_node = template_node
        self.epilogue = epilogue
        self.gemm = template_node.get_template_node()
        self.device = self.gemm.get_device().index or 0

    def choose(self):
        default = self.scheduling._gemm_kernel(self.template_node, self.epilogue, DEFAULT)
        if not default.rows_follow_product():
            return DEFAULT  # the product will be the extern call anyway
        source = self._source(default)
        key = self._key(source, default)
        # force_disable_caches: Inductor's cache dir is a fresh one, and the
        # memory cache is not consulted either.
        remembered = None if inductor_config.force_disable_caches else decisions.get(key)
        decision = remembered or self._read(key)
        if decision is None:
            decision = self._tune(default, source)
            self._write(key, decision)
        decisions[key] = decision
        return config_named(decision["choice"])

    # ----------------------------------------------------------- the key
    @staticmethod
    def _source(kernel) -> str:
        with V.set_kernel_handler(kernel):
            return kernel.codegen_kernel()

    def _key(self, source: str, kernel) -> str:
        from . import config

        hints = [self._size_hint(outer) for _, ty, outer in kernel.kernel_arguments()
                 if ty == "index"]
        described = json.dumps({
            "version": CACHE_VERSION, "source": source, "size_hints": hints,
            "configs": [dataclasses.asdict(c) for c in CONFIGS], "extern": self.gemm.extern_op(),
            "cores": _core_count(self.device), "compiler": config.compiler_version,
            "cpu": config.target_cpu}, sort_keys=True)
        return hashlib.sha256(described.encode()).hexdigest()

    @staticmethod
    def _path(key: str):
        from .compiler import cache_dir

        return cache_dir() / "autotune" / f"{key}.json"

    def _read(self, key: str):
        try:
            decision = json.loads(self._path(key).read_text())
            config_named(decision["choice"])
            return decision
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent or unreadable: tune again

    def _write(self, key: str, decision: dict) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(decision, indent=1))
        os.replace(temporary, path)  # atomic: a reader sees all or nothing

    # -------------------------------------------------------------- timing
    def _tune(self, default, default_source) -> dict:
        global benchmarks
        from torch._inductor.runtime.benchmarking import benchmarker

        from .runtime import MaiaAsyncCompile

        compile_async = MaiaAsyncCompile()
        mnk = [self._hint(size) for size in default.grid_sizes()]
        candidates, seen = {}, set()
        for config in CONFIGS:
            grid = maia_gemm_grid(*mnk, self.device, config.split)
            same_as = (grid, config.block_rows, config.block_cols, config.packed_b_floats)
            if same_as in seen:
                continue  # launches exactly like a configuration already timed
            seen.add(same_as)
            kernel = default if config is DEFAULT else self.scheduling._gemm_kernel(
                self.template_node, self.epilogue, config)
            source = default_source if config is DEFAULT else self._source(kernel)
            name = f"maia_autotune_{config.name}"
            candidates[config.name] = (kernel, grid, compile_async.kernel(
                name, _named(source, name)))
        extern_epilogue = self._extern_epilogue(compile_async)
        tensors = _Tensors(self)
        calls = {name: _launcher(future.result(), grid, tensors.arguments(kernel))
                 for name, (kernel, grid, future) in candidates.items()}
        calls[EXTERN] = self._extern_call(tensors, extern_epilogue)
        # Rounds over all candidates, the best of each kept: load that comes
        # and goes on a shared machine then hits every candidate alike
        # instead of whichever was being timed.
        timings = dict.fromkeys(calls, float("inf"))
        with torch.maia.device(self.device):
            for _ in range(ROUNDS):
                for name, call in calls.items():
                    timings[name] = min(timings[name], benchmarker.benchmark(
                        call, device="maia", warmup=WARMUP_MS, rep=REP_MS / ROUNDS))
        benchmarks += len(calls)
        choice = _fastest(timings, baseline="default" if self.epilogue else EXTERN)
        log.info("maia GEMM autotune %s (M N K %s): %s -> %s", self.gemm.get_name(), mnk,
                 {k: round(v, 4) for k, v in timings.items()}, choice)
        return {"choice": choice, "timings": timings}

    def _extern_epilogue(self, compile_async):
        """The epilogue as a kernel of its own, as it runs after an extern
        product: (kernel, grid, future), or None without an epilogue."""
        if not self.epilogue:
            return None
        from torch._inductor.codegen.simd_kernel_features import SIMDKernelFeatures

        from .kernel import MaiaKernel
        from .runtime import maia_pointwise_grid

        _, (numel, rnumel) = self.epilogue[0].group
        schedule = self.scheduling.generate_node_schedule(self.epilogue, numel, rnumel)
        kernel = MaiaKernel(self.scheduling.create_tiling([numel], [rnumel]),
                            features=SIMDKernelFeatures(schedule, numel, rnumel))
        self.scheduling.codegen_node_schedule_with_kernel(schedule, kernel)
        source = self._source(kernel)
        inner = kernel.vector_range(kernel.vector_tree()).inner
        grid = maia_pointwise_grid(self._hint(numel), self._hint(inner))
        name = "maia_autotune_epilogue"
        return kernel, grid, compile_async.kernel(name, _named(source, name))

    def _extern_call(self, tensors, extern_epilogue):
        product = getattr(torch, self.gemm.extern_op())
        a, b = (tensors.view(operand) for operand in self.gemm.operands())
        c = tensors.view(self.gemm)
        if extern_epilogue is None:
            return lambda: product(a, b, out=c)
        kernel, grid, future = extern_epilogue
        epilogue = _launcher(future.result(), grid, tensors.arguments(kernel))

        def call():
            product(a, b, out=c)
            epilogue()

        return call

    # ------------------------------------------------------------- sizes
    @staticmethod
    def _hint(expr) -> int:
        return int(V.graph.sizevars.optimization_hint(sympy.sympify(expr), fallback=64))

    def _size_hint(self, outer) -> int:
        """The value of a kernel's size argument (outer: the symbol the
        wrapper passes, possibly one of Inductor's precomputed sizes)."""
        symbol = outer if isinstance(outer, sympy.Expr) else sympy.sympify(outer)
        expr = V.graph.sizevars.inv_precomputed_replacements.get(symbol, symbol)
        return self._hint(expr)


def _fastest(timings: dict, baseline: str) -> str:
    """The fastest candidate, unless it beats baseline (what a compile
    without max-autotune generates) by less than MARGIN: on a shared
    machine such a difference is noise, and following it would change the
    code from one compile to the next for nothing."""
    best = min(timings, key=timings.get)
    if baseline in timings and timings[best] > timings[baseline] * (1 - MARGIN):
        return baseline
    return best


def _named(source: str, name: str) -> str:
    from .scheduling import KERNEL_NAME_PLACEHOLDER

    return source.replace(KERNEL_NAME_PLACEHOLDER, name)


def _launcher(compiled, grid, arguments):
    """Launches compiled on grid, not counted in MaiaCompiledKernel.launches
    (tests use that count to know a graph's own kernels ran)."""
    if grid[0] <= 0:
        return lambda: None
    return lambda: compiled._kernel.run(grid, *arguments)


class _Tensors:
    """Device tensors standing for the graph's buffers while timing: one per
    buffer name, shared by the candidates (the extern product writes the C
    that the epilogue kernel then reads). Random floats; integers are zero,
    so indices read by an epilogue stay in bounds."""

    def __init__(self, tuner: _Autotuner) -> None:
        self.tuner = tuner
        self.by_name: dict[str, torch.Tensor] = {}

    def buffer(self, name: str) -> torch.Tensor:
        if name not in self.by_name:
            node = V.graph.get_buffer(name)
            if node is None:
                raise NotImplementedError(f"maia autotune: no buffer named {name}")
            hint = self.tuner._hint
            size = [hint(s) for s in node.get_size()]
            stride = [hint(s) for s in node.get_stride()]
            storage = torch.empty_strided(size, stride, dtype=node.get_dtype(),
                                          device=f"maia:{self.tuner.device}")
            if storage.is_floating_point():
                storage.normal_()
            else:
                storage.zero_()
            self.by_name[name] = storage
        return self.by_name[name]

    def view(self, node) -> torch.Tensor:
        """node (a buffer or a reinterpreted view of one) as a tensor."""
        hint = self.tuner._hint
        layout = node.get_layout()
        return self.buffer(node.get_name()).as_strided(
            [hint(s) for s in layout.size], [hint(s) for s in layout.stride],
            hint(layout.offset))

    def arguments(self, kernel) -> list:
        """kernel's launch arguments, in order."""
        values = []
        for _, ty, outer in kernel.kernel_arguments():
            if ty.startswith("memref"):
                values.append(self.buffer(str(outer)))
            elif ty == "index":
                values.append(self.tuner._size_hint(outer))
            else:  # an unspecialized 0-d CPU tensor, passed as its value
                values.append(1 if ty.startswith("i") else 1.0)
        return values
