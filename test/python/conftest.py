"""Shared fixtures for the maia Python tests."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _quiet_fallback_warnings():
    """Host-fallback warnings are tested explicitly in test_fallback.py."""
    torch.maia.set_fallback_warnings(False)
    yield
    torch.maia.set_fallback_warnings(True)
