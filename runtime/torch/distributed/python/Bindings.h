// torch_maia._C._distributed: what torch_maia/distributed.py needs to create
// the c10d backend.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_maia::distributed {

/// Adds the submodule _distributed to the extension module m.
void initDistributedBindings(pybind11::module& m);

}  // namespace torch_maia::distributed
