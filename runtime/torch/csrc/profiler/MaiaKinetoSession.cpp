#include "profiler/MaiaKinetoSession.h"

#include <maia/runtime.h>

#include <unistd.h>

#include <chrono>
#include <set>
#include <string>
#include <tuple>

namespace torch_maia::profiler {
namespace {

/// Which Kineto type a record becomes. Kernels, copies and fills use the
/// types torch maps to DeviceType::PrivateUse1 for a renamed backend
/// (deviceTypeFromActivity), so key_averages() counts them as device time;
/// a host function runs on a device core in stream order like a kernel; an
/// event record is a synchronization marker on its stream.
libkineto::ActivityType kinetoType(maiaActivityKind kind) {
  switch (kind) {
    case maiaActivityMemcpyHtoD:
    case maiaActivityMemcpyDtoH:
    case maiaActivityMemcpyDtoD:
    case maiaActivityMemcpyHtoH: return libkineto::ActivityType::GPU_MEMCPY;
    case maiaActivityMemset: return libkineto::ActivityType::GPU_MEMSET;
    case maiaActivityEventRecord: return libkineto::ActivityType::CUDA_SYNC;
    // The replay's span on the stream, around its commands' own records:
    // an annotation, so its time is not counted again as device time.
    case maiaActivityGraph: return libkineto::ActivityType::GPU_USER_ANNOTATION;
    case maiaActivityKernel:
    case maiaActivityHostFunction: break;
  }
  return libkineto::ActivityType::CONCURRENT_KERNEL;
}

/// Kineto's clock (system clock, ns since the epoch) minus the driver's
/// (steady clock): the pair read closest together of a few.
int64_t clockOffsetNs() {
  int64_t best_gap = INT64_MAX, offset = 0;
  for (int i = 0; i < 5; ++i) {
    int64_t before = 0, after = 0;
    maiaProfilerGetTimestamp(&before);
    const int64_t system = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    maiaProfilerGetTimestamp(&after);
    if (after - before < best_gap) {
      best_gap = after - before;
      offset = system - (before + (after - before) / 2);
    }
  }
  return offset;
}

/// The driver call that queued a record's command.
const char* enqueueCallName(maiaActivityKind kind) {
  switch (kind) {
    case maiaActivityKernel: return "maiaLaunchKernel";
    case maiaActivityMemcpyHtoD:
    case maiaActivityMemcpyDtoH:
    case maiaActivityMemcpyDtoD:
    case maiaActivityMemcpyHtoH: return "maiaMemcpy";
    case maiaActivityMemset: return "maiaMemset";
    case maiaActivityHostFunction: return "maiaLaunchHostFunc";
    case maiaActivityEventRecord: return "maiaEventRecord";
    case maiaActivityGraph: return "maiaGraphLaunch";
  }
  return "maia";
}

std::string trackName(int device, uint64_t stream) {
  std::string name = "maia:" + std::to_string(device) + " stream " + std::to_string(stream);
  return stream == 0 ? name + " (default)" : name;
}

}  // namespace

MaiaKinetoSession::~MaiaKinetoSession() {
  if (recording_) maiaProfilerStop();
}

void MaiaKinetoSession::start() {
  clock_offset_ns_ = clockOffsetNs();
  if (maiaProfilerStart() != maiaSuccess) {
    errors_.emplace_back(std::string("maia: ") + maiaGetLastErrorMessage());
    status_ = libkineto::TraceStatus::ERROR;
    return;
  }
  recording_ = true;
  status_ = libkineto::TraceStatus::RECORDING;
}

void MaiaKinetoSession::stop() {
  if (!recording_) return;
  // Work enqueued while recording produces its record when it completes:
  // wait for it (torch's profiler also synchronizes the device first).
  int count = 0;
  if (maiaGetDeviceCount(&count) == maiaSuccess) {
    int current = 0;
    maiaGetDevice(&current);
    for (int device = 0; device < count; ++device) {
      // A device with a sticky error still completes its records.
      if (maiaSetDevice(device) == maiaSuccess) maiaDeviceSynchronize();
    }
    maiaSetDevice(current);
  }
  maiaProfilerStop();
  recording_ = false;
  flushDriver();
  uint64_t dropped = 0;
  if (maiaProfilerGetDroppedCount(&dropped) == maiaSuccess && dropped > 0)
    errors_.push_back("maia: " + std::to_string(dropped) +
                      " device activities were dropped (raise MAIA_PROFILER_MAX_RECORDS)");
  status_ = libkineto::TraceStatus::PROCESSING;
}

void MaiaKinetoSession::flushDriver() {
  size_t waiting = 0;
  if (maiaProfilerFlush(nullptr, 0, &waiting) != maiaSuccess || waiting == 0) return;
  const size_t old = records_.size();
  records_.resize(old + waiting);
  size_t got = 0;
  maiaProfilerFlush(records_.data() + old, waiting, &got);
  records_.resize(old + got);
}

void MaiaKinetoSession::pushCorrelationId(uint64_t id) { maiaProfilerPushCorrelationId(id); }

void MaiaKinetoSession::popCorrelationId() { maiaProfilerPopCorrelationId(nullptr); }

void MaiaKinetoSession::pushUserCorrelationId(uint64_t id) { maiaProfilerPushCorrelationId(id); }

void MaiaKinetoSession::popUserCorrelationId() { maiaProfilerPopCorrelationId(nullptr); }

void MaiaKinetoSession::processTrace(libkineto::ActivityLogger& logger) {
  processTrace(logger, nullptr, 0, 0);
}

void MaiaKinetoSession::processTrace(libkineto::ActivityLogger& logger,
                                     libkineto::getLinkedActivityCallback get_linked_activity,
                                     int64_t /*start_time*/, int64_t /*end_time*/) {
  // No window filter: the driver records only what was enqueued between
  // start() and stop(), and stop() waited for all of it to complete.
  buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
  buffer_->span = libkineto::TraceSpan(0, 0, "maia");
  buffer_->gpuOpCount = static_cast<int>(records_.size());
  // A graph replay's commands share its enqueue (device, stream, time):
  // their host-side slice is the maiaGraphLaunch that queued them.
  std::set<std::tuple<int, uint64_t, int64_t>> replays;
  for (const maiaActivityRecord& record : records_)
    if (record.kind == maiaActivityGraph)
      replays.emplace(record.device, record.stream_id, record.enqueue_ns);
  int32_t next_id = 1;
  for (const maiaActivityRecord& record : records_) {
    buffer_->emplace_activity(buffer_->span, kinetoType(record.kind), std::string(record.name));
    libkineto::GenericTraceActivity& activity = *buffer_->activities.back();
    activity.startTime = record.start_ns + clock_offset_ns_;
    activity.endTime = record.end_ns + clock_offset_ns_;
    activity.id = next_id++;  // the device activity's own id, like CUPTI's
    activity.device = record.device;
    activity.resource = static_cast<int32_t>(record.stream_id);
    activity.threadId = static_cast<int32_t>(record.stream_id);
    // The upstream link: the CPU operator whose correlation id the
    // enqueueing thread had pushed. torch turns it into the event's
    // linked_correlation_id (key_averages() adds the device time to that
    // operator) and Kineto writes it as "External id" in the trace.
    const libkineto::ITraceActivity* launcher =
        get_linked_activity && record.correlation_id != 0
            ? get_linked_activity(static_cast<int32_t>(record.correlation_id))
            : nullptr;
    // A replay's span is not linked: torch would add its time to the
    // launching operator's device time on top of its commands' own. It
    // names the launcher's id in its args instead.
    if (record.kind == maiaActivityGraph) {
      activity.addMetadata("launcher External id", record.correlation_id);
    } else {
      activity.linked = launcher;
    }
    activity.addMetadata("device", record.device);
    activity.addMetadata("stream", record.stream_id);
    activity.addMetadata("correlation", activity.id);
    activity.addMetadata("queued ns", record.start_ns - record.enqueue_ns);
    if (record.bytes != 0) activity.addMetadata("bytes", record.bytes);
    tracks_.emplace(record.device, record.stream_id);

    // The enqueue, on the host thread that made it, with a flow to the
    // device slice (the arrow CUDA traces draw from cudaLaunchKernel). The
    // driver stamps only the moment the command was queued, so the slice
    // has no length.
    const bool replayed =
        replays.count(std::make_tuple(record.device, record.stream_id, record.enqueue_ns)) != 0;
    buffer_->emplace_activity(buffer_->span, libkineto::ActivityType::PRIVATEUSE1_RUNTIME,
                              replayed ? "maiaGraphLaunch" : enqueueCallName(record.kind));
    libkineto::GenericTraceActivity& enqueue = *buffer_->activities.back();
    enqueue.startTime = enqueue.endTime = record.enqueue_ns + clock_offset_ns_;
    enqueue.id = activity.id;
    enqueue.device = static_cast<int32_t>(getpid());
    enqueue.resource = static_cast<int32_t>(record.host_thread);
    enqueue.threadId = static_cast<int32_t>(record.host_thread);
    enqueue.linked = launcher;
    enqueue.flow.id = static_cast<uint32_t>(activity.id);
    enqueue.flow.type = libkineto::kLinkAsyncCpuGpu;
    enqueue.flow.start = 1;
    activity.flow.id = enqueue.flow.id;
    activity.flow.type = libkineto::kLinkAsyncCpuGpu;
    activity.flow.start = 0;
    enqueue.log(logger);
    activity.log(logger);
  }
}

std::unique_ptr<libkineto::DeviceInfo> MaiaKinetoSession::getDeviceInfo() {
  // Kineto takes one process entry per session: the first device used
  // (others still get their stream tracks, named by getResourceInfos).
  const int device = tracks_.empty() ? 0 : tracks_.begin()->first;
  return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{
      device, device + 0x1000000, "maia", "maia:" + std::to_string(device)});
}

std::vector<libkineto::ResourceInfo> MaiaKinetoSession::getResourceInfos() {
  std::vector<libkineto::ResourceInfo> tracks;
  for (const auto& [device, stream] : tracks_)
    tracks.push_back(libkineto::ResourceInfo{static_cast<int64_t>(stream),
                                             static_cast<int64_t>(stream), device,
                                             trackName(device, stream)});
  return tracks;
}

std::unique_ptr<libkineto::CpuTraceBuffer> MaiaKinetoSession::getTraceBuffer() {
  // The logged activities live in this buffer: Kineto keeps it with the
  // trace, whose loggers hold pointers to them.
  return std::move(buffer_);
}

}  // namespace torch_maia::profiler
