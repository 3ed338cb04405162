// C API: events.
#include "device.h"
#include "event.h"
#include "handle_registry.h"
#include "scheduler.h"

using namespace maia::driver;

namespace maia::driver {
namespace {

HandleRegistry<Event>& registry() {
  static auto* events = new HandleRegistry<Event>();  // outlives exit-time calls
  return *events;
}

Status requireRecorded(const Event& event, const char* what) {
  if (event.recorded.load(std::memory_order_acquire) != 0) return {};
  return makeError(maiaErrorEventNotRecorded, what, ": event ",
                   static_cast<const void*>(&event), " was never recorded");
}

bool isComplete(const Event& event) {
  return event.completed.load(std::memory_order_acquire) >=
         event.recorded.load(std::memory_order_acquire);
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
  if ((flags & ~static_cast<unsigned>(maiaEventDisableTiming)) != 0)
    return report(makeError(maiaErrorInvalidValue, "maiaEventCreate: unknown flags 0x",
                            std::hex, flags));
  auto event = std::make_shared<Event>((flags & maiaEventDisableTiming) == 0);
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
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  marker->device.store(target->device, std::memory_order_release);
  uint64_t generation = marker->recorded.fetch_add(1, std::memory_order_acq_rel) + 1;
  return report(enqueue(target.get(),
                        std::make_unique<EventRecordCommand>(std::move(marker), generation)));
}

maiaError_t maiaEventQuery(maiaEvent_t event) {
  MAIA_API_ENTER();
  std::shared_ptr<Event> marker;
  MAIA_RETURN_REPORT(resolveEvent(event, &marker));
  MAIA_RETURN_REPORT(requireRecorded(*marker, "maiaEventQuery"));
  return isComplete(*marker) ? maiaSuccess : maiaErrorNotReady;
}

maiaError_t maiaEventSynchronize(maiaEvent_t event) {
  MAIA_API_ENTER();
  std::shared_ptr<Event> marker;
  MAIA_RETURN_REPORT(resolveEvent(event, &marker));
  MAIA_RETURN_REPORT(requireRecorded(*marker, "maiaEventSynchronize"));
  uint64_t target = marker->recorded.load(std::memory_order_acquire);
  scheduler().waitUntil(
      [&] { return marker->completed.load(std::memory_order_acquire) >= target; }, nullptr);
  return report(marker->device.load(std::memory_order_acquire)->stickyError());
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
  MAIA_RETURN_REPORT(requireRecorded(*first, "maiaEventElapsedTime (start)"));
  MAIA_RETURN_REPORT(requireRecorded(*second, "maiaEventElapsedTime (end)"));
  if (!isComplete(*first) || !isComplete(*second)) {
    return report(makeError(maiaErrorNotReady,
                            "maiaEventElapsedTime: an event's recorded work is not complete"));
  }
  int64_t ns = second->timestamp_ns.load() - first->timestamp_ns.load();
  *out_ms = static_cast<float>(static_cast<double>(ns) / 1e6);
  return maiaSuccess;
}

}  // extern "C"
