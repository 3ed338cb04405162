// C API: streams and host callbacks.
#include <algorithm>

#include "activity.h"
#include "device.h"
#include "event.h"
#include "graph_capture.h"
#include "ipc_event.h"
#include "stream_value.h"

using namespace maia::driver;

namespace maia::driver {
Status destroyStream(maiaStream_t handle);  // stream.cpp
}

namespace {

class HostFuncCommand final : public Command {
 public:
  HostFuncCommand(maiaHostFn_t fn, void* user_data, const char* name)
      : fn_(fn), user_data_(user_data), name_(name != nullptr ? name : "") {}
  void runChunk(int64_t) override { fn_(user_data_); }
  int activityKind() const override { return maiaActivityHostFunction; }
  const char* activityName() const override { return name_.empty() ? nullptr : name_.c_str(); }
  std::string describe() const override {
    return name_.empty() ? "host function" : "host function '" + name_ + "'";
  }

 private:
  maiaHostFn_t fn_;
  void* user_data_;
  std::string name_;  // empty: unnamed (short names stay in the string's own buffer)
};

}  // namespace

extern "C" {

maiaError_t maiaStreamCreate(maiaStream_t* out_stream, int priority) {
  MAIA_CHECK_OUT(out_stream);
  MAIA_API_ENTER();
  Device* device = nullptr;
  MAIA_RETURN_REPORT(currentDevice(&device));
  int least = 0, greatest = 0;
  maiaDeviceGetStreamPriorityRange(&least, &greatest);
  priority = std::clamp(priority, greatest, least);
  std::shared_ptr<Stream> stream;
  MAIA_RETURN_REPORT(createStream(device, priority, /*is_default=*/false, &stream));
  *out_stream = stream.get();
  return maiaSuccess;
}

maiaError_t maiaStreamDestroy(maiaStream_t stream) {
  MAIA_API_ENTER();
  if (stream == nullptr)
    return report(makeError(maiaErrorInvalidHandle,
                            "maiaStreamDestroy(NULL): the default stream cannot be destroyed"));
  return report(destroyStream(stream));
}

maiaError_t maiaStreamGetDefault(maiaStream_t* out_stream, int device) {
  MAIA_CHECK_OUT(out_stream);
  MAIA_API_ENTER();
  Device* target = nullptr;
  MAIA_RETURN_REPORT(deviceAt(device, &target));
  *out_stream = target->defaultStream();
  return maiaSuccess;
}

maiaError_t maiaStreamGetDevice(maiaStream_t stream, int* out_device) {
  MAIA_CHECK_OUT(out_device);
  MAIA_API_ENTER();
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  *out_device = target->device->index();
  return maiaSuccess;
}

maiaError_t maiaStreamGetPriority(maiaStream_t stream, int* out_priority) {
  MAIA_CHECK_OUT(out_priority);
  MAIA_API_ENTER();
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  *out_priority = target->priority;
  return maiaSuccess;
}

maiaError_t maiaStreamQuery(maiaStream_t stream) {
  MAIA_API_ENTER();
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  MAIA_RETURN_REPORT(target->device->stickyError());
  // Not-ready is an answer, not a failure: it does not become the last error.
  return target->idle() ? maiaSuccess : maiaErrorNotReady;
}

maiaError_t maiaStreamSynchronize(maiaStream_t stream) {
  MAIA_API_ENTER();
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  return report(synchronizeStream(target.get()));
}

maiaError_t maiaStreamWaitEvent(maiaStream_t stream, maiaEvent_t event) {
  MAIA_API_ENTER();
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  std::shared_ptr<Event> marker;
  MAIA_RETURN_REPORT(resolveEvent(event, &marker));
  if (target->capturing.load(std::memory_order_acquire)) [[unlikely]] {
    if (std::shared_ptr<Capture> capture = captureOf(target.get()))
      return report(capture->addEventWait(target.get(), *marker));
  }
  if (marker->shared && marker->shared->imported()) {
    std::unique_ptr<Command> wait;
    MAIA_RETURN_REPORT(ipc::makeWaitCommand(marker->shared, target->device, &wait));
    return report(enqueue(target.get(), std::move(wait)));
  }
  std::shared_ptr<EventRecord> record = marker->latest();
  if (!record)
    return report(makeError(maiaErrorEventNotRecorded, "maiaStreamWaitEvent: event ",
                            static_cast<const void*>(event),
                            " was never recorded, so there is nothing to wait for"));
  return report(
      enqueue(target.get(), std::make_unique<EventWaitCommand>(std::move(record))));
}

maiaError_t maiaLaunchHostFunc(maiaStream_t stream, maiaHostFn_t fn, void* user_data) {
  return maiaLaunchHostFuncNamed(stream, fn, user_data, nullptr);
}

maiaError_t maiaLaunchHostFuncNamed(maiaStream_t stream, maiaHostFn_t fn, void* user_data,
                                    const char* name) {
  MAIA_API_ENTER();
  if (fn == nullptr)
    return report(makeError(maiaErrorInvalidValue, "maiaLaunchHostFunc: fn is NULL"));
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  return report(enqueue(target.get(), std::make_unique<HostFuncCommand>(fn, user_data, name)));
}

maiaError_t maiaStreamWaitValue64(maiaStream_t stream, void* device_ptr, uint64_t value,
                                  unsigned flags, uint32_t timeout_ms) {
  MAIA_API_ENTER();
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  if (target->capturing.load(std::memory_order_acquire)) [[unlikely]]
    return report(captureViolation(target.get(), "maiaStreamWaitValue64"));
  std::unique_ptr<Command> wait;
  MAIA_RETURN_REPORT(
      makeWaitValueCommand(target->device, device_ptr, value, flags, timeout_ms, &wait));
  return report(enqueue(target.get(), std::move(wait)));
}

maiaError_t maiaStreamWriteValue64(maiaStream_t stream, void* device_ptr, uint64_t value) {
  MAIA_API_ENTER();
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  if (target->capturing.load(std::memory_order_acquire)) [[unlikely]]
    return report(captureViolation(target.get(), "maiaStreamWriteValue64"));
  std::unique_ptr<Command> write;
  MAIA_RETURN_REPORT(makeWriteValueCommand(target->device, device_ptr, value, &write));
  return report(enqueue(target.get(), std::move(write)));
}

}  // extern "C"
