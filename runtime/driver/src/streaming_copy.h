// Copies and fills whose destination is written with streaming
// (non-temporal) stores.
#pragma once

#include <cstddef>
#include <cstdint>

namespace maia::driver {

/// Copies and fills (the total size of one command) of at least this many
/// bytes stream their stores. A copy's destination that large leaves the caches
/// before it is read again; streaming stores skip reading each destination
/// line before writing it (3 arrays of traffic become 2). Smaller
/// destinations stay in cache for their reader: memcpy. The threshold is the
/// eager kernels' (runtime/kernels/eager/streaming_store.h; measured in
/// docs/runtime.md, "Streaming stores").
constexpr size_t kStreamingCopyMinBytes = size_t{8} << 20;

/// memcpy(dst, src, bytes) with streaming stores for the 64-byte aligned
/// part of dst (AVX-512 or AVX2, as the host has; else memcpy), then a
/// fence, so the bytes are ordered before whatever signals the copy done.
void streamingCopy(void* dst, const void* src, size_t bytes);

/// Writes `lines` copies of the 64-byte `line` from the 64-byte aligned
/// dst on, with streaming stores (AVX-512 or AVX2; else ordinary stores),
/// then fences.
void streamLines(void* dst, const void* line, size_t lines);

/// out[0, count) = value, the 64-byte aligned lines with streaming stores.
/// out must be aligned to sizeof(T), a power of two of at most 64 bytes, so
/// every line holds whole elements.
template <typename T>
void streamingFill(T* out, size_t count, const T& value) {
  static_assert(64 % sizeof(T) == 0, "whole elements per cache line");
  constexpr size_t kPerLine = 64 / sizeof(T);
  const auto address = reinterpret_cast<uintptr_t>(out);
  size_t head = (64 - address % 64) % 64 / sizeof(T);
  if (head > count) head = count;
  for (size_t i = 0; i < head; ++i) out[i] = value;
  alignas(64) T line[kPerLine];
  for (T& element : line) element = value;
  const size_t lines = (count - head) / kPerLine;
  streamLines(out + head, line, lines);
  for (size_t i = head + lines * kPerLine; i < count; ++i) out[i] = value;
}

}  // namespace maia::driver
