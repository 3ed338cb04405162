// The host fallback: any ATen operator without a maia kernel runs on the
// host (inputs copied in, computed by the CPU kernel, outputs copied back).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <map>
#include <string>

namespace torch_maia::ops {

/// The boxed host fallback itself: runs op's CPU kernel on copies of the
/// stack's maia tensors and copies the results back (counted, warned once).
void hostFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

/// Counts (and warns once about) an operator that a maia kernel computes
/// on the host explicitly, where the boxed fallback cannot be reached.
void noteHostFallback(const std::string& name);

/// How many times each operator fell back to the host since the last reset.
std::map<std::string, int64_t> fallbackCounts();
void resetFallbackCounts();
/// Whether the first fallback of each operator warns (default: on, unless
/// MAIA_FALLBACK_WARNINGS=0).
void setFallbackWarnings(bool enabled);
bool fallbackWarnings();

}  // namespace torch_maia::ops
