// torch_maia._C: the Python bindings of the maia runtime. Loading it loads
// libmaia_torch.so, whose static initializers register the device guard,
// allocators, hooks, generator and operators with PyTorch.
#include <ATen/Context.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/pybind.h>
#include <pybind11/stl.h>

#include "MaiaCheck.h"
#include "MaiaFunctions.h"
#include "MaiaGenerator.h"
#include "UserKernels.h"
#include "ops/Fallback.h"

namespace py = pybind11;

namespace torch_maia {
namespace {

py::dict deviceProperties(c10::DeviceIndex index) {
  checkDeviceIndex(index);
  maiaDeviceProp prop;
  MAIA_CHECK(maiaGetDeviceProperties(&prop, index));
  py::dict result;
  result["name"] = std::string(prop.name);
  result["compute_capability"] = std::string(prop.compute_capability);
  result["total_memory"] = prop.total_memory;
  result["core_count"] = prop.core_count;
  return result;
}

void synchronizeDevice(c10::DeviceIndex index) {
  index = resolveDevice(index);
  c10::DeviceIndex previous = exchangeDevice(index);
  maiaError_t status = maiaDeviceSynchronize();
  exchangeDevice(previous);
  MAIA_CHECK(status);
}

}  // namespace
}  // namespace torch_maia

PYBIND11_MODULE(_C, m) {
  using namespace torch_maia;
  m.doc() = "maia runtime bindings (use torch.maia)";
  m.def("_device_count", [] { return static_cast<int>(deviceCount()); });
  m.def("_current_device", [] { return static_cast<int>(currentDevice()); });
  m.def("_set_device", [](int index) { setDevice(static_cast<c10::DeviceIndex>(index)); });
  m.def("_exchange_device", [](int index) {
    return static_cast<int>(exchangeDevice(static_cast<c10::DeviceIndex>(index)));
  });
  m.def("_device_properties",
        [](int index) { return deviceProperties(static_cast<c10::DeviceIndex>(index)); });
  m.def("_synchronize",
        [](int index) { synchronizeDevice(static_cast<c10::DeviceIndex>(index)); },
        py::call_guard<py::gil_scoped_release>());
  m.def("_lazy_init",
        [] { at::globalContext().lazyInitDevice(c10::DeviceType::PrivateUse1); });
  m.def("_default_generator", [](int index) {
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(defaultGenerator(static_cast<c10::DeviceIndex>(index))));
  });
  // torch.Event.elapsed_time accepts only exact torch.Event objects; the
  // subclass torch.maia.Event measures through the driver handles instead.
  m.def("_event_elapsed_time", [](uintptr_t start, uintptr_t end) {
    TORCH_CHECK(start != 0 && end != 0,
                "both events must be recorded before measuring elapsed time");
    float ms = 0;
    MAIA_CHECK(maiaEventElapsedTime(&ms, reinterpret_cast<maiaEvent_t>(start),
                                    reinterpret_cast<maiaEvent_t>(end)));
    return static_cast<double>(ms);
  });
  py::class_<UserModule, std::shared_ptr<UserModule>>(m, "_UserModule")
      .def(py::init<const std::string&>())
      .def_property_readonly("path", &UserModule::path)
      .def("metadata", &UserModule::metadata)
      .def("kernel_names", &UserModule::kernelNames)
      .def("launch", &UserModule::launch, py::arg("name"), py::arg("grid"), py::arg("args"));
  m.def("_fallback_counts", [] { return ops::fallbackCounts(); });
  m.def("_reset_fallback_counts", [] { ops::resetFallbackCounts(); });
  m.def("_set_fallback_warnings", [](bool enabled) { ops::setFallbackWarnings(enabled); });
  m.def("_fallback_warnings", [] { return ops::fallbackWarnings(); });
}
