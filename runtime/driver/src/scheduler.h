// Scheduler: the pool of device cores that runs every stream's commands.
//
// Threads: one worker per core (shared by all devices). Workers claim chunks
// of the head command of streams with work, highest priority first. An idle
// worker spins for MAIA_SPIN_US (a hand-off by spinning costs ~0.5 us here,
// a futex wake 13-30 us), then parks. A host thread blocked in a
// synchronize helps: it runs chunks itself, which keeps the number of busy
// threads at the number of cores (more spinners than vCPUs costs ~6 ms per
// hand-off on this machine): idle workers park while a host is waiting.
// See docs/runtime.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "command.h"
#include "spin_lock.h"
#include "stream.h"

namespace maia::driver {

class Scheduler {
 public:
  Scheduler(int cores, long spin_us);
  ~Scheduler();

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  int cores() const { return cores_; }

  void addStream(Stream* stream);
  void removeStream(Stream* stream);

  /// Called after command number sequence was queued on stream. A parked
  /// worker is woken only if the command can start at once (it is the
  /// stream's head): a command queued behind others is started by the
  /// worker that completes its predecessor, and waking another worker for
  /// it would cost a futex wake and a thread competing with the host for a
  /// core, for nothing. Whether it is the head is read only when a worker
  /// is parked: the cores write the completion count on every command.
  void notifyWork(Stream* stream, uint64_t sequence);

  /// A command's ready() may have turned true from outside the driver's
  /// own work (an interprocess event completed in another process): wakes
  /// spinning and parked workers and parked hosts to look again.
  void notifyExternal();

  /// Blocks the calling host thread until done() holds, running device
  /// work meanwhile. prefer is the stream the caller waits for (or null).
  void waitUntil(const std::function<bool()>& done, Stream* prefer);

  /// Stops and joins the workers (at exit). Waits still complete after
  /// this: waiting hosts run the work themselves.
  void shutdown();

 private:
  struct Claim {
    Stream* stream = nullptr;
    Command* command = nullptr;
    int64_t chunk = 0;
  };

  void workerLoop();
  /// Claims one runnable chunk, trying prefer first. False if none.
  bool claimChunk(Stream* prefer, Claim* out);
  /// Runs a claimed chunk, and further chunks of the same command while
  /// any remain; finishes the command if this thread completed it.
  void runClaim(Claim claim);
  /// Pops the completed head; wakes a worker if the next head has chunks
  /// for more than the worker that completed this one.
  void completeHead(Stream* stream, Command* command);
  /// Whether an enqueue should wake a worker: none spinning, one parked,
  /// and fewer threads active than cores.
  bool workerToWake() const;
  void wakeWorker();
  void wakeWorkerIfNeeded();

  const int cores_;
  const long spin_us_;

  SpinLock streams_mutex_;
  std::vector<Stream*> streams_;  // sorted: highest priority first
  size_t scan_start_ = 0;         // round-robin among equal priorities

  /// One word, so that an enqueue or a completion is one atomic operation:
  /// the high half is an epoch bumped by every enqueue and completion
  /// (spinners watch it), the low half counts the commands queued and not
  /// completed over all streams.
  std::atomic<uint64_t> work_{0};
  static constexpr uint64_t kEpochOne = uint64_t{1} << 32;
  static uint32_t epochOf(uint64_t work) { return static_cast<uint32_t>(work >> 32); }
  static uint32_t pendingOf(uint64_t work) { return static_cast<uint32_t>(work); }
  /// Threads running or spinning: workers not parked + hosts waiting.
  std::atomic<int> active_{0};
  std::atomic<int> spinning_workers_{0};  // idle workers looking for work
  std::atomic<int> parked_workers_{0};
  std::atomic<int> parked_hosts_{0};
  std::atomic<uint32_t> worker_wake_{0};  // futex words
  std::atomic<uint32_t> host_wake_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

}  // namespace maia::driver
