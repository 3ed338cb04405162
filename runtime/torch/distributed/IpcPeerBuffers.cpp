#include "IpcPeerBuffers.h"

#include <c10/util/StringUtil.h>

#include <algorithm>

namespace torch_maia::distributed {

IpcPeerBuffers::~IpcPeerBuffers() {
  // Each close waits for the device's queued work, which may read them.
  for (auto& [key, pointer] : opened_) (void)maiaIpcCloseMemHandle(pointer);
}

void* IpcPeerBuffers::open(const maiaIpcMemHandle_t& handle, std::string* error) {
  Key key;
  std::copy(std::begin(handle.reserved), std::end(handle.reserved), key.begin());
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto found = opened_.find(key); found != opened_.end()) return found->second;
  // The driver maps into the calling thread's current device.
  int previous = -1;
  (void)maiaGetDevice(&previous);
  (void)maiaSetDevice(device_);
  void* pointer = nullptr;
  const maiaError_t status = maiaIpcOpenMemHandle(&pointer, handle, 0);
  if (previous >= 0) (void)maiaSetDevice(previous);
  if (status != maiaSuccess) {
    *error = c10::str("cannot open a peer's buffer: ", maiaGetErrorName(status), ": ",
                      maiaGetLastErrorMessage());
    return nullptr;
  }
  opened_.emplace(key, pointer);
  return pointer;
}

size_t IpcPeerBuffers::closeFreed(maiaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t closed = 0;
  for (auto it = opened_.begin(); it != opened_.end();) {
    int freed = 0;
    if (maiaIpcMemHandleFreedByOwner(it->second, &freed) != maiaSuccess || freed == 0) {
      ++it;
      continue;
    }
    // A close refused at enqueue (a faulted device) has unmapped it.
    (void)maiaIpcCloseMemHandleAsync(it->second, stream);
    it = opened_.erase(it);
    ++closed;
  }
  return closed;
}

size_t IpcPeerBuffers::opened() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return opened_.size();
}

}  // namespace torch_maia::distributed
