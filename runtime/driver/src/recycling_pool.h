// RecyclingPool: a free list of equal-sized blocks, for the commands a host
// thread allocates and a device core frees.
//
// Through malloc that pairing contends on the allocator's arena lock: every
// small eager op then cost ~0.4 futex calls (the host waking a core blocked
// on the lock, or the reverse), measured with `perf stat -e
// syscalls:sys_enter_futex` on a loop of 64x64 adds. A block returns to this
// list instead, and the lock around it is a spin lock held for a push or a
// pop.
#pragma once

#include <cstddef>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

#include "spin_lock.h"

namespace maia::driver {

template <size_t kBlockBytes>
class RecyclingPool {
 public:
  /// Keeps at most max_free blocks; more are returned to the heap.
  explicit RecyclingPool(size_t max_free) : max_free_(max_free) { free_.reserve(max_free); }

  RecyclingPool(const RecyclingPool&) = delete;
  RecyclingPool& operator=(const RecyclingPool&) = delete;

  void* allocate() {
    {
      std::lock_guard<SpinLock> lock(mutex_);
      if (!free_.empty()) {
        void* block = free_.back();
        free_.pop_back();
        return block;
      }
    }
    return ::operator new(kBlockBytes);
  }

  void release(void* block) {
    {
      std::lock_guard<SpinLock> lock(mutex_);
      if (free_.size() < max_free_) {
        free_.push_back(block);  // never reallocates: capacity is max_free
        return;
      }
    }
    ::operator delete(block);
  }

 private:
  const size_t max_free_;
  SpinLock mutex_;
  std::vector<void*> free_;
};

/// Gives T (a command class) class-specific operator new/delete from one
/// RecyclingPool per class. The pool is never destroyed: a command may be
/// freed by a core during exit.
template <typename T, size_t kMaxFree = 2048>
struct PooledAllocation {
  // Every block is sizeof(T): nothing may derive from T.
  static void* operator new(size_t) {
    static_assert(std::is_final_v<T>, "a pooled class must be final");
    return pool().allocate();
  }
  static void operator delete(void* block) { pool().release(block); }

 private:
  static auto& pool() {  // deduced: T is incomplete where this is declared
    static auto* instance = new RecyclingPool<sizeof(T)>(kMaxFree);
    return *instance;
  }
};

}  // namespace maia::driver
