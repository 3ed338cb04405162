// Per-core scratch memory for packed panels. Kernels run on the driver's
// persistent worker threads, so a thread_local buffer grown once is
// allocated a handful of times per process, never in the hot loop.
#pragma once

#include <cstddef>
#include <cstdlib>

namespace maia_gemm {

/// A 64-byte aligned float buffer that only grows; freed at thread exit.
class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { std::free(data_); }

  /// At least count floats (contents unspecified). Traps if the host is out
  /// of memory: a kernel cannot report errors, and a fault becomes the
  /// device's sticky error naming this kernel.
  float* get(size_t count) {
    if (count > capacity_) {
      std::free(data_);
      size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
      data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (data_ == nullptr) __builtin_trap();
      capacity_ = count;
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  size_t capacity_ = 0;
};

/// The three buffers a GEMM program uses: packed A block, packed B panel,
/// fp32 accumulator (half-precision outputs only).
struct Scratch {
  ScratchBuffer a, b, acc;
};

inline Scratch& threadScratch() {
  static thread_local Scratch scratch;
  return scratch;
}

}  // namespace maia_gemm
