#include "streaming_copy.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace maia::driver {
namespace {

constexpr uintptr_t kLine = 64;

// The loops copy whole lines: the unaligned head and the tail shorter than
// a line go through memcpy.
__attribute__((target("avx512f"))) void streamLines512(char* dst, const char* src,
                                                       size_t lines) {
  for (size_t i = 0; i < lines; ++i, dst += kLine, src += kLine)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), _mm512_loadu_si512(src));
}

__attribute__((target("avx2"))) void streamLines256(char* dst, const char* src, size_t lines) {
  for (size_t i = 0; i < lines; ++i, dst += kLine, src += kLine) {
    const __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), low);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 32), high);
  }
}

// The same stores from one 64-byte line, again and again (fills).
__attribute__((target("avx512f"))) void repeatLine512(char* dst, const char* line,
                                                      size_t lines) {
  const __m512i value = _mm512_load_si512(line);
  for (size_t i = 0; i < lines; ++i, dst += kLine)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), value);
}

__attribute__((target("avx2"))) void repeatLine256(char* dst, const char* line, size_t lines) {
  const __m256i low = _mm256_load_si256(reinterpret_cast<const __m256i*>(line));
  const __m256i high = _mm256_load_si256(reinterpret_cast<const __m256i*>(line + 32));
  for (size_t i = 0; i < lines; ++i, dst += kLine) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), low);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 32), high);
  }
}

using StreamLines = void (*)(char*, const char*, size_t);

StreamLines hostRepeatLine() {
  if (__builtin_cpu_supports("avx512f")) return repeatLine512;
  if (__builtin_cpu_supports("avx2")) return repeatLine256;
  return nullptr;
}

StreamLines hostStreamLines() {
  if (__builtin_cpu_supports("avx512f")) return streamLines512;
  if (__builtin_cpu_supports("avx2")) return streamLines256;
  return nullptr;
}

}  // namespace

void streamingCopy(void* dst, const void* src, size_t bytes) {
  static const StreamLines stream_lines = hostStreamLines();
  auto* to = static_cast<char*>(dst);
  const auto* from = static_cast<const char*>(src);
  const size_t head = (kLine - reinterpret_cast<uintptr_t>(to) % kLine) % kLine;
  if (stream_lines == nullptr || bytes < head + kLine) {
    std::memcpy(to, from, bytes);
    return;
  }
  std::memcpy(to, from, head);
  const size_t lines = (bytes - head) / kLine;
  stream_lines(to + head, from + head, lines);
  const size_t done = head + lines * kLine;
  std::memcpy(to + done, from + done, bytes - done);
  _mm_sfence();
}

void streamLines(void* dst, const void* line, size_t lines) {
  static const StreamLines repeat_line = hostRepeatLine();
  auto* to = static_cast<char*>(dst);
  if (repeat_line == nullptr) {
    for (size_t i = 0; i < lines; ++i) std::memcpy(to + i * kLine, line, kLine);
    return;
  }
  repeat_line(to, static_cast<const char*>(line), lines);
  _mm_sfence();
}

}  // namespace maia::driver
