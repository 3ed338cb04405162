// torch_maia._C: the Python bindings of the maia runtime. Loading it loads
// libmaia_torch.so, whose static initializers register the device guard,
// allocators, hooks, generator and operators with PyTorch.
#include <ATen/Context.h>
#include <ATen/ops/empty_strided.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>
#include <pybind11/stl.h>

#include "MaiaCheck.h"
#include "MaiaFunctions.h"
#include "MaiaGenerator.h"
#include "MaiaStream.h"
#include "CompiledKernel.h"
#include "GraphReplay.h"
#include "UserKernels.h"
#include "WorkSplit.h"
#include "ops/Fallback.h"
#include "python/Bindings.h"

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

// The launch of a compiled graph's kernel: converts Python arguments without
// pybind's overload machinery (this runs once per kernel per graph call).
void launchCompiled(const CompiledKernel& kernel, py::tuple grid, py::args args) {
  TORCH_CHECK(static_cast<int>(args.size()) == kernel.numArgs(), "kernel '", kernel.name(),
              "' takes ", kernel.numArgs(), " arguments, got ", args.size());
  TORCH_CHECK(grid.size() >= 1 && grid.size() <= 3, "a grid has 1 to 3 dimensions, got ",
              grid.size());
  std::array<int64_t, 3> grid3 = {1, 1, 1};
  for (size_t d = 0; d < grid.size(); ++d) grid3[d] = grid[d].cast<int64_t>();
  std::vector<maiaKernelArg> driver_args;
  driver_args.reserve(args.size());
  c10::DeviceIndex device = -1;
  for (size_t i = 0; i < args.size(); ++i) {
    PyObject* arg = args[i].ptr();
    int index = static_cast<int>(i);
    if (THPVariable_Check(arg)) {
      const at::Tensor& tensor = THPVariable_Unpack(arg);
      driver_args.push_back(kernel.tensorArg(index, tensor));
      TORCH_CHECK(device < 0 || device == tensor.device().index(), "arguments of kernel '",
                  kernel.name(), "' are on maia:", static_cast<int>(device), " and ",
                  tensor.device());
      device = tensor.device().index();
    } else if (PyLong_Check(arg)) {
      driver_args.push_back(kernel.intArg(index, py::cast<int64_t>(args[i])));
    } else if (PyFloat_Check(arg)) {
      driver_args.push_back(kernel.floatArg(index, PyFloat_AS_DOUBLE(arg)));
    } else {
      TORCH_CHECK(false, "argument ", i, " of kernel '", kernel.name(),
                  "' must be a maia tensor, an int or a float, got ", Py_TYPE(arg)->tp_name);
    }
  }
  py::gil_scoped_release no_gil;
  kernel.launch(grid3, driver_args, device < 0 ? currentDevice() : device);
}

}  // namespace
}  // namespace torch_maia

PYBIND11_MODULE(_C, m) {
  using namespace torch_maia;
  m.doc() = "maia runtime bindings (use torch.maia)";
  distributed::initDistributedBindings(m);
  initGraphReplayBindings(m);
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
  m.def("_stream_priority", [](int64_t stream_id, int device_index) {
    return streamPriority(c10::Stream(c10::Stream::UNSAFE,
                                      c10::Device(c10::DeviceType::PrivateUse1,
                                                  static_cast<c10::DeviceIndex>(device_index)),
                                      stream_id));
  });
  py::class_<UserModule, std::shared_ptr<UserModule>>(m, "_UserModule")
      .def(py::init<const std::string&>())
      .def_property_readonly("path", &UserModule::path)
      .def("metadata", &UserModule::metadata)
      .def("kernel_names", &UserModule::kernelNames)
      .def("launch", &UserModule::launch, py::arg("name"), py::arg("grid"), py::arg("args"));
  // Buffers of compiled graphs: no Python argument parsing on the way.
  m.def("_empty_strided", [](const std::vector<int64_t>& size, const std::vector<int64_t>& stride,
                             py::handle dtype, int device) {
    TORCH_CHECK(THPDtype_Check(dtype.ptr()), "dtype must be a torch.dtype");
    auto options = at::TensorOptions()
                       .dtype(reinterpret_cast<THPDtype*>(dtype.ptr())->scalar_type)
                       .device(c10::Device(c10::DeviceType::PrivateUse1,
                                           static_cast<c10::DeviceIndex>(device)));
    return at::empty_strided(size, stride, options);
  });
  py::class_<CompiledKernel, std::shared_ptr<CompiledKernel>>(m, "_CompiledKernel")
      .def(py::init<std::shared_ptr<UserModule>, const std::string&>())
      .def_property_readonly("name", &CompiledKernel::name)
      .def_property_readonly("num_args", &CompiledKernel::numArgs)
      .def("run", &launchCompiled, py::arg("grid"));
  // Launch grids of compiled kernels (maia_inductor.runtime); WorkSplit.h
  // splits eager operators' work too.
  m.def("_pointwise_grid",
        [](int64_t numel, int64_t inner, int64_t reduction_numel, int64_t lanes) {
          const auto grid = pointwiseGrid(numel, inner, reduction_numel, lanes);
          return py::make_tuple(grid[0], grid[1]);
        },
        py::arg("numel"), py::arg("inner"), py::arg("reduction_numel"), py::arg("lanes"));
  m.def("_reduction_grid",
        [](int64_t xnumel, int64_t rnumel) {
          return py::make_tuple(reductionGrid(xnumel, rnumel));
        },
        py::arg("xnumel"), py::arg("rnumel"));
  m.def("_fallback_counts", [] { return ops::fallbackCounts(); });
  m.def("_reset_fallback_counts", [] { ops::resetFallbackCounts(); });
  m.def("_set_fallback_warnings", [](bool enabled) { ops::setFallbackWarnings(enabled); });
  m.def("_fallback_warnings", [] { return ops::fallbackWarnings(); });
}
