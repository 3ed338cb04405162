// Interprocess events: an event created with maiaEventInterprocess keeps
// its record counters in a slot of this process's IPC table, where another
// process that opened its handle reads them. A stream there waits for a
// record without a host round trip: the wait command is ready once the
// counter reaches it; a watcher thread sleeps on the futex words of every
// awaited slot at once (futex_waitv), polls the owners' pidfds every 2 ms,
// and wakes the cores when a wait is met or fails.
#pragma once

#include <maia/runtime.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "command.h"
#include "error.h"

namespace maia::driver {
class Device;
}

namespace maia::driver::ipc {

struct EventSlot;
class Peer;

/// An event's place in a table: this process's own (peer null), or one
/// opened from a peer's handle.
struct SharedEvent {
  ~SharedEvent();
  EventSlot* slot = nullptr;
  uint32_t index = 0;
  uint64_t generation = 0;
  std::shared_ptr<Peer> peer;
  bool imported() const { return peer != nullptr; }
};

Status createSharedEvent(std::shared_ptr<SharedEvent>* out);
Status exportEvent(const SharedEvent& event, maiaIpcEventHandle_t* out);
Status openEvent(const maiaIpcEventHandle_t& handle, std::shared_ptr<SharedEvent>* out);

/// The sequence number of a new record of an own event; publish it once the
/// record is queued. completeRecord runs when the stream passes it.
uint64_t beginRecord(EventSlot& slot);
void publishRecord(EventSlot& slot, uint64_t sequence);
void completeRecord(EventSlot& slot, uint64_t sequence);

/// For an imported event: maiaEventQuery, maiaEventSynchronize and the
/// command behind maiaStreamWaitEvent.
Status queryImported(const SharedEvent& event, const char* what);
Status synchronizeImported(const std::shared_ptr<SharedEvent>& event);
/// A wait on the owner's latest record; on the owner's exit before it
/// completes, device gets a sticky error naming the owner.
Status makeWaitCommand(const std::shared_ptr<SharedEvent>& event, Device* device,
                       std::unique_ptr<Command>* out);

}  // namespace maia::driver::ipc
