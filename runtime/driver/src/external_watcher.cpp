#include "external_watcher.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <ctime>
#include <thread>

#include "device.h"
#include "scheduler.h"

namespace maia::driver {
namespace {

/// How long the watcher sleeps before it looks at failures (a peer's exit,
/// a timeout) and at words changed without a wake (a copy or a kernel).
constexpr long kWatchSliceNs = 2'000'000;

struct SleepWord {
  FutexWord futex;
  uint32_t seen = 0;
};

/// Sleeps until one of words changes (or is woken), or timeout_ns pass.
/// futex_waitv (Linux 5.16) sleeps on all of them at once; without it, on
/// the first only, the others being seen within the timeout. EFAULT (a
/// word unmapped after its wait left the watcher) sleeps the slice too.
void futexWaitAny(const std::vector<SleepWord>& words, long timeout_ns) {
  static std::atomic<bool> have_waitv{true};
  if (have_waitv.load(std::memory_order_relaxed)) {
    std::vector<futex_waitv> waiters;
    waiters.reserve(words.size());
    for (const SleepWord& w : words)
      waiters.push_back(futex_waitv{w.seen, reinterpret_cast<uintptr_t>(w.futex.word),
                                    FUTEX_32 | (w.futex.shared ? 0u : FUTEX_PRIVATE_FLAG), 0});
    timespec deadline{};
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_nsec += timeout_ns;
    deadline.tv_sec += deadline.tv_nsec / 1'000'000'000;
    deadline.tv_nsec %= 1'000'000'000;
    if (syscall(SYS_futex_waitv, waiters.data(), waiters.size(), 0, &deadline,
                CLOCK_MONOTONIC) >= 0)
      return;
    if (errno == ENOSYS) {
      have_waitv.store(false, std::memory_order_relaxed);
    } else if (errno == EFAULT) {
      timespec slice{0, timeout_ns};
      nanosleep(&slice, nullptr);
      return;
    } else {
      return;  // woken, a word already changed, or the deadline passed
    }
  }
  const SleepWord& first = words.front();
  timespec timeout{0, timeout_ns};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(first.futex.word),
          first.futex.shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, first.seen, &timeout, nullptr, 0);
}

}  // namespace

int64_t steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void futexWakeAll(std::atomic<uint32_t>* word, bool shared) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE,
          INT_MAX, nullptr, nullptr, 0);
}

bool ExternalWait::claim(Outcome outcome) {
  int expected = kWatching;
  return outcome_.compare_exchange_strong(expected, outcome, std::memory_order_acq_rel) ||
         expected == outcome;
}

bool ExternalWait::passable() {
  if (released.load(std::memory_order_acquire)) return true;
  if (!met()) return false;
  // Lost to a failure in progress: pass once its fault is recorded.
  return claim(kPassed) || released.load(std::memory_order_acquire);
}

ExternalWatcher& ExternalWatcher::get() {
  static auto* watcher = new ExternalWatcher();  // never joined: it sleeps in slices
  return *watcher;
}

void ExternalWatcher::add(std::shared_ptr<ExternalWait> wait) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (wait->left_watcher_) return;  // met, or its command gone, before it came
    waits_.push_back(std::move(wait));
    if (!started_) {
      started_ = true;
      std::thread([this] { run(); }).detach();
    }
    kick_.fetch_add(1, std::memory_order_seq_cst);
  }
  added_.notify_one();
  // If it sleeps on the words of other waits, it must add this one's.
  futexWakeAll(&kick_, /*shared=*/false);
}

void ExternalWatcher::remove(ExternalWait* wait) {
  std::lock_guard<std::mutex> lock(mutex_);
  wait->left_watcher_ = true;
  std::erase_if(waits_, [&](const auto& w) { return w.get() == wait; });
}

void ExternalWatcher::removeReleased() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(waits_, [](const auto& w) { return w->released.load(); });
}

void ExternalWatcher::run() {
  while (true) {
    // Held through the iteration: a wait keeps alive what its word's
    // sleepers counter is in (a peer's table), for the decrement below.
    std::vector<std::shared_ptr<ExternalWait>> held;
    std::vector<SleepWord> words;
    bool met = false;
    {
      // Words are touched only under the lock: remove() may precede an
      // unmap of the memory they are in.
      std::unique_lock<std::mutex> lock(mutex_);
      added_.wait(lock, [&] { return !waits_.empty(); });
      words.push_back({FutexWord{&kick_, false, nullptr}, kick_.load(std::memory_order_seq_cst)});
      // Announce the sleep and read the words before checking the waits: a
      // change after the check either changes a word or sees a sleeper.
      for (const auto& wait : waits_) {
        const FutexWord futex = wait->word();
        if (words.size() >= FUTEX_WAITV_MAX ||
            std::any_of(words.begin(), words.end(),
                        [&](const SleepWord& w) { return w.futex.word == futex.word; }))
          continue;  // beyond the limit: seen within the slice
        if (futex.sleepers) futex.sleepers->fetch_add(1, std::memory_order_seq_cst);
        words.push_back({futex, futex.word->load(std::memory_order_seq_cst)});
      }
      held = waits_;
      for (const auto& wait : waits_) {
        if (wait->released.load(std::memory_order_acquire) ||
            (wait->met() && wait->claim(ExternalWait::kPassed))) {
          wait->released.store(true, std::memory_order_release);
          met = true;
        }
      }
      if (met) std::erase_if(waits_, [](const auto& w) { return w->released.load(); });
    }
    // Failures are looked at without the lock, so that faulting a device
    // (its own lock) never nests inside it.
    bool failed = false;
    if (!met) {
      const int64_t now = steadyNowNs();
      for (auto& wait : held) {
        if (wait->released.load(std::memory_order_acquire)) continue;
        std::string cause = wait->failure(now);
        if (cause.empty() || !wait->claim(ExternalWait::kFailing)) continue;
        if (wait->device) wait->device->recordFault(cause);
        wait->cause = std::move(cause);
        wait->failed.store(true, std::memory_order_release);
        wait->released.store(true, std::memory_order_release);
        failed = true;
      }
      if (failed) removeReleased();
    }
    if (met || failed)
      scheduler().notifyExternal();
    else
      futexWaitAny(words, kWatchSliceNs);
    for (const SleepWord& w : words)
      if (w.futex.sleepers) w.futex.sleepers->fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace maia::driver
