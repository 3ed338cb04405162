"""Indirect indexing: embedding, gather, index, index_put, scatter; bounds."""

import pytest
import torch
import torch.nn.functional as F
from compile_support import assert_compiled_matches


def test_embedding_and_gather():
    ids = torch.randint(0, 50, (7, 9))
    table = torch.randn(50, 32)
    assert_compiled_matches(lambda i, t: F.embedding(i, t) * 2, ids, table)
    x = torch.randn(10, 20)
    assert_compiled_matches(lambda x, i: torch.gather(x, 1, i), x, torch.randint(0, 20, (10, 5)))
    assert_compiled_matches(lambda x, i: torch.gather(x, 0, i), x, torch.randint(0, 10, (4, 20)))


def test_advanced_indexing_with_negative_indices():
    x = torch.randn(10, 4)
    index = torch.tensor([0, -1, 3, -10, 9])
    assert_compiled_matches(lambda x, i: x[i] + 1, x, index)
    assert_compiled_matches(lambda x, i: x[:, i[:3] % 4], x, index)


def test_gather_under_a_max_pool_padding_mask():
    # The pool's padding masks the gathered load with other=-inf; the load
    # of the int64 index under that mask must not take -inf (fuzzer seed 527
    # of --nn --float64: "cannot convert float infinity to integer").
    x = torch.randn(3, 4, 5, 6)
    index = torch.tensor([2, 0, 3])
    for size in (1, 5):
        assert_compiled_matches(
            lambda x, i: F.max_pool2d(x[:, i, :size, :size], 2, 2, 1), x, index)
        assert_compiled_matches(
            lambda x, i: F.max_pool2d(x[:, i[:1], :size, :size], 2, 2, 1), x, index)


def test_a_padded_gather_checks_only_the_indices_it_reads():
    # F.pad of a gather: where the pad's mask is off, the masked index load
    # gives the fill (-1), which the bounds check took for an index and
    # trapped on (SIGILL, fuzzer seed 132368: "device code raised SIGILL").
    x = torch.randn(8, 33)
    index = torch.randint(0, 33, (8, 3))
    assert_compiled_matches(
        lambda x, i: -F.pad(torch.gather(x, 1, i), (2, 1), value=-1).softmax(0), x, index)


def test_an_indexed_write_leaves_a_concatenation_alone():
    # Inductor computes a cat input straight into the cat's output and its
    # reinplace pass then ran the index_put in that memory: the cat held
    # the updated values (pytorch/pytorch#177821, Inductor CPU alike;
    # fuzzer seeds 1046 and 132873).
    def fn(a0, a1, index, values, a4):
        v0 = torch.minimum(a0, a1)
        v1 = v0.index_put((index,), values, accumulate=True)
        return torch.cat([v0, a4], dim=0), v1.abs()

    assert_compiled_matches(fn, torch.randn(2, 2), torch.randn(2, 2), torch.tensor([1, 0]),
                            torch.randn(2, 2), torch.randn(2, 2))
    assert_compiled_matches(
        lambda a0, i, x: (torch.cat([a0 + 1, (a0 + 1) * 2], 1),
                          torch.index_add(a0 + 1, 1, i, x, alpha=2)),
        torch.randint(-5, 5, (3, 3), dtype=torch.int32), torch.tensor([2, 0]),
        torch.randint(-5, 5, (3, 2), dtype=torch.int32))


def test_index_put_and_scatter_add_accumulate_duplicates():
    x = torch.zeros(10)
    index = torch.randint(0, 10, (200,))
    values = torch.randn(200)
    assert_compiled_matches(lambda x, i, v: x.index_put((i,), v, accumulate=True), x, index,
                            values, atol=1e-4)
    src = torch.randn(6, 40)
    idx = torch.randint(0, 5, (6, 40))
    assert_compiled_matches(lambda s, i: torch.zeros(5, 40, device=s.device).scatter_add(0, i, s), src, idx,
                            atol=1e-4)


EXPANDED_WRITES = {
    "index_add": lambda x, src, idx: x.index_add(0, idx, src),
    "index_copy": lambda x, src, idx: x.index_copy(0, idx[:2], src[:2]),
    "index_fill": lambda x, src, idx: x.index_fill(0, idx[:2], 5.0),
    "index_put": lambda x, src, idx: x.index_put((idx,), src, accumulate=True),
}


@pytest.mark.parametrize("name", sorted(EXPANDED_WRITES))
def test_indexed_write_into_an_expanded_tensor(name):
    # Inductor's reinplace pass wrote into the expand's shared row
    # (pytorch/pytorch#183986: every row got the sum of all updates, on
    # every device); graph_passes.materialize_overlapping_write_targets.
    write = EXPANDED_WRITES[name]

    def fn(src, idx):
        return write(torch.zeros(1, 8, device=src.device).expand(4, -1), src, idx)

    assert_compiled_matches(fn, torch.arange(24.0).view(3, 8), torch.tensor([0, 1, 0]))


def test_index_add_into_an_expanded_gather_float64():
    # The fuzzer's program (--float64, seed 100578): 153 of 459 elements wrong.
    def fn(a, index, i, src):
        rows = torch.gather(a, 1, index)
        return torch.index_add(rows.unsqueeze(0).expand(3, *rows.shape), 1, i, src)

    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 3, 17, generator=g, dtype=torch.float64)
    index = torch.randint(0, 3, (3, 3, 17), generator=g)
    src = torch.randn(3, 1, 17, 3, generator=g, dtype=torch.float64).transpose(-1, -2)
    assert_compiled_matches(fn, a, index, torch.tensor([2]), src)


SCATTERED_SUMS = {
    "scatter_add": lambda out, idx, src: out.scatter_add(1, idx, src),
    "scatter_reduce_sum": lambda out, idx, src: out.scatter_reduce(1, idx, src, "sum"),
    "scatter_reduce_mean": lambda out, idx, src: out.scatter_reduce(1, idx, src, "mean"),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(SCATTERED_SUMS))
def test_16bit_scattered_sums_accumulate_in_float32(name, dtype):
    # Inductor's atomic adds round every add to 16 bits; the eager kernel
    # (as the CPU's) sums in float32: graph_passes.run_16bit_ops_whole.
    # Bit for bit as eager, but for the mean, which Inductor decomposes
    # into a sum and a division (rounded twice, as on every device).
    scatter = SCATTERED_SUMS[name]

    def fn(out, idx, src):
        return scatter(out, idx, src)

    g = torch.Generator().manual_seed(0)
    out = torch.ones(2, 3, dtype=dtype)
    idx = torch.randint(0, 3, (2, 3000), generator=g)
    src = (torch.rand(2, 3000, generator=g) * 0.02).to(dtype)
    args = [t.to("maia") for t in (out, idx, src)]
    torch._dynamo.reset()
    compiled, eager = torch.compile(fn)(*args).cpu(), fn(*args).cpu()
    if name == "scatter_reduce_mean":
        # eager maia divides before it rounds: correctly rounded (the CPU
        # rounds the sum first)
        assert torch.equal(eager, fn(out.double(), idx, src.double()).to(dtype))
        ulp = 2.0 ** -10 if dtype == torch.float16 else 2.0 ** -7
        torch.testing.assert_close(compiled, eager, atol=0, rtol=ulp)
    else:
        assert torch.equal(eager, fn(out, idx, src))  # eager maia is the CPU
        assert torch.equal(compiled, eager)


def test_16bit_cummax_gradient_sums_in_float32():
    # The fuzzer's program (--nn --grad, seed 70646): the gradient of
    # cummax is a scatter_add, whose 16-bit atomic adds had an RMS error
    # 21x eager's.
    x = torch.randn(1, 749, 1, generator=torch.Generator().manual_seed(70646)).half()
    weights = torch.linspace(-1, 1, 749, dtype=torch.float64).view(1, 749, 1)

    def gradient(fn, device):
        leaf = x.to(device).requires_grad_()
        (fn(leaf).double() * weights.to(device)).sum().backward()
        return leaf.grad.cpu()

    values = lambda t: torch.cummax(t, 1).values  # noqa: E731
    torch._dynamo.reset()
    assert torch.equal(gradient(torch.compile(values), "maia"), gradient(values, "cpu"))


def test_embedding_backward_accumulates():
    table = torch.randn(20, 8)
    ids = torch.randint(0, 20, (64,))

    def grad_of_table(table, ids):
        table = table.detach().requires_grad_()
        F.embedding(ids, table).pow(2).sum().backward()
        return table.grad

    assert_compiled_matches(grad_of_table, table, ids, atol=1e-4)


def _device_error_of(call: str) -> str:
    """The error of a compiled call that traps, from a child process: the
    error is sticky for the device of the process that hit it."""
    import subprocess
    import sys

    script = f"""
import torch
torch.maia.set_fallback_warnings(False)
try:
    {call}
    torch.maia.synchronize()
except RuntimeError as error:
    print("ERROR:", error)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300)
    assert "ERROR:" in result.stdout, result.stdout + result.stderr
    assert "illegal instruction" in result.stdout.lower() or "SIGILL" in result.stdout or \
        "trap" in result.stdout.lower()
    return result.stdout


def test_out_of_range_index_is_a_device_error():
    # Like a CUDA device assert: the kernel traps, the stream reports a
    # sticky error naming the kernel.
    out = _device_error_of(
        "torch.compile(lambda i, t: torch.nn.functional.embedding(i, t) + 1)("
        "torch.tensor([1, 7], device='maia'), torch.randn(5, 4, device='maia'))")
    assert "maia_poi_fused" in out


def test_one_hot_compiles_and_its_class_check_traps():
    # one_hot lowers to an in-kernel torch._assert_async (device_assert_async).
    x = torch.tensor([0, 2, 1, 3, 3])
    assert_compiled_matches(lambda x: F.one_hot(x, 4), x)
    assert_compiled_matches(lambda x: F.one_hot(x, 6), x, dynamic=True)
    out = _device_error_of(
        "torch.compile(lambda x: torch.nn.functional.one_hot(x, 3))("
        "torch.tensor([0, 2, 1, 3], device='maia'))")
    assert "assert_async" in out
