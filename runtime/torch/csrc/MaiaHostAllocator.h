// The caching pinned host allocator of maia (registered for PrivateUse1):
// what pin_memory() and non_blocking copies use. Pinned memory from
// maiaHostAlloc makes host<->device copies truly asynchronous; blocks are
// cached by power-of-two size (upstream CachingHostAllocatorImpl) and a block
// used by a stream is reused only after an event recorded on that stream at
// free time has completed.
#pragma once

#include <ATen/core/CachingHostAllocator.h>

namespace torch_maia {

/// The pinned allocator (also at::getHostAllocator(at::kPrivateUse1)); the
/// hooks' getPinnedMemoryAllocator returns it.
at::HostAllocator* getMaiaHostAllocator();

/// Whether ptr points into pinned memory from maiaHostAlloc (never throws).
bool isPinnedPtr(const void* ptr);

}  // namespace torch_maia
