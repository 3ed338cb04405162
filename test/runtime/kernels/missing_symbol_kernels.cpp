// A kernel binary whose metadata names an entry symbol the binary does not
// export: the function exists but has hidden visibility, as when a kernel
// is compiled without MAIA_KERNEL.
#include <maia/kernel_abi.h>

MAIA_METADATA(R"json({
  "format": "maia-kernel-binary",
  "format_version": 1,
  "compiler": "host-c++ (test kernels)",
  "target": {"cpu": "x86-64", "features": []},
  "kernels": [
    {"name": "present", "symbol": "present", "grid_rank": 1, "args": []},
    {"name": "hidden", "symbol": "hidden_entry", "grid_rank": 1, "args": []}
  ]
})json");

MAIA_KERNEL present(void* const*, const maia_grid_t*) {}

// Kept in the binary (used) but not exported (hidden by -fvisibility=hidden).
extern "C" __attribute__((used)) void hidden_entry(void* const*, const maia_grid_t*) {}
