// ElfImage: structural validation of a kernel binary's ELF container, done
// on the raw bytes before the dynamic loader ever sees them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "error.h"

namespace maia::driver {

/// Name of the section holding a kernel binary's metadata JSON.
inline constexpr const char* kMetadataSectionName = ".maia.meta";

/// What validation learned that mapping the binary needs.
struct ValidatedElf {
  /// The bytes of section .maia.meta (a subrange of the validated bytes).
  std::span<const std::byte> metadata;
  /// The dynamic array the driver maps in place of the binary's, at this
  /// file offset: the same entries without the toolchain's load-time hooks
  /// (see validateDynamic in elf_dynamic.h).
  uint64_t dynamic_offset = 0;
  std::vector<std::byte> mapped_dynamic;
};

/// Checks that bytes are a 64-bit little-endian x86-64 ELF shared object
/// that the dynamic loader can map safely, trusting no offset or count in
/// it: every table and section it declares must lie inside bytes, section
/// names inside the section name table, and the program headers (which the
/// dynamic loader follows blindly) must agree with the section headers:
/// each allocated section mapped at its address with the permissions its
/// flags need, only segment types the loader handles safely (no
/// interpreter; TLS bounded), notes well-formed, PT_DYNAMIC on .dynamic in
/// a writable segment, and a non-executable stack. Then everything the
/// loader reads through the dynamic array is checked (elf_dynamic.h).
/// Every failure is maiaErrorInvalidImage with a message starting with
/// origin.
Status validateElfImage(std::span<const std::byte> bytes, const std::string& origin,
                        ValidatedElf* out);

}  // namespace maia::driver
