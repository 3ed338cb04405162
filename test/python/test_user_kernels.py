"""User kernels: MLIR compiled ahead of time with maia-compile, loaded with
torch.maia.load_module and launched on maia tensors on the current stream;
results against PyTorch CPU; launches that do not match the metadata fail
clearly."""

import os
import subprocess

import pytest
import torch

MAIA_COMPILE = os.environ.get("MAIA_COMPILE")
KERNELS = os.path.join(os.path.dirname(__file__), "..", "compiler", "e2e", "kernels")
pytestmark = pytest.mark.skipif(not MAIA_COMPILE,
                                reason="MAIA_COMPILE (the built maia-compile) is set by ctest")


@pytest.fixture(scope="module")
def softmax_module(tmp_path_factory):
    out = tmp_path_factory.mktemp("kernels") / "softmax.maiabin"
    subprocess.run([MAIA_COMPILE, os.path.join(KERNELS, "softmax.mlir"), "-o", str(out)],
                   check=True)
    return torch.maia.load_module(out)


class TestUserKernels:
    def test_module_lists_its_kernels_and_metadata(self, softmax_module):
        assert "softmax" in softmax_module.kernels
        meta = softmax_module.metadata
        assert meta["format"] == "maia-kernel-binary"
        assert meta["kernels"][0]["args"][0]["kind"] == "memref"

    @pytest.mark.parametrize("shape", [(1, 1), (3, 17), (64, 1000), (7, 4099)])
    def test_softmax_matches_cpu(self, softmax_module, shape):
        x = torch.randn(shape) * 4
        xd = x.to("maia")
        yd = torch.empty_like(xd)
        softmax_module.softmax(xd, yd, grid=(shape[0],))
        torch.testing.assert_close(yd.cpu(), torch.softmax(x, dim=1))

    def test_strided_rows_and_current_stream(self, softmax_module):
        x = torch.randn(10, 48)
        xd = x.to("maia")[::2, 5:40]  # row stride 96, inner stride 1: allowed
        yd = torch.empty(5, 35, device="maia")
        stream = torch.maia.Stream()
        with torch.maia.stream(stream):
            softmax_module.softmax(xd, yd, grid=5)
        stream.synchronize()
        torch.testing.assert_close(yd.cpu(), torch.softmax(x[::2, 5:40], dim=1))

    def test_mismatched_launches_are_clear_errors(self, softmax_module):
        x = torch.randn(4, 8, device="maia")
        with pytest.raises(RuntimeError, match="takes 2 arguments, the launch passes 1"):
            softmax_module.softmax(x, grid=4)
        with pytest.raises(RuntimeError, match="has dtype f64, the kernel expects f32"):
            softmax_module.softmax(x.double(), x.double(), grid=4)
        with pytest.raises(RuntimeError, match="compiled for stride 1"):
            softmax_module.softmax(x.t(), x, grid=4)
        with pytest.raises(RuntimeError, match="kernels take maia tensors"):
            softmax_module.softmax(x.cpu(), x, grid=4)
        with pytest.raises(AttributeError, match="has no kernel 'softmin'"):
            softmax_module.softmin
        with pytest.raises(RuntimeError, match="not a valid|cannot be read|No such file"):
            torch.maia.load_module("/nonexistent/kernel.maiabin")
