// Copies whose destination is written with streaming (non-temporal) stores.
#pragma once

#include <cstddef>

namespace maia::driver {

/// Copies (the total size of one copy command) of at least this many bytes
/// stream their stores. A copy's destination that large leaves the caches
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

}  // namespace maia::driver
