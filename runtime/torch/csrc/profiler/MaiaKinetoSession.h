// One Kineto profiling session on maia: turns the driver's activity records
// (maia/profiler.h) into Kineto trace activities on per-device, per-stream
// tracks, each linked to the CPU operator that enqueued it.
#pragma once

#include <maia/profiler.h>

#include <IActivityProfiler.h>
#include <libkineto.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace torch_maia::profiler {

class MaiaKinetoSession final : public libkineto::IActivityProfilerSession {
 public:
  MaiaKinetoSession() = default;
  ~MaiaKinetoSession() override;

  void start() override;
  void stop() override;
  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override;
  void processTrace(libkineto::ActivityLogger& logger,
                    libkineto::getLinkedActivityCallback get_linked_activity, int64_t start_time,
                    int64_t end_time) override;

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override;
  std::vector<libkineto::ResourceInfo> getResourceInfos() override;
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override;

  /// Kineto calls these on the thread that enters and leaves each operator
  /// (GenericActivityProfiler::pushCorrelationId, for every session): the
  /// driver tags what that thread enqueues meanwhile with the id, which is
  /// the correlation id of the operator's own CPU activity.
  void pushCorrelationId(uint64_t id) override;
  void popCorrelationId() override;
  /// The same for user annotations (record_function in Python): work a
  /// thread enqueues directly inside one, not inside an operator (a graph
  /// replay's commands), links to the annotation. Scopes nest, so one
  /// stack serves both: the innermost scope is the one that enqueued.
  void pushUserCorrelationId(uint64_t id) override;
  void popUserCorrelationId() override;

 private:
  /// Drains the driver's records into records_.
  void flushDriver();

  bool recording_ = false;
  int64_t clock_offset_ns_ = 0;  // Kineto time (system clock) - driver time (steady clock)
  std::vector<maiaActivityRecord> records_;
  std::set<std::pair<int, uint64_t>> tracks_;  // (device, stream id) seen
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
  std::vector<std::string> errors_;
};

}  // namespace torch_maia::profiler
