// The bytes of an IPC handle: what one process tells another so that it can
// find an allocation or an event of the first (docs/runtime.md,
// "Inter-process memory and events").
#pragma once

#include <maia/runtime.h>

#include <cstdint>

#include "error.h"

namespace maia::driver::ipc {

enum class HandleKind : uint16_t { kMemory = 1, kEvent = 2 };

/// The handle's layout, exactly MAIA_IPC_HANDLE_SIZE bytes of plain data.
/// fd numbers are the exporter's: the importer takes the files themselves
/// with pidfd_getfd. instance is a random number drawn once per exporting
/// process (a reused pid cannot pass for it); generation is drawn per
/// exported allocation or event, so a handle outliving its object is stale.
struct HandleBits {
  uint32_t magic;
  uint16_t version;
  HandleKind kind;
  int32_t pid;
  int32_t device;      // memory: the exporting device; event: -1
  int32_t memory_fd;   // memory: the device's memfd; event: -1
  int32_t table_fd;    // the exporter's shared table (ipc_table.h)
  uint32_t slot;       // index in that table
  uint32_t checksum;   // of every other byte: random or damaged bytes fail
  uint64_t instance;
  uint64_t generation;
  uint64_t offset;     // memory: of the allocation in the memfd
  uint64_t size;       // memory: bytes the allocation holds
};
static_assert(sizeof(HandleBits) == MAIA_IPC_HANDLE_SIZE);

/// Fills magic, version and checksum, and copies bits out.
void seal(HandleBits bits, unsigned char (&out)[MAIA_IPC_HANDLE_SIZE]);
/// Reads and validates handle bytes: magic, version, kind, checksum and
/// field ranges. what names the calling function in messages.
Status unseal(const unsigned char (&bytes)[MAIA_IPC_HANDLE_SIZE], HandleKind kind,
              const char* what, HandleBits* out);

}  // namespace maia::driver::ipc
