#include "stream.h"

#include "activity.h"
#include "device.h"
#include "graph_capture.h"
#include "handle_registry.h"
#include "scheduler.h"

namespace maia::driver {
namespace {

HandleRegistry<Stream>& registry() {
  static auto* streams = new HandleRegistry<Stream>();  // outlives exit-time calls
  return *streams;
}

}  // namespace

Status resolveStream(maiaStream_t handle, std::shared_ptr<Stream>* out) {
  if (handle == nullptr) {
    Device* device = nullptr;
    MAIA_RETURN_IF_ERROR(currentDevice(&device));
    *out = device->defaultStreamRef();
    return {};
  }
  // A device's default stream is made at initialization and never
  // destroyed: found without the registry's mutex (every eager launch names
  // one).
  for (int i = 0; i < deviceCount(); ++i) {
    Device* device = nullptr;
    if (deviceAt(i, &device).ok() && device->defaultStream() == handle) {
      *out = device->defaultStreamRef();
      return {};
    }
  }
  std::shared_ptr<Stream> stream = registry().find(handle);
  if (!stream)
    return makeError(maiaErrorInvalidHandle, "stream ", static_cast<const void*>(handle),
                     " is not a live stream (destroyed, or never created)");
  *out = std::move(stream);
  return {};
}

Status createStream(Device* device, int priority, bool is_default,
                    std::shared_ptr<Stream>* out) {
  auto stream = std::make_shared<Stream>(device, priority, is_default,
                                         static_cast<uint64_t>(config().queue_depth));
  static std::atomic<uint64_t> next_id{1};
  if (!is_default) stream->id = next_id.fetch_add(1, std::memory_order_relaxed);
  registry().add(stream);
  device->addStream(stream);
  scheduler().addStream(stream.get());
  *out = std::move(stream);
  return {};
}

Status destroyStream(maiaStream_t handle) {
  std::shared_ptr<Stream> stream;
  MAIA_RETURN_IF_ERROR(resolveStream(handle, &stream));
  if (handle == nullptr || stream->is_default)
    return makeError(maiaErrorInvalidHandle, "the default stream of maia:",
                     stream->device->index(), " cannot be destroyed");
  if (stream->capturing.load(std::memory_order_acquire))
    return makeError(maiaErrorStreamCaptureUnsupported, "cannot destroy stream ",
                     static_cast<const void*>(handle),
                     ": it is capturing a graph; end the capture first");
  if (uint64_t pending = stream->commands.closeIfIdle(); pending != 0)
    return makeError(maiaErrorStreamBusy, "cannot destroy stream ",
                     static_cast<const void*>(handle), ": ", pending,
                     " command(s) still pending; synchronize it first");
  registry().remove(handle);
  stream->device->removeStream(stream.get());
  scheduler().removeStream(stream.get());
  return {};
}

Status enqueue(Stream* stream, std::unique_ptr<Command> cmd) {
  MAIA_RETURN_IF_ERROR(stream->device->stickyError());
  if (stream->capturing.load(std::memory_order_relaxed)) [[unlikely]] {
    if (std::shared_ptr<Capture> capture = captureOf(stream))
      return capture->add(std::move(cmd));  // recorded, not run (graph_capture.h)
  }
  // The profiler's one cost on this path when it is off: a relaxed load.
  if (activityEnabled()) [[unlikely]]
    beginActivity(*cmd, stream->device->index(), stream->id);
  // A full queue makes the host wait (helping run work), as a device's
  // command ring would: without a bound, a host that outruns the cores
  // (many launches behind one long kernel) holds every queued command's
  // arguments and module reference in host memory, without limit.
  uint64_t sequence = 0;
  for (CommandQueue::Push result; (result = stream->commands.push(cmd, &sequence)) !=
                                  CommandQueue::Push::kQueued;) {
    if (result == CommandQueue::Push::kClosed)
      return makeError(maiaErrorInvalidHandle, "stream ", static_cast<const void*>(stream),
                       " was destroyed");
    scheduler().waitUntil([&] { return stream->commands.hasRoom(); }, stream);
  }
  scheduler().notifyWork(stream, sequence);
  if (config().launch_blocking) return synchronizeStream(stream);
  return {};
}

Status synchronizeStream(Stream* stream) {
  if (stream->capturing.load(std::memory_order_acquire)) [[unlikely]]
    MAIA_RETURN_IF_ERROR(captureViolation(stream, "synchronizing the stream (maiaStreamSynchronize, "
                                                  "or a synchronous call ordered on it)"));
  const uint64_t target = stream->commands.enqueued();
  scheduler().waitUntil([&] { return stream->commands.completed() >= target; }, stream);
  return stream->device->stickyError();
}

}  // namespace maia::driver
