// Validation of what the dynamic loader reads and writes through a kernel
// binary's dynamic array (hash tables, symbols, strings, version tables,
// relocations, dependencies), done on the raw bytes before dlopen: ld.so
// trusts all of it, so a corrupt binary would crash the process inside it.
#pragma once

#include <elf.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "error.h"

namespace maia::driver {

/// Libraries a kernel binary may depend on (DT_NEEDED): the C and C++
/// runtimes the host compiler links and the loader itself (TLS access).
/// All are loaded in any process that runs the driver, so no dependency
/// brings new code, or new initializers, into the process.
inline constexpr const char* kAllowedDependencies[] = {
    "libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1",
    "ld-linux-x86-64.so.2"};

/// Checks the dynamic array that segment dynamic (already known to lie in
/// a writable PT_LOAD of bytes) describes, given the validated segments and
/// the PT_TLS segment (null if none):
/// - only the tags a linker emits for a kernel binary, each at most once
///   (but DT_NEEDED), and a DT_NULL inside the segment;
/// - dependencies from kAllowedDependencies only;
/// - string, symbol, hash (DT_HASH and DT_GNU_HASH) and version tables
///   (DT_VERSYM, DT_VERNEED, DT_VERDEF) inside file-backed loaded memory,
///   every index and chain in them inside its table;
/// - symbols that run no code at load (no STT_GNU_IFUNC) and lie in the image;
/// - relocations of the types kernel binaries use (RELATIVE, 64, GLOB_DAT,
///   JUMP_SLOT, DTPMOD64, DTPOFF64) writing inside writable segments;
/// - no code run at load or unload: a binary with static constructors or
///   destructors (more than the toolchain's one DT_INIT_ARRAY and
///   DT_FINI_ARRAY entry, or DT_PREINIT_ARRAY) is refused, and the
///   toolchain's own hooks (crt's _init/_fini, frame_dummy,
///   __do_global_dtors_aux: no-ops for a kernel binary) are left out of
///   *out_mapped_dynamic, the array the driver maps instead.
/// Every failure is maiaErrorInvalidImage with a message starting with origin.
Status validateDynamic(std::span<const std::byte> bytes, std::span<const Elf64_Phdr> segments,
                       const Elf64_Phdr& dynamic, const Elf64_Phdr* tls,
                       const std::string& origin, std::vector<std::byte>* out_mapped_dynamic);

}  // namespace maia::driver
