// A kernel binary that declares a target feature no x86 CPU has, so no host
// can run it. module_test also rewrites the feature list in memory to check
// a real feature the host lacks and one it has.
#include <maia/kernel_abi.h>

MAIA_METADATA(R"json({
  "format": "maia-kernel-binary",
  "format_version": 1,
  "compiler": "host-c++ (test kernels)",
  "target": {"cpu": "x86-64", "features": ["avx512f", "amx-fp8-imaginary"]},
  "kernels": [
    {"name": "empty", "symbol": "empty", "grid_rank": 1, "args": []}
  ]
})json");

MAIA_KERNEL empty(void* const*, const maia_grid_t*) {}
