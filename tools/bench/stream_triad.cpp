// The host STREAM triad (stream_triad.h).
#include "stream_triad.h"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kFloatsPerLine = 16;  // 64-byte cache lines

__attribute__((always_inline)) inline void triadTemporal(float* __restrict a,
                                                         const float* __restrict b,
                                                         const float* __restrict c, float scalar,
                                                         int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) a[i] = b[i] + scalar * c[i];
}

// The temporal loop vectorized as wide as the streaming one, so that the
// two differ in their stores only (an SSE2 loop would lose where the
// arrays fit in cache, and the sweep of maia-driver-bench --only stores
// would blame the stores).
__attribute__((target("avx512f"))) void triadTemporal512(float* __restrict a,
                                                         const float* __restrict b,
                                                         const float* __restrict c, float scalar,
                                                         int64_t begin, int64_t end) {
  triadTemporal(a, b, c, scalar, begin, end);
}

__attribute__((target("avx2"))) void triadTemporal256(float* __restrict a,
                                                      const float* __restrict b,
                                                      const float* __restrict c, float scalar,
                                                      int64_t begin, int64_t end) {
  triadTemporal(a, b, c, scalar, begin, end);
}

void triadTemporalBaseline(float* __restrict a, const float* __restrict b,
                           const float* __restrict c, float scalar, int64_t begin, int64_t end) {
  triadTemporal(a, b, c, scalar, begin, end);
}

/// Elements before a's first address aligned to `bytes`, within [begin, end).
int64_t alignedStart(const float* a, int64_t begin, int64_t end, uintptr_t bytes) {
  int64_t i = begin;
  while (i < end && reinterpret_cast<uintptr_t>(a + i) % bytes != 0) ++i;
  return i;
}

// Streaming stores need an aligned destination: the unaligned head and the
// tail shorter than a vector use ordinary stores.
__attribute__((target("avx512f"))) void triadStream512(float* __restrict a,
                                                       const float* __restrict b,
                                                       const float* __restrict c, float scalar,
                                                       int64_t begin, int64_t end) {
  int64_t i = alignedStart(a, begin, end, 64);
  triadTemporal(a, b, c, scalar, begin, i);
  const __m512 k = _mm512_set1_ps(scalar);
  for (; i + 16 <= end; i += 16)
    _mm512_stream_ps(a + i, _mm512_add_ps(_mm512_loadu_ps(b + i),
                                          _mm512_mul_ps(k, _mm512_loadu_ps(c + i))));
  triadTemporal(a, b, c, scalar, i, end);
  _mm_sfence();
}

__attribute__((target("avx2"))) void triadStream256(float* __restrict a,
                                                    const float* __restrict b,
                                                    const float* __restrict c, float scalar,
                                                    int64_t begin, int64_t end) {
  int64_t i = alignedStart(a, begin, end, 32);
  triadTemporal(a, b, c, scalar, begin, i);
  const __m256 k = _mm256_set1_ps(scalar);
  for (; i + 8 <= end; i += 8)
    _mm256_stream_ps(a + i, _mm256_add_ps(_mm256_loadu_ps(b + i),
                                          _mm256_mul_ps(k, _mm256_loadu_ps(c + i))));
  triadTemporal(a, b, c, scalar, i, end);
  _mm_sfence();
}

using TriadBlock = void (*)(float* __restrict, const float* __restrict, const float* __restrict,
                            float, int64_t, int64_t);

/// The widest form of the host: streaming or temporal stores.
TriadBlock hostTriad(bool nontemporal) {
  if (__builtin_cpu_supports("avx512f")) return nontemporal ? triadStream512 : triadTemporal512;
  if (__builtin_cpu_supports("avx2")) return nontemporal ? triadStream256 : triadTemporal256;
  return triadTemporalBaseline;  // no streaming form: this host's bound is the temporal one
}

}  // namespace

extern "C" int maia_stream_triad(float* a, const float* b, const float* c, float scalar,
                                 int64_t n, int threads, int nontemporal) {
  if (threads < 1 || n < 0 || (n > 0 && (a == nullptr || b == nullptr || c == nullptr)))
    return -1;
  static const TriadBlock streaming = hostTriad(true), temporal = hostTriad(false);
  const TriadBlock block = nontemporal ? streaming : temporal;
  // Block boundaries on whole cache lines, so that no two threads write
  // the same line and each block's streaming stores start aligned.
  const int64_t lines = (n + kFloatsPerLine - 1) / kFloatsPerLine;
  auto boundary = [&](int t) {
    int64_t i = lines * t / threads * kFloatsPerLine;
    return i < n ? i : n;
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  for (int t = 1; t < threads; ++t)
    pool.emplace_back([=] { block(a, b, c, scalar, boundary(t), boundary(t + 1)); });
  block(a, b, c, scalar, boundary(0), boundary(1));
  for (std::thread& thread : pool) thread.join();
  return 0;
}
