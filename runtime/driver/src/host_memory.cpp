#include "host_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

namespace maia::driver {
namespace {

std::mutex g_mutex;
std::map<uintptr_t, size_t>& pinnedAllocations() {
  static auto* allocations = new std::map<uintptr_t, size_t>();  // outlives exit-time frees
  return *allocations;
}

}  // namespace

Status pinnedAlloc(size_t size, void** out_ptr) {
  if (size == 0) {
    *out_ptr = nullptr;
    return {};
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return makeError(maiaErrorOutOfMemory, "maiaHostAlloc: cannot allocate ", size,
                     " bytes of pinned host memory: ", std::strerror(errno));
  // "Pinned" here means resident: fault every page now so that copies never
  // pay first-touch faults (~3 us per page in this VM).
#ifdef MADV_POPULATE_WRITE
  madvise(p, size, MADV_POPULATE_WRITE);
#endif
  std::lock_guard<std::mutex> lock(g_mutex);
  pinnedAllocations()[reinterpret_cast<uintptr_t>(p)] = size;
  *out_ptr = p;
  return {};
}

Status pinnedFree(void* ptr) {
  if (ptr == nullptr) return {};
  size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto& allocations = pinnedAllocations();
    auto it = allocations.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == allocations.end())
      return makeError(maiaErrorInvalidValue, "maiaFreeHost(", ptr,
                       "): not the start of a live pinned allocation (already freed, "
                       "or not from maiaHostAlloc)");
    size = it->second;
    allocations.erase(it);
  }
  munmap(ptr, size);
  return {};
}

bool findPinned(const void* p, uintptr_t* out_base, size_t* out_size) {
  auto address = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto& allocations = pinnedAllocations();
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin()) return false;
  --it;
  if (address >= it->first + it->second) return false;
  *out_base = it->first;
  *out_size = it->second;
  return true;
}

}  // namespace maia::driver
