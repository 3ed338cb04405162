#include "Bindings.h"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "MaiaBackend.h"

namespace py = pybind11;

namespace torch_maia::distributed {
namespace {

/// The holder torch binds c10d::Backend with (a c10::intrusive_ptr that drops
/// its reference without the GIL: a backend's destructor may wait for its
/// threads). Same layout as torch's, so a MaiaBackend passes wherever torch
/// takes a Backend.
template <typename T>
class NoGilHolder {
 public:
  NoGilHolder() = default;
  NoGilHolder(const NoGilHolder&) = default;
  NoGilHolder(NoGilHolder&&) noexcept = default;
  NoGilHolder& operator=(const NoGilHolder&) = default;
  NoGilHolder& operator=(NoGilHolder&&) noexcept = default;
  explicit NoGilHolder(c10::intrusive_ptr<T> impl) : impl_(std::move(impl)) {}
  explicit NoGilHolder(T* impl) : impl_(c10::intrusive_ptr<T>::unsafe_steal_from_new(impl)) {}
  ~NoGilHolder() {
    if (impl_) {
      if (PyGILState_Check()) {
        py::gil_scoped_release release;
        impl_.reset();
      } else {
        impl_.reset();
      }
    }
  }
  T& operator*() const noexcept { return *impl_; }
  T* operator->() const noexcept { return impl_.get(); }
  [[nodiscard]] T* get() const noexcept { return impl_.get(); }
  void reset() noexcept { impl_.reset(); }
  operator bool() const noexcept { return impl_; }

 private:
  c10::intrusive_ptr<T> impl_;
};

}  // namespace
}  // namespace torch_maia::distributed

PYBIND11_DECLARE_HOLDER_TYPE(T, torch_maia::distributed::NoGilHolder<T>, true)

namespace torch_maia::distributed {

void initDistributedBindings(py::module& m) {
  // torch built without distributed support has no c10d module: no backend.
  if (!py::hasattr(py::module::import("torch._C"), "_distributed_c10d")) return;
  py::module dist = m.def_submodule("_distributed", "maia c10d backend");
  py::object backend_base = py::module::import("torch._C._distributed_c10d").attr("Backend");
  // Deep-copyable (split_group copies its parent's options; torch's base
  // Options cannot be copied from Python).
  py::class_<MaiaOptions, c10::intrusive_ptr<MaiaOptions>>(dist, "MaiaOptions",
                                                          backend_base.attr("Options"))
      .def("__copy__", [](const MaiaOptions& o) { return c10::make_intrusive<MaiaOptions>(o); })
      .def("__deepcopy__", [](const MaiaOptions& o, py::dict) {
        return c10::make_intrusive<MaiaOptions>(o);
      });
  py::class_<MaiaBackend, NoGilHolder<MaiaBackend>>(dist, "MaiaBackend", backend_base)
      // new_group calls this on the ranks left out of a group split from a
      // backend that supports splitting (NCCL's ncclCommSplit needs every
      // rank). A maia group's Gloo connects only its members: nothing to do.
      .def("perform_nocolor_split", [](MaiaBackend&, const c10::Device&) {})
      // split_group starts a child group from a copy of its parent's options.
      .def_property_readonly("options", &MaiaBackend::getBackendOptions)
      // "ipc", "hierarchical" or "gloo": what moves the group's maia tensors.
      .def_property_readonly("transport", &MaiaBackend::transportName)
      .def("_launch_counts", &MaiaBackend::launchCounts,
           "Launches per transport since the group was created.");
  dist.def(
      "create_backend",
      [](py::object gloo, py::object store, std::chrono::milliseconds timeout,
         const std::string& group_name, std::vector<std::string> hosts, py::object leaders,
         int device) {
        auto* gloo_backend = py::cast<c10d::Backend*>(gloo);
        auto* c10d_store = py::cast<c10d::Store*>(store);
        c10::intrusive_ptr<c10d::Backend> leaders_backend;
        if (!leaders.is_none())
          leaders_backend =
              c10::intrusive_ptr<c10d::Backend>::reclaim_copy(py::cast<c10d::Backend*>(leaders));
        // The constructor waits for the group's ranks (store rendezvous).
        py::gil_scoped_release release;
        auto backend = c10::make_intrusive<MaiaBackend>(
            c10::intrusive_ptr<c10d::Backend>::reclaim_copy(gloo_backend),
            c10::intrusive_ptr<c10d::Store>::reclaim_copy(c10d_store), timeout, group_name,
            std::move(hosts), std::move(leaders_backend), static_cast<c10::DeviceIndex>(device));
        return NoGilHolder<MaiaBackend>(std::move(backend));
      },
      py::arg("gloo"), py::arg("store"), py::arg("timeout"), py::arg("group_name"),
      py::arg("hosts"), py::arg("leaders"), py::arg("device"),
      "A maia backend: IPC between the ranks of a host (the group's tensors on maia:device), "
      "gloo (a ProcessGroupGloo of the same ranks) between hosts and for the rest.");
}

}  // namespace torch_maia::distributed
