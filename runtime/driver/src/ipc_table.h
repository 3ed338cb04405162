// The shared state of inter-process memory and events: each process that
// exports something creates one small memfd (the table) that importers map.
// It says which exported allocations and events are still alive
// (generations), which processes have an allocation open, and the record
// counters of interprocess events. The exporter's side is Table; an
// importer reaches a peer's table through a Peer.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "error.h"

namespace maia::driver::ipc {

/// Processes that may have one allocation open at once (a host's ranks).
constexpr int kMaxImporters = 32;
constexpr uint32_t kMemorySlots = 4096;
constexpr uint32_t kEventSlots = 4096;

struct MemorySlot {
  std::atomic<uint64_t> generation;  // 0: not exported (or freed)
  std::atomic<int32_t> importers[kMaxImporters];  // pids with it open, 0 = none
};

struct EventSlot {
  std::atomic<uint64_t> generation;  // 0: no live event
  std::atomic<uint64_t> base;        // `recorded` when the event was created
  std::atomic<uint64_t> issued;      // sequence numbers handed to records
  std::atomic<uint64_t> recorded;    // the latest record queued
  std::atomic<uint64_t> completed;   // the highest record completed
  std::atomic<uint32_t> signal;      // futex word: bumped on every completion
  std::atomic<uint32_t> sleepers;    // peers sleeping on signal
};

struct TableLayout {
  uint64_t magic;
  uint64_t instance;
  MemorySlot memory[kMemorySlots];
  EventSlot events[kEventSlots];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free &&
              std::atomic<int32_t>::is_always_lock_free);

/// This process's table, created at the first export.
class Table {
 public:
  static Status get(Table** out);

  int fd() const { return fd_; }
  uint64_t instance() const { return layout_->instance; }
  TableLayout& layout() { return *layout_; }

  /// Claims a free slot and gives it a fresh generation.
  Status claimMemorySlot(uint32_t* out_slot, uint64_t* out_generation);
  Status claimEventSlot(uint32_t* out_slot, uint64_t* out_generation);
  void releaseMemorySlot(uint32_t slot);
  void releaseEventSlot(uint32_t slot);

 private:
  Table() = default;
  int fd_ = -1;
  TableLayout* layout_ = nullptr;
  std::mutex mutex_;
  std::vector<uint32_t> free_memory_, free_events_;
  uint64_t next_generation_ = 1;
};

/// Whether any pid listed in slot's importers is a live process.
bool hasLiveImporter(const MemorySlot& slot);

/// Another process that exported something we opened: its pidfd (to take
/// its files and to see it exit) and its table, mapped here. Shared by
/// everything opened from the same process.
class Peer {
 public:
  ~Peer();
  /// The peer named by a handle's pid, instance and table fd (cached).
  static Status link(pid_t pid, uint64_t instance, int table_fd, const char* what,
                     std::shared_ptr<Peer>* out);

  pid_t pid() const { return pid_; }
  TableLayout& table() const { return *table_; }
  int pidfd() const { return pidfd_; }
  /// False once the process exited (its pidfd became readable).
  bool alive() const;
  /// A copy of the peer's file descriptor fd (pidfd_getfd, or the peer's
  /// file server where ptrace access is refused), checked to be a memfd
  /// named name and that holds at least min_size bytes.
  Status takeFile(int fd, const char* name, size_t min_size, const char* what,
                  int* out_fd) const;

 private:
  pid_t pid_ = 0;
  uint64_t instance_ = 0;
  int pidfd_ = -1;
  TableLayout* table_ = nullptr;
};

}  // namespace maia::driver::ipc
