// The peers' allocations this rank has opened to read the callers' buffers
// directly (the IPC transport's zero-copy path), kept open between
// collectives.
//
// Each buffer is opened as a range of its allocation (a caching allocator
// segment, which may be far larger than the tensor carved from it), so the
// buffers a program reuses -- DDP's buckets, a benchmark's tensor -- are
// mapped once: the first collective on a buffer pays
// maiaIpcOpenMemHandleRange (fd transfer, mmap) and the page-table fill of
// the pages it touches, the next ones nothing. Two things bound what stays
// open:
// - A buffer stays open until its owner frees its segment (its caching allocator's
//   empty_cache, or an out-of-memory retry): the owner's driver keeps the
//   pages reserved while a peer has them open, so a background thread (and
//   each collective's plan) closes the segments their owners have freed
//   (closeFreed) within milliseconds; the owner's allocation that needs
//   them waits for that (the driver's maiaMalloc).
// - The device's import window (as large as its memory) holds every
//   segment opened from all peers: when it has no room for the next one,
//   the least recently used segments of earlier collectives are closed
//   until it fits (reopened, and their pages mapped again, when a later
//   collective needs them).
#pragma once

#include <maia/runtime.h>

#include <c10/core/Device.h>

#include <array>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>

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
  /// Bytes [offset, offset + bytes) of handle's allocation in this process
  /// (opened on first use, on whichever thread asks: a driver core, in
  /// stream order), or null with *error set. stream is where the only
  /// queued work reading the buffers runs; it must have none left that
  /// reads a buffer of an earlier plan (closing one to make room unmaps it
  /// at once).
  void* open(const maiaIpcMemHandle_t& handle, size_t offset, size_t bytes, maiaStream_t stream,
             std::string* error);
  /// Closes the opened segments whose owners have freed them, once the
  /// work queued on stream so far has completed (the caller guarantees
  /// that no other stream's queued work reads them). Returns how many.
  size_t closeFreed(maiaStream_t stream);
  /// From the first open() on, runs closeFreed(stream) every few
  /// milliseconds on a thread of its own until destruction, so that an
  /// owner's allocation needing memory it freed does not wait for this
  /// rank's next collective (a group that never opens a buffer starts none).
  void closeFreedInBackground(maiaStream_t stream);
  size_t opened() const;

 private:
  /// The handle's bytes, the range's offset and size.
  using Key = std::tuple<std::array<unsigned char, MAIA_IPC_HANDLE_SIZE>, size_t, size_t>;
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
  /// Starts the background closer. Requires mutex_.
  void startCloser();

  // The background closer (closeFreedInBackground).
  maiaStream_t closer_stream_ = nullptr;  // null: none wanted
  std::mutex closer_mutex_;
  std::condition_variable closer_stop_;
  bool stopping_ = false;
  std::thread closer_;
};

}  // namespace torch_maia::distributed
