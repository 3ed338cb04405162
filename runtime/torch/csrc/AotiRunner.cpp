// Runs AOTInductor packages compiled for maia. torch's package loader asks
// its runner registry (RegisterAOTIModelRunner, the hook for out-of-tree
// devices) for the package's device key, "maia", and this runner loads the
// wrapper library through the generic container runner.
//
// The container itself (header-only code compiled into the wrapper
// library) accepts only the devices it names, so it runs as "cpu": its
// constants load into host memory and the generated code keeps device
// copies (maia/aoti_device_constants.h). Buffers and kernels go to the
// current maia device, which run_impl sets from device_str.
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <torch/csrc/inductor/aoti_runner/model_container_runner.h>

#include <regex>
#include <string>

#include "MaiaFunctions.h"

namespace torch_maia {
namespace {

// "maia" (the current device at each run) or "maia:N".
std::optional<c10::DeviceIndex> parseMaiaDevice(const std::string& device_str) {
  static const std::regex pattern("maia(:([0-9]{1,4}))?");
  std::smatch match;
  TORCH_CHECK(std::regex_match(device_str, match, pattern), "an AOTInductor package for maia ",
              "cannot run on device '", device_str, "' (expected 'maia' or 'maia:N')");
  if (!match[2].matched) return std::nullopt;
  const auto index = static_cast<c10::DeviceIndex>(std::stoi(match[2].str()));
  checkDeviceIndex(index);
  return index;
}

class MaiaAotiRunner : public torch::inductor::AOTIModelContainerRunner {
 public:
  MaiaAotiRunner(const std::string& model_so_path, size_t num_models,
                 const std::string& device_str, const std::string& bin_dir,
                 bool run_single_threaded)
      : AOTIModelContainerRunner(model_so_path, num_models, "cpu", bin_dir,
                                 run_single_threaded),
        device_(parseMaiaDevice(device_str)) {}

 protected:
  std::vector<at::Tensor> run_impl(std::vector<AtenTensorHandle>& input_handles,
                                   void* stream_handle) override {
    c10::OptionalDeviceGuard guard;
    if (device_) guard.reset_device(c10::Device(c10::DeviceType::PrivateUse1, *device_));
    return AOTIModelContainerRunner::run_impl(input_handles, stream_handle);
  }

 private:
  std::optional<c10::DeviceIndex> device_;
};

std::unique_ptr<torch::inductor::AOTIModelContainerRunner> createRunner(
    const std::string& model_so_path, size_t num_models, const std::string& device_str,
    const std::string& bin_dir, const bool run_single_threaded) {
  return std::make_unique<MaiaAotiRunner>(model_so_path, num_models, device_str, bin_dir,
                                          run_single_threaded);
}

const torch::inductor::RegisterAOTIModelRunner register_runner("maia", &createRunner);

}  // namespace
}  // namespace torch_maia
