// Streaming (non-temporal) stores for large elementwise outputs.
//
// An output larger than the caches leaves them before the next operator
// reads it. Written with ordinary stores, each of its lines is first read
// for ownership (write-allocate): one more array of memory traffic, 4
// instead of 3 for an add, 3 instead of 2 for a copy. Streaming stores
// write whole lines to memory without that read. Below the threshold they
// lose: the output would have stayed in cache for its reader, and they send
// it to memory regardless.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace maia_eager {

/// Outputs of at least this many bytes are written with streaming stores.
/// Measured on 2 vCPUs (docs/runtime.md, "Streaming stores"): from 8 MiB a
/// triad's output is written 1.1-1.9x faster with them in every sweep;
/// below, the sweeps disagree, and a smaller output may still be in cache
/// for the next operator.
constexpr int64_t kStreamingStoreMinBytes = int64_t{8} << 20;

/// Results are computed into a buffer of this size (it stays in L1), then
/// streamed out: one form for every element type, vectorized as before.
constexpr int64_t kStreamBlockBytes = 2048;
constexpr uintptr_t kStreamAlignment = 32;  // of an AVX2 streaming store

/// Copies `bytes` (a multiple of 32) from the 64-byte aligned src to the
/// 32-byte aligned dst with streaming stores.
inline void streamBytes(void* dst, const void* src, int64_t bytes) {
  auto* to = static_cast<__m256i*>(dst);
  const auto* from = static_cast<const __m256i*>(src);
  for (int64_t i = 0; i < bytes / 32; ++i) _mm256_stream_si256(to + i, _mm256_load_si256(from + i));
}

/// Writes the run out[0, n): produce(dst, first, count) computes the
/// results of elements [first, first + count) into dst[0, count). With
/// `streaming`, the aligned middle of the run is produced block by block
/// into an L1 buffer and streamed to out; the unaligned head and the tail
/// are produced in place. The caller fences (_mm_sfence) before the kernel
/// returns: streaming stores are weakly ordered.
template <typename Out, typename Produce>
void writeRun(Out* out, int64_t n, bool streaming, Produce&& produce) {
  constexpr int64_t kBlock = kStreamBlockBytes / static_cast<int64_t>(sizeof(Out));
  static_assert(kStreamBlockBytes % sizeof(Out) == 0 && kStreamAlignment % sizeof(Out) == 0,
                "an element size that divides a streamed block and its alignment");
  const auto address = reinterpret_cast<uintptr_t>(out);
  if (!streaming || n < 2 * kBlock || address % sizeof(Out) != 0) {
    produce(out, 0, n);
    return;
  }
  const int64_t head =
      static_cast<int64_t>((kStreamAlignment - address % kStreamAlignment) % kStreamAlignment /
                           sizeof(Out));
  produce(out, 0, head);
  // Raw bytes, not Out[]: some element types (std::complex) would be
  // constructed, i.e. zeroed, on every run.
  alignas(64) unsigned char block[kStreamBlockBytes];
  int64_t i = head;
  for (; i + kBlock <= n; i += kBlock) {
    produce(reinterpret_cast<Out*>(block), i, kBlock);
    streamBytes(out + i, block, kStreamBlockBytes);
  }
  produce(out + i, i, n - i);
}

}  // namespace maia_eager
