#include "config.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace maia::driver {
namespace {

// Simulated hardware exposes this many device ids to MAIA_VISIBLE_DEVICES.
constexpr int kMaxDevices = 16;

bool parseInt(const std::string& text, long lo, long hi, long* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value < lo || value > hi) return false;
  *out = value;
  return true;
}

Status parseVisibleDevices(const char* text, int* out_count) {
  std::vector<bool> seen(kMaxDevices, false);
  int count = 0;
  std::string list(text);
  size_t start = 0;
  while (start <= list.size() && !list.empty()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos
                                                                      : comma - start);
    long id = 0;
    if (!parseInt(item, 0, kMaxDevices - 1, &id))
      return makeError(maiaErrorInitialization, "MAIA_VISIBLE_DEVICES='", text,
                       "': '", item, "' is not a device id in [0, ", kMaxDevices - 1, "]");
    if (seen[id])
      return makeError(maiaErrorInitialization, "MAIA_VISIBLE_DEVICES='", text,
                       "': device ", id, " is listed twice");
    seen[id] = true;
    ++count;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *out_count = count;
  return {};
}

size_t defaultDeviceMemory() {
  // A quarter of physical memory per device: both default devices together
  // can hold half of RAM, leaving the host room for its own tensors.
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return size_t{4} << 30;
  return static_cast<size_t>(pages) * static_cast<size_t>(page_size) / 4;
}

}  // namespace

bool parseByteSize(const char* text, size_t* out) {
  std::string s(text);
  if (s.empty()) return false;
  size_t multiplier = 1;
  switch (s.back()) {
    case 'K': case 'k': multiplier = size_t{1} << 10; break;
    case 'M': case 'm': multiplier = size_t{1} << 20; break;
    case 'G': case 'g': multiplier = size_t{1} << 30; break;
    default: break;
  }
  if (multiplier != 1) s.pop_back();
  long value = 0;
  if (!parseInt(s, 1, (1L << 46) / static_cast<long>(multiplier), &value)) return false;
  *out = static_cast<size_t>(value) * multiplier;
  return true;
}

Status readConfig(Config* out) {
  Config config;
  if (const char* visible = std::getenv("MAIA_VISIBLE_DEVICES"))
    MAIA_RETURN_IF_ERROR(parseVisibleDevices(visible, &config.device_count));

  config.memory_per_device = defaultDeviceMemory();
  if (const char* memory = std::getenv("MAIA_DEVICE_MEMORY")) {
    if (!parseByteSize(memory, &config.memory_per_device) ||
        config.memory_per_device < (size_t{1} << 20))
      return makeError(maiaErrorInitialization, "MAIA_DEVICE_MEMORY='", memory,
                       "' is not a size of at least 1M (examples: 512M, 4G)");
  }

  config.core_count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (const char* cores = std::getenv("MAIA_NUM_CORES")) {
    long value = 0;
    if (!parseInt(cores, 1, 1024, &value))
      return makeError(maiaErrorInitialization, "MAIA_NUM_CORES='", cores,
                       "' is not a core count in [1, 1024]");
    config.core_count = static_cast<int>(value);
  }

  if (const char* blocking = std::getenv("MAIA_LAUNCH_BLOCKING"))
    config.launch_blocking = std::strcmp(blocking, "1") == 0;

  if (const char* spin = std::getenv("MAIA_SPIN_US")) {
    long value = 0;
    if (!parseInt(spin, 0, 1000000, &value))
      return makeError(maiaErrorInitialization, "MAIA_SPIN_US='", spin,
                       "' is not a number of microseconds in [0, 1000000]");
    config.spin_us = value;
  }

  if (const char* depth = std::getenv("MAIA_QUEUE_DEPTH")) {
    long value = 0;
    if (!parseInt(depth, 1, 1 << 24, &value))
      return makeError(maiaErrorInitialization, "MAIA_QUEUE_DEPTH='", depth,
                       "' is not a number of commands in [1, 16777216]");
    config.queue_depth = value;
  }
  *out = config;
  return {};
}

}  // namespace maia::driver
