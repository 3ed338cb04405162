// The peers' allocations this rank has opened to read the callers' buffers
// directly (the IPC transport's zero-copy path), kept open between
// collectives.
//
// A handle names an allocation (a caching allocator segment), so the
// buffers a program reuses -- DDP's buckets, a benchmark's tensor -- are
// mapped once: the first collective on a segment pays maiaIpcOpenMemHandle
// (fd transfer, mmap) and the page-table fill of the pages it touches, the
// next ones nothing. Two things bound what stays open:
// - A segment stays open until its owner frees it (its caching allocator's
//   empty_cache, or an out-of-memory retry): the owner's driver keeps the
//   pages reserved while a peer has them open, so each collective's plan
//   first closes the segments their owners have freed (closeFreed), which
//   the owners' next allocation reclaims.
// - The device's import window (as large as its memory) holds every
//   segment opened from all peers: when it has no room for the next one,
//   the least recently used segments of earlier collectives are closed
//   until it fits (reopened, and their pages mapped again, when a later
//   collective needs them).
#pragma once

#include <maia/runtime.h>

#include <c10/core/Device.h>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace torch_maia::distributed {

class IpcPeerBuffers {
 public:
  explicit IpcPeerBuffers(c10::DeviceIndex device) : device_(device) {}
  ~IpcPeerBuffers();
  IpcPeerBuffers(const IpcPeerBuffers&) = delete;
  IpcPeerBuffers& operator=(const IpcPeerBuffers&) = delete;

  /// Starts a collective's plan: the segments open() returns from now on are
  /// kept open until the next beginPlan.
  void beginPlan();
  /// The base of handle's allocation in this process (opened on first use,
  /// on whichever thread asks: a driver core, in stream order), or null
  /// with *error set. stream is where the only queued work reading the
  /// segments runs; it must have none left that reads a segment of an
  /// earlier plan (closing one to make room unmaps it at once).
  void* open(const maiaIpcMemHandle_t& handle, maiaStream_t stream, std::string* error);
  /// Closes the opened segments whose owners have freed them, once the
  /// work queued on stream so far has completed (the caller guarantees
  /// that no other stream's queued work reads them). Returns how many.
  size_t closeFreed(maiaStream_t stream);
  size_t opened() const;

 private:
  using Key = std::array<unsigned char, MAIA_IPC_HANDLE_SIZE>;
  struct Opened {
    void* base;
    uint64_t plan;  // the last plan that used it
  };
  /// Closes the least recently used segment of an earlier plan; false if
  /// there is none. Requires mutex_.
  bool closeLeastRecentlyUsed(maiaStream_t stream);

  c10::DeviceIndex device_;
  mutable std::mutex mutex_;
  std::map<Key, Opened> opened_;
  uint64_t plan_ = 0;
};

}  // namespace torch_maia::distributed
