"""Shared by the torch.compile tests: a fresh Dynamo state per test, and
host-fallback warnings off (fallbacks are asserted where they matter)."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _fresh_compile_state():
    torch.maia.set_fallback_warnings(False)
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
    torch.maia.set_fallback_warnings(True)
