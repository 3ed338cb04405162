#include "ipc_table.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "device.h"
#include "ipc_fd_server.h"

namespace maia::driver::ipc {
namespace {

constexpr uint64_t kTableMagic = 0x454c42415449414dull;  // "MAIATABLE"
constexpr const char* kTableName = "maia-ipc-table";

int pidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }
int pidfdGetfd(int pidfd, int fd) {
  return static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
}

std::string exitedMessage(const char* what, pid_t pid) {
  return std::string(what) + ": process " + std::to_string(pid) +
         ", which made the IPC handle, has exited";
}

/// Whether pid is a process that has not exited: a zombie (exited, not yet
/// reaped by its parent) has already dropped its mappings.
bool processRunning(pid_t pid) {
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // cannot tell: keep the memory
  // "pid (comm) S ...": the state follows the last ')' (comm may hold any).
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return true;
  const char state = line[close + 2];
  return state != 'Z' && state != 'X';
}

}  // namespace

Status Table::get(Table** out) {
  static std::mutex mutex;
  static Table* table = nullptr;  // never destroyed: peers may map it until we exit
  std::lock_guard<std::mutex> lock(mutex);
  if (table) {
    *out = table;
    return {};
  }
  auto created = std::unique_ptr<Table>(new Table());
  // Not CLOEXEC-sensitive (peers take it with pidfd_getfd), but keep it out
  // of exec'd children all the same.
  created->fd_ = memfd_create(kTableName, MFD_CLOEXEC);
  if (created->fd_ < 0 || ftruncate(created->fd_, sizeof(TableLayout)) != 0)
    return makeError(maiaErrorInitialization, "cannot create the IPC table: ",
                     std::strerror(errno));
  void* mapped = mmap(nullptr, sizeof(TableLayout), PROT_READ | PROT_WRITE, MAP_SHARED,
                      created->fd_, 0);
  if (mapped == MAP_FAILED)
    return makeError(maiaErrorInitialization, "cannot map the IPC table: ", std::strerror(errno));
  created->layout_ = static_cast<TableLayout*>(mapped);  // zero-filled: every slot free
  std::random_device entropy;
  uint64_t instance = 0;
  while (instance == 0) instance = (uint64_t{entropy()} << 32) | entropy();
  created->layout_->instance = instance;
  created->layout_->magic = kTableMagic;
  for (uint32_t i = kMemorySlots; i-- > 0;) created->free_memory_.push_back(i);
  for (uint32_t i = kEventSlots; i-- > 0;) created->free_events_.push_back(i);
  table = created.release();
  // For importers without ptrace access to us (see ipc_fd_server.h). If it
  // cannot start, they get an error naming the server; the others do not
  // need it.
  const int table_fd = table->fd_;
  (void)startFdServer(instance, [table_fd](int fd) {
    if (fd == table_fd) return true;
    Device* device = nullptr;
    for (int i = 0; i < deviceCount(); ++i)
      if (deviceAt(i, &device).ok() && device->arena().fd() == fd) return true;
    return false;
  });
  *out = table;
  return {};
}

Status Table::claimMemorySlot(uint32_t* out_slot, uint64_t* out_generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_memory_.empty())
    return makeError(maiaErrorOutOfMemory, "maiaIpcGetMemHandle: this process already exports ",
                     kMemorySlots, " allocations (the most it can)");
  *out_slot = free_memory_.back();
  free_memory_.pop_back();
  *out_generation = next_generation_++;
  layout_->memory[*out_slot].generation.store(*out_generation, std::memory_order_seq_cst);
  return {};
}

Status Table::claimEventSlot(uint32_t* out_slot, uint64_t* out_generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_events_.empty())
    return makeError(maiaErrorOutOfMemory, "maiaEventCreate: this process already has ",
                     kEventSlots, " interprocess events (the most it can)");
  *out_slot = free_events_.back();
  free_events_.pop_back();
  *out_generation = next_generation_++;
  EventSlot& slot = layout_->events[*out_slot];
  // Counters only grow, also across reuse of the slot: a peer still waiting
  // for a record of the slot's previous event never sees them go back.
  slot.base.store(slot.recorded.load());
  slot.generation.store(*out_generation, std::memory_order_seq_cst);
  return {};
}

void Table::releaseMemorySlot(uint32_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  layout_->memory[slot].generation.store(0, std::memory_order_seq_cst);
  for (auto& importer : layout_->memory[slot].importers) importer.store(0);
  free_memory_.push_back(slot);
}

void Table::releaseEventSlot(uint32_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  layout_->events[slot].generation.store(0, std::memory_order_seq_cst);
  free_events_.push_back(slot);
}

bool hasLiveImporter(const MemorySlot& slot) {
  for (const auto& importer : slot.importers) {
    const pid_t pid = importer.load(std::memory_order_seq_cst);
    // An importer that died without closing holds nothing: its mappings went
    // with it. (A pid reused meanwhile only delays the release.)
    if (pid != 0 && processRunning(pid)) return true;
  }
  return false;
}

Peer::~Peer() {
  if (table_) munmap(table_, sizeof(TableLayout));
  if (pidfd_ >= 0) close(pidfd_);
}

Status Peer::link(pid_t pid, uint64_t instance, int table_fd, const char* what,
                  std::shared_ptr<Peer>* out) {
  static std::mutex mutex;
  static auto* peers = new std::map<std::pair<pid_t, uint64_t>, std::weak_ptr<Peer>>();
  std::lock_guard<std::mutex> lock(mutex);
  std::erase_if(*peers, [](const auto& entry) { return entry.second.expired(); });
  if (auto cached = peers->find({pid, instance}); cached != peers->end()) {
    // Null if its last user let go since the erase above.
    if ((*out = cached->second.lock())) return {};
  }
  auto peer = std::make_shared<Peer>();
  peer->pid_ = pid;
  peer->instance_ = instance;
  peer->pidfd_ = pidfdOpen(pid);
  if (peer->pidfd_ < 0) {
    if (errno == ESRCH) return Status(maiaErrorPeerExited, exitedMessage(what, pid));
    return makeError(maiaErrorInvalidValue, what, ": pidfd_open(", pid,
                     ") failed: ", std::strerror(errno));
  }
  int fd = -1;
  MAIA_RETURN_IF_ERROR(peer->takeFile(table_fd, kTableName, sizeof(TableLayout), what, &fd));
  void* mapped = mmap(nullptr, sizeof(TableLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (mapped == MAP_FAILED)
    return makeError(maiaErrorInvalidValue, what, ": cannot map the IPC table of process ", pid,
                     ": ", std::strerror(errno));
  peer->table_ = static_cast<TableLayout*>(mapped);
  if (peer->table_->magic != kTableMagic || peer->table_->instance != instance)
    return Status(maiaErrorPeerExited,
                  exitedMessage(what, pid) + " (the pid now belongs to another process)");
  (*peers)[{pid, instance}] = peer;
  *out = std::move(peer);
  return {};
}

bool Peer::alive() const {
  pollfd watch{pidfd_, POLLIN, 0};
  return poll(&watch, 1, 0) == 0;
}

Status Peer::takeFile(int fd, const char* name, size_t min_size, const char* what,
                      int* out_fd) const {
  int taken = pidfdGetfd(pidfd_, fd);
  if (taken < 0) {
    const int error = errno;
    if (error == ESRCH || !alive()) return Status(maiaErrorPeerExited, exitedMessage(what, pid_));
    if (error != EPERM && error != EACCES)
      return makeError(maiaErrorInvalidHandle, what, ": process ", pid_,
                       " has no file descriptor ", fd,
                       " (the IPC handle is damaged or its pid was reused): ",
                       std::strerror(error));
    // No ptrace access to the exporter: ask its file server instead.
    MAIA_RETURN_IF_ERROR(requestFd(pid_, instance_, fd, what, &taken));
  }
  // The fd number came from the handle: make sure it is what it claims.
  char link[128] = {};
  std::string path = "/proc/self/fd/" + std::to_string(taken);
  ssize_t length = readlink(path.c_str(), link, sizeof(link) - 1);
  std::string expected = std::string("/memfd:") + name + " (deleted)";
  struct stat info {};
  if (length <= 0 || std::string(link, length) != expected ||
      fstat(taken, &info) != 0 || static_cast<size_t>(info.st_size) < min_size) {
    close(taken);
    return makeError(maiaErrorInvalidHandle, what, ": file descriptor ", fd, " of process ",
                     pid_, " is not the ", name, " memory the IPC handle names ",
                     "(the handle is damaged or its pid was reused)");
  }
  *out_fd = taken;
  return {};
}

}  // namespace maia::driver::ipc
