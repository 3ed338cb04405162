// Device configuration, read once from the environment.
#pragma once

#include <cstddef>
#include <cstdint>

#include "error.h"

namespace maia::driver {

struct Config {
  int device_count = 2;             // MAIA_VISIBLE_DEVICES (list of ids)
  size_t memory_per_device = 0;     // MAIA_DEVICE_MEMORY (bytes, K/M/G suffix)
  int core_count = 1;               // MAIA_NUM_CORES, default: host CPUs
  bool launch_blocking = false;     // MAIA_LAUNCH_BLOCKING=1
  long spin_us = 50;                // MAIA_SPIN_US: idle spin before parking
  int64_t queue_depth = 1024;       // MAIA_QUEUE_DEPTH: commands a stream holds
};

/// Parses the environment. A malformed variable is an error naming it.
Status readConfig(Config* out);

/// Parses "123", "64K", "512M", "2G" (powers of 1024). False if malformed.
bool parseByteSize(const char* text, size_t* out);

}  // namespace maia::driver
