/* A kernel binary from a future compiler: its metadata format_version is
 * one this driver does not read, so loading it must be refused cleanly.
 * Written in C, so the build also checks that maia/kernel_abi.h is a C
 * header. */
#include <maia/kernel_abi.h>

/* The C spelling of the memref descriptor has the layout the driver
 * writes: allocated, aligned, offset, R sizes, R strides, 8 bytes each. */
typedef MAIA_MEMREF(float, 2) memref_f32_2d;
_Static_assert(sizeof(memref_f32_2d) == (3 + 2 * 2) * 8, "memref descriptor layout");

MAIA_METADATA(
    "{\"format\": \"maia-kernel-binary\", \"format_version\": 99,"
    " \"compiler\": \"host-c (test kernels)\","
    " \"target\": {\"cpu\": \"x86-64\", \"features\": []},"
    " \"kernels\": ["
    "  {\"name\": \"empty\", \"symbol\": \"empty\", \"grid_rank\": 1, \"args\": []}"
    "]}");

MAIA_KERNEL empty(void* const* args, const maia_grid_t* grid) {
  (void)args;
  (void)grid;
}
