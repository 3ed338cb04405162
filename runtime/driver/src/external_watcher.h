// The thread that watches for conditions set outside this process's
// driver: a record completed by a peer process (interprocess events), or a
// word of device memory reaching a value (maiaStreamWaitValue64), written
// by a peer, a copy or a kernel. Such a wait occupies no core: its command's
// ready() reads the condition. The watcher sleeps on every awaited futex
// word at once (futex_waitv), looks at failures (a peer that exited, a
// timeout) every slice, and wakes the cores (Scheduler::notifyExternal)
// when a wait is met or fails, so that an absent peer is an error, never a
// hang.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace maia::driver {

class Device;

/// A word whose change the watcher sleeps on.
struct FutexWord {
  std::atomic<uint32_t>* word = nullptr;
  /// Shared between processes (a memfd page), not FUTEX_PRIVATE.
  bool shared = false;
  /// Bumped while the watcher sleeps on word, so that a writer makes the
  /// wake syscall only when someone sleeps (null: writers always wake).
  std::atomic<uint32_t>* sleepers = nullptr;
};

/// One condition the watcher watches. Subclasses say when it is met, what
/// word its change bumps, and when it can never be met.
class ExternalWait {
 public:
  virtual ~ExternalWait() = default;
  /// Called under the watcher's lock (a leaf lock: must take no other).
  virtual bool met() const = 0;
  virtual FutexWord word() const = 0;
  /// Why the wait can never be met, or empty. Called without the lock.
  virtual std::string failure(int64_t now_ns) const = 0;

  /// For the wait's command: whether its stream may move on. Passing when
  /// met and failing are exclusive: a wait the watcher has begun to fail
  /// passes only once the device's fault is recorded, and one that passed
  /// is never failed.
  bool passable();

  /// The device faulted with failure() when the wait fails; null for a
  /// host wait (which reads failed and cause instead).
  Device* device = nullptr;
  std::atomic<bool> released{false};  // met or failed: the command may pass
  std::atomic<bool> failed{false};
  std::string cause;  // why it failed; written before released

 private:
  friend class ExternalWatcher;
  enum Outcome : int { kWatching, kPassed, kFailing };
  bool claim(Outcome outcome);

  std::atomic<int> outcome_{kWatching};
  bool left_watcher_ = false;  // guarded by the watcher's lock
};

class ExternalWatcher {
 public:
  static ExternalWatcher& get();

  void add(std::shared_ptr<ExternalWait> wait);
  /// After this returns the watcher no longer touches the wait's word, and
  /// a later add() of it is ignored: call it before a wait's command lets
  /// its stream move on, when the word is memory the user may unmap.
  void remove(ExternalWait* wait);

 private:
  ExternalWatcher() = default;
  void run();
  void removeReleased();

  std::mutex mutex_;
  std::condition_variable added_;
  std::vector<std::shared_ptr<ExternalWait>> waits_;
  bool started_ = false;
  std::atomic<uint32_t> kick_{0};  // bumped by add(): ends the watcher's sleep
};

/// Wakes every sleeper on a futex word (shared: of every process).
void futexWakeAll(std::atomic<uint32_t>* word, bool shared);

int64_t steadyNowNs();

}  // namespace maia::driver
