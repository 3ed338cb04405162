"""Checking that a kernel fault becomes a sticky device error.

The device runs asynchronously: the faulting kernel may trap before or after the operator
that launched it issues its next launch, so the error surfaces either at a later launch of
the same operator or at the next synchronize. Both are inside the check."""

import contextlib
import ctypes

import pytest
import torch


@contextlib.contextmanager
def expect_sticky_error(kernel: str, device: int = 0):
    driver = ctypes.CDLL("libmaia_runtime.so")  # already loaded by torch_maia
    try:
        with pytest.raises(RuntimeError, match=rf"{kernel}.*sticky"):
            yield
            torch.maia.synchronize(device)
    finally:
        assert driver.maiaDeviceReset(device) == 0
