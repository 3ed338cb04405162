#include "ipc_memory.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "command.h"
#include "device.h"
#include "ipc_handle.h"
#include "ipc_table.h"
#include "stream.h"

namespace maia::driver::ipc {
namespace {

constexpr size_t kPage = 4096;

/// An allocation of this process that has a handle.
struct Export {
  uint32_t slot;
  uint64_t generation;
};

/// Freed by its owner while a peer had it open: still reserved.
struct Retired {
  Device* device;
  size_t offset, size;
  uint32_t slot;
};

/// A peer's allocation: (pid, table instance, slot, generation).
using AllocationKey = std::tuple<pid_t, uint64_t, uint32_t, uint64_t>;

/// This process's entry in a peer allocation's importers, shared by every
/// range of it opened here.
struct Membership {
  std::shared_ptr<Peer> peer;
  uint32_t slot;
  int index;  // our entry in the slot's importers
  int imports;
};

/// A range of a peer's allocation opened here (the whole of it for
/// maiaIpcOpenMemHandle).
struct Import {
  Device* device;
  void* mapping;
  size_t length;  // of the mapping
  AllocationKey allocation;
  int opens;
};
/// The allocation, the importing device, and the range's offset and bytes.
using ImportKey = std::tuple<AllocationKey, int, size_t, size_t>;

struct State {
  std::mutex mutex;
  std::map<std::pair<int, size_t>, Export> exports;  // (device, offset)
  std::vector<Retired> retired;
  std::atomic<int> retired_count{0};
  std::map<ImportKey, Import> imports;
  std::map<void*, ImportKey> imports_by_pointer;
  std::map<AllocationKey, Membership> memberships;
};

State& state() {
  static auto* s = new State();  // outlives exit-time calls
  return *s;
}

size_t roundUpPage(size_t value) { return (value + kPage - 1) / kPage * kPage; }

void leaveSlot(MemorySlot& slot, int index) {
  int32_t self = getpid();
  slot.importers[index].compare_exchange_strong(self, 0, std::memory_order_seq_cst);
}

/// Drops one import's share of its allocation's membership; the last one
/// leaves the slot's importers. Requires State::mutex.
void leaveAllocation(State& s, const AllocationKey& allocation) {
  auto it = s.memberships.find(allocation);
  if (it == s.memberships.end() || --it->second.imports > 0) return;
  leaveSlot(it->second.peer->table().memory[it->second.slot], it->second.index);
  s.memberships.erase(it);
}

}  // namespace

Status exportMemory(void* device_ptr, maiaIpcMemHandle_t* out) {
  constexpr const char* what = "maiaIpcGetMemHandle";
  Device* device = deviceOwning(device_ptr);
  if (device == nullptr)
    return makeError(maiaErrorInvalidDevicePointer, what, "(", device_ptr,
                     "): not device memory");
  MemoryArena& arena = device->arena();
  if (arena.inImportWindow(device_ptr))
    return makeError(maiaErrorInvalidDevicePointer, what, "(", device_ptr,
                     "): memory opened from another process's handle cannot be exported again");
  uintptr_t base = 0;
  size_t size = 0;
  MAIA_RETURN_IF_ERROR(arena.findAllocation(device_ptr, 1, "pointer", &base, &size));
  Table* table = nullptr;
  MAIA_RETURN_IF_ERROR(Table::get(&table));
  const size_t offset = arena.offsetOf(reinterpret_cast<void*>(base));
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto [it, added] = s.exports.try_emplace({device->index(), offset});
  if (added) {
    Status claimed = table->claimMemorySlot(&it->second.slot, &it->second.generation);
    if (!claimed.ok()) {
      s.exports.erase(it);
      return claimed;
    }
  }
  HandleBits bits{};
  bits.kind = HandleKind::kMemory;
  bits.pid = getpid();
  bits.device = device->index();
  bits.memory_fd = arena.fd();
  bits.table_fd = table->fd();
  bits.slot = it->second.slot;
  bits.instance = table->instance();
  bits.generation = it->second.generation;
  bits.offset = offset;
  bits.size = size;
  seal(bits, out->reserved);
  return {};
}

Status openMemoryRange(const maiaIpcMemHandle_t& handle, Device* device, size_t offset,
                       size_t bytes, bool whole, void** out_ptr) {
  const char* what = whole ? "maiaIpcOpenMemHandle" : "maiaIpcOpenMemHandleRange";
  HandleBits bits{};
  MAIA_RETURN_IF_ERROR(unseal(handle.reserved, HandleKind::kMemory, what, &bits));
  if (bits.pid == getpid())
    return makeError(maiaErrorInvalidValue, what,
                     ": the handle was made by this process; use the allocation's own pointer "
                     "(as in CUDA, a process cannot open its own handles)");
  if (bits.slot >= kMemorySlots)
    return makeError(maiaErrorInvalidHandle, what, ": the IPC handle's fields are out of range");
  if (whole) bytes = bits.size;
  if (bytes == 0 || offset > bits.size || bytes > bits.size - offset)
    return makeError(maiaErrorInvalidValue, what, ": bytes [", offset, ", ", offset + bytes,
                     ") are not a non-empty range of the ", bits.size, "-byte allocation");
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const AllocationKey allocation{bits.pid, bits.instance, bits.slot, bits.generation};
  const ImportKey key{allocation, device->index(), offset, bytes};
  const size_t first = bits.offset + offset;  // the range's first byte in the memfd
  if (auto found = s.imports.find(key); found != s.imports.end()) {
    ++found->second.opens;
    *out_ptr = static_cast<char*>(found->second.mapping) + first % kPage;
    return {};
  }
  auto member = s.memberships.find(allocation);
  if (member == s.memberships.end()) {
    std::shared_ptr<Peer> peer;
    MAIA_RETURN_IF_ERROR(Peer::link(bits.pid, bits.instance, bits.table_fd, what, &peer));
    MemorySlot& slot = peer->table().memory[bits.slot];
    // Announce ourselves, then check the allocation is still the handle's:
    // the exporter's free clears the generation, then looks for importers
    // (both sequentially consistent), so either it sees us and keeps the
    // pages, or we see the free.
    int index = -1;
    for (int i = 0; i < kMaxImporters && index < 0; ++i) {
      int32_t none = 0;
      if (slot.importers[i].compare_exchange_strong(none, getpid(), std::memory_order_seq_cst))
        index = i;
    }
    if (index < 0)
      return makeError(maiaErrorOutOfMemory, what, ": the allocation is already open in ",
                       kMaxImporters, " processes (the most it can be)");
    member = s.memberships.emplace(allocation, Membership{std::move(peer), bits.slot, index, 0})
                 .first;
  }
  ++member->second.imports;
  auto fail = [&](Status status) {
    leaveAllocation(s, allocation);
    return status;
  };
  Peer& peer = *member->second.peer;
  if (peer.table().memory[bits.slot].generation.load(std::memory_order_seq_cst) !=
      bits.generation)
    return fail(makeError(maiaErrorInvalidHandle, what, ": stale IPC handle: process ", bits.pid,
                          " freed the allocation it names (offset ", bits.offset, ", ",
                          bits.size, " bytes of maia:", bits.device, ")"));
  int fd = -1;
  Status taken = peer.takeFile(bits.memory_fd,
                               ("maia-device-" + std::to_string(bits.device)).c_str(),
                               bits.offset + bits.size, what, &fd);
  if (!taken.ok()) return fail(taken);
  // mmap works in pages; the range may start and end inside one.
  const size_t begin = first / kPage * kPage;
  const size_t length = roundUpPage(first + bytes) - begin;
  void* mapping = nullptr;
  Status mapped = device->arena().mapImport(fd, begin, length, first - begin, bytes, &mapping);
  close(fd);  // the mapping keeps the memfd's pages
  if (!mapped.ok()) return fail(mapped);
  void* data = static_cast<char*>(mapping) + (first - begin);
  s.imports.emplace(key, Import{device, mapping, length, allocation, 1});
  s.imports_by_pointer.emplace(data, key);
  *out_ptr = data;
  return {};
}

namespace {

Status notOpened(const char* what, const void* device_ptr) {
  return makeError(maiaErrorInvalidDevicePointer, what, "(", device_ptr,
                   "): not a pointer returned by maiaIpcOpenMemHandle (or already closed)");
}

/// Drops one open of device_ptr; the last one takes the import out of the
/// maps into *closing (its unmapping is then the caller's) and sets *last.
/// With a device, an import opened on another device is refused instead.
Status dropOpen(const char* what, void* device_ptr, const Device* device, Import* closing,
                bool* last) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto by_pointer = s.imports_by_pointer.find(device_ptr);
  if (by_pointer == s.imports_by_pointer.end()) return notOpened(what, device_ptr);
  auto it = s.imports.find(by_pointer->second);
  if (device != nullptr && it->second.device != device)
    return makeError(maiaErrorInvalidValue, what, "(", device_ptr,
                     "): the stream is on another device than the one the handle was "
                     "opened on");
  *last = --it->second.opens == 0;
  if (!*last) return {};
  *closing = std::move(it->second);
  s.imports.erase(it);
  s.imports_by_pointer.erase(by_pointer);
  return {};
}

void unmap(Import& closing) {
  closing.device->arena().unmapImport(closing.mapping);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  leaveAllocation(s, closing.allocation);
}

/// Unmaps an import once the stream's earlier work has completed (also on
/// a faulted device: nothing queued after it reads the memory).
class UnmapImportCommand final : public Command {
 public:
  explicit UnmapImportCommand(Import closing) : closing_(std::move(closing)) {}
  ~UnmapImportCommand() override {
    if (!unmapped_) unmap(closing_);  // destroyed unrun (its stream torn down)
  }
  void runChunk(int64_t) override {}
  void finish() override {
    unmap(closing_);
    unmapped_ = true;
  }
  bool skippedOnFault() const override { return false; }
  std::string describe() const override { return "maiaIpcCloseMemHandleAsync"; }

 private:
  Import closing_;
  bool unmapped_ = false;
};

}  // namespace

Status closeMemory(void* device_ptr) {
  Import closing;
  bool last = false;
  MAIA_RETURN_IF_ERROR(
      dropOpen("maiaIpcCloseMemHandle", device_ptr, /*device=*/nullptr, &closing, &last));
  if (!last) return {};
  // Queued copies and kernels may still use the memory.
  MAIA_RETURN_IF_ERROR(synchronizeDevice(closing.device, /*report_sticky=*/false));
  unmap(closing);
  return {};
}

Status closeMemoryOnStream(void* device_ptr, Stream* stream) {
  Import closing;
  bool last = false;
  MAIA_RETURN_IF_ERROR(
      dropOpen("maiaIpcCloseMemHandleAsync", device_ptr, stream->device, &closing, &last));
  if (!last) return {};
  if (stream->idle()) {  // nothing queued before the close can read it
    unmap(closing);
    return {};
  }
  auto command = std::make_unique<UnmapImportCommand>(std::move(closing));
  Status queued = enqueue(stream, std::move(command));
  // A refused enqueue destroyed the command, which unmapped the import:
  // the caller's queued work on a faulted device reads nothing anymore.
  return queued;
}

Status isFreedByOwner(const void* device_ptr, bool* freed) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto by_pointer = s.imports_by_pointer.find(const_cast<void*>(device_ptr));
  if (by_pointer == s.imports_by_pointer.end())
    return notOpened("maiaIpcMemHandleFreedByOwner", device_ptr);
  const Import& import = s.imports.at(by_pointer->second);
  const Membership& member = s.memberships.at(import.allocation);
  const uint64_t generation = std::get<3>(import.allocation);
  *freed = member.peer->table().memory[member.slot].generation.load(std::memory_order_seq_cst) !=
           generation;
  return {};
}

std::shared_ptr<Peer> importedFrom(const void* device_ptr) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto* p = static_cast<const char*>(device_ptr);
  for (const auto& [key, import] : s.imports) {
    const auto* begin = static_cast<const char*>(import.mapping);
    if (p >= begin && p < begin + import.length)
      return s.memberships.at(import.allocation).peer;
  }
  return nullptr;
}

Status freeMemory(Device* device, void* ptr) {
  MemoryArena& arena = device->arena();
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto exported = s.exports.find({device->index(), arena.offsetOf(ptr)});
  if (exported == s.exports.end() || arena.inImportWindow(ptr)) return arena.free(ptr);
  Table* table = nullptr;
  MAIA_RETURN_IF_ERROR(Table::get(&table));
  const uint32_t slot_index = exported->second.slot;
  MemorySlot& slot = table->layout().memory[slot_index];
  // New opens fail from here on (see openMemory for the ordering).
  slot.generation.store(0, std::memory_order_seq_cst);
  s.exports.erase(exported);
  if (!hasLiveImporter(slot)) {
    table->releaseMemorySlot(slot_index);
    return arena.free(ptr);
  }
  size_t offset = 0, size = 0;
  MAIA_RETURN_IF_ERROR(arena.retire(ptr, &offset, &size));
  s.retired.push_back(Retired{device, offset, size, slot_index});
  s.retired_count.fetch_add(1, std::memory_order_release);
  return {};
}

void reclaimRetired(Device* device) {
  State& s = state();
  if (s.retired_count.load(std::memory_order_acquire) == 0) return;
  Table* table = nullptr;
  if (!Table::get(&table).ok()) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  std::erase_if(s.retired, [&](const Retired& retired) {
    if (retired.device != device || hasLiveImporter(table->layout().memory[retired.slot]))
      return false;
    device->arena().releaseRetired(retired.offset, retired.size);
    table->releaseMemorySlot(retired.slot);
    s.retired_count.fetch_sub(1, std::memory_order_release);
    return true;
  });
}

namespace {

size_t retiredBytes(Device* device) {
  State& s = state();
  if (s.retired_count.load(std::memory_order_acquire) == 0) return 0;
  std::lock_guard<std::mutex> lock(s.mutex);
  size_t bytes = 0;
  for (const Retired& retired : s.retired)
    if (retired.device == device) bytes += retired.size;
  return bytes;
}

}  // namespace

Status allocate(Device* device, size_t size, void** out_ptr) {
  reclaimRetired(device);
  MemoryArena& arena = device->arena();
  Status status = arena.allocate(size, out_ptr);
  if (status.ok() || status.code() != maiaErrorOutOfMemory) return status;
  // Memory this process freed while other processes had it open comes back
  // when they close it (the maia c10d backend closes such segments within
  // milliseconds). Wait for it, bounded, when it could make room.
  const auto deadline = std::chrono::steady_clock::now() + kRetiredWait;
  while (arena.capacity() - arena.used() + retiredBytes(device) >= size &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    reclaimRetired(device);
    if (arena.allocate(size, out_ptr).ok()) return {};
  }
  return status;
}

}  // namespace maia::driver::ipc
