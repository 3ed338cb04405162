"""The FFT on the device (runtime/kernels/nn/fft.h, ops/Fft.cpp) against the
CPU's pocketfft/MKL: every torch.fft function over the dtypes the CPU
transforms, lengths with small and large prime factors (the Bluestein
path), padding and trimming, every normalization, several dimensions,
strided and conjugate inputs, out= tensors; the results' layout, which
compiled graphs assert; gradients; stft/istft; the CPU's errors; and no
host fallback anywhere."""

import pytest
import torch

from native_check import assert_native_matches

FFT = torch.fft
REAL = [torch.float32, torch.float64]
COMPLEX = [torch.complex64, torch.complex128]


def sample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


# Powers of two, small primes and their products, one large prime
# (Bluestein: 101), a large prime factor (2 * 67), and 1.
LENGTHS = [1, 2, 7, 8, 12, 15, 30, 64, 101, 134]


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", REAL + COMPLEX, ids=str)
def test_one_dimensional_transforms_of_every_length(dtype, n):
    x = sample((3, n), dtype)
    for fn in (FFT.fft, FFT.ifft, lambda t: FFT.hfft(t, n=2 * n)):
        assert_native_matches(fn, x)
    if not dtype.is_complex:
        assert_native_matches(FFT.rfft, x)
        assert_native_matches(FFT.ihfft, x)
    spectrum = sample((3, n // 2 + 1), COMPLEX[REAL.index(dtype)] if not dtype.is_complex
                      else dtype, seed=1)
    assert_native_matches(lambda s: FFT.irfft(s, n=n), spectrum)


@pytest.mark.parametrize("norm", [None, "ortho", "forward", "backward"])
def test_normalizations_padding_and_trimming(norm):
    x = sample((4, 10), torch.complex64)
    r = sample((4, 10), torch.float32)
    for n in (6, 10, 17):
        assert_native_matches(lambda t: FFT.fft(t, n=n, norm=norm), x)
        assert_native_matches(lambda t: FFT.ifft(t, n=n, dim=0, norm=norm), x)
        assert_native_matches(lambda t: FFT.rfft(t, n=n, norm=norm), r)
        assert_native_matches(lambda t: FFT.irfft(t, n=n, norm=norm), x)
        assert_native_matches(lambda t: FFT.hfft(t, n=n, norm=norm), x)
        assert_native_matches(lambda t: FFT.ihfft(t, n=n, norm=norm), r)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128], ids=str)
def test_multidimensional_transforms(dtype):
    x = sample((2, 6, 5, 4), dtype)
    complex_x = x if dtype.is_complex else x.to(torch.complex64)
    for dim in [(-2, -1), (0, 2), (1, 3, 2), None]:
        assert_native_matches(lambda t: FFT.fftn(t, dim=dim), x)
        assert_native_matches(lambda t: FFT.ifftn(t, dim=dim, norm="ortho"), x)
        if not dtype.is_complex:
            assert_native_matches(lambda t: FFT.rfftn(t, dim=dim), x)
            assert_native_matches(lambda t: FFT.ihfftn(t, dim=dim), x)
        assert_native_matches(lambda t: FFT.irfftn(t, dim=dim), complex_x)
        assert_native_matches(lambda t: FFT.hfftn(t, dim=dim), complex_x)
    assert_native_matches(lambda t: FFT.fft2(t, s=(4, 9)), x)
    assert_native_matches(lambda t: FFT.irfft2(t, s=(7, 8)), complex_x)
    if not dtype.is_complex:
        assert_native_matches(lambda t: FFT.rfft2(t, s=(3, 5), dim=(0, 1)), x)
        assert_native_matches(lambda t: FFT.ihfft2(t), x)


def test_strided_conjugate_and_empty_inputs():
    x = sample((6, 8, 5), torch.complex64)
    assert_native_matches(lambda t: FFT.fft(t.transpose(0, 2), dim=1), x)
    assert_native_matches(lambda t: FFT.fftn(t[::2, 1:], dim=(0, 2)), x)
    assert_native_matches(lambda t: FFT.fft(t.conj()), x)
    assert_native_matches(lambda t: FFT.irfft(t.conj(), dim=0), x)
    assert_native_matches(lambda t: FFT.rfft(t.real.permute(2, 0, 1)), x)
    # The CPU (MKL) refuses an empty batch; maia returns the empty result.
    assert FFT.fft(x[:0].to("maia")).shape == (0, 8, 5)


def test_out_tensors():
    x = sample((5, 12), torch.complex128)
    out = torch.empty(0, dtype=torch.complex128, device="maia")
    torch.maia.reset_fallback_counts()
    result = FFT.fft(x.to("maia"), out=out)
    assert result is out and torch.maia.fallback_counts() == {}
    torch.testing.assert_close(out.cpu(), FFT.fft(x))
    real_out = torch.empty(3, dtype=torch.float64, device="maia")
    FFT.irfft(x.to("maia"), out=real_out)
    torch.testing.assert_close(real_out.cpu(), FFT.irfft(x))


@pytest.mark.parametrize("n", [4096, 1009, 3 * 5 * 7 * 11 * 13])
def test_long_transforms_are_as_accurate_as_the_cpu(n):
    # float64 at a tight tolerance: the error must stay O(eps log n), also
    # through Bluestein's convolution (1009 is prime).
    x = sample((2, n), torch.complex128)
    assert_native_matches(FFT.fft, x, rtol=1e-12, atol=1e-11)
    assert_native_matches(lambda t: FFT.ifft(FFT.fft(t)), x, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(FFT.ifft(FFT.fft(x.to("maia"))).cpu(), x, rtol=1e-12, atol=1e-12)


def test_an_impulse_and_a_single_tone_are_exact_patterns():
    # Independent of the CPU's answer: the transform of a delta is all ones,
    # of exp(2 pi i 3 k / n) a spike of height n at bin 3.
    n = 30
    delta = torch.zeros(n, dtype=torch.complex128)
    delta[0] = 1
    torch.testing.assert_close(FFT.fft(delta.to("maia")).cpu(),
                               torch.ones(n, dtype=torch.complex128))
    k = torch.arange(n, dtype=torch.float64)
    tone = torch.polar(torch.ones(n, dtype=torch.float64), 2 * torch.pi * 3 * k / n)
    expected = torch.zeros(n, dtype=torch.complex128)
    expected[3] = n
    torch.testing.assert_close(FFT.fft(tone.to("maia")).cpu(), expected, atol=1e-12, rtol=0)


@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_gradients_match_the_cpu(dtype):
    x = sample((3, 10), dtype)

    def grads(t, fn):
        t = t.clone().requires_grad_(True)
        out = fn(t)
        weight = sample(out.shape, out.dtype, seed=5).to(out.device)
        (out * weight).abs().sum().backward()
        return t.grad

    for fn in (lambda t: FFT.rfft(t), lambda t: FFT.fft(t, norm="ortho"),
               lambda t: FFT.irfft(FFT.rfft(t) * 2, n=10),
               lambda t: FFT.fftn(t.view(3, 2, 5), dim=(1, 2)).real):
        expected = grads(x, fn)
        torch.maia.reset_fallback_counts()
        actual = grads(x.to("maia"), fn)
        assert torch.maia.fallback_counts() == {}
        torch.testing.assert_close(actual.cpu(), expected)


def test_stft_and_istft():
    signal = sample((2, 400), torch.float32)
    window = torch.hann_window(64)

    def spectrogram(t):
        return torch.stft(t, 64, hop_length=16, window=window.to(t.device), return_complex=True)

    assert_native_matches(spectrogram, signal)

    def round_trip(t):
        return torch.istft(spectrogram(t), 64, hop_length=16, window=window.to(t.device),
                           length=400)

    # istft's overlap-add (unfold_backward) still runs on the host.
    torch.testing.assert_close(round_trip(signal.to("maia")).cpu(), round_trip(signal),
                               atol=1e-5, rtol=1e-5)


def test_the_cpus_errors():
    half = torch.randn(8, device="maia").half()
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):
        FFT.fft(half)
    with pytest.raises(RuntimeError, match="doesn't support tensors of type: Half"):
        torch._fft_c2c(half.to(torch.complex32), [0], 0, True)
    spectrum = torch.randn(3, 5, dtype=torch.complex64, device="maia")
    with pytest.raises(RuntimeError, match="holds 5 frequencies; a real signal of 20 points"):
        torch._fft_c2r(spectrum, [1], 0, 20)
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        FFT.irfft(spectrum, n=0)


def test_compiled_transforms_run_the_device_kernels():
    def fn(x):
        spectrum = FFT.rfft(x * 2, dim=-1)
        return FFT.irfft(spectrum * spectrum.abs(), n=x.shape[-1]) + 1

    x = sample((4, 48), torch.float32)
    compiled = torch.compile(fn)
    torch.maia.reset_fallback_counts()
    actual = compiled(x.to("maia"))
    assert torch.maia.fallback_counts() == {}
    torch.testing.assert_close(actual.cpu(), fn(x), rtol=1e-4, atol=1e-4)
