// C API: events.
#include "device.h"
#include "event.h"
#include "graph_capture.h"
#include "handle_registry.h"
#include "ipc_event.h"
#include "scheduler.h"

using namespace maia::driver;

namespace maia::driver {
namespace {

HandleRegistry<Event>& registry() {
  static auto* events = new HandleRegistry<Event>();  // outlives exit-time calls
  return *events;
}

/// The event's latest record, or an error naming what needed one.
Status latestRecord(const Event& event, const char* what, std::shared_ptr<EventRecord>* out) {
  *out = event.latest();
  if (*out) return {};
  return makeError(maiaErrorEventNotRecorded, what, ": event ",
                   static_cast<const void*>(&event), " was never recorded");
}

}  // namespace

Status resolveEvent(maiaEvent_t handle, std::shared_ptr<Event>* out) {
  std::shared_ptr<Event> event = registry().find(handle);
  if (!event)
    return makeError(maiaErrorInvalidHandle, "event ", static_cast<const void*>(handle),
                     " is not a live event (destroyed, or never created)");
  *out = std::move(event);
  return {};
}

}  // namespace maia::driver

extern "C" {

maiaError_t maiaEventCreate(maiaEvent_t* out_event, unsigned flags) {
  MAIA_CHECK_OUT(out_event);
  MAIA_API_ENTER();
  if ((flags & ~static_cast<unsigned>(maiaEventDisableTiming | maiaEventInterprocess)) != 0)
    return report(makeError(maiaErrorInvalidValue, "maiaEventCreate: unknown flags 0x",
                            std::hex, flags));
  auto event = std::make_shared<Event>((flags & maiaEventDisableTiming) == 0);
  if (flags & maiaEventInterprocess) MAIA_RETURN_REPORT(ipc::createSharedEvent(&event->shared));
  *out_event = event.get();
  registry().add(std::move(event));
  return maiaSuccess;
}

maiaError_t maiaEventDestroy(maiaEvent_t event) {
  MAIA_API_ENTER();
  // A record still queued keeps its own reference; destruction is deferred.
  if (!registry().remove(event))
    return report(makeError(maiaErrorInvalidHandle, "maiaEventDestroy: event ",
                            static_cast<const void*>(event),
                            " is not a live event (already destroyed?)"));
  return maiaSuccess;
}

maiaError_t maiaEventRecord(maiaEvent_t event, maiaStream_t stream) {
  MAIA_API_ENTER();
  std::shared_ptr<Event> marker;
  MAIA_RETURN_REPORT(resolveEvent(event, &marker));
  if (marker->shared && marker->shared->imported())
    return report(makeError(maiaErrorInvalidValue, "maiaEventRecord: event ",
                            static_cast<const void*>(event),
                            " was opened from another process's IPC handle; record it in the "
                            "process that created it"));
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  if (target->capturing.load(std::memory_order_acquire)) [[unlikely]] {
    if (std::shared_ptr<Capture> capture = captureOf(target.get())) {
      if (marker->shared)
        return report(capture->invalidate(target.get(), "recording an interprocess event"));
      return report(capture->addEventRecord(std::move(marker)));  // a record per replay
    }
  }
  auto record = std::make_shared<EventRecord>();
  if (marker->shared) {
    record->shared_slot = marker->shared->slot;
    record->shared_sequence = ipc::beginRecord(*record->shared_slot);
  }
  // Published only once queued: a record refused (e.g. by a sticky error)
  // leaves the event as it was, so nothing waits for a record never run.
  MAIA_RETURN_REPORT(enqueue(target.get(), std::make_unique<EventRecordCommand>(record)));
  if (record->shared_slot) ipc::publishRecord(*record->shared_slot, record->shared_sequence);
  marker->publish(std::move(record), target->device);
  return maiaSuccess;
}

maiaError_t maiaEventQuery(maiaEvent_t event) {
  MAIA_API_ENTER();
  std::shared_ptr<Event> marker;
  MAIA_RETURN_REPORT(resolveEvent(event, &marker));
  if (marker->shared && marker->shared->imported()) {
    Status status = ipc::queryImported(*marker->shared, "maiaEventQuery");
    return status.code() == maiaErrorNotReady ? maiaErrorNotReady : report(status);
  }
  std::shared_ptr<EventRecord> record;
  MAIA_RETURN_REPORT(latestRecord(*marker, "maiaEventQuery", &record));
  return record->done.load(std::memory_order_acquire) ? maiaSuccess : maiaErrorNotReady;
}

maiaError_t maiaEventSynchronize(maiaEvent_t event) {
  MAIA_API_ENTER();
  std::shared_ptr<Event> marker;
  MAIA_RETURN_REPORT(resolveEvent(event, &marker));
  if (marker->shared && marker->shared->imported())
    return report(ipc::synchronizeImported(marker->shared));
  std::shared_ptr<EventRecord> record;
  MAIA_RETURN_REPORT(latestRecord(*marker, "maiaEventSynchronize", &record));
  scheduler().waitUntil([&] { return record->done.load(std::memory_order_acquire); }, nullptr);
  return report(marker->device()->stickyError());
}

maiaError_t maiaEventElapsedTime(float* out_ms, maiaEvent_t start, maiaEvent_t end) {
  MAIA_CHECK_OUT(out_ms);
  MAIA_API_ENTER();
  std::shared_ptr<Event> first, second;
  MAIA_RETURN_REPORT(resolveEvent(start, &first));
  MAIA_RETURN_REPORT(resolveEvent(end, &second));
  if (!first->timing || !second->timing)
    return report(makeError(maiaErrorEventNoTiming, "maiaEventElapsedTime: the ",
                            first->timing ? "end" : "start",
                            " event was created with maiaEventDisableTiming"));
  std::shared_ptr<EventRecord> from, to;
  MAIA_RETURN_REPORT(latestRecord(*first, "maiaEventElapsedTime (start)", &from));
  MAIA_RETURN_REPORT(latestRecord(*second, "maiaEventElapsedTime (end)", &to));
  if (!from->done.load(std::memory_order_acquire) || !to->done.load(std::memory_order_acquire)) {
    return report(makeError(maiaErrorNotReady,
                            "maiaEventElapsedTime: an event's recorded work is not complete"));
  }
  int64_t ns = to->timestamp_ns.load() - from->timestamp_ns.load();
  *out_ms = static_cast<float>(static_cast<double>(ns) / 1e6);
  return maiaSuccess;
}

maiaError_t maiaIpcGetEventHandle(maiaIpcEventHandle_t* out_handle, maiaEvent_t event) {
  MAIA_CHECK_OUT(out_handle);
  MAIA_API_ENTER();
  std::shared_ptr<Event> marker;
  MAIA_RETURN_REPORT(resolveEvent(event, &marker));
  if (!marker->shared || marker->shared->imported())
    return report(makeError(maiaErrorInvalidValue, "maiaIpcGetEventHandle: event ",
                            static_cast<const void*>(event),
                            marker->shared ? " was opened from another process's handle"
                                           : " was not created with maiaEventInterprocess"));
  return report(ipc::exportEvent(*marker->shared, out_handle));
}

maiaError_t maiaIpcOpenEventHandle(maiaEvent_t* out_event, maiaIpcEventHandle_t handle) {
  MAIA_CHECK_OUT(out_event);
  MAIA_API_ENTER();
  // Its records are the owner's: timing them here is refused as for an
  // event created without timing.
  auto event = std::make_shared<Event>(/*with_timing=*/false);
  MAIA_RETURN_REPORT(ipc::openEvent(handle, &event->shared));
  *out_event = event.get();
  registry().add(std::move(event));
  return maiaSuccess;
}

}  // extern "C"
