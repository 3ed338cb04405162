// MemoryArena: one device's memory, a separate address space.
//
// The memory is a sparse memfd mapped twice: a PROT_NONE view whose
// addresses are the device pointers handed out (a host dereference faults,
// as on silicon) and a read/write alias that only the driver touches. The
// driver translates a device pointer to its alias with one subtraction.
//
// Both views reserve twice the capacity: the upper half is the import
// window, where allocations other processes export (maiaIpcOpenMemHandle)
// are mapped from their memfd, so that an imported pointer is translated,
// bounds-checked and launched on exactly like a local one. Imports do not
// count against the capacity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "error.h"

namespace maia::driver {

class MemoryArena {
 public:
  /// Device pointers are aligned to this many bytes.
  static constexpr size_t kAlignment = 256;

  static Status create(int device, size_t capacity, std::unique_ptr<MemoryArena>* out);
  ~MemoryArena();

  MemoryArena(const MemoryArena&) = delete;
  MemoryArena& operator=(const MemoryArena&) = delete;

  Status allocate(size_t size, void** out_ptr);
  Status free(void* ptr);

  /// Ends ptr's allocation like free() but keeps its bytes reserved (and
  /// counted as used) until releaseRetired: pages another process still
  /// maps must not be handed out again. Returns its offset and rounded size.
  Status retire(void* ptr, size_t* out_offset, size_t* out_size);
  void releaseRetired(size_t offset, size_t size);

  /// Maps [file_offset, file_offset + length) of a peer's device memfd
  /// (page-aligned) into the import window; the device address of the
  /// mapping's first byte is *out_ptr. bytes at data_offset of the mapping
  /// become a live allocation (what findAllocation checks against).
  Status mapImport(int fd, size_t file_offset, size_t length, size_t data_offset, size_t bytes,
                   void** out_ptr);
  /// Unmaps an import made at mapping (mapImport's *out_ptr).
  void unmapImport(void* mapping);

  /// Whether p lies in this device's address space (live or not), the
  /// import window included.
  bool owns(const void* p) const {
    auto a = reinterpret_cast<uintptr_t>(p);
    return a >= device_base_ && a < device_base_ + 2 * capacity_;
  }
  /// Whether p lies in the import window.
  bool inImportWindow(const void* p) const {
    auto a = reinterpret_cast<uintptr_t>(p);
    return a >= device_base_ + capacity_ && a < device_base_ + 2 * capacity_;
  }
  size_t offsetOf(const void* p) const { return reinterpret_cast<uintptr_t>(p) - device_base_; }
  /// The memfd of the device's memory (what IPC passes to peers).
  int fd() const { return memfd_; }

  /// The live allocation holding [p, p + bytes): fails with a message
  /// naming the overrun, or the freed/foreign pointer. what names the
  /// pointer's role in messages ("destination", "argument 2", ...).
  Status findAllocation(const void* p, size_t bytes, const char* what, uintptr_t* out_base,
                        size_t* out_size) const;

  /// The driver-side alias of device address p (no checks).
  void* hostAlias(const void* p) const {
    return reinterpret_cast<void*>(host_base_ + (reinterpret_cast<uintptr_t>(p) - device_base_));
  }

  size_t capacity() const { return capacity_; }
  size_t used() const;
  int device() const { return device_; }

 private:
  MemoryArena() = default;
  /// Pre-faults the alias pages of [offset, offset + size): first-touch
  /// faults cost ~3 us per page in this VM, so pay them at allocation.
  void populate(size_t offset, size_t size);
  /// Removes ptr's live entry (lock held); its offset and rounded size.
  Status takeLive(void* ptr, size_t* out_offset, size_t* out_size);
  /// Returns a range to the free lists, coalescing (lock held).
  void releaseRange(size_t offset, size_t size);
  /// Maps the window range [offset, offset + length) back to a PROT_NONE
  /// reservation in both views.
  void reserveWindow(size_t offset, size_t length);

  int device_ = 0;
  int memfd_ = -1;
  size_t capacity_ = 0;
  uintptr_t device_base_ = 0;  // PROT_NONE view: the device address space
  uintptr_t host_base_ = 0;    // read/write alias used by the driver

  /// The lock-free path of findAllocation: a per-thread cache of
  /// allocations found live, valid while no allocation of any arena was
  /// freed since (g_free_epoch). Launches validate every memref: this keeps
  /// the arena's mutex and map off the per-launch path.
  bool findCached(uintptr_t address, size_t bytes, uintptr_t* out_base, size_t* out_size) const;
  void rememberFound(uintptr_t base, size_t size, uint64_t epoch) const;

  mutable std::mutex mutex_;
  std::map<size_t, size_t> live_;        // offset -> requested size of live allocations
  std::map<size_t, size_t> free_;        // offset -> size of free ranges
  std::set<std::pair<size_t, size_t>> free_by_size_;  // (size, offset), best fit
  std::map<size_t, size_t> imports_;     // window offset -> length of import mappings
  std::vector<bool> populated_;          // per kPopulateChunk of the arena
  size_t used_ = 0;                      // bytes reserved (sizes rounded up)
};

}  // namespace maia::driver
