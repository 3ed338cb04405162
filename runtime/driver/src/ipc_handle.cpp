#include "ipc_handle.h"

#include <cstring>

namespace maia::driver::ipc {
namespace {

constexpr uint32_t kMagic = 0x4350494d;  // "MIPC"
constexpr uint16_t kVersion = 1;

uint32_t checksumOf(HandleBits bits) {
  bits.checksum = 0;
  // FNV-1a: enough to tell damaged bytes from a handle, not a security check
  // (a process that can write handles can also ptrace its peers).
  uint32_t hash = 2166136261u;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&bits);
  for (size_t i = 0; i < sizeof(bits); ++i) hash = (hash ^ bytes[i]) * 16777619u;
  return hash;
}

const char* kindName(HandleKind kind) {
  return kind == HandleKind::kMemory ? "memory" : "event";
}

}  // namespace

void seal(HandleBits bits, unsigned char (&out)[MAIA_IPC_HANDLE_SIZE]) {
  bits.magic = kMagic;
  bits.version = kVersion;
  bits.checksum = checksumOf(bits);
  std::memcpy(out, &bits, sizeof(bits));
}

Status unseal(const unsigned char (&bytes)[MAIA_IPC_HANDLE_SIZE], HandleKind kind,
              const char* what, HandleBits* out) {
  HandleBits bits;
  std::memcpy(&bits, bytes, sizeof(bits));
  if (bits.magic != kMagic)
    return makeError(maiaErrorInvalidHandle, what, ": not a MAIA IPC handle (bad magic 0x",
                     std::hex, bits.magic, ")");
  if (bits.version != kVersion)
    return makeError(maiaErrorInvalidHandle, what, ": IPC handle version ", bits.version,
                     " is not supported (this driver reads version ", kVersion, ")");
  if (bits.checksum != checksumOf(bits))
    return makeError(maiaErrorInvalidHandle, what,
                     ": the IPC handle's bytes are damaged (checksum mismatch)");
  if (bits.kind != kind)
    return makeError(maiaErrorInvalidHandle, what, ": an IPC ",
                     bits.kind == HandleKind::kMemory || bits.kind == HandleKind::kEvent
                         ? kindName(bits.kind)
                         : "unknown",
                     " handle was passed where an IPC ", kindName(kind), " handle is expected");
  // The checksum catches damage, not forgery: keep offset + size from
  // wrapping around before they size a mapping.
  constexpr uint64_t kMaxBytes = uint64_t{1} << 48;
  if (bits.pid <= 0 || bits.table_fd < 0 ||
      (kind == HandleKind::kMemory &&
       (bits.memory_fd < 0 || bits.device < 0 || bits.size == 0 || bits.size > kMaxBytes ||
        bits.offset > kMaxBytes)))
    return makeError(maiaErrorInvalidHandle, what, ": the IPC handle's fields are out of range");
  *out = bits;
  return {};
}

}  // namespace maia::driver::ipc
