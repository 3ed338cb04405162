// A one-dimensional complex discrete Fourier transform of any length, in
// double precision: recursive mixed-radix Cooley-Tukey over the length's
// prime factors (a dedicated radix-2 butterfly, a generic radix-p one for
// odd primes), and Bluestein's chirp-z algorithm over a power-of-two
// transform when a prime factor is large, so that no length costs O(n^2).
// Twiddles are computed directly from exact integer angles (no recurrence),
// which keeps the error O(eps log n) like pocketfft's.
//
// A plan is built once per program and kernel call (O(n) twiddles; the
// Bluestein plan also transforms its chirp) and applied to every line the
// program owns. Unnormalized: forward uses exp(-2 pi i jk/n), inverse
// exp(+2 pi i jk/n), as ATen's _fft_c2c with normalization "none".
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <memory>
#include <numbers>
#include <vector>

namespace maia_nn {

using Complex = std::complex<double>;

class FftPlan {
 public:
  FftPlan(int64_t n, bool forward) : n_(n), forward_(forward) {
    int64_t rest = n;
    for (int64_t p = 2; p * p <= rest; p += (p == 2 ? 1 : 2))
      while (rest % p == 0) {
        factors_.push_back(p);
        rest /= p;
      }
    if (rest > 1) factors_.push_back(rest);
    if (!factors_.empty() && factors_.back() > kLargestDirectRadix) {
      prepareBluestein();
    } else {
      twiddles_ = unitRoots(n, forward);
    }
  }

  int64_t size() const { return n_; }

  /// line (n values) := its transform; scratch must hold n values.
  void apply(Complex* line, std::vector<Complex>& scratch) const {
    if (n_ <= 1) return;
    if (bluestein_) {
      applyBluestein(line);
      return;
    }
    scratch.resize(n_);
    transform(line, 1, scratch.data(), n_, 0, 1);
    std::copy(scratch.begin(), scratch.begin() + n_, line);
  }

 private:
  // Radices up to this run as generic butterflies (O(p) per output); a
  // larger prime factor switches the whole length to Bluestein.
  static constexpr int64_t kLargestDirectRadix = 61;

  /// exp(sign 2 pi i k / n) for k in [0, n).
  static std::vector<Complex> unitRoots(int64_t n, bool forward) {
    std::vector<Complex> roots(n);
    const double sign = forward ? -1.0 : 1.0;
    for (int64_t k = 0; k < n; ++k) {
      const double angle = 2 * std::numbers::pi * static_cast<double>(k) / n;
      roots[k] = Complex(std::cos(angle), sign * std::sin(angle));
    }
    return roots;
  }

  /// out[0, n) := DFT of in[0], in[stride], ...; the sub-transforms of
  /// length n/p land in out's p consecutive blocks, then one butterfly
  /// pass combines them in place. twiddle_step maps this level's roots
  /// of unity of order n onto the full-length table.
  void transform(const Complex* in, int64_t stride, Complex* out, int64_t n, size_t level,
                 int64_t twiddle_step) const {
    if (n == 1) {
      out[0] = in[0];
      return;
    }
    const int64_t p = factors_[level], m = n / p;
    for (int64_t r = 0; r < p; ++r)
      transform(in + r * stride, stride * p, out + r * m, m, level + 1, twiddle_step * p);
    if (p == 2) {
      for (int64_t k = 0; k < m; ++k) {
        const Complex a = out[k], b = out[k + m] * twiddles_[k * twiddle_step];
        out[k] = a + b;
        out[k + m] = a - b;
      }
      return;
    }
    Complex gathered[kLargestDirectRadix];
    const int64_t root_of_p = m * twiddle_step;  // exp(sign 2 pi i / p)
    for (int64_t k = 0; k < m; ++k) {
      for (int64_t r = 0; r < p; ++r)
        gathered[r] = out[r * m + k] * twiddles_[r * k * twiddle_step];
      for (int64_t q = 0; q < p; ++q) {
        Complex sum = gathered[0];
        for (int64_t r = 1; r < p; ++r) sum += gathered[r] * twiddles_[(r * q % p) * root_of_p];
        out[q * m + k] = sum;
      }
    }
  }

  // Bluestein: X_k = c_k sum_j (x_j c_j) conj(c_{k-j}) with the chirp
  // c_j = exp(sign pi i j^2 / n), a circular convolution of power-of-two
  // length >= 2n - 1 done by the radix-2 plans.
  void prepareBluestein() {
    int64_t m = 1;
    while (m < 2 * n_ - 1) m *= 2;
    chirp_.resize(n_);
    const double sign = forward_ ? -1.0 : 1.0;
    for (int64_t j = 0; j < n_; ++j) {
      // j^2 mod 2n keeps the angle small and exact.
      const auto wrapped = static_cast<int64_t>(
          (static_cast<unsigned __int128>(j) * j) % static_cast<unsigned __int128>(2 * n_));
      const double angle = std::numbers::pi * static_cast<double>(wrapped) / n_;
      chirp_[j] = Complex(std::cos(angle), sign * std::sin(angle));
    }
    bluestein_forward_ = std::make_unique<FftPlan>(m, true);
    bluestein_inverse_ = std::make_unique<FftPlan>(m, false);
    kernel_spectrum_.assign(m, Complex(0));
    kernel_spectrum_[0] = std::conj(chirp_[0]);
    for (int64_t j = 1; j < n_; ++j)
      kernel_spectrum_[j] = kernel_spectrum_[m - j] = std::conj(chirp_[j]);
    std::vector<Complex> scratch;
    bluestein_forward_->apply(kernel_spectrum_.data(), scratch);
    bluestein_ = true;
  }

  void applyBluestein(Complex* line) const {
    const int64_t m = bluestein_forward_->size();
    std::vector<Complex> work(m, Complex(0)), scratch;
    for (int64_t j = 0; j < n_; ++j) work[j] = line[j] * chirp_[j];
    bluestein_forward_->apply(work.data(), scratch);
    for (int64_t k = 0; k < m; ++k) work[k] *= kernel_spectrum_[k];
    bluestein_inverse_->apply(work.data(), scratch);
    const double scale = 1.0 / static_cast<double>(m);
    for (int64_t k = 0; k < n_; ++k) line[k] = work[k] * chirp_[k] * scale;
  }

  int64_t n_;
  bool forward_;
  std::vector<int64_t> factors_;
  std::vector<Complex> twiddles_;
  bool bluestein_ = false;
  std::vector<Complex> chirp_, kernel_spectrum_;
  std::unique_ptr<FftPlan> bluestein_forward_, bluestein_inverse_;
};

}  // namespace maia_nn
