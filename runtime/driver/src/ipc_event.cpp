#include "ipc_event.h"

#include <unistd.h>

#include "device.h"
#include "external_watcher.h"
#include "ipc_handle.h"
#include "ipc_table.h"
#include "scheduler.h"

namespace maia::driver::ipc {
namespace {

void atomicMax(std::atomic<uint64_t>& value, uint64_t candidate) {
  uint64_t current = value.load(std::memory_order_seq_cst);
  while (current < candidate &&
         !value.compare_exchange_weak(current, candidate, std::memory_order_seq_cst)) {
  }
}

/// One wait for record `sequence` of an imported event. The event holds
/// the peer's table (where the slot is) alive.
class Wait final : public ExternalWait {
 public:
  std::shared_ptr<SharedEvent> event;
  uint64_t sequence = 0;

  bool met() const override {
    return event->slot->completed.load(std::memory_order_acquire) >= sequence;
  }
  /// The slot's signal, bumped by every completion; the owner makes the
  /// wake syscall only while a peer sleeps on it.
  FutexWord word() const override {
    return {&event->slot->signal, /*shared=*/true, &event->slot->sleepers};
  }
  std::string failure(int64_t) const override {
    // met() after alive(): a record completed just before the owner exited.
    if (event->peer->alive() || met()) return {};
    return "waiting on an interprocess event: process " + std::to_string(event->peer->pid()) +
           ", which owns it, exited before the awaited record completed";
  }
};

/// Holds its stream until the wait is met (or failed: then the device is
/// faulted and the work behind it is skipped).
class SharedEventWaitCommand final : public Command {
 public:
  explicit SharedEventWaitCommand(std::shared_ptr<Wait> wait) : wait_(std::move(wait)) {}
  bool ready() const override { return wait_->passable(); }
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
  if (slot.sleepers.load(std::memory_order_seq_cst) > 0)
    futexWakeAll(&slot.signal, /*shared=*/true);
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
  ExternalWatcher::get().add(wait);
  scheduler().waitUntil([&] { return wait->released.load(std::memory_order_acquire); },
                        nullptr);
  if (wait->failed.load(std::memory_order_acquire))
    return Status(maiaErrorPeerExited, "maiaEventSynchronize: " + wait->cause);
  return {};
}

Status makeWaitCommand(const std::shared_ptr<SharedEvent>& event, Device* device,
                       std::unique_ptr<Command>* out) {
  auto wait = std::make_shared<Wait>();
  wait->event = event;
  wait->device = device;
  MAIA_RETURN_IF_ERROR(latestRecord(*event, "maiaStreamWaitEvent", &wait->sequence));
  if (!wait->met()) ExternalWatcher::get().add(wait);
  *out = std::make_unique<SharedEventWaitCommand>(std::move(wait));
  return {};
}

}  // namespace maia::driver::ipc
