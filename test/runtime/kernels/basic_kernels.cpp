// Kernels used by the driver tests, the demo and the benchmarks.
#include <chrono>
#include <cstdio>

#include <maia/kernel_abi.h>

using namespace maia_kernel;

MAIA_METADATA(R"json({
  "format": "maia-kernel-binary",
  "format_version": 1,
  "compiler": "host-c++ (test kernels)",
  "target": {"cpu": "x86-64", "features": []},
  "kernels": [
    {"name": "empty", "symbol": "empty", "grid_rank": 1, "args": []},
    {"name": "add_f32", "symbol": "add_f32", "grid_rank": 1, "args": [
      {"kind": "memref", "dtype": "f32", "rank": 1, "strides": [null]},
      {"kind": "memref", "dtype": "f32", "rank": 1, "strides": [null]},
      {"kind": "memref", "dtype": "f32", "rank": 1, "strides": [null]}]},
    {"name": "triad_f32", "symbol": "triad_f32", "grid_rank": 1, "args": [
      {"kind": "memref", "dtype": "f32", "rank": 1, "strides": [1]},
      {"kind": "memref", "dtype": "f32", "rank": 1, "strides": [1]},
      {"kind": "memref", "dtype": "f32", "rank": 1, "strides": [1]},
      {"kind": "scalar", "dtype": "f32"}]},
    {"name": "axpb_i64", "symbol": "axpb_i64", "grid_rank": 1, "args": [
      {"kind": "memref", "dtype": "i64", "rank": 1, "strides": [1]},
      {"kind": "scalar", "dtype": "i64"},
      {"kind": "scalar", "dtype": "i64"},
      {"kind": "scalar", "dtype": "i64"}]},
    {"name": "record_program_ids", "symbol": "record_program_ids", "grid_rank": 3, "args": [
      {"kind": "memref", "dtype": "i64", "rank": 2, "strides": [3, 1]}]},
    {"name": "trap_at", "symbol": "trap_at", "grid_rank": 1, "args": [
      {"kind": "memref", "dtype": "i32", "rank": 1, "strides": [1]},
      {"kind": "scalar", "dtype": "i64"}]},
    {"name": "wait_for_flag", "symbol": "wait_for_flag", "grid_rank": 1, "args": [
      {"kind": "memref", "dtype": "i32", "rank": 1, "strides": [1]}]},
    {"name": "fault_in_library", "symbol": "fault_in_library", "grid_rank": 1, "args": [
      {"kind": "scalar", "dtype": "i64"}]}
  ]
})json");

/// Does nothing: measures launch overhead.
MAIA_KERNEL empty(void* const*, const maia_grid_t*) {}

/// out = a + b, elementwise over out's size, any strides.
MAIA_KERNEL add_f32(void* const* args, const maia_grid_t* grid) {
  const auto& a = memref<float, 1>(args, 0);
  const auto& b = memref<float, 1>(args, 1);
  const auto& out = memref<float, 1>(args, 2);
  Slice s = programSlice(grid, out.sizes[0]);
  for (int64_t i = s.begin; i < s.end; ++i) out.at(i) = a.at(i) + b.at(i);
}

/// a = b + scale * c (STREAM triad), unit stride.
MAIA_KERNEL triad_f32(void* const* args, const maia_grid_t* grid) {
  const auto& a = memref<float, 1>(args, 0);
  const auto& b = memref<float, 1>(args, 1);
  const auto& c = memref<float, 1>(args, 2);
  float scale = scalar<float>(args, 3);
  Slice s = programSlice(grid, a.sizes[0]);
  float* __restrict pa = a.aligned + a.offset;
  const float* __restrict pb = b.aligned + b.offset;
  const float* __restrict pc = c.aligned + c.offset;
  for (int64_t i = s.begin; i < s.end; ++i) pa[i] = pb[i] + scale * pc[i];
}

/// data = data * mul + add after busy-waiting spin_ns per program: the
/// result depends on the order of launches, and the delay widens races.
MAIA_KERNEL axpb_i64(void* const* args, const maia_grid_t* grid) {
  const auto& data = memref<int64_t, 1>(args, 0);
  int64_t mul = scalar<int64_t>(args, 1);
  int64_t add = scalar<int64_t>(args, 2);
  int64_t spin_ns = scalar<int64_t>(args, 3);
  if (spin_ns > 0) {
    auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns);
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  Slice s = programSlice(grid, data.sizes[0]);
  // Wrapping (unsigned) arithmetic: long chains overflow by design.
  for (int64_t i = s.begin; i < s.end; ++i)
    data.at(i) = static_cast<int64_t>(static_cast<uint64_t>(data.at(i)) * static_cast<uint64_t>(mul) +
                                      static_cast<uint64_t>(add));
}

/// out[linear program id] = (x, y, z): proves every program id ran once.
MAIA_KERNEL record_program_ids(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<int64_t, 2>(args, 0);
  int64_t row = linearProgramId(grid);
  for (int d = 0; d < 3; ++d) out.at(row, d) += grid->program_id[d] + 1;
}

/// out[pid] = 1; the program whose id equals bad_program executes an illegal
/// instruction, like a device kernel that faults.
MAIA_KERNEL trap_at(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<int32_t, 1>(args, 0);
  int64_t bad_program = scalar<int64_t>(args, 1);
  int64_t pid = linearProgramId(grid);
  if (pid == bad_program) __builtin_trap();
  if (pid < out.sizes[0]) out.at(pid) = 1;
}

/// Busy-waits until flag[0] becomes non-zero (written by a copy on another
/// stream): holds a device core and its stream for as long as a test wants,
/// so that overlap is observed without depending on timing.
MAIA_KERNEL wait_for_flag(void* const* args, const maia_grid_t*) {
  const auto& flag = memref<int32_t, 1>(args, 0);
  auto* word = reinterpret_cast<volatile int32_t*>(&flag.at(0));
  while (*word == 0) __builtin_ia32_pause();
}

/// Formats the string at address `bad` (an invalid pointer): the fault
/// happens inside libc (strlen called by vfprintf), not in this binary's
/// code, like a kernel calling a library routine on a bad buffer.
MAIA_KERNEL fault_in_library(void* const* args, const maia_grid_t*) {
  const auto bad = scalar<int64_t>(args, 0);
  char text[32];
  std::snprintf(text, sizeof(text), "%s", reinterpret_cast<const char*>(bad));
}
