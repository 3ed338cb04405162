// maia streams as c10::Stream: ids, pools, the per-thread current stream.
//
// A c10::Stream on maia carries a StreamId: 0 is the device's default
// stream; any other id names a driver stream of that device's pools (one
// pool of 32 streams per priority, handed out round-robin to
// torch.maia.Stream and getStreamFromGlobalPool, as CUDA does). Streams
// are never destroyed: c10::Stream values are copied freely, so a stream
// must outlive every copy.
#pragma once

#include <maia/runtime.h>

#include <c10/core/Stream.h>

namespace torch_maia {

/// The driver handle of a maia c10::Stream (validated).
maiaStream_t driverStream(const c10::Stream& stream);

/// The driver handle of this thread's current stream on device, which must
/// be a valid index (a tensor's): what every launch names. Same as
/// driverStream(currentStream(device)) without its checks and driver calls.
maiaStream_t currentDriverStream(c10::DeviceIndex device);

c10::Stream defaultStream(c10::DeviceIndex device = -1);
/// This thread's current stream on device (default stream until set).
c10::Stream currentStream(c10::DeviceIndex device = -1);
/// Sets stream as this thread's current stream for its device; returns the
/// previous one.
c10::Stream exchangeStream(const c10::Stream& stream);
/// A stream from the device's round-robin pool of the greatest or the least
/// priority (like CUDA's).
c10::Stream streamFromPool(bool high_priority, c10::DeviceIndex device = -1);
/// A stream of the given priority (lower is higher, clamped to the driver's
/// range) from the device's round-robin pool of that priority: like CUDA,
/// "new" streams are pooled and reused once the pool has gone round.
c10::Stream newStream(c10::DeviceIndex device, int priority);
int streamPriority(const c10::Stream& stream);
/// Whether stream is capturing a graph (MaiaGraph.cpp).
bool isStreamCapturing(const c10::Stream& stream);
std::pair<int, int> priorityRange();  // (least, greatest)

}  // namespace torch_maia
