#include "WorkSplit.h"

#include <maia/runtime.h>

#include <algorithm>

#include "MaiaCheck.h"

namespace torch_maia {
namespace {

// Elements of elementwise work per program: below twice this an eager
// operator runs one program, and compiled pointwise kernels take one program
// per this many elements.
constexpr int64_t kElementsPerProgram = 1 << 15;
// The same for compiled reductions, which do more work per element
// (Welford, exp), so split sooner.
constexpr int64_t kReductionElementsPerProgram = 1 << 13;
// The most programs a compiled kernel takes.
constexpr int64_t kMaxCompiledPrograms = 32;

}  // namespace

int deviceCores() {
  static const int cores = [] {
    maiaDeviceProp prop;
    MAIA_CHECK(maiaGetDeviceProperties(&prop, 0));
    return prop.core_count;
  }();
  return cores;
}

int64_t programsFor(int64_t units, int64_t work) {
  if (units <= 1 || work < 2 * kElementsPerProgram) return 1;
  return std::min<int64_t>(units, deviceCores());
}

bool splitsOneLine(int64_t n) { return deviceCores() > 1 && n >= 4 * kElementsPerProgram; }

std::array<int64_t, 2> pointwiseGrid(int64_t numel, int64_t inner, int64_t reduction_numel,
                                     int64_t lanes) {
  TORCH_CHECK(lanes > 0, "a vector has at least one lane, got ", lanes);
  if (numel <= 0) return {0, 1};
  inner = std::max<int64_t>(inner, 1);
  const int64_t work = numel * std::max<int64_t>(reduction_numel, 1);
  const int64_t per_program =
      reduction_numel == 1 ? kElementsPerProgram : kReductionElementsPerProgram;
  const int64_t programs =
      std::min(kMaxCompiledPrograms, std::max<int64_t>(1, work / per_program));
  const int64_t row_programs = std::max<int64_t>(1, std::min(numel / inner, programs));
  const int64_t chunks = (inner + lanes - 1) / lanes;  // of whole vectors
  const int64_t chunk_programs = std::max<int64_t>(1, std::min(programs / row_programs, chunks));
  return {row_programs, chunk_programs};
}

int64_t reductionGrid(int64_t xnumel, int64_t rnumel) {
  if (xnumel <= 0) return 0;
  const int64_t work = xnumel * std::max<int64_t>(rnumel, 1);
  return std::max<int64_t>(
      1, std::min({xnumel, kMaxCompiledPrograms, work / kReductionElementsPerProgram}));
}

}  // namespace torch_maia
