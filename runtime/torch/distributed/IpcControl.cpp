#include "IpcControl.h"

#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include <fcntl.h>
#include <immintrin.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>

namespace torch_maia::distributed {
namespace {

constexpr size_t kLine = 64;
/// How long a waiter spins before it sleeps: a peer issuing the same
/// collective usually arrives within microseconds, and a futex sleep costs
/// two wake-ups (tens of microseconds) when it does.
constexpr auto kSpin = std::chrono::microseconds(30);
/// How often a sleeping waiter looks at its peers' pidfds and the deadline.
constexpr auto kSlice = std::chrono::milliseconds(2);

/// What a rank's stream runs at a step, so that ranks whose programs
/// diverged (another collective, size or dtype) fail instead of mixing data.
constexpr size_t kStepText = 120;
/// A peer is at most one step ahead of a waiter (it cannot pass the next
/// barrier before the waiter arrives there): two entries per rank suffice.
constexpr int kStepRing = 4;

struct alignas(kLine) Arrival {
  std::atomic<uint64_t> epoch;
  uint64_t step_hash[kStepRing];
  char step_text[kStepRing][kStepText];
};

std::vector<uint8_t> bytesOf(const std::string& s) { return {s.begin(), s.end()}; }
std::string stringOf(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

int pidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

void futexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1000000000),
              static_cast<long>(timeout.count() % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

struct alignas(kLine) IpcControl::Pair {
  std::atomic<uint64_t> published;
  std::atomic<uint64_t> consumed;
  PieceHeader header[2];  // of the piece in each slot
};

/// In shared memory: a header line, one line per rank, then one line per
/// ordered pair of ranks (the point-to-point channels).
struct IpcControl::Block {
  alignas(kLine) std::atomic<uint32_t> bell;  // futex word: bumped at every arrival
  std::atomic<uint32_t> sleepers;             // waiters in futexWait (wake only if any)
  std::atomic<uint32_t> failed;               // 1 + the rank whose wait failed first
  Arrival* arrivals() { return reinterpret_cast<Arrival*>(reinterpret_cast<char*>(this) + kLine); }
};

IpcControl::IpcControl(c10d::Store& store, const std::string& prefix, int rank,
                       std::vector<int> group_ranks)
    : rank_(rank),
      size_(static_cast<int>(group_ranks.size())),
      group_ranks_(std::move(group_ranks)),
      bytes_(kLine + sizeof(Arrival) * group_ranks_.size() +
             sizeof(Pair) * group_ranks_.size() * group_ranks_.size() +
             sizeof(ExposedBuffer) * group_ranks_.size()) {
  const int size = size_;
  std::string name;
  int fd = -1;
  if (rank == 0) {
    std::random_device random;
    name = c10::str("/maia-c10d-", getpid(), "-", std::hex, random(), random());
    fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    TORCH_CHECK(fd >= 0, "maia c10d: cannot create the shared memory segment ", name, ": ",
                std::strerror(errno));
    if (ftruncate(fd, static_cast<off_t>(bytes_)) != 0) {
      int error = errno;
      close(fd);
      shm_unlink(name.c_str());
      TORCH_CHECK(false, "maia c10d: cannot size ", name, ": ", std::strerror(error));
    }
    store.set(prefix + "shm", bytesOf(name));
  } else {
    name = stringOf(store.get(prefix + "shm"));
    fd = shm_open(name.c_str(), O_RDWR, 0600);
    TORCH_CHECK(fd >= 0, "maia c10d: cannot open the shared memory segment ", name,
                " of rank 0 (are the ranks of this group on one host? MAIA_DIST_EMULATE_HOSTS "
                "and the hostnames decide): ", std::strerror(errno));
  }
  void* mapping = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int map_error = errno;
  close(fd);
  TORCH_CHECK(mapping != MAP_FAILED, "maia c10d: cannot map ", name, ": ",
              std::strerror(map_error));
  block_ = static_cast<Block*>(mapping);  // zero-filled by ftruncate
  // The last rank to open it removes the name: the mappings stay.
  if (store.add(prefix + "shm_opened", 1) == size) shm_unlink(name.c_str());

  store.set(prefix + "pid/" + std::to_string(rank), bytesOf(std::to_string(getpid())));
  pids_.resize(size);
  pidfds_.assign(size, -1);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    pids_[peer] = std::stoi(stringOf(store.get(prefix + "pid/" + std::to_string(peer))));
    pidfds_[peer] = pidfdOpen(pids_[peer]);  // -1 before Linux 5.3: kill(pid, 0) instead
  }
}

IpcControl::~IpcControl() {
  for (int fd : pidfds_)
    if (fd >= 0) close(fd);
  if (block_ != nullptr) munmap(block_, bytes_);
}

int IpcControl::exitedPeer() const {
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    if (pidfds_[peer] >= 0) {
      pollfd p{pidfds_[peer], POLLIN, 0};
      if (poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) return peer;
    } else if (kill(pids_[peer], 0) != 0 && errno == ESRCH) {
      return peer;
    }
  }
  return -1;
}

std::string IpcControl::failure(const std::string& cause) {
  uint32_t none = 0;
  block_->failed.compare_exchange_strong(none, static_cast<uint32_t>(rank_) + 1);
  block_->bell.fetch_add(1);
  futexWakeAll(&block_->bell);
  return cause;
}

std::string IpcControl::arriveAndWait(uint64_t epoch, const std::string& step,
                                      const WaitLimit& limit) {
  Block& block = *block_;
  Arrival* arrivals = block.arrivals();
  const int ring = static_cast<int>(epoch % kStepRing);
  const uint64_t hash = std::hash<std::string>{}(step);
  if (std::string cause = reportedFailure(); !cause.empty()) return cause;

  Arrival& mine = arrivals[rank_];
  mine.step_hash[ring] = hash;
  std::snprintf(mine.step_text[ring], kStepText, "%s", step.c_str());
  mine.epoch.store(epoch);  // publishes the step written above
  ringBell();

  auto missing = [&] {
    for (int peer = 0; peer < size_; ++peer)
      if (arrivals[peer].epoch.load(std::memory_order_acquire) < epoch) return peer;
    return -1;
  };
  // Every peer has published this step (it is at this epoch or one later).
  auto compare = [&]() -> std::string {
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_ || arrivals[peer].step_hash[ring] == hash) continue;
      char text[kStepText];
      std::memcpy(text, arrivals[peer].step_text[ring], kStepText);
      text[kStepText - 1] = '\0';
      return failure(c10::str("rank ", group_ranks_[peer], " is at another step: it runs ", text,
                              ", this rank ", step, " (the ranks called different collectives, "
                              "sizes or dtypes)"));
    }
    return "";
  };
  auto waiting_for = [&] {
    std::string waiting;
    for (int p = 0; p < size_; ++p)
      if (arrivals[p].epoch.load() < epoch)
        waiting += (waiting.empty() ? "" : ", ") + std::to_string(group_ranks_[p]);
    return c10::str("rank(s) ", waiting, " to reach the same step");
  };
  std::string cause = waitUntil([&] { return missing() < 0; }, waiting_for, limit);
  return cause.empty() ? compare() : cause;
}

std::string IpcControl::reportedFailure() const {
  const uint32_t failed = block_->failed.load();
  if (failed == 0) return "";
  return c10::str("rank ", group_ranks_.at(failed - 1),
                  " failed an earlier IPC step of this group");
}

void IpcControl::ringBell() {
  block_->bell.fetch_add(1);
  if (block_->sleepers.load() > 0) futexWakeAll(&block_->bell);
}

std::string IpcControl::waitUntil(const std::function<bool()>& ready,
                                  const std::function<std::string()>& waiting_for,
                                  const WaitLimit& limit) {
  Block& block = *block_;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (ready()) return "";
    _mm_pause();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() - start > kSpin) break;
  }
  LaunchStatus* launch = limit.launch.get();
  auto deadline = start + limit.timeout;
  std::string cause;
  while (true) {
    uint32_t bell = block.bell.load();
    if (ready()) break;
    if (cause = reportedFailure(); !cause.empty()) break;
    if (int dead = exitedPeer(); dead >= 0) {
      cause = failure(c10::str("rank ", group_ranks_[dead], " (pid ", pids_[dead],
                               ") exited during the collective"));
      break;
    }
    // The host gave up on the launch: the peers learn it from the block.
    if (launch != nullptr && launch->failed()) {
      cause = failure(c10::str("this rank gave up on the collective while waiting for ",
                               waiting_for()));
      break;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      cause = failure(c10::str("timed out after ", limit.timeout.count(), " ms waiting for ",
                               waiting_for()));
      break;
    }
    if (launch != nullptr) launch->setWaitingFor(waiting_for());
    block.sleepers.fetch_add(1);
    futexWait(&block.bell, bell, std::min<std::chrono::nanoseconds>(kSlice, deadline - now));
    block.sleepers.fetch_sub(1);
  }
  if (launch != nullptr) launch->setWaitingFor("");
  return cause;
}

IpcControl::ExposedBuffer* IpcControl::exposedBuffers() const {
  auto* pairs = reinterpret_cast<char*>(&pair(0, 0));
  return reinterpret_cast<ExposedBuffer*>(pairs + sizeof(Pair) * size_ * size_);
}

void IpcControl::expose(const ExposedBuffer& buffer) {
  // Plain stores: the barrier this rank arrives at next publishes them.
  exposedBuffers()[rank_] = buffer;
}

IpcControl::ExposedBuffer IpcControl::exposed(int peer) const { return exposedBuffers()[peer]; }

IpcControl::Pair& IpcControl::pair(int from, int to) const {
  auto* pairs = reinterpret_cast<Pair*>(reinterpret_cast<char*>(block_) + kLine +
                                        sizeof(Arrival) * size_);
  return pairs[from * size_ + to];
}

namespace {

const char* kindName(int32_t kind) {
  return kind == IpcControl::kSendRecv ? "send/recv" : kind == IpcControl::kAllToAll
                                                           ? "all_to_all"
                                                           : "nothing";
}

}  // namespace

std::string IpcControl::waitSlotFree(int to, uint64_t piece, const WaitLimit& limit) {
  if (piece <= 2) return "";
  Pair& channel = pair(rank_, to);
  return waitUntil(
      [&] { return channel.consumed.load(std::memory_order_acquire) + 2 >= piece; },
      [&] { return c10::str("rank ", group_ranks_[to], " to receive what this rank sends it"); },
      limit);
}

void IpcControl::publish(int to, uint64_t piece, const PieceHeader& header) {
  Pair& channel = pair(rank_, to);
  channel.header[piece % 2] = header;
  channel.published.store(piece, std::memory_order_release);
  ringBell();
}

std::string IpcControl::waitPublished(int from, uint64_t piece, const PieceHeader& expected,
                                      const WaitLimit& limit) {
  Pair& channel = pair(from, rank_);
  std::string cause = waitUntil(
      [&] { return channel.published.load(std::memory_order_acquire) >= piece; },
      [&] {
        return c10::str("rank ", group_ranks_[from], " to send ", expected.message_bytes,
                        " bytes (tag ", expected.tag, ", ", kindName(expected.kind), ")");
      },
      limit);
  if (!cause.empty()) return cause;
  const PieceHeader got = channel.header[piece % 2];
  if (got.message_bytes == expected.message_bytes && got.tag == expected.tag &&
      got.kind == expected.kind)
    return "";
  return failure(c10::str("rank ", group_ranks_[from], " sent ", got.message_bytes,
                          " bytes with tag ", got.tag, " (", kindName(got.kind),
                          "), this rank receives ", expected.message_bytes, " bytes with tag ",
                          expected.tag, " (", kindName(expected.kind),
                          "): the ranks' sends and receives do not match"));
}

void IpcControl::consume(int from, uint64_t piece) {
  pair(from, rank_).consumed.store(piece, std::memory_order_release);
  ringBell();
}

int IpcControl::waitAnySender(const std::vector<uint64_t>& next, int32_t tag,
                              const WaitLimit& limit, std::string* cause) {
  int sender = -1;
  auto ready = [&] {
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      Pair& channel = pair(p, rank_);
      if (channel.published.load(std::memory_order_acquire) < next[p]) continue;
      const PieceHeader& header = channel.header[next[p] % 2];
      if (header.tag == tag && header.kind == kSendRecv) {
        sender = p;
        return true;
      }
    }
    return false;
  };
  *cause = waitUntil(ready, [&] { return c10::str("any rank to send with tag ", tag); }, limit);
  return sender;
}

}  // namespace torch_maia::distributed
