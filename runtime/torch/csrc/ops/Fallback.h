// The host fallback: any ATen operator without a maia kernel runs on the
// host (inputs copied in, computed by the CPU kernel, outputs copied back).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace torch_maia::ops {

/// How many times each operator fell back to the host since the last reset.
std::map<std::string, int64_t> fallbackCounts();
void resetFallbackCounts();
/// Whether the first fallback of each operator warns (default: on, unless
/// MAIA_FALLBACK_WARNINGS=0).
void setFallbackWarnings(bool enabled);
bool fallbackWarnings();

}  // namespace torch_maia::ops
