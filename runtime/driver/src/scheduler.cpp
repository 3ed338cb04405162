#include "scheduler.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

#include "activity.h"
#include "device.h"
#include "fault.h"

namespace maia::driver {
namespace {

using Clock = std::chrono::steady_clock;

inline void cpuRelax() { _mm_pause(); }

// Only a waiting host helps with a thread of its own; spinning it checks the
// clock every this many iterations (a clock read costs ~20 ns).
constexpr int kSpinCheckInterval = 64;

}  // namespace

Scheduler::Scheduler(int cores, long spin_us) : cores_(cores), spin_us_(spin_us) {
  active_.store(cores_);
  workers_.reserve(cores_);
  for (int i = 0; i < cores_; ++i) workers_.emplace_back([this] { workerLoop(); });
}

Scheduler::~Scheduler() { shutdown(); }

void Scheduler::shutdown() {
  if (stop_.exchange(true)) return;
  worker_wake_.fetch_add(1);
  worker_wake_.notify_all();
  for (auto& worker : workers_) worker.join();
  workers_.clear();
}

void Scheduler::addStream(Stream* stream) {
  std::lock_guard<SpinLock> lock(streams_mutex_);
  auto position = std::find_if(streams_.begin(), streams_.end(), [&](Stream* s) {
    return s->priority > stream->priority;
  });
  streams_.insert(position, stream);
}

void Scheduler::removeStream(Stream* stream) {
  std::lock_guard<SpinLock> lock(streams_mutex_);
  streams_.erase(std::remove(streams_.begin(), streams_.end(), stream), streams_.end());
}

void Scheduler::notifyWork(Stream* stream, uint64_t sequence) {
  work_.fetch_add(kEpochOne + 1, std::memory_order_seq_cst);
  if (workerToWake() && stream->commands.completed() == sequence) wakeWorker();
}

void Scheduler::notifyExternal() {
  work_.fetch_add(kEpochOne, std::memory_order_seq_cst);
  wakeWorkerIfNeeded();
  if (parked_hosts_.load(std::memory_order_seq_cst) > 0) {
    host_wake_.fetch_add(1, std::memory_order_seq_cst);
    host_wake_.notify_all();
  }
}

bool Scheduler::workerToWake() const {
  // An idle spinning worker will take the work: waking another would cost a
  // syscall now and a park later. So in steady state (workers spinning or
  // busy) an enqueue makes no syscall.
  return spinning_workers_.load(std::memory_order_seq_cst) == 0 &&
         parked_workers_.load(std::memory_order_seq_cst) > 0 &&
         active_.load(std::memory_order_seq_cst) < cores_;
}

void Scheduler::wakeWorker() {
  worker_wake_.fetch_add(1, std::memory_order_seq_cst);
  worker_wake_.notify_one();
}

void Scheduler::wakeWorkerIfNeeded() {
  if (workerToWake()) wakeWorker();
}

bool Scheduler::claimChunk(Stream* prefer, Claim* out) {
  auto tryStream = [&](Stream* stream) {
    Command* command = nullptr;
    int64_t chunk = 0;
    if (!stream->commands.claimHeadChunk(&command, &chunk)) return false;
    *out = Claim{stream, command, chunk};
    return true;
  };
  std::lock_guard<SpinLock> lock(streams_mutex_);
  if (prefer != nullptr && tryStream(prefer)) return true;
  size_t n = streams_.size();
  if (n == 0) return false;
  // Highest priority first; rotate the start among streams so that equal
  // priorities share the cores.
  size_t start = scan_start_++ % n;
  int best_priority = streams_.front()->priority;
  for (size_t pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < n; ++k) {
      Stream* stream = streams_[(start + k) % n];
      if ((pass == 0) != (stream->priority == best_priority)) continue;
      if (tryStream(stream)) return true;
    }
  }
  return false;
}

void Scheduler::runClaim(Claim claim) {
  Command* command = claim.command;
  Device* device = claim.stream->device;
  const int64_t total = command->totalChunks();
  int64_t chunk = claim.chunk;
  if (Activity* activity = command->activity()) [[unlikely]]
    activityChunkStarted(activity);
  while (true) {
    if (!(device->faulted() && command->skippedOnFault())) {
      std::string fault;
      if (!runGuarded([&] { command->runChunk(chunk); }, &fault))
        device->recordFault(command->describe() + ": " + fault);
    }
    // Claim the next chunk before marking this one done, so the command
    // cannot be finished (and freed) under us while we hold a chunk; after
    // markChunkDone, touch it only if we completed it.
    int64_t next = command->claimChunk();
    bool last = command->markChunkDone();
    if (next < total) {
      chunk = next;
      continue;
    }
    if (last) completeHead(claim.stream, command);
    return;
  }
}

void Scheduler::completeHead(Stream* stream, Command* command) {
  // The stream is done with the command before anyone can observe its
  // effect (an event's completion): a host that synchronized an event may
  // destroy the stream at once. Nothing touches the stream after this.
  if (Activity* activity = command->activity()) [[unlikely]] {
    command->setActivity(nullptr);
    command->endNestedActivities();
    endActivity(activity);  // before the pop: a waiting host may flush at once
  }
  const bool parallel_next = stream->commands.popHead();
  command->finish();
  delete command;
  work_.fetch_add(kEpochOne - 1, std::memory_order_seq_cst);  // pending is >= 1 here
  if (parked_hosts_.load(std::memory_order_seq_cst) > 0) {
    host_wake_.fetch_add(1, std::memory_order_seq_cst);
    host_wake_.notify_all();
  }
  // This worker takes one chunk of the next head; the others need a core.
  if (parallel_next) wakeWorkerIfNeeded();
}

void Scheduler::workerLoop() {
  installFaultHandlers();
  Claim claim;
  // The spin budget runs from the last chunk this worker ran, not from the
  // last change it saw: a stream of single-chunk commands keeps one worker
  // busy and bumps the epoch on every enqueue, and a second worker that
  // renewed its budget on each bump spun forever, taking a vCPU from the
  // host thread that enqueues (3 busy threads on 2 vCPUs).
  auto budget_end = [this] { return Clock::now() + std::chrono::microseconds(spin_us_); };
  auto deadline = budget_end();
  while (!stop_.load(std::memory_order_relaxed)) {
    // Read before looking for work: an enqueue that the claim misses bumps
    // the epoch after this, so the spin below or the re-check before
    // parking sees it. (Read after a failed claim, the bump could land in
    // between, and the worker parked with the command queued: a lost wake-up.)
    uint32_t seen = epochOf(work_.load(std::memory_order_seq_cst));
    if (claimChunk(nullptr, &claim)) {
      runClaim(claim);
      deadline = budget_end();
      continue;
    }
    // Idle: spin while something may change, yield the core to a waiting
    // host, park when the spin budget is spent.
    spinning_workers_.fetch_add(1, std::memory_order_seq_cst);
    bool park = false;
    for (int i = 0;; ++i) {
      if (epochOf(work_.load(std::memory_order_relaxed)) != seen ||
          stop_.load(std::memory_order_relaxed))
        break;
      if (active_.load(std::memory_order_relaxed) > cores_) {
        park = true;
        break;
      }
      if (i % kSpinCheckInterval == 0 && Clock::now() >= deadline) {
        park = true;
        break;
      }
      cpuRelax();
    }
    spinning_workers_.fetch_sub(1, std::memory_order_seq_cst);
    if (!park) continue;

    uint32_t ticket = worker_wake_.load(std::memory_order_seq_cst);
    parked_workers_.fetch_add(1, std::memory_order_seq_cst);
    active_.fetch_sub(1, std::memory_order_seq_cst);
    // Re-check after announcing the park: an enqueue that saw no parked
    // worker happened before, and its work is visible in work_.
    const uint64_t work = work_.load(std::memory_order_seq_cst);
    bool work_waiting = pendingOf(work) > 0 &&
                        active_.load(std::memory_order_seq_cst) < cores_ &&
                        epochOf(work) != seen;
    if (!work_waiting && !stop_.load()) worker_wake_.wait(ticket, std::memory_order_seq_cst);
    active_.fetch_add(1, std::memory_order_seq_cst);
    parked_workers_.fetch_sub(1, std::memory_order_seq_cst);
    deadline = budget_end();
  }
}

void Scheduler::waitUntil(const std::function<bool()>& done, Stream* prefer) {
  if (done()) return;
  installFaultHandlers();
  active_.fetch_add(1, std::memory_order_seq_cst);
  Claim claim;
  auto spin_deadline = Clock::now() + std::chrono::microseconds(std::max(spin_us_, 20L));
  int spins = 0;
  while (!done()) {
    if (claimChunk(prefer, &claim)) {
      runClaim(claim);
      spin_deadline = Clock::now() + std::chrono::microseconds(std::max(spin_us_, 20L));
      continue;
    }
    if (++spins % kSpinCheckInterval != 0 || Clock::now() < spin_deadline) {
      cpuRelax();
      continue;
    }
    // Nothing to run and the awaited work is running elsewhere for long:
    // give the core back and sleep until a command completes.
    uint32_t ticket = host_wake_.load(std::memory_order_seq_cst);
    parked_hosts_.fetch_add(1, std::memory_order_seq_cst);
    active_.fetch_sub(1, std::memory_order_seq_cst);
    wakeWorkerIfNeeded();
    if (!done()) host_wake_.wait(ticket, std::memory_order_seq_cst);
    active_.fetch_add(1, std::memory_order_seq_cst);
    parked_hosts_.fetch_sub(1, std::memory_order_seq_cst);
    spin_deadline = Clock::now() + std::chrono::microseconds(std::max(spin_us_, 20L));
  }
  active_.fetch_sub(1, std::memory_order_seq_cst);
  if (pendingOf(work_.load(std::memory_order_seq_cst)) > 0) wakeWorkerIfNeeded();
}

}  // namespace maia::driver
