// A kernel binary from a future compiler: its metadata format_version is
// one this driver does not read, so loading it must be refused cleanly.
#include <maia/kernel_abi.h>

MAIA_METADATA(R"json({
  "format": "maia-kernel-binary",
  "format_version": 99,
  "compiler": "host-c++ (test kernels)",
  "target": {"cpu": "x86-64", "features": []},
  "kernels": [
    {"name": "empty", "symbol": "empty", "grid_rank": 1, "args": []}
  ]
})json");

MAIA_KERNEL empty(void* const*, const maia_grid_t*) {}
