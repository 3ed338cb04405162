"""Pointwise kernels store a large output with streaming (non-temporal)
stores (issue 18): whole vectors to a buffer of at least
config.streaming_store_min_bytes are `vector.store {nontemporal = true}`
(maia-compile makes them aligned vmovntps behind an alignment test), the
row's tail stays a masked store; smaller buffers, reductions and dynamic
shapes keep ordinary stores. Results are exact either way, including
outputs that start unaligned (a slice of a cat) and rows with tails."""

import pytest
import torch
from compile_support import assert_compiled_matches, to_maia
from maia_inductor import config
from maia_inductor.testing import compiled_kernels

THRESHOLD = config.streaming_store_min_bytes
BIG = THRESHOLD // 4 + 5  # float32 elements: just over, with a tail of 5


def kernel_mlir(fn, *args, **compile_options):
    _, kernels = compiled_kernels(fn, *to_maia(args), **compile_options)
    assert kernels, "no MAIA kernel was generated"
    return "\n".join(kernel.mlir for kernel in kernels)


def test_large_output_is_streamed_and_the_tail_masked():
    mlir = kernel_mlir(lambda x, y: x + y, torch.randn(BIG), torch.randn(BIG))
    assert "{nontemporal = true}" in mlir
    assert "vector.maskedstore" in mlir  # the tail of 5


def test_small_output_keeps_ordinary_stores():
    mlir = kernel_mlir(lambda x, y: x + y, torch.randn(4096), torch.randn(4096))
    assert "nontemporal" not in mlir


def test_the_threshold_is_the_config_value():
    x = torch.randn(4096)
    with config.patch(streaming_store_min_bytes=4096 * 4):
        assert "{nontemporal = true}" in kernel_mlir(lambda x: x * 2, x)
    with config.patch(streaming_store_min_bytes=4096 * 4 + 1):
        assert "nontemporal" not in kernel_mlir(lambda x: x * 2, x)


def test_only_the_large_output_of_a_kernel_is_streamed():
    # One kernel writes a 1-byte bool per element and a 4-byte float: with
    # the threshold between the two buffers' sizes, only the float streams.
    x = torch.randn(4096)
    with config.patch(streaming_store_min_bytes=4096 * 2):
        mlir = kernel_mlir(lambda x: (x * 2, x > 0), x)
    stores = [line for line in mlir.splitlines() if "store" in line]
    assert any("nontemporal" in line and "f32" in line for line in stores)
    assert not any("nontemporal" in line and "i8" in line for line in stores)


def test_reductions_and_dynamic_shapes_keep_ordinary_stores():
    x = torch.randn(64, BIG // 64 + 1)
    assert "nontemporal" not in kernel_mlir(lambda x: x.sum(dim=1), x)
    torch._dynamo.mark_dynamic(x, 0)
    assert "nontemporal" not in kernel_mlir(lambda x: x * 2, x, dynamic=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_streamed_results_match(dtype):
    x = torch.randn(BIG).to(dtype)
    y = torch.randn(BIG).to(dtype)
    # float16 computes in float32 and rounds once: the usual tolerances.
    assert_compiled_matches(lambda x, y: x * y + 1, x, y, dtype=dtype)
    assert_compiled_matches(lambda x: -x, x, dtype=dtype, atol=0, rtol=0)


def test_unaligned_outputs_and_rows_with_tails():
    x = torch.randn(BIG)
    # The second half of a cat starts BIG * 4 bytes into the output: not
    # aligned, so its whole vectors take the ordinary store.
    assert_compiled_matches(lambda x: torch.cat([x * 2, x * 3]), x, atol=0, rtol=0)
    # Rows of 2049 elements: every row ends with a masked tail.
    m = torch.randn(1025, 2049)
    assert_compiled_matches(lambda m: m.exp() + m, m)
    assert_compiled_matches(lambda m: m.t() * 2, m, atol=0, rtol=0)


def test_in_place_update_of_a_large_input():
    def step(p, g):
        p.add_(g, alpha=-0.1)
        return p

    p, g = torch.randn(BIG), torch.randn(BIG)
    on_maia = p.to("maia")
    torch._dynamo.reset()
    torch.compile(step)(on_maia, g.to("maia"))
    torch.testing.assert_close(on_maia.cpu(), p - 0.1 * g)
