#include "stream_value.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <thread>
#include <vector>

#include "device.h"
#include "ipc_memory.h"
#include "ipc_table.h"
#include "scheduler.h"

namespace maia::driver {
namespace {

/// How long the watcher sleeps before it looks at timeouts and exporters'
/// pidfds: the bound on noticing an exit, and a write made by a copy or a
/// kernel rather than maiaStreamWriteValue64 (which wakes it at once).
constexpr long kWatchSliceNs = 2'000'000;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The word's low half, the futex a writer wakes (little-endian): a shared
/// futex, keyed by the memfd page, so it works across processes.
uint32_t* futexWord(uint64_t* word) { return reinterpret_cast<uint32_t*>(word); }

struct ValueWait {
  uint64_t* word = nullptr;  // the driver's alias of the device word
  uint64_t value = 0;
  unsigned flags = 0;
  uint32_t timeout_ms = 0;
  Device* device = nullptr;
  std::shared_ptr<ipc::Peer> exporter;  // null for this process's memory
  std::string what;                     // names the wait in a failure
  std::atomic<int64_t> head_since_ns{0};  // when the stream first reached it
  std::atomic<bool> released{false};
  bool left_watcher = false;  // guarded by the watcher's mutex
  std::atomic<bool> leaving{false};

  bool met() const {
    const uint64_t current = std::atomic_ref<uint64_t>(*word).load(std::memory_order_acquire);
    return flags == maiaStreamWaitValueEq ? current == value : current >= value;
  }
  /// Why the wait cannot be met any more, or empty.
  std::string failure(int64_t now) const {
    if (exporter && !exporter->alive())
      return what + ": process " + std::to_string(exporter->pid()) +
             ", which exported the memory, exited before the value was written";
    const int64_t since = head_since_ns.load(std::memory_order_acquire);
    if (timeout_ms > 0 && since > 0 && now - since > int64_t{timeout_ms} * 1'000'000)
      return what + ": the value was not written within " + std::to_string(timeout_ms) + " ms";
    return {};
  }
};

/// The thread that notices waits met or failed and wakes the cores.
///
/// Lifetime: a wait's word may be IPC memory the user unmaps as soon as the
/// stream has moved past the wait. So the watcher dereferences words only
/// under mutex_, and a wait leaves the watcher (remove(), under mutex_)
/// before its command reports ready. mutex_ is a leaf lock: nothing else is
/// acquired while it is held, so remove() may be called from any context.
class ValueWatcher {
 public:
  static ValueWatcher& get() {
    static auto* watcher = new ValueWatcher();  // never joined: it sleeps in slices
    return *watcher;
  }

  void add(std::shared_ptr<ValueWait> wait) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (wait->left_watcher) return;  // met, or destroyed, before it was added
      waits_.push_back(std::move(wait));
      if (!started_) {
        started_ = true;
        std::thread([this] { run(); }).detach();
      }
      kick_.fetch_add(1, std::memory_order_seq_cst);
    }
    added_.notify_one();
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&kick_), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
  }

  /// After this returns the watcher no longer reads the wait's word, and a
  /// later add() of it (a racing ready()) is ignored.
  void remove(ValueWait* wait) {
    std::lock_guard<std::mutex> lock(mutex_);
    wait->left_watcher = true;
    std::erase_if(waits_, [&](const auto& w) { return w.get() == wait; });
  }

 private:
  void run() {
    while (true) {
      std::vector<std::shared_ptr<ValueWait>> pending;
      std::vector<futex_waitv> sleep;
      bool met = false;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        added_.wait(lock, [&] { return !waits_.empty(); });
        sleep.push_back(futex_waitv{kick_.load(std::memory_order_seq_cst),
                                    reinterpret_cast<uintptr_t>(&kick_),
                                    FUTEX_32 | FUTEX_PRIVATE_FLAG, 0});
        // Read the words before checking the waits: a write after the check
        // changes a word we sleep on, or is seen within the slice.
        for (const auto& wait : waits_) {
          if (sleep.size() >= FUTEX_WAITV_MAX) break;  // the rest: within the slice
          uint32_t* word = futexWord(wait->word);
          sleep.push_back(futex_waitv{std::atomic_ref<uint32_t>(*word).load(),
                                      reinterpret_cast<uintptr_t>(word), FUTEX_32, 0});
        }
        for (const auto& wait : waits_) {
          if (wait->released.load(std::memory_order_acquire) || wait->met()) {
            wait->released.store(true, std::memory_order_release);
            met = true;
          } else {
            pending.push_back(wait);
          }
        }
        std::erase_if(waits_, [](const auto& w) { return w->released.load(); });
      }
      if (met) {
        scheduler().notifyExternal();
        continue;
      }
      // Failures need no word: checked without the lock, so that recording
      // a fault (the device's lock) never nests inside mutex_.
      bool failed = false;
      const int64_t now = nowNs();
      for (auto& wait : pending) {
        std::string cause = wait->failure(now);
        if (cause.empty()) continue;
        wait->device->recordFault(cause);
        wait->released.store(true, std::memory_order_release);
        failed = true;
      }
      if (failed) {
        removeReleased();
        scheduler().notifyExternal();
        continue;
      }
      timespec deadline{};
      clock_gettime(CLOCK_MONOTONIC, &deadline);
      deadline.tv_nsec += kWatchSliceNs;
      deadline.tv_sec += deadline.tv_nsec / 1'000'000'000;
      deadline.tv_nsec %= 1'000'000'000;
      // ENOSYS: no futex_waitv (Linux < 5.16). EFAULT: a word was unmapped
      // after its wait left the watcher. Either way, poll for one slice.
      if (syscall(SYS_futex_waitv, sleep.data(), sleep.size(), 0, &deadline, CLOCK_MONOTONIC) <
              0 &&
          (errno == ENOSYS || errno == EFAULT)) {
        timespec slice{0, kWatchSliceNs};
        nanosleep(&slice, nullptr);
      }
    }
  }

  void removeReleased() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(waits_, [](const auto& w) { return w->released.load(); });
  }

  std::mutex mutex_;
  std::condition_variable added_;
  std::vector<std::shared_ptr<ValueWait>> waits_;
  bool started_ = false;
  std::atomic<uint32_t> kick_{0};
};

/// Holds its stream until the word holds the value (or the wait failed:
/// then the device is faulted and the work behind it is skipped).
class WaitValueCommand final : public Command {
 public:
  explicit WaitValueCommand(std::shared_ptr<ValueWait> wait) : wait_(std::move(wait)) {}
  ~WaitValueCommand() override { leaveWatcher(); }
  bool ready() const override {
    if (wait_->released.load(std::memory_order_acquire) || wait_->met()) {
      leaveWatcher();  // before the stream moves on and the user may unmap
      return true;
    }
    if (wait_->head_since_ns.load(std::memory_order_relaxed) == 0) {
      int64_t none = 0;
      if (wait_->head_since_ns.compare_exchange_strong(none, nowNs()))
        ValueWatcher::get().add(wait_);  // only waits that hold a stream need watching
    }
    return false;
  }
  void runChunk(int64_t) override {}
  bool skippedOnFault() const override { return false; }
  std::string describe() const override { return wait_->what; }

 private:
  void leaveWatcher() const {
    if (!wait_->leaving.exchange(true)) ValueWatcher::get().remove(wait_.get());
  }

  std::shared_ptr<ValueWait> wait_;
};

class WriteValueCommand final : public Command {
 public:
  WriteValueCommand(uint64_t* word, uint64_t value) : word_(word), value_(value) {}
  void runChunk(int64_t) override {
    std::atomic_ref<uint64_t>(*word_).store(value_, std::memory_order_release);
    // Wake watchers of this process and of others (a shared futex).
    syscall(SYS_futex, futexWord(word_), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
  void finish() override { scheduler().notifyExternal(); }  // local waits on the word
  std::string describe() const override { return "maiaStreamWriteValue64"; }

 private:
  uint64_t* word_;
  uint64_t value_;
};

Status resolveWord(Device* device, void* device_ptr, const char* what, uint64_t** out) {
  if (reinterpret_cast<uintptr_t>(device_ptr) % alignof(uint64_t) != 0)
    return makeError(maiaErrorInvalidDevicePointer, what, "(", device_ptr,
                     "): the word must be 8-byte aligned");
  if (deviceOwning(device_ptr) != device)
    return makeError(maiaErrorInvalidDevicePointer, what, "(", device_ptr,
                     "): not memory of the stream's device maia:", device->index(),
                     " (its own, or opened there from an IPC handle)");
  uintptr_t base = 0;
  size_t size = 0;
  MAIA_RETURN_IF_ERROR(device->arena().findAllocation(device_ptr, sizeof(uint64_t), what,
                                                      &base, &size));
  *out = static_cast<uint64_t*>(device->arena().hostAlias(device_ptr));
  return {};
}

}  // namespace

Status makeWaitValueCommand(Device* device, void* device_ptr, uint64_t value, unsigned flags,
                            uint32_t timeout_ms, std::unique_ptr<Command>* out) {
  constexpr const char* what = "maiaStreamWaitValue64";
  if (flags != maiaStreamWaitValueGeq && flags != maiaStreamWaitValueEq)
    return makeError(maiaErrorInvalidValue, what, ": unknown flags ", flags,
                     " (maiaStreamWaitValueGeq or maiaStreamWaitValueEq)");
  auto wait = std::make_shared<ValueWait>();
  MAIA_RETURN_IF_ERROR(resolveWord(device, device_ptr, what, &wait->word));
  wait->value = value;
  wait->flags = flags;
  wait->timeout_ms = timeout_ms;
  wait->device = device;
  wait->exporter = ipc::importedFrom(device_ptr);
  char word[64];
  std::snprintf(word, sizeof(word), "%p %s %llu", device_ptr,
                flags == maiaStreamWaitValueEq ? "==" : ">=",
                static_cast<unsigned long long>(value));
  wait->what = std::string(what) + "(" + word + ")";
  *out = std::make_unique<WaitValueCommand>(std::move(wait));
  return {};
}

Status makeWriteValueCommand(Device* device, void* device_ptr, uint64_t value,
                             std::unique_ptr<Command>* out) {
  uint64_t* word = nullptr;
  MAIA_RETURN_IF_ERROR(resolveWord(device, device_ptr, "maiaStreamWriteValue64", &word));
  *out = std::make_unique<WriteValueCommand>(word, value);
  return {};
}

}  // namespace maia::driver
