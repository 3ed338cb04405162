#include "UserKernels.h"

#include <c10/core/DeviceGuard.h>

#include "MaiaCheck.h"
#include "MaiaFunctions.h"
#include "MaiaStream.h"
#include "ops/EagerKernels.h"

namespace torch_maia {

UserModule::UserModule(const std::string& path) : path_(path) {
  MAIA_CHECK(maiaModuleLoad(&module_, path.c_str()));
}

UserModule::~UserModule() {
  if (module_ != nullptr && maiaModuleUnload(module_) != maiaSuccess) maiaGetLastError();
}

std::string UserModule::metadata() const {
  const char* json = nullptr;
  MAIA_CHECK(maiaModuleGetMetadata(module_, &json));
  return json;
}

std::vector<std::string> UserModule::kernelNames() const {
  int count = 0;
  MAIA_CHECK(maiaModuleGetKernelCount(module_, &count));
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    maiaKernel_t kernel = nullptr;
    const char* name = nullptr;
    MAIA_CHECK(maiaModuleGetKernelByIndex(module_, i, &kernel));
    MAIA_CHECK(maiaKernelGetName(kernel, &name));
    names.emplace_back(name);
  }
  return names;
}

maiaKernel_t UserModule::kernel(const std::string& name) const {
  maiaKernel_t kernel = nullptr;
  MAIA_CHECK(maiaModuleGetKernel(module_, name.c_str(), &kernel));
  return kernel;
}

void UserModule::launch(const std::string& name, const std::vector<int64_t>& grid,
                        const std::vector<Arg>& args) const {
  TORCH_CHECK(grid.size() >= 1 && grid.size() <= 3, "a grid has 1 to 3 dimensions, got ",
              grid.size());
  int64_t grid3[3] = {1, 1, 1};
  for (size_t d = 0; d < grid.size(); ++d) grid3[d] = grid[d];
  maiaKernel_t kernel = this->kernel(name);
  std::vector<maiaKernelArg> driver_args;
  std::optional<c10::Device> device;
  for (size_t i = 0; i < args.size(); ++i) {
    if (const auto* tensor = std::get_if<at::Tensor>(&args[i])) {
      TORCH_CHECK(tensor->device().is_privateuseone(), "argument ", i, " of kernel '", name,
                  "' is on ", tensor->device(), "; kernels take maia tensors");
      TORCH_CHECK(!device || *device == tensor->device(), "arguments of kernel '", name,
                  "' are on ", *device, " and ", tensor->device());
      device = tensor->device();
      driver_args.push_back(ops::memrefOf(*tensor));
      continue;
    }
    maiaKernelArgInfo info;
    MAIA_CHECK(maiaKernelGetArgInfo(kernel, static_cast<int>(i), &info));
    maiaKernelArg scalar{};
    scalar.kind = maiaArgScalar;
    scalar.dtype = info.dtype;
    bool is_float = info.dtype == maiaDtypeF16 || info.dtype == maiaDtypeBF16 ||
                    info.dtype == maiaDtypeF32 || info.dtype == maiaDtypeF64;
    if (const auto* integer = std::get_if<int64_t>(&args[i])) {
      if (is_float) scalar.scalar.f = static_cast<double>(*integer);
      else scalar.scalar.i = *integer;
    } else {
      double value = std::get<double>(args[i]);
      TORCH_CHECK(is_float, "argument ", i, " of kernel '", name,
                  "' is an integer scalar; got the float ", value);
      scalar.scalar.f = value;
    }
    driver_args.push_back(scalar);
  }
  c10::DeviceIndex index = device ? device->index() : currentDevice();
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, index));
  MAIA_CHECK(maiaLaunchKernel(kernel, grid3, driver_args.data(),
                              static_cast<int>(driver_args.size()),
                              currentDriverStream(index)));
}

}  // namespace torch_maia
