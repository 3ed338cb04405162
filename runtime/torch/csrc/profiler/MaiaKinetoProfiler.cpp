// The maia activity profiler for Kineto, registered through torch's
// PrivateUse1ProfilerRegistry: torch.profiler.profile(activities=[...,
// ProfilerActivity.PrivateUse1]) then records device activity on maia.
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include "profiler/MaiaKinetoSession.h"

namespace torch_maia::profiler {
namespace {

class MaiaActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<libkineto::ActivityType>& availableActivities() const override {
    return activities_;
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<libkineto::ActivityType>& activity_types,
      const libkineto::Config& /*config*/) override {
    // A CPU-only profile asks for none of the device types: no session, so
    // the driver records nothing.
    for (libkineto::ActivityType type : activity_types)
      if (activities_.count(type) != 0) return std::make_unique<MaiaKinetoSession>();
    return nullptr;
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t /*ts_ms*/, int64_t /*duration_ms*/,
      const std::set<libkineto::ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  const std::string name_ = "maia";
  const std::set<libkineto::ActivityType> activities_ = {
      libkineto::ActivityType::CONCURRENT_KERNEL, libkineto::ActivityType::GPU_MEMCPY,
      libkineto::ActivityType::GPU_MEMSET};
};

}  // namespace

REGISTER_PRIVATEUSE1_PROFILER(MaiaActivityProfiler);

}  // namespace torch_maia::profiler
