#include "ipc_event.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <ctime>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "device.h"
#include "ipc_handle.h"
#include "ipc_table.h"
#include "scheduler.h"

namespace maia::driver::ipc {
namespace {

/// How long the watcher sleeps before it looks at the owners' pidfds: the
/// bound on noticing an owner's exit.
constexpr long kWatchSliceNs = 2'000'000;

void atomicMax(std::atomic<uint64_t>& value, uint64_t candidate) {
  uint64_t current = value.load(std::memory_order_seq_cst);
  while (current < candidate &&
         !value.compare_exchange_weak(current, candidate, std::memory_order_seq_cst)) {
  }
}

// Shared (not FUTEX_PRIVATE) futex operations: the word is in a memfd that
// two processes map.
void futexWake(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
          0);
}

/// One word futexWaitAny sleeps on: a shared word of a peer's table, or a
/// word of this process.
struct SleepWord {
  std::atomic<uint32_t>* word;
  uint32_t seen;
  bool shared;
};

/// Sleeps until one of words changes (or is woken), or timeout_ns pass.
/// futex_waitv (Linux 5.16) sleeps on all of them at once; without it, on
/// the first only, the others being seen within the timeout.
void futexWaitAny(const std::vector<SleepWord>& words, long timeout_ns) {
  static std::atomic<bool> have_waitv{true};
  if (have_waitv.load(std::memory_order_relaxed)) {
    std::vector<futex_waitv> waiters;
    for (const SleepWord& w : words)
      waiters.push_back(futex_waitv{w.seen, reinterpret_cast<uintptr_t>(w.word),
                                    FUTEX_32 | (w.shared ? 0u : FUTEX_PRIVATE_FLAG), 0});
    timespec deadline{};
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_nsec += timeout_ns;
    deadline.tv_sec += deadline.tv_nsec / 1'000'000'000;
    deadline.tv_nsec %= 1'000'000'000;
    if (syscall(SYS_futex_waitv, waiters.data(), waiters.size(), 0, &deadline,
                CLOCK_MONOTONIC) >= 0 ||
        errno != ENOSYS)
      return;
    have_waitv.store(false, std::memory_order_relaxed);
  }
  const SleepWord& first = words.front();
  timespec timeout{0, timeout_ns};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(first.word),
          first.shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, first.seen, &timeout, nullptr, 0);
}

/// One wait for record `sequence` of an imported event.
struct Wait {
  std::shared_ptr<SharedEvent> event;
  uint64_t sequence = 0;
  Device* device = nullptr;  // gets the sticky error; null for a host wait
  std::atomic<bool> released{false};
  std::atomic<bool> failed{false};

  bool met() const {
    return event->slot->completed.load(std::memory_order_acquire) >= sequence;
  }
  std::string failure() const {
    return "waiting on an interprocess event: process " + std::to_string(event->peer->pid()) +
           ", which owns it, exited before the awaited record completed";
  }
};

/// The thread that notices waits met or failed and wakes the cores.
class Watcher {
 public:
  static Watcher& get() {
    static auto* watcher = new Watcher();  // never joined: it sleeps in slices
    return *watcher;
  }

  void add(std::shared_ptr<Wait> wait) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      waits_.push_back(std::move(wait));
      if (!thread_started_) {
        thread_started_ = true;
        std::thread([this] { run(); }).detach();
      }
      kick_.fetch_add(1, std::memory_order_seq_cst);
    }
    added_.notify_one();
    // If it sleeps on the words of other waits, it must add this one's.
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&kick_), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
  }

 private:
  void run() {
    while (true) {
      std::vector<std::shared_ptr<Wait>> waits;
      std::vector<SleepWord> words;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        added_.wait(lock, [&] { return !waits_.empty(); });
        waits = waits_;
        words.push_back({&kick_, kick_.load(std::memory_order_seq_cst), /*shared=*/false});
      }
      // Sleep on the futex word of every event awaited, so that any owner's
      // completion wakes us at once. Announce the sleep and read the words
      // before checking the waits: a completion after the check either
      // changes a word or sees a sleeper and wakes it.
      std::vector<EventSlot*> slots;
      for (const auto& wait : waits) {
        EventSlot* slot = wait->event->slot;
        if (slots.size() + 1 >= FUTEX_WAITV_MAX ||
            std::find(slots.begin(), slots.end(), slot) != slots.end())
          continue;  // beyond the limit: seen within the slice
        slots.push_back(slot);
        slot->sleepers.fetch_add(1, std::memory_order_seq_cst);
        words.push_back({&slot->signal, slot->signal.load(std::memory_order_seq_cst),
                         /*shared=*/true});
      }
      bool changed = false;
      for (auto& wait : waits) {
        if (wait->met()) {
          wait->released.store(true, std::memory_order_release);
          changed = true;
        } else if (!wait->event->peer->alive() && !wait->met()) {
          if (wait->device) wait->device->recordFault(wait->failure());
          wait->failed.store(true, std::memory_order_release);
          wait->released.store(true, std::memory_order_release);
          changed = true;
        }
      }
      if (changed) {
        std::lock_guard<std::mutex> lock(mutex_);
        std::erase_if(waits_, [](const auto& w) { return w->released.load(); });
        scheduler().notifyExternal();
      } else {
        futexWaitAny(words, kWatchSliceNs);
      }
      for (EventSlot* slot : slots) slot->sleepers.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  std::mutex mutex_;
  std::condition_variable added_;
  std::vector<std::shared_ptr<Wait>> waits_;
  bool thread_started_ = false;
  std::atomic<uint32_t> kick_{0};  // bumped by add(): wakes the watcher's sleep
};

/// Holds its stream until the wait is met (or failed: then the device is
/// faulted and the work behind it is skipped).
class SharedEventWaitCommand final : public Command {
 public:
  explicit SharedEventWaitCommand(std::shared_ptr<Wait> wait) : wait_(std::move(wait)) {}
  bool ready() const override {
    return wait_->released.load(std::memory_order_acquire) || wait_->met();
  }
  void runChunk(int64_t) override {}
  bool skippedOnFault() const override { return false; }
  std::string describe() const override { return "interprocess event wait"; }

 private:
  std::shared_ptr<Wait> wait_;
};

/// The record a new wait on an imported event refers to: the owner's latest.
Status latestRecord(const SharedEvent& event, const char* what, uint64_t* out) {
  if (event.slot->generation.load(std::memory_order_seq_cst) != event.generation)
    return makeError(maiaErrorInvalidHandle, what, ": process ", event.peer->pid(),
                     " destroyed the interprocess event");
  const uint64_t recorded = event.slot->recorded.load(std::memory_order_seq_cst);
  if (recorded <= event.slot->base.load(std::memory_order_relaxed))
    return makeError(maiaErrorEventNotRecorded, what, ": the interprocess event of process ",
                     event.peer->pid(), " was never recorded");
  *out = recorded;
  return {};
}

}  // namespace

SharedEvent::~SharedEvent() {
  if (peer) return;
  Table* table = nullptr;
  if (Table::get(&table).ok()) table->releaseEventSlot(index);
}

Status createSharedEvent(std::shared_ptr<SharedEvent>* out) {
  Table* table = nullptr;
  MAIA_RETURN_IF_ERROR(Table::get(&table));
  auto event = std::make_shared<SharedEvent>();
  MAIA_RETURN_IF_ERROR(table->claimEventSlot(&event->index, &event->generation));
  event->slot = &table->layout().events[event->index];
  *out = std::move(event);
  return {};
}

Status exportEvent(const SharedEvent& event, maiaIpcEventHandle_t* out) {
  Table* table = nullptr;
  MAIA_RETURN_IF_ERROR(Table::get(&table));
  HandleBits bits{};
  bits.kind = HandleKind::kEvent;
  bits.pid = getpid();
  bits.device = -1;
  bits.memory_fd = -1;
  bits.table_fd = table->fd();
  bits.slot = event.index;
  bits.instance = table->instance();
  bits.generation = event.generation;
  seal(bits, out->reserved);
  return {};
}

Status openEvent(const maiaIpcEventHandle_t& handle, std::shared_ptr<SharedEvent>* out) {
  constexpr const char* what = "maiaIpcOpenEventHandle";
  HandleBits bits{};
  MAIA_RETURN_IF_ERROR(unseal(handle.reserved, HandleKind::kEvent, what, &bits));
  if (bits.pid == getpid())
    return makeError(maiaErrorInvalidValue, what,
                     ": the handle was made by this process; use the event itself");
  if (bits.slot >= kEventSlots)
    return makeError(maiaErrorInvalidHandle, what, ": the IPC handle's fields are out of range");
  auto event = std::make_shared<SharedEvent>();
  MAIA_RETURN_IF_ERROR(Peer::link(bits.pid, bits.instance, bits.table_fd, what, &event->peer));
  event->index = bits.slot;
  event->generation = bits.generation;
  event->slot = &event->peer->table().events[bits.slot];
  if (event->slot->generation.load(std::memory_order_seq_cst) != bits.generation)
    return makeError(maiaErrorInvalidHandle, what, ": stale IPC handle: process ", bits.pid,
                     " destroyed the event it names");
  *out = std::move(event);
  return {};
}

uint64_t beginRecord(EventSlot& slot) {
  return slot.issued.fetch_add(1, std::memory_order_seq_cst) + 1;
}

void publishRecord(EventSlot& slot, uint64_t sequence) { atomicMax(slot.recorded, sequence); }

void completeRecord(EventSlot& slot, uint64_t sequence) {
  atomicMax(slot.completed, sequence);
  slot.signal.fetch_add(1, std::memory_order_seq_cst);
  // A syscall only when a peer sleeps on this event.
  if (slot.sleepers.load(std::memory_order_seq_cst) > 0) futexWake(slot.signal);
}

Status queryImported(const SharedEvent& event, const char* what) {
  uint64_t sequence = 0;
  MAIA_RETURN_IF_ERROR(latestRecord(event, what, &sequence));
  if (event.slot->completed.load(std::memory_order_acquire) >= sequence) return {};
  if (!event.peer->alive())
    return makeError(maiaErrorPeerExited, what, ": process ", event.peer->pid(),
                     ", which owns the interprocess event, exited before its record completed");
  return Status(maiaErrorNotReady, "");
}

Status synchronizeImported(const std::shared_ptr<SharedEvent>& event) {
  auto wait = std::make_shared<Wait>();
  wait->event = event;
  MAIA_RETURN_IF_ERROR(latestRecord(*event, "maiaEventSynchronize", &wait->sequence));
  if (wait->met()) return {};
  Watcher::get().add(wait);
  scheduler().waitUntil([&] { return wait->released.load(std::memory_order_acquire); },
                        nullptr);
  if (wait->failed.load())
    return Status(maiaErrorPeerExited, "maiaEventSynchronize: " + wait->failure());
  return {};
}

Status makeWaitCommand(const std::shared_ptr<SharedEvent>& event, Device* device,
                       std::unique_ptr<Command>* out) {
  auto wait = std::make_shared<Wait>();
  wait->event = event;
  wait->device = device;
  MAIA_RETURN_IF_ERROR(latestRecord(*event, "maiaStreamWaitEvent", &wait->sequence));
  if (!wait->met()) Watcher::get().add(wait);
  *out = std::make_unique<SharedEventWaitCommand>(std::move(wait));
  return {};
}

}  // namespace maia::driver::ipc
