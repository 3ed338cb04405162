"""Complex (complex32/64/128) and wide unsigned (uint16/32/64) maia tensors:
storage, copies and conversions, views, conjugate and negative views,
printing and serialization on the device; every operator the CPU has for
them through the host fallback (ops/HostRouting.h); the same errors as the
CPU where it has none."""

import io

import pytest
import torch

COMPLEX = [torch.complex32, torch.complex64, torch.complex128]
UNSIGNED = [torch.uint16, torch.uint32, torch.uint64]


def sample(dtype, shape=(5, 7), seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        parts = torch.randn(*shape, 2, generator=g, dtype=torch.float64)
        return torch.view_as_complex(parts).to(dtype)
    return torch.randint(0, 1000, shape, generator=g).to(dtype)


def assert_same(actual, expected):
    """Bit-equal values; complex32 compared through its parts (the CPU has no
    comparison kernels for it)."""
    assert actual.device.type == "cpu" and actual.dtype == expected.dtype
    if actual.dtype == torch.complex32:
        actual, expected = torch.view_as_real(actual), torch.view_as_real(expected)
    assert actual.shape == expected.shape
    assert torch.equal(actual.to(torch.float64) if actual.dtype.is_floating_point else actual,
                       expected.to(torch.float64) if expected.dtype.is_floating_point
                       else expected)


@pytest.mark.parametrize("dtype", COMPLEX + UNSIGNED, ids=str)
class TestStorage:
    def test_round_trip_and_device_copies(self, dtype):
        x = sample(dtype)
        m = x.to("maia")
        assert m.dtype == dtype and m.device.type == "maia"
        assert_same(m.cpu(), x)
        assert_same(m.to("maia:1").cpu(), x)  # across devices
        assert_same(m.t().contiguous().cpu(), x.t().contiguous())  # strided, on the device
        assert_same(m[1::2, ::3].cpu(), x[1::2, ::3])
        dst = torch.zeros(7, 5, dtype=dtype, device="maia")
        dst.t().copy_(m)  # into a strided view, on the device
        assert_same(dst.cpu(), x.t())

    def test_printing_matches_the_cpu(self, dtype):
        x = sample(dtype, (3, 4))
        text = repr(x.to("maia"))
        assert "device='maia:0'" in text
        # The same text apart from the device (where a line break falls may move).
        flat = " ".join(text.split()).replace(" device='maia:0',", "")
        assert flat.replace(", device='maia:0'", "") == " ".join(repr(x).split())

    def test_serialization_keeps_device_and_values(self, dtype):
        x = sample(dtype)
        buffer = io.BytesIO()
        torch.save({"t": x.to("maia"), "v": x.to("maia")[1:3]}, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer)
        assert loaded["t"].device == torch.device("maia", 0)
        assert_same(loaded["t"].cpu(), x)
        assert_same(loaded["v"].cpu(), x[1:3])

    def test_fill_and_factories(self, dtype):
        value = 3 - 2j if dtype.is_complex else 7
        full = torch.full((1000,), value, dtype=dtype, device="maia")
        assert_same(full.cpu(), torch.full((1000,), value, dtype=dtype))
        assert_same(torch.zeros(9, dtype=dtype, device="maia").cpu(), torch.zeros(9, dtype=dtype))


@pytest.mark.parametrize("src", COMPLEX + UNSIGNED + [torch.float32, torch.int64], ids=str)
@pytest.mark.parametrize("dst", COMPLEX + UNSIGNED + [torch.float64, torch.int32], ids=str)
def test_conversions_match_the_cpu(src, dst):
    if src == dst:
        return
    x = sample(src, (4, 6))  # integers below 1000: exact in every dtype here
    expected = x.to(dst)
    m = x.to("maia").t()  # strided, so the conversion runs on the device
    assert_same(m.to(dst).cpu(), expected.t())


# Views with the conjugate and/or negative bit set.
MATH_BIT_VIEWS = [
    lambda t: t.conj(),
    lambda t: torch._neg_view(t),
    lambda t: torch._neg_view(t.conj()),
    lambda t: t.conj().t(),
]
MATH_BIT_VIEW_IDS = ["conj", "neg", "neg_conj", "conj_strided"]


class TestComplexViews:
    def test_view_as_real_and_complex_are_views_of_device_memory(self):
        m = sample(torch.complex64).to("maia")
        parts = torch.view_as_real(m)
        assert parts.untyped_storage().data_ptr() == m.untyped_storage().data_ptr()
        parts[..., 1] = 0  # writes through to m
        torch.testing.assert_close(m.imag.cpu(), torch.zeros(5, 7))
        back = torch.view_as_complex(parts)
        assert back.untyped_storage().data_ptr() == m.untyped_storage().data_ptr()

    def test_unfold_is_a_view(self):
        x = torch.arange(10.0, device="maia")
        windows = x.unfold(0, 3, 2)
        assert windows.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        windows[0, 0] = -1
        assert x[0].item() == -1

    def test_every_cpu_view_operator_has_a_maia_kernel(self):
        """View operators cannot fall back to the host (the result would be a
        copy, not a view): each one with a CPU kernel needs a maia kernel or a
        composite one."""
        C = torch._C
        missing = []
        for name in C._dispatch_get_all_op_names():
            if not name.startswith("aten::") or "nested" in name:
                continue
            for schema in C._jit_get_schemas_for_operator(name):
                if not schema.returns or schema.is_mutable:
                    continue
                alias = schema.returns[0].alias_info
                if alias is None or alias.is_write:
                    continue
                full = name + ("." + schema.overload_name if schema.overload_name else "")
                try:
                    has = {k: C._dispatch_has_kernel_for_dispatch_key(full, k)
                           for k in ("CPU", "PrivateUse1", "CompositeImplicitAutograd",
                                     "CompositeExplicitAutograd")}
                except RuntimeError:
                    continue
                if has["CPU"] and not any(has[k] for k in list(has)[1:]):
                    missing.append(full)
        assert missing == []

    @pytest.mark.parametrize("make", MATH_BIT_VIEWS, ids=MATH_BIT_VIEW_IDS)
    @pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
    def test_conjugate_and_negative_views_copy_their_values(self, make, dtype):
        x = sample(dtype)
        view, expected = make(x.to("maia")), make(x)
        torch.testing.assert_close(view.cpu(), expected.resolve_conj().resolve_neg())
        torch.testing.assert_close(view.resolve_conj().resolve_neg().cpu(),
                                   expected.resolve_conj().resolve_neg())
        torch.testing.assert_close(view.clone().cpu(), expected.clone())
        dst = torch.empty_like(view.resolve_conj().resolve_neg())
        dst.copy_(view)
        torch.testing.assert_close(dst.cpu(), expected.resolve_conj().resolve_neg())

    @pytest.mark.parametrize("make", MATH_BIT_VIEWS, ids=MATH_BIT_VIEW_IDS)
    @pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
    def test_conjugate_and_negative_views_resolve_on_the_device(self, make, dtype):
        """The conj and neg kernels compute the values: no host round trip."""
        view = make(sample(dtype).to("maia"))
        torch.maia.synchronize()
        with torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.PrivateUse1]) as prof:
            view.resolve_conj().resolve_neg()
            torch.maia.synchronize()
        names = {event.key for event in prof.key_averages()}
        assert "Memcpy DtoH" not in names and "Memcpy HtoD" not in names
        assert any(name.startswith(("conj_", "neg_")) for name in names), names


COMPLEX_OPS = {
    "add": lambda a, b: a + b,
    "sub_alpha": lambda a, b: torch.sub(a, b, alpha=2),
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "mul_real_scalar": lambda a, b: a * 2.5,
    "add_complex_scalar": lambda a, b: a + (1 - 3j),
    "mixed_with_float": lambda a, b: a * b.real,
    "abs": lambda a, b: a.abs(),
    "angle": lambda a, b: a.angle(),
    "exp": lambda a, b: a.exp(),
    "sum": lambda a, b: a.sum(1),
    "mean": lambda a, b: a.mean(),
    "matmul": lambda a, b: a @ b.t(),
    "eq": lambda a, b: a == b,
    "cat": lambda a, b: torch.cat([a, b]),
    "index": lambda a, b: a[[0, 3]],
    "polar": lambda a, b: torch.polar(a.abs(), b.angle()),
    "complex": lambda a, b: torch.complex(a.real, b.imag),
    "fft": lambda a, b: torch.fft.fft(a),
    "eigvals": lambda a, b: torch.linalg.eigvals(a[:, :5] @ b[:, :5].t()),
}


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
@pytest.mark.parametrize("name", COMPLEX_OPS)
def test_complex_operators_match_the_cpu(dtype, name):
    a, b = sample(dtype, seed=1), sample(dtype, seed=2)
    fn = COMPLEX_OPS[name]
    expected = fn(a, b)
    actual = fn(a.to("maia"), b.to("maia"))
    assert actual.device.type == "maia"
    torch.testing.assert_close(actual.cpu(), expected)


UNSIGNED_OPS = {
    "eq": lambda u: u == u,
    "add": lambda u: u + u,
    "sum": lambda u: u.sum(),
    "max": lambda u: u.max(),
    "bitwise_and": lambda u: u & u,
    "shift": lambda u: u << 1,
    "sort": lambda u: torch.sort(u.flatten()).values,
    "to_int64": lambda u: u.to(torch.int64) * 3,
    "cat": lambda u: torch.cat([u, u]),
}


@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
@pytest.mark.parametrize("name", UNSIGNED_OPS)
def test_unsigned_operators_behave_as_on_the_cpu(dtype, name):
    """The CPU computes some operators for these dtypes and refuses others:
    maia gives the same values, or the same error."""
    u = sample(dtype)
    fn = UNSIGNED_OPS[name]
    try:
        expected = fn(u)
    except Exception as error:  # noqa: BLE001 - the CPU's own refusal
        with pytest.raises(type(error), match=str(error).split("\n")[0][:40]
                           .replace("(", r"\(").replace(")", r"\)")):
            fn(u.to("maia"))
        return
    assert_same(fn(u.to("maia")).cpu(), expected)


def test_operators_without_kernels_run_on_the_host_and_are_counted():
    torch.maia.reset_fallback_counts()
    a = sample(torch.complex64).to("maia")
    f = torch.ones(3, device="maia")
    (f.exp() + f).cpu()
    (a + a).exp().cpu()  # complex arithmetic, exp, log, ... have native kernels
    counts = torch.maia.fallback_counts()
    assert "aten::exp" not in counts and "aten::add.Tensor" not in counts
    a.tan().cpu()  # complex trigonometric functions do not (yet)
    assert "aten::tan" in torch.maia.fallback_counts()


def test_random_complex_tensors_are_drawn_on_the_device():
    torch.maia.manual_seed(0)
    torch.maia.reset_fallback_counts()
    z = torch.randn(100_000, dtype=torch.complex64, device="maia")
    assert not any("normal" in op for op in torch.maia.fallback_counts())
    parts = torch.view_as_real(z).cpu()
    # Each part has variance 1/2, so that |z|^2 has mean 1 (CPU convention).
    torch.testing.assert_close(parts.var(0), torch.tensor([0.5, 0.5]), atol=0.02, rtol=0)
    u = torch.rand(1000, dtype=torch.complex128, device="maia")
    parts = torch.view_as_real(u).cpu()
    assert parts.min() >= 0 and parts.max() < 1


def test_device_capability_lists_every_maia_dtype():
    dtypes = torch.maia.get_device_capability()["supported_dtypes"]
    assert set(COMPLEX + UNSIGNED) <= dtypes
    assert torch.float8_e4m3fn not in dtypes
