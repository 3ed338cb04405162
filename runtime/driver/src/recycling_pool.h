// RecyclingPool: recycled blocks of one size, for the commands a host
// thread allocates and a device core frees.
//
// Not malloc: with one thread allocating and another freeing, malloc's
// arena lock is contended, and a small eager op would pay futex calls (the
// host waking a core blocked on the lock, or the reverse). Not a single
// shared free list either: its lock's cache line would move between the
// host and a core twice per launch. So each thread keeps a magazine of
// blocks of its own, and the shared list under the lock only trades whole
// batches, once per kBatch launches.
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
  /// The pool of this block size. Never destroyed: a command may be freed
  /// by a core during exit.
  static RecyclingPool& instance() {
    static auto* pool = new RecyclingPool();
    return *pool;
  }

  RecyclingPool(const RecyclingPool&) = delete;
  RecyclingPool& operator=(const RecyclingPool&) = delete;

  void* allocate() {
    Magazine& magazine = threadMagazine();
    if (magazine.count == 0) takeBatch(magazine);
    if (magazine.count > 0) return magazine.blocks[--magazine.count];
    return ::operator new(kBlockBytes);
  }

  void release(void* block) {
    Magazine& magazine = threadMagazine();
    if (magazine.retired) {
      std::lock_guard<SpinLock> lock(mutex_);
      keepOrDelete(block);
      return;
    }
    if (magazine.count == kMagazineSize) giveBatch(magazine, kBatch);
    magazine.blocks[magazine.count++] = block;
  }

 private:
  static constexpr size_t kBatch = 32;
  static constexpr size_t kMagazineSize = 2 * kBatch;
  static constexpr size_t kMaxShared = 2048;  // blocks kept beyond the magazines

  /// Trivially destructible, so that a block freed on a thread after its
  /// flusher ran (during exit) still finds valid storage: it then goes
  /// straight to the shared list.
  struct Magazine {
    size_t count = 0;
    bool retired = false;
    void* blocks[kMagazineSize];
  };
  static_assert(std::is_trivially_destructible_v<Magazine>);

  /// Returns a thread's blocks to the shared list when the thread exits.
  struct Flusher {
    Magazine* magazine;
    ~Flusher() {
      instance().giveBatch(*magazine, magazine->count);
      magazine->retired = true;
    }
  };

  RecyclingPool() { shared_.reserve(kMaxShared); }

  Magazine& threadMagazine() {
    thread_local Magazine magazine;
    thread_local Flusher flusher{&magazine};
    (void)flusher;  // constructed on the thread's first use, destroyed at its exit
    return magazine;
  }

  void takeBatch(Magazine& magazine) {
    if (magazine.retired) return;
    std::lock_guard<SpinLock> lock(mutex_);
    while (magazine.count < kBatch && !shared_.empty()) {
      magazine.blocks[magazine.count++] = shared_.back();
      shared_.pop_back();
    }
  }

  /// Moves count blocks from the top of magazine to the shared list (or to
  /// the heap beyond kMaxShared).
  void giveBatch(Magazine& magazine, size_t count) {
    std::lock_guard<SpinLock> lock(mutex_);
    for (; count > 0; --count) keepOrDelete(magazine.blocks[--magazine.count]);
  }

  void keepOrDelete(void* block) {  // mutex_ held
    if (shared_.size() < kMaxShared) {
      shared_.push_back(block);  // never reallocates: capacity is kMaxShared
    } else {
      ::operator delete(block);
    }
  }

  SpinLock mutex_;
  std::vector<void*> shared_;
};

/// Gives T (a command class) class-specific operator new/delete from the
/// RecyclingPool of its size.
template <typename T>
struct PooledAllocation {
  // Every block is sizeof(T): nothing may derive from T.
  static void* operator new(size_t) {
    static_assert(std::is_final_v<T>, "a pooled class must be final");
    return RecyclingPool<sizeof(T)>::instance().allocate();
  }
  static void operator delete(void* block) {
    RecyclingPool<sizeof(T)>::instance().release(block);
  }
};

}  // namespace maia::driver
