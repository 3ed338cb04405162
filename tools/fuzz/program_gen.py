"""Random small PyTorch programs, deterministic from a seed.

Each op is drawn from a category (pointwise math, comparisons and where,
broadcasts, views and slices, cat/stack, reductions, indexing, casts, float
scalars from sizes), applied to earlier values, and executed eagerly on CPU
while the program is built: an op that eager PyTorch rejects is dropped, so
every program is valid for its sizes. The printed source is what runs.

Comparisons, argmax, rounding and float-to-int casts read only values
computed exactly (inputs, views, integer arithmetic, max/min, casts):
compiled kernels use polynomial transcendentals and may round a few ulp
apart from eager, which flips a comparison at a tie and would be noise,
not a bug.
"""

from __future__ import annotations

import dataclasses
import random
import warnings

import sympy
import torch

from ops import CATEGORIES
from program import Input, Op, Program, evaluate, size_symbol

# The CPU reference computes convolutions with ATen's own kernels, not
# oneDNN's: oneDNN's brgemm convolution forward and 1x1 backward-weights
# segfaulted on fuzzer programs (seeds 22349 and 8884 of --eager --nn
# --grad: a crash of the reference ends a whole run).
torch.backends.mkldnn.enabled = False

MAX_NUMEL = 6000        # keep each value small: programs compile and run in ~1 s
SIZE_VALUES = [0, 1, 1, 2, 3, 5, 7, 8, 16, 17, 31, 33, 64, 100, 257, 1000, 2049, 3000]
DTYPES = [torch.float32] * 5 + [torch.float16, torch.bfloat16] * 2 + [torch.int32, torch.int64,
                                                                      torch.bool]
# --float64: the same mix with float64 as likely as float32. A separate list
# so that the default seeds (and the suite's known-bad ones) stay the same
# programs.
DTYPES_WITH_FLOAT64 = DTYPES + [torch.float64] * 5


@dataclasses.dataclass
class Value:
    name: str
    shape: tuple          # sympy
    dtype: torch.dtype
    exact: bool           # equal bit for bit in eager and compiled (see module doc)
    tensor: torch.Tensor  # the eager value at the program's sizes


class Builder:
    def __init__(self, seed: int, attempt: int = 0, dtypes=DTYPES, grad: bool = False):
        self.rng = random.Random(seed * 1000 + attempt)  # retries draw other programs
        self.dtypes = dtypes
        self.grad = grad
        self.seed = seed  # make_inputs' generator: one per seed
        self.sizes = {}
        self.inputs, self.ops, self.values = [], [], []
        self.main_dtype = self.rng.choice(dtypes)

    # ------------------------------------------------------------ sizes
    def size_symbol(self, limit=MAX_NUMEL):
        """A new or existing size symbol whose value is at most limit."""
        fits = [s for s in self.sizes if self.sizes[s] <= limit]
        if fits and self.rng.random() < 0.6:
            return size_symbol(self.rng.choice(fits))
        value = self.rng.choice([v for v in SIZE_VALUES if v <= limit])
        name = f"s{len(self.sizes)}"
        self.sizes[name] = value
        return size_symbol(name)

    def concrete(self, shape):
        return evaluate(shape, self.sizes)

    def random_shape(self, ndim=None):
        ndim = self.rng.choice([1, 1, 2, 2, 2, 3, 3, 4]) if ndim is None else ndim
        shape, budget = [], MAX_NUMEL
        for _ in range(ndim):
            if self.rng.random() < 0.15:
                dim = sympy.Integer(1)
            else:
                dim = self.size_symbol(max(1, budget))
            shape.append(dim)
            budget //= max(1, self.concrete([dim])[0])
        return tuple(shape)

    # ------------------------------------------------------------ inputs
    def new_input(self, shape, dtype=None, layout=None, high=None, index_dtype=torch.int64):
        dtype = dtype or (self.main_dtype if self.rng.random() < 0.7 else self.rng.choice(self.dtypes))
        if high is not None:
            dtype, layout = index_dtype, "contiguous"
        if layout is None:
            layouts = ["contiguous"] * 3 + ["offset", "offset", "strided", "expanded"]
            if len(shape) >= 2:
                layouts.append("transposed")
            layout = self.rng.choice(layouts) if shape else "contiguous"
        inp = Input(f"a{len(self.inputs)}", tuple(shape), dtype, layout, high)
        self.inputs.append(inp)
        bound = None if high is None else self.concrete([high])[0]
        tensor = _eager_input(inp, self.concrete(shape), bound, self.rng)
        value = Value(inp.name, inp.shape, dtype, True, tensor)
        if high is None:
            self.values.append(value)
        return value

    # ------------------------------------------------------------ ops
    def ties_safe(self, v) -> bool:
        """Whether an op whose gradient goes to the first (or every) extreme
        element may read v: with gradients compared, only values equal in
        eager and compiled code (or float32, where ties are rare). A 16-bit
        value rounded from a fused float32 chain ties elsewhere than eager's,
        and cummax's or a max pool's gradient lands on another element."""
        return not self.grad or v.exact or v.dtype == torch.float32

    def pick(self, pred=lambda v: True):
        """A value, preferring recent ones so that ops form chains."""
        choices = [v for v in self.values if pred(v)]
        if not choices:
            return None
        weights = [1 + i for i in range(len(choices))]
        return self.rng.choices(choices, weights)[0]

    def add_op(self, expr: str, args: list, shape, exact: bool):
        """Runs expr eagerly; keeps the op if PyTorch accepts it."""
        env = {"torch": torch, **{v.name: v.tensor for v in args}}
        try:
            with warnings.catch_warnings():  # var of one element and the like: NaN is fine
                warnings.simplefilter("ignore")
                result = eval(expr, env)
        except Exception:
            return None
        if not isinstance(result, torch.Tensor) or result.numel() > MAX_NUMEL:
            return None
        if tuple(result.shape) != self.concrete(shape):
            raise AssertionError(f"generator shape rule wrong for {expr}: "
                                 f"{tuple(result.shape)} vs {self.concrete(shape)}")
        name = f"v{len(self.ops)}"
        self.ops.append(Op(name, expr, tuple(v.name for v in args)))
        value = Value(name, tuple(shape), result.dtype, exact, result)
        self.values.append(value)
        return value

    def finish(self, dynamic, grad=False, eager=False):
        used = {name for op in self.ops for name in op.uses}
        sinks = [op.out for op in self.ops if op.out not in used]
        outputs = list(reversed(sinks))[:3]
        alt = None
        if dynamic == "auto":  # a second call with other sizes (0 and 1 stay: they specialize)
            alt = {k: (v + self.rng.choice([1, 2, 5]) if v >= 2 else v)
                   for k, v in self.sizes.items()}
        return Program(self.seed, dict(self.sizes), list(self.inputs), list(self.ops),
                       outputs, dynamic, alt, grad, eager)


def _eager_input(inp: Input, shape, high, rng: random.Random) -> torch.Tensor:
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    if high is not None:
        return torch.randint(0, max(high, 1), shape, generator=g, dtype=inp.dtype)
    if inp.dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(inp.dtype)
    if inp.dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(-8, 8, shape, generator=g, dtype=inp.dtype)


def generate(seed: int, max_ops: int = 7, dtypes=DTYPES, categories=CATEGORIES,
             grad: bool = False, eager: bool = False) -> Program:
    """The program of seed: valid for eager CPU at its sizes (and alt sizes),
    its ops drawn from categories (ops.CATEGORIES, or nn_ops.NN_CATEGORIES:
    other programs for the same seeds); grad: its gradients are compared
    too, eager: run eagerly on maia, not compiled (the same program)."""
    for attempt in range(50):
        b = Builder(seed, attempt, dtypes, grad)
        first = b.new_input(b.random_shape())
        if b.rng.random() < 0.5:
            b.new_input(first.shape)  # a second operand of the same shape
        target = b.rng.randint(1, max_ops)
        tries = 0
        while len(b.ops) < target and tries < 40:
            tries += 1
            names, weights = zip(*[(n, w) for n, (w, _) in categories.items()])
            category = b.rng.choices(names, weights)[0]
            categories[category][1](b)
        if not b.ops:
            continue
        dynamic = b.rng.choice([None, None, True, "auto"])
        program = b.finish(dynamic, grad, eager)
        if _eager_valid(program):
            return program
    raise RuntimeError(f"no valid program for seed {seed}")


def _eager_valid(program: Program) -> bool:
    try:
        module = program.load()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for sizes in program.size_sets():
                module.run_fn(module.fn, module.make_inputs(**sizes))
    except Exception:
        return False
    return True
