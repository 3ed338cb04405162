// The C++ API of libmaia_torch.so beyond what c10 and ATen already give.
//
// Loading libmaia_torch.so registers maia with PyTorch (the "maia" device
// name for PrivateUse1, hooks, guard, allocators, generator, operators), so
// the generic APIs work on it: c10::Device("maia"), at::accelerator
// (device count, current device and stream, synchronize, memory stats, empty
// cache), c10::Stream and c10::Event through the device guard. This header
// adds only what has no generic form: the driver handle of a stream (to
// launch with the driver's C API, maia/runtime.h, on a torch stream) and the
// host-fallback counters. See docs/cpp.md.
#pragma once

#include <maia/runtime.h>

#include <c10/core/Stream.h>

#include <cstdint>
#include <map>
#include <string>

namespace torch_maia {

/// The driver handle of a maia c10::Stream (validated): work enqueued on it
/// with the driver's C API is ordered with the operators run on that stream.
maiaStream_t driverStream(const c10::Stream& stream);

namespace ops {

/// How many times each ATen operator ran on the host (the boxed fallback)
/// since the process started or the last reset, by operator name.
std::map<std::string, int64_t> fallbackCounts();
void resetFallbackCounts();
/// Whether the first fallback of each operator warns (default: yes, unless
/// MAIA_FALLBACK_WARNINGS=0).
void setFallbackWarnings(bool enabled);

}  // namespace ops
}  // namespace torch_maia
