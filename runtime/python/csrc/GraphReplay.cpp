// The replay of a captured compiled graph, once per call: check that the
// static inputs are where the capture read them, copy the other inputs into
// the graph's buffers, replay, copy mutated inputs back, return clones of
// the outputs. graphs.GraphedCall does the same in Python for every case;
// this is its fast path for the common one (static shapes, outputs that are
// dense tensors of the graph's pool, no broadcast inputs), where the Python
// version's interpreter time was most of the plugin's cost per call
// (tools/bench/reduce_overhead_bench.py, "replay us").
#include "GraphReplay.h"

#include <ATen/accelerator/Graph.h>
#include <torch/csrc/autograd/python_variable.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <vector>

namespace py = pybind11;

namespace torch_maia {
namespace {

class GraphReplayer {
 public:
  /// graph: the torch.accelerator.Graph holding the capture (torch._C binds
  /// at::accelerator::Graph with pybind11, whose type registry this module
  /// shares: same bundled pybind11, so the cast reaches the C++ object and
  /// replay() goes straight to MaiaGraph). static_inputs:
  /// (index, data_ptr at capture) of inputs captured where they are.
  /// buffers: (index, buffer) of inputs copied into the graph's buffers.
  /// mutated: indices among buffers' inputs to copy back after a replay.
  GraphReplayer(py::object graph, std::vector<std::pair<int64_t, uintptr_t>> static_inputs,
                std::vector<std::pair<int64_t, at::Tensor>> buffers, std::vector<int64_t> mutated,
                std::vector<at::Tensor> outputs)
      : graph_object_(std::move(graph)),
        graph_(graph_object_.cast<at::accelerator::Graph*>()),
        static_inputs_(std::move(static_inputs)),
        buffers_(std::move(buffers)),
        outputs_(std::move(outputs)) {
    for (int64_t index : mutated) {
      auto buffer = std::find_if(buffers_.begin(), buffers_.end(),
                                 [&](const auto& entry) { return entry.first == index; });
      TORCH_CHECK(buffer != buffers_.end(), "maia graph replay: mutated input ", index,
                  " has no buffer");
      mutated_.push_back(*buffer);
    }
  }

  /// The outputs (a list the caller owns), or None when a static input has
  /// moved or an argument is not what the capture saw: the caller then
  /// takes the general path (another signature, a capture).
  py::object operator()(py::list args) {
    const auto count = static_cast<int64_t>(args.size());
    for (const auto& [index, address] : static_inputs_) {
      const at::Tensor* tensor = tensorAt(args, count, index);
      if (tensor == nullptr || reinterpret_cast<uintptr_t>(tensor->data_ptr()) != address)
        return py::none();
    }
    for (const auto& [index, buffer] : buffers_) {
      const at::Tensor* value = tensorAt(args, count, index);
      if (value == nullptr || value->sizes() != buffer.sizes() ||
          value->strides() != buffer.strides() || value->dtype() != buffer.dtype() ||
          value->device() != buffer.device())
        return py::none();
    }
    for (auto& [index, buffer] : buffers_) {
      const at::Tensor& value = *tensorAt(args, count, index);
      if (value.data_ptr() != buffer.data_ptr()) buffer.copy_(value);
    }
    graph_->replay();
    for (const auto& [index, buffer] : mutated_) {
      const at::Tensor& value = *tensorAt(args, count, index);
      if (value.data_ptr() != buffer.data_ptr()) value.copy_(buffer);
    }
    py::list results(outputs_.size());
    for (size_t i = 0; i < outputs_.size(); ++i)
      results[i] = py::reinterpret_steal<py::object>(THPVariable_Wrap(outputs_[i].clone()));
    args.attr("clear")();
    return results;
  }

 private:
  static const at::Tensor* tensorAt(const py::list& args, int64_t count, int64_t index) {
    if (index >= count) return nullptr;
    PyObject* value = PyList_GET_ITEM(args.ptr(), index);
    return THPVariable_Check(value) ? &THPVariable_Unpack(value) : nullptr;
  }

  py::object graph_object_;  // keeps the graph alive
  at::accelerator::Graph* graph_;
  std::vector<std::pair<int64_t, uintptr_t>> static_inputs_;
  std::vector<std::pair<int64_t, at::Tensor>> buffers_;
  std::vector<std::pair<int64_t, at::Tensor>> mutated_;  // (index, its buffer)
  std::vector<at::Tensor> outputs_;
};

}  // namespace

void initGraphReplayBindings(py::module& m) {
  py::class_<GraphReplayer>(m, "_GraphReplayer")
      .def(py::init<py::object, std::vector<std::pair<int64_t, uintptr_t>>,
                    std::vector<std::pair<int64_t, at::Tensor>>, std::vector<int64_t>,
                    std::vector<at::Tensor>>(),
           py::arg("graph"), py::arg("static_inputs"), py::arg("buffers"), py::arg("mutated"),
           py::arg("outputs"))
      .def("__call__", &GraphReplayer::operator(), py::arg("args"));
}

}  // namespace torch_maia
