// Inter-process device memory: exporting an allocation as a handle, opening
// a peer's handle into this process's device address space, and the
// exporter's deferred free (docs/runtime.md, "Inter-process memory and
// events").
#pragma once

#include <maia/runtime.h>

#include <chrono>
#include <memory>

#include "error.h"

namespace maia::driver {
class Device;
}

namespace maia::driver::ipc {

class Peer;

Status exportMemory(void* device_ptr, maiaIpcMemHandle_t* out);
/// Maps bytes [offset, offset + bytes) of the handle's allocation (all of
/// it when whole) into device (the caller's current device); *out_ptr is
/// the byte at offset.
Status openMemoryRange(const maiaIpcMemHandle_t& handle, Device* device, size_t offset,
                       size_t bytes, bool whole, void** out_ptr);
Status closeMemory(void* device_ptr);
/// closeMemory whose last close unmaps once the work queued on stream so
/// far has completed (at once when there is none), instead of waiting for
/// the whole device.
Status closeMemoryOnStream(void* device_ptr, maiaStream* stream);
/// Whether the process that exported the allocation opened at device_ptr
/// has freed it since (it stays reserved there while opened here).
Status isFreedByOwner(const void* device_ptr, bool* freed);
/// The process whose exported memory device_ptr lies in (opened here), or
/// null for this process's own memory.
std::shared_ptr<Peer> importedFrom(const void* device_ptr);

/// maiaFree of ptr on device (its queued work done): frees it, or, while
/// another process has it open, retires it (reserved until they close).
Status freeMemory(Device* device, void* ptr);
/// Releases device's retired allocations that no live process has open.
/// Cheap (one atomic load) when nothing is retired.
void reclaimRetired(Device* device);
/// How long allocate() waits at most for other processes to close retired
/// allocations that would make room.
inline constexpr std::chrono::milliseconds kRetiredWait{1000};
/// maiaMalloc on device: the arena's allocation, after reclaiming what
/// other processes closed; out of memory while retired allocations could
/// make room, it waits (up to kRetiredWait) for their importers to close them.
Status allocate(Device* device, size_t size, void** out_ptr);

}  // namespace maia::driver::ipc
