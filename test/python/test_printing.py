"""Printing maia tensors: torch's printer (torch/_tensor_str.py) runs on the device with
native operators only (isfinite, masked_select, abs, min/max, ceil, ...): no host fallback,
and the same text as for the CPU tensor apart from the device."""

import re

import pytest
import torch

CASES = {
    "float32": lambda: torch.randn(3, 3, generator=torch.Generator().manual_seed(0)),
    "float16": lambda: torch.randn(3, 3, generator=torch.Generator().manual_seed(1)).half(),
    "bfloat16": lambda: torch.randn(2, 4, generator=torch.Generator().manual_seed(2)).bfloat16(),
    "float64": lambda: torch.randn(4, generator=torch.Generator().manual_seed(3)).double(),
    "int64": lambda: torch.arange(-4, 5).view(3, 3),
    "int32": lambda: torch.arange(6, dtype=torch.int32),
    "bool": lambda: torch.tensor([[True, False], [False, True]]),
    "special": lambda: torch.tensor([1e10, 1.5, float("nan"), float("inf"), -float("inf"), 0.0]),
    "integral_floats": lambda: torch.tensor([1.0, -2.0, 300.0]),
    "scalar": lambda: torch.tensor(2.5),
    "empty": lambda: torch.zeros(0, 3),
    "summarized": lambda: torch.randn(200, 300, generator=torch.Generator().manual_seed(4)),
}


@pytest.mark.parametrize("case", CASES)
def test_prints_like_cpu_without_fallback(case):
    x = CASES[case]()
    xm = x.to("maia")
    before = torch.maia.fallback_counts()
    text = str(xm)
    grew = {k: v for k, v in torch.maia.fallback_counts().items() if v > before.get(k, 0)}
    assert not grew, f"printing fell back to the host for {grew}"
    assert "device='maia:0'" in text
    assert squeeze(text.replace("device='maia:0'", "")) == squeeze(str(x)), text


def squeeze(text):
    """The text without white space and the commas the device annotation leaves."""
    text = re.sub(r"\s+", "", text)
    return re.sub(r",+\)", ")", re.sub(r",+", ",", text))
