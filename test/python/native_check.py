"""The check of native operators shared by test_linalg.py and test_fft.py:
a function of tensors on maia against the CPU, with no host fallback, the
same values and the same layout (compiled graphs assert the strides the
meta functions promise)."""

import torch


def on_maia(value):
    return value.to("maia") if isinstance(value, torch.Tensor) else value


def strides_of_real_dims(t):
    """t's strides of the dimensions longer than 1 (the others are free)."""
    return [stride for size, stride in zip(t.shape, t.stride()) if size > 1] if t.numel() else []


def assert_native_matches(fn, *args, **tolerances):
    """fn(*args) on maia copies of the tensor args equals fn on the CPU
    (assert_close with `tolerances`) in dtype, shape and strides, and runs
    no operator on the host fallback."""
    expected = fn(*args)
    torch.maia.reset_fallback_counts()
    actual = fn(*[on_maia(a) for a in args])
    assert torch.maia.fallback_counts() == {}
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    actual = actual if isinstance(actual, (tuple, list)) else (actual,)
    assert len(actual) == len(expected)
    for mine, cpu in zip(actual, expected):
        assert mine.device.type == "maia"
        assert mine.dtype == cpu.dtype and mine.shape == cpu.shape
        torch.testing.assert_close(mine.cpu(), cpu, **tolerances)
        assert strides_of_real_dims(mine) == strides_of_real_dims(cpu), (mine.stride(),
                                                                         cpu.stride())
