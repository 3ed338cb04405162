// ElfImage: structural validation of a kernel binary's ELF container, done
// on the raw bytes before the dynamic loader ever sees them.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "error.h"

namespace maia::driver {

/// Name of the section holding a kernel binary's metadata JSON.
inline constexpr const char* kMetadataSectionName = ".maia.meta";

/// Checks that bytes are a 64-bit little-endian x86-64 ELF shared object
/// whose headers are self-consistent, trusting no offset or count in it:
/// every table and section it declares must lie inside bytes, section names
/// inside the section name table, and the program headers (which the
/// dynamic loader follows blindly) must agree with the section headers:
/// each allocated section mapped at its address with the permissions its
/// flags need, PT_DYNAMIC on .dynamic, and a non-executable stack.
/// On success *out_metadata views the bytes of section .maia.meta (a
/// subrange of bytes). Every failure is maiaErrorInvalidImage with a message
/// starting with origin.
Status validateElfImage(std::span<const std::byte> bytes, const std::string& origin,
                        std::span<const std::byte>* out_metadata);

}  // namespace maia::driver
