// The caching device allocator of maia tensors (registered for PrivateUse1).
//
// It keeps device memory that tensors give back in per-device pools and hands
// it out again without calling the driver, with the semantics of CUDA's
// caching allocator: small (<= 1 MiB) requests are carved from 2 MiB
// segments, large ones from their own segments; blocks are split and merged
// within a segment; a block is reused only on the stream it was allocated on
// (or once that stream is idle), and not before the streams recorded on it
// with recordStream have finished their work. Statistics follow
// c10::CachingDeviceAllocator::DeviceStats exactly; requested bytes are the
// sizes asked for, never rounded.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>

namespace torch_maia {

/// The process-wide caching allocator (never destroyed: tensors may be freed
/// during static destruction). Also c10::GetAllocator(PrivateUse1).
c10::DeviceAllocator* getMaiaCachingAllocator();

/// Number of free blocks cached on device (both pools), for tests.
size_t cachedBlockCount(c10::DeviceIndex device);

/// Graph capture (MaiaGraph.cpp): until endAllocateToPool, allocations on
/// device made while `stream` is current come from the private pool `pool`
/// (made on first use), whose blocks serve nothing else: a captured graph
/// replays into them. Each begin holds the pool once; releasePool drops
/// that hold, and a pool no graph holds gives its free segments back at the
/// next emptyCache.
void beginAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t pool, c10::StreamId stream);
void endAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t pool);
void releasePool(c10::DeviceIndex device, c10::MempoolId_t pool);

}  // namespace torch_maia
