// Pinned host memory: pre-faulted host pages that copies can use
// asynchronously, tracked so pointers can be recognised.
#pragma once

#include <cstddef>
#include <cstdint>

#include "error.h"

namespace maia::driver {

Status pinnedAlloc(size_t size, void** out_ptr);
Status pinnedFree(void* ptr);
/// If p lies in a pinned allocation: its base and size.
bool findPinned(const void* p, uintptr_t* out_base, size_t* out_size);

}  // namespace maia::driver
