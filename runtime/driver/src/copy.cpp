#include "copy.h"

#include <algorithm>
#include <cstring>

#include "activity.h"
#include "device.h"
#include "graph_capture.h"
#include "host_memory.h"
#include "scheduler.h"
#include "streaming_copy.h"

namespace maia::driver {
namespace {

// Copies below this size run as one chunk: splitting costs more than the
// second core gains.
constexpr size_t kMinBytesPerChunk = size_t{1} << 20;
constexpr size_t kChunkAlignment = 4096;

int64_t chunksFor(size_t bytes) {
  size_t chunks = std::max<size_t>(1, bytes / kMinBytesPerChunk);
  return static_cast<int64_t>(std::min<size_t>(chunks, scheduler().cores()));
}

/// Byte range of chunk index out of count, page-aligned so that two cores
/// never write the same cache line.
std::pair<size_t, size_t> chunkRange(size_t bytes, int64_t index, int64_t count) {
  auto boundary = [&](int64_t i) {
    if (i == count) return bytes;
    size_t b = bytes / count * i;
    return std::min(bytes, b / kChunkAlignment * kChunkAlignment);
  };
  return {boundary(index), boundary(index + 1)};
}

class CopyCommand final : public Command {
 public:
  CopyCommand(void* dst, const void* src, size_t bytes, maiaActivityKind kind)
      : Command(chunksFor(bytes)), dst_(static_cast<char*>(dst)),
        src_(static_cast<const char*>(src)), bytes_(bytes), kind_(kind) {}
  void runChunk(int64_t index) override {
    auto [begin, end] = chunkRange(bytes_, index, totalChunks());
    // Decided on the whole copy, so every chunk of one copy does the same.
    if (bytes_ >= kStreamingCopyMinBytes) {
      streamingCopy(dst_ + begin, src_ + begin, end - begin);
    } else {
      std::memcpy(dst_ + begin, src_ + begin, end - begin);
    }
  }
  std::string describe() const override {
    return "copy of " + std::to_string(bytes_) + " bytes";
  }
  int activityKind() const override { return kind_; }
  uint64_t activityBytes() const override { return bytes_; }

 private:
  char* dst_;
  const char* src_;
  size_t bytes_;
  maiaActivityKind kind_;  // the direction, for profiler records
};

class MemsetCommand final : public Command {
 public:
  MemsetCommand(void* dst, int value, size_t bytes)
      : Command(chunksFor(bytes)), dst_(static_cast<char*>(dst)), value_(value),
        bytes_(bytes) {}
  void runChunk(int64_t index) override {
    auto [begin, end] = chunkRange(bytes_, index, totalChunks());
    if (bytes_ >= kStreamingCopyMinBytes) {
      streamingFill(reinterpret_cast<unsigned char*>(dst_ + begin), end - begin,
                    static_cast<unsigned char>(value_));
    } else {
      std::memset(dst_ + begin, value_, end - begin);
    }
  }
  std::string describe() const override {
    return "memset of " + std::to_string(bytes_) + " bytes";
  }
  int activityKind() const override { return maiaActivityMemset; }
  uint64_t activityBytes() const override { return bytes_; }

 private:
  char* dst_;
  int value_;
  size_t bytes_;
};

class PatternCommand final : public Command {
 public:
  PatternCommand(void* dst, const void* pattern, size_t pattern_bytes, size_t count)
      : Command(chunksFor(pattern_bytes * count)), dst_(static_cast<char*>(dst)),
        pattern_bytes_(pattern_bytes), count_(count) {
    std::memcpy(pattern_, pattern, pattern_bytes);
  }
  void runChunk(int64_t index) override {
    // Chunk boundaries in elements, so no element is split between cores.
    int64_t chunks = totalChunks();
    size_t begin = count_ * static_cast<size_t>(index) / static_cast<size_t>(chunks);
    size_t end = count_ * static_cast<size_t>(index + 1) / static_cast<size_t>(chunks);
    switch (pattern_bytes_) {
      case 1: fill<uint8_t>(begin, end); break;
      case 2: fill<uint16_t>(begin, end); break;
      case 4: fill<uint32_t>(begin, end); break;
      case 8: fill<uint64_t>(begin, end); break;
      default: fill<Pair64>(begin, end); break;
    }
  }
  std::string describe() const override {
    return "pattern fill of " + std::to_string(count_) + " elements";
  }
  int activityKind() const override { return maiaActivityMemset; }
  const char* activityName() const override { return "Fill"; }
  uint64_t activityBytes() const override { return pattern_bytes_ * count_; }

 private:
  struct alignas(16) Pair64 {  // a 16-byte element: complex128 (16-byte aligned: checked)
    uint64_t low, high;
  };

  template <typename T>
  void fill(size_t begin, size_t end) {
    T value;
    std::memcpy(&value, pattern_, sizeof(T));
    T* out = reinterpret_cast<T*>(dst_);
    if (pattern_bytes_ * count_ >= kStreamingCopyMinBytes) {  // as a copy that large
      streamingFill(out + begin, end - begin, value);
      return;
    }
    for (size_t i = begin; i < end; ++i) out[i] = value;
  }

  char* dst_;
  size_t pattern_bytes_;
  size_t count_;
  alignas(8) unsigned char pattern_[16];
};

/// One side of a copy, resolved to the address the driver uses.
struct Endpoint {
  Device* device = nullptr;  // null for host memory
  void* address = nullptr;   // driver-side address (device alias, or host)
  bool pageable = false;     // ordinary host memory
};

const char* kindName(maiaMemcpyKind kind) {
  switch (kind) {
    case maiaMemcpyHostToHost: return "maiaMemcpyHostToHost";
    case maiaMemcpyHostToDevice: return "maiaMemcpyHostToDevice";
    case maiaMemcpyDeviceToHost: return "maiaMemcpyDeviceToHost";
    case maiaMemcpyDeviceToDevice: return "maiaMemcpyDeviceToDevice";
    case maiaMemcpyDefault: return "maiaMemcpyDefault";
  }
  return "an unknown kind";
}

/// expect: 1 device, 0 host, -1 infer from the pointer.
/// why_expected + why_detail completes "..., but <why>" in messages (two
/// literals: no string is built on the success path).
Status resolveEndpoint(const void* p, size_t bytes, int expect, const char* role,
                       const char* why_expected, const char* why_detail, Endpoint* out) {
  if (p == nullptr)
    return makeError(maiaErrorInvalidDevicePointer, "the ", role, " pointer is NULL");
  Device* device = deviceOwning(p);
  if (expect == 1 && device == nullptr)
    return makeError(maiaErrorInvalidDevicePointer, "the ", role, " pointer ", p,
                     " is not device memory, but ", why_expected, why_detail);
  if (expect == 0 && device != nullptr)
    return makeError(maiaErrorInvalidDevicePointer, "the ", role, " pointer ", p,
                     " is device memory of maia:", device->index(),
                     ", but ", why_expected, why_detail);
  if (device != nullptr) {
    uintptr_t base = 0;
    size_t size = 0;
    MAIA_RETURN_IF_ERROR(device->arena().findAllocation(p, bytes, role, &base, &size));
    *out = Endpoint{device, device->arena().hostAlias(p), false};
    return {};
  }
  uintptr_t base = 0;
  size_t size = 0;
  if (findPinned(p, &base, &size)) {
    if (bytes > base + size - reinterpret_cast<uintptr_t>(p))
      return makeError(maiaErrorInvalidValue, "the ", role, " overruns its pinned allocation: ",
                       bytes, " bytes at ", p, " but only ",
                       base + size - reinterpret_cast<uintptr_t>(p), " remain after it");
    *out = Endpoint{nullptr, const_cast<void*>(p), false};
    return {};
  }
  *out = Endpoint{nullptr, const_cast<void*>(p), true};
  return {};
}

Status expectedSides(maiaMemcpyKind kind, int* dst_side, int* src_side) {
  switch (kind) {
    case maiaMemcpyHostToHost: *dst_side = 0; *src_side = 0; return {};
    case maiaMemcpyHostToDevice: *dst_side = 1; *src_side = 0; return {};
    case maiaMemcpyDeviceToHost: *dst_side = 0; *src_side = 1; return {};
    case maiaMemcpyDeviceToDevice: *dst_side = 1; *src_side = 1; return {};
    case maiaMemcpyDefault: *dst_side = -1; *src_side = -1; return {};
  }
  return makeError(maiaErrorInvalidValue, "unknown maiaMemcpyKind ", static_cast<int>(kind));
}

/// Queues cmd on stream, or on the default stream of device if stream is
/// null; waits when synchronous.
Status submit(std::unique_ptr<Command> cmd, Stream* stream, Device* device, bool synchronous) {
  if (stream == nullptr) stream = device->defaultStream();
  MAIA_RETURN_IF_ERROR(enqueue(stream, std::move(cmd)));
  if (synchronous) return synchronizeStream(stream);
  return {};
}

}  // namespace

Status copyMemory(void* dst, const void* src, size_t bytes, maiaMemcpyKind kind,
                  Stream* stream, bool synchronous) {
  int dst_side = 0, src_side = 0;
  MAIA_RETURN_IF_ERROR(expectedSides(kind, &dst_side, &src_side));
  if (bytes == 0) return {};
  Endpoint to, from;
  const char* why = "the copy kind is ";
  MAIA_RETURN_IF_ERROR(
      resolveEndpoint(dst, bytes, dst_side, "destination", why, kindName(kind), &to));
  MAIA_RETURN_IF_ERROR(
      resolveEndpoint(src, bytes, src_side, "source", why, kindName(kind), &from));
  Device* device = to.device != nullptr ? to.device : from.device;
  if (device == nullptr && stream == nullptr) {
    // Host to host with no stream to order against.
    std::memmove(to.address, from.address, bytes);
    return {};
  }
  if (device == nullptr) device = stream->device;
  // As on silicon, pageable host memory cannot be read or written by the
  // device asynchronously: the copy completes before the call returns.
  bool wait = synchronous || to.pageable || from.pageable;
  if (Stream* target = stream != nullptr ? stream : device->defaultStream();
      wait && target->capturing.load(std::memory_order_acquire)) [[unlikely]]
    MAIA_RETURN_IF_ERROR(captureViolation(target, to.pageable || from.pageable
                                                      ? "a copy with pageable host memory (it "
                                                        "is synchronous; use pinned memory)"
                                                      : "a synchronous copy (maiaMemcpy)"));
  if (wait && bytes < kMinBytesPerChunk) {
    // A small copy the caller waits for, on a stream with nothing queued,
    // is done by the calling thread at once, as a synchronizing call's
    // waiting thread would run it: handing it to a core and waiting costs
    // more than the copy (`eager_bench.py`'s "copy 64x64 from host", a
    // 16 KiB upload, times this path).
    Stream* target = stream != nullptr ? stream : device->defaultStream();
    MAIA_RETURN_IF_ERROR(device->stickyError());
    if (target->idle()) {
      const bool profiled = activityEnabled();
      const int64_t start = profiled ? activityClockNs() : 0;
      std::memcpy(to.address, from.address, bytes);
      if (profiled) [[unlikely]]
        recordHostRunActivity(copyActivityKind(to.device != nullptr, from.device != nullptr),
                              nullptr, device->index(), target->id, bytes, start);
      return {};
    }
  }
  const maiaActivityKind direction =
      copyActivityKind(to.device != nullptr, from.device != nullptr);
  return submit(std::make_unique<CopyCommand>(to.address, from.address, bytes, direction), stream,
                device, wait);
}

Status setMemory(void* device_ptr, int value, size_t bytes, Stream* stream, bool synchronous) {
  if (bytes == 0) return {};
  Endpoint target;
  MAIA_RETURN_IF_ERROR(resolveEndpoint(device_ptr, bytes, 1, "memset destination",
                                       "maiaMemset writes device memory only", "", &target));
  return submit(std::make_unique<MemsetCommand>(target.address, value, bytes), stream,
                target.device, synchronous);
}

Status setMemoryPattern(void* device_ptr, const void* pattern, size_t pattern_bytes,
                        size_t count, Stream* stream) {
  if (pattern_bytes != 1 && pattern_bytes != 2 && pattern_bytes != 4 && pattern_bytes != 8 &&
      pattern_bytes != 16)
    return makeError(maiaErrorInvalidValue, "maiaMemsetPatternAsync: pattern size ",
                     pattern_bytes, " is not 1, 2, 4, 8 or 16 bytes");
  if (pattern == nullptr)
    return makeError(maiaErrorInvalidValue, "maiaMemsetPatternAsync: pattern is NULL");
  if (count == 0) return {};
  if (reinterpret_cast<uintptr_t>(device_ptr) % pattern_bytes != 0)
    return makeError(maiaErrorInvalidValue, "maiaMemsetPatternAsync: destination ", device_ptr,
                     " is not aligned to the ", pattern_bytes, "-byte pattern");
  if (count > SIZE_MAX / pattern_bytes)
    return makeError(maiaErrorInvalidValue, "maiaMemsetPatternAsync: ", count,
                     " elements overflow the address space");
  Endpoint target;
  MAIA_RETURN_IF_ERROR(resolveEndpoint(device_ptr, count * pattern_bytes, 1,
                                       "pattern fill destination",
                                       "maiaMemsetPatternAsync writes device memory only",
                                       "", &target));
  return submit(std::make_unique<PatternCommand>(target.address, pattern, pattern_bytes, count),
                stream, target.device, /*synchronous=*/false);
}

}  // namespace maia::driver
