// maia-fma-peak: the fp32 FMA peak of this host on T threads, the hardware
// bound a GEMM is compared against (gemm_bench.py runs it in the same run).
// Each thread keeps 12 independent vector FMA chains in flight (enough to
// cover the FMA latency on two pipes), on AVX-512 when the host has it, else
// AVX2; the best of R timed runs is printed as JSON.
//
// Usage: maia-fma-peak [--threads T] [--reps R]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr long kIterations = 20'000'000;
constexpr int kChains = 12;

/// Runs kIterations rounds of kChains FMAs on W-lane vectors; returns the
/// lanes' sum so the work cannot be removed.
__attribute__((target("avx512f"))) float fmaLoop512() {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < kIterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  // Stored and added here: _mm512_reduce_add_ps trips GCC 12's false
  // -Wuninitialized (bug 105593).
  alignas(64) float lanes[16];
  float sum = 0;
  for (int c = 0; c < kChains; ++c) {
    _mm512_store_ps(lanes, acc[c]);
    for (float lane : lanes) sum += lane;
  }
  return sum;
}

__attribute__((target("avx2,fma"))) float fmaLoop256() {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < kIterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  alignas(32) float lanes[8];
  float sum = 0;
  for (int c = 0; c < kChains; ++c) {
    _mm256_store_ps(lanes, acc[c]);
    for (float lane : lanes) sum += lane;
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, reps = 3;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: maia-fma-peak [--threads T] [--reps R]\n");
      return 2;
    }
  }
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const int lanes = avx512 ? 16 : 8;
  double best = 1e30;
  volatile float sink = 0;
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    std::vector<float> sums(threads);
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { sums[t] = avx512 ? fmaLoop512() : fmaLoop256(); });
    for (auto& thread : pool) thread.join();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                        start).count());
    for (float s : sums) sink = sink + s;
  }
  const double flops = 2.0 * kChains * lanes * static_cast<double>(kIterations) * threads;
  std::printf("{\"threads\": %d, \"isa\": \"%s\", \"gflops\": %.1f}\n", threads,
              avx512 ? "avx512" : "avx2", flops / best * 1e-9);
  return 0;
}
