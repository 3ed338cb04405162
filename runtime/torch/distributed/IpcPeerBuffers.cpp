#include "IpcPeerBuffers.h"

#include <c10/util/StringUtil.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace torch_maia::distributed {
namespace {

/// Waits (bounded) until stream has no queued work: the caller knows its
/// work is done, but the stream may not have counted its last command yet.
void awaitIdle(maiaStream_t stream) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  while (maiaStreamQuery(stream) == maiaErrorNotReady &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
}

/// How often the background closer looks for segments their owners freed:
/// an owner's allocation waiting for them waits about this long.
constexpr std::chrono::milliseconds kCloserPeriod{10};

}  // namespace

IpcPeerBuffers::~IpcPeerBuffers() {
  if (closer_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(closer_mutex_);
      stopping_ = true;
    }
    closer_stop_.notify_all();
    closer_.join();
  }
  // Each close waits for the device's queued work, which may read them.
  for (auto& [key, opened] : opened_) (void)maiaIpcCloseMemHandle(opened.base);
}

void IpcPeerBuffers::beginPlan() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++plan_;
}

bool IpcPeerBuffers::closeLeastRecentlyUsed(maiaStream_t stream) {
  auto oldest = opened_.end();
  for (auto it = opened_.begin(); it != opened_.end(); ++it)
    if (it->second.plan < plan_ && (oldest == opened_.end() || it->second.plan < oldest->second.plan))
      oldest = it;
  if (oldest == opened_.end()) return false;
  (void)maiaIpcCloseMemHandleAsync(oldest->second.base, stream);
  opened_.erase(oldest);
  return true;
}

void* IpcPeerBuffers::open(const maiaIpcMemHandle_t& handle, size_t offset, size_t bytes,
                           maiaStream_t stream, std::string* error) {
  Key key{{}, offset, bytes};
  std::copy(std::begin(handle.reserved), std::end(handle.reserved), std::get<0>(key).begin());
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto found = opened_.find(key); found != opened_.end()) {
    found->second.plan = plan_;
    return found->second.base;
  }
  // The driver maps into the calling thread's current device.
  int previous = -1;
  (void)maiaGetDevice(&previous);
  (void)maiaSetDevice(device_);
  void* base = nullptr;
  maiaError_t status = maiaIpcOpenMemHandleRange(&base, handle, offset, bytes, 0);
  size_t closed = 0;
  if (status == maiaErrorOutOfMemory) awaitIdle(stream);
  while (status == maiaErrorOutOfMemory && closeLeastRecentlyUsed(stream)) {
    ++closed;
    status = maiaIpcOpenMemHandleRange(&base, handle, offset, bytes, 0);
  }
  if (previous >= 0) (void)maiaSetDevice(previous);
  if (status != maiaSuccess) {
    *error = c10::str("cannot open a peer's buffer: ", maiaGetErrorName(status), ": ",
                      maiaGetLastErrorMessage(),
                      closed > 0 ? c10::str(" (after closing ", closed,
                                            " buffers of earlier collectives)")
                                 : std::string());
    return nullptr;
  }
  opened_.emplace(key, Opened{base, plan_});
  if (closer_stream_ != nullptr && !closer_.joinable()) startCloser();
  return base;
}

size_t IpcPeerBuffers::closeFreed(maiaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t closed = 0;
  for (auto it = opened_.begin(); it != opened_.end();) {
    int freed = 0;
    if (maiaIpcMemHandleFreedByOwner(it->second.base, &freed) != maiaSuccess || freed == 0) {
      ++it;
      continue;
    }
    // A close refused at enqueue (a faulted device) has unmapped it.
    (void)maiaIpcCloseMemHandleAsync(it->second.base, stream);
    it = opened_.erase(it);
    ++closed;
  }
  return closed;
}

void IpcPeerBuffers::closeFreedInBackground(maiaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  closer_stream_ = stream;
}

void IpcPeerBuffers::startCloser() {
  closer_ = std::thread([this, stream = closer_stream_] {
    std::unique_lock<std::mutex> lock(closer_mutex_);
    while (!closer_stop_.wait_for(lock, kCloserPeriod, [this] { return stopping_; })) {
      if (opened() > 0) closeFreed(stream);
    }
  });
}

size_t IpcPeerBuffers::opened() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return opened_.size();
}

}  // namespace torch_maia::distributed
