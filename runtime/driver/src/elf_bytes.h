// The bytes of an untrusted ELF file, for the checkers of elf_image.cpp and
// elf_dynamic.cpp: errors name the file, reads copy out (the caller's buffer
// need not be aligned for ELF structures; callers range-check first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "error.h"

namespace maia::driver {

class UntrustedElfBytes {
 protected:
  UntrustedElfBytes(std::span<const std::byte> bytes, const std::string& origin)
      : bytes_(bytes), origin_(origin) {}

  /// maiaErrorInvalidImage naming the file, then parts.
  template <typename... Parts>
  Status fail(const Parts&... parts) const {
    return makeError(maiaErrorInvalidImage, origin_, ": ", parts...);
  }

  /// The T at offset, which the caller has checked lies inside the file.
  template <typename T>
  T read(uint64_t offset) const {
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }

  std::span<const std::byte> bytes_;
  const std::string& origin_;
};

}  // namespace maia::driver
