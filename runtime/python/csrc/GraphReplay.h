// torch_maia._C._GraphReplayer: the per-call path of a compiled graph
// replayed under torch.compile(mode="reduce-overhead")
// (inductor_plugin/maia_inductor/graphs.py), in C++.
#pragma once

#include <torch/csrc/utils/pybind.h>

namespace torch_maia {

void initGraphReplayBindings(pybind11::module& m);

}  // namespace torch_maia
