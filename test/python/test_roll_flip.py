"""flip and roll on maia (and fliplr, flipud, rot90, fftshift through them)
against the CPU, bit for bit: every dtype (complex included), one and several dims, negative
and oversized shifts, the flattened roll, empty, 0-dim and 1-element
tensors, strided and channels-last inputs (with the CPU's output strides),
more dimensions than a kernel memref has, tensors split over several
programs, and autograd; and that none of it reaches the host fallback."""

import pytest
import torch

ALL_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
              torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool]
COPY_DTYPES = ALL_DTYPES + [torch.complex64, torch.complex128]  # complex: copies, no arithmetic
BITS = {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16,
        torch.bfloat16: torch.int16}


@pytest.fixture(autouse=True)
def no_roll_fallback():
    torch.maia.reset_fallback_counts()
    yield
    hits = {name: n for name, n in torch.maia.fallback_counts().items()
            if name.split(".")[0].removeprefix("aten::") in ("flip", "roll")}
    assert not hits, f"host fallbacks: {hits}"


def make(shape, dtype):
    if dtype == torch.bool:
        return torch.randint(0, 2, shape).bool()
    if dtype.is_floating_point or dtype.is_complex:
        x = torch.randn(shape, dtype=dtype) if dtype.is_complex else torch.randn(shape).to(dtype)
        if x.numel() > 2:
            x.view(-1)[:2] = torch.tensor([float("nan"), -0.0])
        return x
    return torch.randint(0, 100, shape, dtype=dtype)


def check(fn, x):
    expected = fn(x)
    actual = fn(x.to("maia"))
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    a, e = actual.cpu(), expected
    if e.dtype.is_complex:
        a, e = torch.view_as_real(a), torch.view_as_real(e)
    if e.dtype in BITS:
        a, e = a.view(BITS[e.dtype]), e.view(BITS[e.dtype])
    assert torch.equal(a, e)
    assert actual.stride() == expected.stride()


@pytest.mark.parametrize("dtype", COPY_DTYPES, ids=str)
def test_flip(dtype):
    x = make((3, 4, 5), dtype)
    for dims in [(0,), (1,), (2,), (-1,), (0, 2), (2, 0, 1), ()]:
        check(lambda t: torch.flip(t, dims), x)
    check(torch.fliplr, x[0])
    check(torch.flipud, x[0])
    check(lambda t: torch.rot90(t, 1, (0, 1)), x[0])


@pytest.mark.parametrize("dtype", COPY_DTYPES, ids=str)
def test_roll(dtype):
    x = make((4, 5, 6), dtype)
    for shifts, dims in [(1, 0), (-2, 1), (13, 2), (-13, -1), (0, 1), ((1, -2), (0, 2)),
                         ((2, 3, -1), (0, 1, 2)), ((1, 2), (1, 1))]:
        check(lambda t: torch.roll(t, shifts, dims), x)
    for shifts in (3, -7, 0, 121):  # no dims: the flattened tensor
        check(lambda t: torch.roll(t, shifts), x)


@pytest.mark.parametrize("shape", [(0,), (1,), (3, 0, 2), (), (1, 1, 7)], ids=str)
def test_empty_scalar_and_single_element(shape):
    x = make(shape, torch.float32)
    dims = tuple(range(len(shape)))
    check(lambda t: torch.flip(t, dims), x)
    check(lambda t: torch.roll(t, 1), x)
    if shape and 0 not in shape:
        check(lambda t: torch.roll(t, [1] * len(shape), dims), x)


@pytest.mark.parametrize("kind", ["transposed", "sliced", "channels_last", "expanded"])
def test_strided_inputs(kind):
    x = make((2, 3, 4, 5), torch.float32)
    if kind == "transposed":
        x = x.transpose(1, 3)
    elif kind == "sliced":
        x = make((2, 3, 4, 11), torch.float32)[..., 1::2]
    elif kind == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    else:
        x = make((2, 1, 4, 5), torch.float32).expand(2, 3, 4, 5)
    for dims in [(1,), (3,), (0, 2, 3)]:
        check(lambda t: torch.flip(t, dims), x)
        check(lambda t: torch.roll(t, [2] * len(dims), dims), x)
    check(lambda t: torch.roll(t, -5), x)


def test_more_dimensions_than_a_kernel_takes():
    x = make((2, 3, 2, 2, 3, 2, 2, 2, 3, 2), torch.float64)
    dims = tuple(range(10))
    check(lambda t: torch.flip(t, dims[::2]), x)
    check(lambda t: torch.roll(t, [1] * 10, dims), x)  # nothing merges: 10 dimensions


def test_large_tensors_split_over_programs():
    x = make((300, 1000), torch.float32)
    check(lambda t: torch.flip(t, (0, 1)), x)
    check(lambda t: torch.roll(t, (7, -333), (0, 1)), x)
    check(lambda t: torch.roll(t, 12345), x)


def test_fftshift_and_out_variants():
    x = make((6, 7), torch.float32)
    check(torch.fft.fftshift, x)
    check(torch.fft.ifftshift, x)
    out = torch.empty(0, device="maia")
    torch.ops.aten.flip.out(x.to("maia"), (0,), out=out)
    check(lambda t: out if t.device.type == "maia" else torch.flip(t, (0,)), x)


def test_errors_are_the_cpus():
    xm = torch.randn(3, 4, device="maia")
    with pytest.raises(RuntimeError, match="appears multiple times"):
        torch.flip(xm, (0, 0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.flip(xm, (2,))
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        torch.roll(xm, (1, 2), (0,))
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.roll(xm, 1, 5)


def test_backward():
    x = torch.randn(4, 5, dtype=torch.float64)
    grad = torch.randn(4, 5, dtype=torch.float64)
    for fn in (lambda t: torch.flip(t, (1,)), lambda t: torch.roll(t, (1, -2), (0, 1))):
        xc = x.clone().requires_grad_()
        fn(xc).backward(grad)
        xm = x.to("maia").requires_grad_()
        fn(xm).backward(grad.to("maia"))
        assert torch.equal(xm.grad.cpu(), xc.grad)
