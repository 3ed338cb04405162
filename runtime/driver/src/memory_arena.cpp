#include "memory_arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iomanip>

namespace maia::driver {
namespace {

constexpr size_t kPopulateChunk = size_t{2} << 20;

/// Bumped (under an arena's mutex) by every free and arena destruction:
/// findAllocation's per-thread cache trusts only entries of this epoch.
std::atomic<uint64_t> g_free_epoch{0};

struct FoundAllocation {
  const MemoryArena* arena = nullptr;
  uint64_t epoch = 0;
  uintptr_t base = 0;
  size_t size = 0;
};
constexpr int kFoundCacheSize = 8;
thread_local FoundAllocation t_found[kFoundCacheSize];
thread_local int t_found_next = 0;

size_t roundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::string hexPointer(uintptr_t p) {
  std::ostringstream os;
  os << "0x" << std::hex << p;
  return os.str();
}

std::string mib(size_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return os.str();
}

}  // namespace

Status MemoryArena::create(int device, size_t capacity, std::unique_ptr<MemoryArena>* out) {
  std::unique_ptr<MemoryArena> arena(new MemoryArena());
  arena->device_ = device;
  arena->capacity_ = roundUp(capacity, kPopulateChunk);
  std::string name = "maia-device-" + std::to_string(device);
  arena->memfd_ = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (arena->memfd_ < 0)
    return makeError(maiaErrorInitialization, "maia:", device,
                     ": memfd_create failed: ", std::strerror(errno));
  if (ftruncate(arena->memfd_, static_cast<off_t>(arena->capacity_)) != 0)
    return makeError(maiaErrorInitialization, "maia:", device, ": cannot size device memory to ",
                     arena->capacity_, " bytes: ", std::strerror(errno));
  // Reserve both views at twice the capacity (the upper half is the import
  // window), then map the memfd over the lower half.
  const size_t span = 2 * arena->capacity_;
  void* device_view = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                           -1, 0);
  if (device_view == MAP_FAILED ||
      mmap(device_view, arena->capacity_, PROT_NONE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE,
           arena->memfd_, 0) == MAP_FAILED)
    return makeError(maiaErrorInitialization, "maia:", device,
                     ": cannot map the device address space: ", std::strerror(errno));
  arena->device_base_ = reinterpret_cast<uintptr_t>(device_view);
  void* alias = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (alias == MAP_FAILED ||
      mmap(alias, arena->capacity_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE,
           arena->memfd_, 0) == MAP_FAILED)
    return makeError(maiaErrorInitialization, "maia:", device,
                     ": cannot map the driver alias of device memory: ", std::strerror(errno));
  arena->host_base_ = reinterpret_cast<uintptr_t>(alias);
  arena->free_[0] = arena->capacity_;
  arena->free_by_size_.insert({arena->capacity_, 0});
  arena->populated_.assign(arena->capacity_ / kPopulateChunk, false);
  *out = std::move(arena);
  return {};
}

MemoryArena::~MemoryArena() {
  g_free_epoch.fetch_add(1, std::memory_order_release);
  if (host_base_) munmap(reinterpret_cast<void*>(host_base_), 2 * capacity_);
  if (device_base_) munmap(reinterpret_cast<void*>(device_base_), 2 * capacity_);
  if (memfd_ >= 0) close(memfd_);
}

void MemoryArena::populate(size_t offset, size_t size) {
  size_t first = offset / kPopulateChunk;
  size_t last = (offset + size - 1) / kPopulateChunk;
  for (size_t chunk = first; chunk <= last; ++chunk) {
    if (populated_[chunk]) continue;
    void* start = reinterpret_cast<void*>(host_base_ + chunk * kPopulateChunk);
#ifdef MADV_POPULATE_WRITE
    if (madvise(start, kPopulateChunk, MADV_POPULATE_WRITE) != 0)
#endif
    {
      // Older kernels: touch one byte per page instead.
      auto* bytes = static_cast<volatile char*>(start);
      for (size_t i = 0; i < kPopulateChunk; i += 4096) bytes[i] = bytes[i];
    }
    populated_[chunk] = true;
  }
}

Status MemoryArena::allocate(size_t size, void** out_ptr) {
  size_t rounded = roundUp(size, kAlignment);
  if (rounded < size) rounded = SIZE_MAX;  // overflowed: cannot fit
  std::lock_guard<std::mutex> lock(mutex_);
  auto fit = free_by_size_.lower_bound({rounded, 0});
  if (rounded == SIZE_MAX || fit == free_by_size_.end()) {
    size_t largest = free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first;
    return makeError(maiaErrorOutOfMemory, "out of memory on maia:", device_,
                     ": tried to allocate ", size, " bytes (", mib(size), "); ", mib(used_),
                     " allocated of ", mib(capacity_), " capacity, ", mib(capacity_ - used_),
                     " free, largest free block ", mib(largest));
  }
  auto [block_size, offset] = *fit;
  free_by_size_.erase(fit);
  free_.erase(offset);
  if (block_size > rounded) {
    free_[offset + rounded] = block_size - rounded;
    free_by_size_.insert({block_size - rounded, offset + rounded});
  }
  live_[offset] = size;
  used_ += rounded;
  populate(offset, rounded);
  *out_ptr = reinterpret_cast<void*>(device_base_ + offset);
  return {};
}

Status MemoryArena::takeLive(void* ptr, size_t* out_offset, size_t* out_size) {
  auto address = reinterpret_cast<uintptr_t>(ptr);
  size_t offset = address - device_base_;
  if (inImportWindow(ptr))
    return makeError(maiaErrorInvalidDevicePointer, "maiaFree(", hexPointer(address),
                     "): memory of another process opened with maiaIpcOpenMemHandle; close it "
                     "with maiaIpcCloseMemHandle");
  auto it = live_.find(offset);
  if (it == live_.end()) {
    auto holder = live_.upper_bound(offset);
    if (holder != live_.begin() && std::prev(holder)->first + std::prev(holder)->second > offset)
      return makeError(maiaErrorInvalidDevicePointer, "maiaFree(", hexPointer(address),
                       "): points inside an allocation of maia:", device_, " that starts at ",
                       hexPointer(device_base_ + std::prev(holder)->first),
                       "; free the start of the allocation");
    return makeError(maiaErrorInvalidDevicePointer, "maiaFree(", hexPointer(address),
                     "): not a live allocation of maia:", device_,
                     " (already freed, or never allocated)");
  }
  *out_offset = offset;
  *out_size = roundUp(it->second, kAlignment);
  g_free_epoch.fetch_add(1, std::memory_order_release);
  live_.erase(it);
  return {};
}

void MemoryArena::releaseRange(size_t offset, size_t size) {
  used_ -= size;
  // Coalesce with free neighbours.
  size_t begin = offset, end = offset + size;
  auto next = free_.lower_bound(end);
  if (next != free_.end() && next->first == end) {
    end += next->second;
    free_by_size_.erase({next->second, next->first});
    free_.erase(next);
  }
  auto prev = free_.lower_bound(begin);
  if (prev != free_.begin()) {
    --prev;
    if (prev->first + prev->second == begin) {
      begin = prev->first;
      free_by_size_.erase({prev->second, prev->first});
      free_.erase(prev);
    }
  }
  free_[begin] = end - begin;
  free_by_size_.insert({end - begin, begin});
}

Status MemoryArena::free(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t offset = 0, size = 0;
  MAIA_RETURN_IF_ERROR(takeLive(ptr, &offset, &size));
  releaseRange(offset, size);
  return {};
}

Status MemoryArena::retire(void* ptr, size_t* out_offset, size_t* out_size) {
  std::lock_guard<std::mutex> lock(mutex_);
  return takeLive(ptr, out_offset, out_size);
}

void MemoryArena::releaseRetired(size_t offset, size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  releaseRange(offset, size);
}

Status MemoryArena::mapImport(int fd, size_t file_offset, size_t length, size_t data_offset,
                              size_t bytes, void** out_ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  // First fit in the window: imports are few and long-lived.
  size_t candidate = capacity_;
  for (const auto& [offset, mapped] : imports_) {
    if (offset - candidate >= length) break;
    candidate = offset + mapped;
  }
  if (candidate + length > 2 * capacity_ || candidate + length < candidate)
    return makeError(maiaErrorOutOfMemory, "maiaIpcOpenMemHandle: the import window of maia:",
                     device_, " (", mib(capacity_), ") has no room for ", mib(length));
  void* view = reinterpret_cast<void*>(device_base_ + candidate);
  void* alias = reinterpret_cast<void*>(host_base_ + candidate);
  if (mmap(view, length, PROT_NONE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd,
           static_cast<off_t>(file_offset)) == MAP_FAILED ||
      mmap(alias, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd,
           static_cast<off_t>(file_offset)) == MAP_FAILED) {
    const int error = errno;
    reserveWindow(candidate, length);
    return makeError(maiaErrorOutOfMemory, "maiaIpcOpenMemHandle: cannot map ", mib(length),
                     " of the peer's device memory into maia:", device_, ": ",
                     std::strerror(error));
  }
  imports_[candidate] = length;
  live_[candidate + data_offset] = bytes;
  *out_ptr = view;
  return {};
}

void MemoryArena::unmapImport(void* mapping) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t offset = offsetOf(mapping);
  auto it = imports_.find(offset);
  if (it == imports_.end()) return;
  g_free_epoch.fetch_add(1, std::memory_order_release);
  live_.erase(live_.lower_bound(offset), live_.lower_bound(offset + it->second));
  reserveWindow(offset, it->second);
  imports_.erase(it);
}

void MemoryArena::reserveWindow(size_t offset, size_t length) {
  // Replacing the mapping (not munmap) keeps the range reserved: nothing
  // else in the process can be mapped into the device address space.
  mmap(reinterpret_cast<void*>(device_base_ + offset), length, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  mmap(reinterpret_cast<void*>(host_base_ + offset), length, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

Status MemoryArena::findAllocation(const void* p, size_t bytes, const char* what,
                                   uintptr_t* out_base, size_t* out_size) const {
  auto address = reinterpret_cast<uintptr_t>(p);
  if (findCached(address, bytes, out_base, out_size)) return {};
  size_t offset = address - device_base_;
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t epoch = g_free_epoch.load(std::memory_order_acquire);
  auto holder = live_.upper_bound(offset);
  if (holder == live_.begin() || std::prev(holder)->first + std::prev(holder)->second <= offset)
    return makeError(maiaErrorInvalidDevicePointer, what, " ", hexPointer(address),
                     " lies in maia:", device_,
                     "'s address space but in no live allocation (freed?)");
  --holder;
  size_t end_offset = holder->first + holder->second;
  if (bytes > end_offset - offset)
    return makeError(maiaErrorInvalidDevicePointer, what, " overruns its allocation: ", bytes,
                     " bytes at ", hexPointer(address), " (offset ", offset - holder->first,
                     ") but the allocation at ", hexPointer(device_base_ + holder->first),
                     " has ", holder->second, " bytes");
  *out_base = device_base_ + holder->first;
  *out_size = holder->second;
  rememberFound(*out_base, *out_size, epoch);
  return {};
}

bool MemoryArena::findCached(uintptr_t address, size_t bytes, uintptr_t* out_base,
                             size_t* out_size) const {
  const uint64_t epoch = g_free_epoch.load(std::memory_order_acquire);
  for (const FoundAllocation& found : t_found) {
    if (found.arena != this || found.epoch != epoch || address < found.base ||
        address - found.base >= found.size || bytes > found.size - (address - found.base))
      continue;
    *out_base = found.base;
    *out_size = found.size;
    return true;
  }
  return false;
}

void MemoryArena::rememberFound(uintptr_t base, size_t size, uint64_t epoch) const {
  t_found[t_found_next] = FoundAllocation{this, epoch, base, size};
  t_found_next = (t_found_next + 1) % kFoundCacheSize;
}

size_t MemoryArena::used() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_;
}

}  // namespace maia::driver
