// The STREAM triad a = b + scalar * c on host threads: the hardware bound the
// bandwidth benchmarks compare maia against (maia-driver-bench links it,
// eager_bench.py loads it with ctypes as libmaia_stream_triad.so).
//
// Two forms: temporal stores (what a plain C loop compiles to; every stored
// line is first read for ownership, the write-allocate) and non-temporal
// stores (AVX-512 `_mm512_stream_ps` when the host has it, else AVX2
// `_mm256_stream_ps`, then `_mm_sfence`): the written lines go to memory
// without that read, so the triad moves 3 arrays instead of 4. STREAM counts
// 3 arrays (2 read, 1 written) in both cases.
#ifndef MAIA_BENCH_STREAM_TRIAD_H
#define MAIA_BENCH_STREAM_TRIAD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// a[i] = b[i] + scalar * c[i] for i < n, split into `threads` contiguous
/// blocks of whole cache lines, one per host thread (the caller runs one;
/// the others are started and joined by this call, so none spins on after
/// it). nontemporal selects the store kind. Returns 0, or -1 for bad
/// arguments (null arrays with n > 0, threads < 1).
int maia_stream_triad(float* a, const float* b, const float* c, float scalar, int64_t n,
                      int threads, int nontemporal);

#ifdef __cplusplus
}
#endif

#endif  // MAIA_BENCH_STREAM_TRIAD_H
