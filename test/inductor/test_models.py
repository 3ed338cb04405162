"""The model zoo compiled on maia against eager CPU, float32 and bfloat16."""

import copy
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "bench"))
import model_zoo  # noqa: E402

from compile_support import to_maia  # noqa: E402

# bfloat16 models: the error grows with depth (every stored activation is
# rounded to 8 bits of mantissa, in different places than eager CPU).
BF16_TOLERANCE = (6e-2, 6e-2)


def compare(name, dtype):
    model, inputs = model_zoo.build(name)
    if dtype != torch.float32:
        model = model.to(dtype)
        inputs = tuple(x.to(dtype) if x.is_floating_point() else x for x in inputs)
    on_maia = torch.compile(copy.deepcopy(model).to("maia"))
    with torch.no_grad():
        expected = model_zoo.first_tensor(model(*inputs))
        actual = model_zoo.first_tensor(on_maia(*to_maia(inputs)))
    # float32: looser than a single op's 1e-4, the error accumulates over layers
    atol, rtol = (2e-4, 2e-4) if dtype == torch.float32 else BF16_TOLERANCE
    torch.testing.assert_close(actual.cpu(), expected, atol=atol, rtol=rtol)


@pytest.mark.parametrize("name", list(model_zoo.ZOO))
def test_zoo_float32(name):
    torch.maia.reset_fallback_counts()
    compare(name, torch.float32)
    assert torch.maia.fallback_counts() == {}


@pytest.mark.parametrize("name", ["mlp", "gpt2_block", "bert_layer", "rmsnorm_mlp"])
def test_zoo_bfloat16(name):
    compare(name, torch.bfloat16)


def test_recompilations_stay_bounded():
    model, (x,) = model_zoo.build("gpt2_block")
    compiled = torch.compile(model.to("maia"))
    before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    with torch.no_grad():
        for _ in range(5):
            compiled(x.to("maia"))
        for seq in (16, 24, 32, 48):  # new shapes: one dynamic recompile at most
            compiled(torch.randn(2, seq, 128, device="maia"))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] - before <= 2
