// Metadata: the JSON a kernel binary carries in section .maia.meta, parsed
// and checked against the format of DESIGN section 5.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "error.h"
#include "module.h"

namespace maia::driver {

/// Value of the metadata's "format" key.
inline constexpr const char* kMetadataFormat = "maia-kernel-binary";

struct Metadata {
  std::string json;  // the section's text without its trailing NUL
  std::string compiler;
  std::string target_cpu;
  std::vector<std::string> target_features;
  /// Kernels as declared; entry and module are left unset.
  std::vector<maiaKernel> kernels;
};

/// Parses the contents of section .maia.meta. A format_version other than
/// MAIA_METADATA_FORMAT_VERSION is maiaErrorUnsupportedImage; anything else
/// malformed is maiaErrorInvalidImage naming the kernel, argument and key.
/// Never throws on bad input.
Status parseMetadata(std::span<const std::byte> section, const std::string& origin,
                     Metadata* out);

}  // namespace maia::driver
