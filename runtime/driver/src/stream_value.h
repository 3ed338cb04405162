// Stream operations on a 64-bit word of device memory: a wait that holds a
// stream until the word reaches a value, and a write of a value in stream
// order (maiaStreamWaitValue64, maiaStreamWriteValue64; CUDA's
// cuStreamWaitValue64 / cuStreamWriteValue64).
//
// The word may be memory of this process or opened from a peer's IPC
// handle, so one process's stream can wait for a flag another process's
// stream (or host) sets. A wait occupies no core: it is a command whose
// ready() reads the word. A watcher thread sleeps on the awaited words
// (shared futexes on the driver's alias of the memfd pages, which every
// process mapping them shares), wakes the cores when one is met, and fails
// a wait whose word's exporter exits or whose timeout passes, so that a
// dead or absent peer is an error and never a hang.
#pragma once

#include <maia/runtime.h>

#include <cstdint>
#include <memory>

#include "command.h"
#include "error.h"

namespace maia::driver {

class Device;

/// The wait command for device_ptr on device (validated here: 8-byte
/// aligned, inside a live allocation of device, flags known).
Status makeWaitValueCommand(Device* device, void* device_ptr, uint64_t value, unsigned flags,
                            uint32_t timeout_ms, std::unique_ptr<Command>* out);
/// The write command (validated as for the wait).
Status makeWriteValueCommand(Device* device, void* device_ptr, uint64_t value,
                             std::unique_ptr<Command>* out);

}  // namespace maia::driver
