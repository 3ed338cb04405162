"""The model zoo under torch._inductor.config.cpp_wrapper on maia against
eager CPU: a C++ wrapper allocates maia buffers and launches the compiled
kernels through libmaia_torch's C shim (maia/aoti.h)."""

import copy
import sys
from pathlib import Path

import pytest
import torch
import torch._inductor.config as inductor_config

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "bench"))
import model_zoo  # noqa: E402

from compile_support import to_maia  # noqa: E402

from maia_inductor.runtime import MaiaCompiledKernel  # noqa: E402

def run_cpp_wrapper(model, inputs):
    torch._dynamo.reset()
    with inductor_config.patch(cpp_wrapper=True), torch.no_grad():
        compiled = torch.compile(copy.deepcopy(model).to("maia"))
        return model_zoo.first_tensor(compiled(*to_maia(inputs)))


@pytest.mark.parametrize("name", sorted(model_zoo.ZOO))
def test_zoo_matches_eager_cpu(name):
    model, inputs = model_zoo.build(name)
    with torch.no_grad():
        expected = model_zoo.first_tensor(model(*inputs))
    actual = run_cpp_wrapper(model, inputs)
    torch.testing.assert_close(actual.cpu(), expected, atol=2e-4, rtol=2e-4)


def test_kernels_run_from_cpp_not_python():
    # The C++ wrapper launches through the shim: the Python launcher's count
    # stays put, while the result still needs the compiled kernel.
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU())
    x = torch.randn(4, 8)
    before = MaiaCompiledKernel.launches
    actual = run_cpp_wrapper(model, (x,))
    assert MaiaCompiledKernel.launches == before
    torch.testing.assert_close(actual.cpu(), model(x).detach(), atol=1e-5, rtol=1e-5)
