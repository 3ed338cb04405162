// Copies and memsets between host and device memory, as stream commands.
#pragma once

#include <maia/runtime.h>

#include "error.h"
#include "stream.h"

namespace maia::driver {

/// Validates both sides of a copy (kind, pointers, bounds) and queues it.
/// stream == null with synchronous: the involved device's default stream,
/// then wait. A pageable host side makes any copy synchronous with the host.
Status copyMemory(void* dst, const void* src, size_t bytes, maiaMemcpyKind kind,
                  Stream* stream, bool synchronous);

Status setMemory(void* device_ptr, int value, size_t bytes, Stream* stream, bool synchronous);

/// Fills count elements with an element pattern of pattern_bytes bytes.
Status setMemoryPattern(void* device_ptr, const void* pattern, size_t pattern_bytes,
                        size_t count, Stream* stream);

}  // namespace maia::driver
