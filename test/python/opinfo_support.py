"""What the OpInfo sweeps (test_opinfo_*.py) share: the dtypes maia supports,
moving sample arguments to maia, parametrizing (op, dtype) cases, checking
that an operation did not fall back to the host, the forward comparison of
an op's samples, and the gradient comparison of an op's samples."""

import pytest
import torch
from torch.utils._pytree import tree_flatten, tree_map

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool]

# Low-precision results may differ from the CPU's by a rounding step: the
# tolerances of PyTorch's own device-vs-CPU comparison (test_ops.py
# test_compare_cpu) for float16, one bfloat16 ulp (2^-7 relative) for bfloat16.
LOW_PRECISION_TOLERANCES = {torch.float16: dict(atol=1e-3, rtol=1e-3),
                            torch.bfloat16: dict(atol=1.6e-2, rtol=1.6e-2)}


# Matrix products sum in another order than the CPU's BLAS (blocked K).
MATMUL_TOLERANCES = {torch.float32: dict(atol=1e-4, rtol=1e-5),
                     torch.float16: dict(atol=1e-2, rtol=1e-2),
                     torch.bfloat16: dict(atol=5e-2, rtol=2e-2)}


def to_maia(x):
    return x.to("maia") if isinstance(x, torch.Tensor) else x


def cases(ops, dtypes=DTYPES):
    """pytest params (op, dtype) for each dtype an op supports on the CPU."""
    for op in ops:
        supported = op.supported_dtypes("cpu")
        for dtype in dtypes:
            if dtype in supported:
                yield pytest.param(op, dtype, id=f"{op.name}.{op.variant_test_name}-{dtype}")


def new_fallbacks(before):
    """Operators whose fallback count grew since the counts `before`."""
    after = torch.maia.fallback_counts()
    return {k: v for k, v in after.items() if v > before.get(k, 0)}


def forbid_fallback(before, what):
    grew = new_fallbacks(before)
    assert not grew, f"{what} fell back to the host for: {grew}"


def assert_close_tree(actual, expected, msg=None, **tol):
    """assert_close over a tensor or a (nested) tuple/list of them."""
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close_tree(a, e, msg, **tol)
        return
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, msg=msg, **tol)


def run_on_maia(op, sample, convert=to_maia):
    """op on sample's input, args and kwargs with each tensor converted."""
    return op(tree_map(convert, sample.input), *tree_map(convert, sample.args),
              **tree_map(convert, sample.kwargs))


def check_forward_samples(op, dtype, skip_kwargs, tolerances, check_fallback):
    """Runs op's CPU samples at dtype on the CPU and on maia: a sample the CPU
    refuses must be refused on maia too, the others must match within
    tolerances; check_fallback(before, sample) judges the host fallbacks
    since the fallback counts `before`."""
    samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))
    assert samples, "no sample inputs"
    for sample in samples:
        if skip_kwargs & set(sample.kwargs):
            continue
        try:
            expected = op(sample.input, *sample.args, **sample.kwargs)
        except Exception as error:  # the CPU refuses this sample: maia must refuse it too
            with pytest.raises(type(error)):
                run_on_maia(op, sample)
                torch.maia.synchronize()
            continue
        before = torch.maia.fallback_counts()
        actual = run_on_maia(op, sample)
        check_fallback(before, sample)
        assert_close_tree(actual, expected, lambda m: f"{op.name} {dtype} {sample}: {m}",
                          **tolerances)


def maia_leaves(values):
    """For a gradient comparison: the CPU tensors among values that require
    grad, fresh maia leaves copied from them, and a converter mapping each of
    those CPU tensors to its maia leaf (other tensors to maia copies)."""
    leaves_cpu = [t for t in tree_flatten(values)[0]
                  if isinstance(t, torch.Tensor) and t.requires_grad]
    leaves_maia = [t.detach().to("maia").requires_grad_() for t in leaves_cpu]
    mapping = {id(c): m for c, m in zip(leaves_cpu, leaves_maia)}

    def convert(x):
        return mapping.get(id(x), to_maia(x)) if isinstance(x, torch.Tensor) else x

    return leaves_cpu, leaves_maia, convert


def check_gradient_samples(op, dtype, skip_kwargs, upstream=torch.randn_like,
                           check_fallback=None, **tol):
    """Compares the gradients of op's CPU samples at dtype on maia and on the CPU: every output
    that requires grad (of tuple outputs too) gets upstream(output) as its gradient (randn by
    default: ones would hide a wrong scale). check_fallback(before, sample) judges the
    backward's host fallbacks since the counts `before`. Fails when no sample had a gradient."""
    if dtype not in op.supported_backward_dtypes("cpu"):
        pytest.skip(f"{op.name} has no CPU backward for {dtype}")
    checked = 0
    for sample in op.sample_inputs("cpu", dtype, requires_grad=True):
        if skip_kwargs & set(sample.kwargs):
            continue
        expected = op(sample.input, *sample.args, **sample.kwargs)
        outputs = expected if isinstance(expected, tuple) else (expected,)
        keep = [i for i, t in enumerate(outputs)
                if isinstance(t, torch.Tensor) and t.requires_grad]
        if not keep:
            continue
        leaves_cpu, leaves_maia, convert = maia_leaves([sample.input, sample.args,
                                                        sample.kwargs])
        actual = run_on_maia(op, sample, convert)
        actual = actual if isinstance(actual, tuple) else (actual,)
        grads = [upstream(outputs[i]) for i in keep]
        expected_grads = torch.autograd.grad([outputs[i] for i in keep], leaves_cpu, grads,
                                             allow_unused=True)
        before = torch.maia.fallback_counts()
        actual_grads = torch.autograd.grad([actual[i] for i in keep], leaves_maia,
                                           [g.to("maia") for g in grads], allow_unused=True)
        if check_fallback is not None:
            check_fallback(before, sample)
        assert_grads_close(expected_grads, actual_grads,
                           msg=lambda m, sample=sample: f"{op.name} {sample}: {m}", **tol)
        checked += 1
    assert checked, f"no sample of {op.name} had a gradient to compare"


def assert_grads_close(expected_grads, actual_grads, **tol):
    for expected, actual in zip(expected_grads, actual_grads):
        if expected is None:
            assert actual is None
        else:
            torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **tol)
