#include "stream_value.h"

#include <atomic>
#include <cstdio>

#include "device.h"
#include "external_watcher.h"
#include "ipc_memory.h"
#include "ipc_table.h"
#include "scheduler.h"

namespace maia::driver {
namespace {

/// The word's low half, the futex a writer wakes (little-endian): a shared
/// futex, keyed by the memfd page, so it works across processes.
std::atomic<uint32_t>* futexWord(uint64_t* word) {
  return reinterpret_cast<std::atomic<uint32_t>*>(word);
}

class ValueWait final : public ExternalWait {
 public:
  uint64_t* word_alias = nullptr;  // the driver's alias of the device word
  uint64_t value = 0;
  unsigned flags = 0;
  uint32_t timeout_ms = 0;
  std::shared_ptr<ipc::Peer> exporter;  // null for this process's memory
  std::string what;                     // names the wait in a failure
  std::atomic<int64_t> head_since_ns{0};  // when the stream first reached it

  bool met() const override {
    const uint64_t current =
        std::atomic_ref<uint64_t>(*word_alias).load(std::memory_order_acquire);
    return flags == maiaStreamWaitValueEq ? current == value : current >= value;
  }
  FutexWord word() const override { return {futexWord(word_alias), /*shared=*/true, nullptr}; }
  std::string failure(int64_t now) const override {
    if (exporter && !exporter->alive())
      return what + ": process " + std::to_string(exporter->pid()) +
             ", which exported the memory, exited before the value was written";
    const int64_t since = head_since_ns.load(std::memory_order_acquire);
    if (timeout_ms > 0 && since > 0 && now - since > int64_t{timeout_ms} * 1'000'000)
      return what + ": the value was not written within " + std::to_string(timeout_ms) + " ms";
    return {};
  }
};

/// Holds its stream until the word holds the value (or the wait failed:
/// then the device is faulted and the work behind it is skipped).
class WaitValueCommand final : public Command {
 public:
  explicit WaitValueCommand(std::shared_ptr<ValueWait> wait) : wait_(std::move(wait)) {}
  ~WaitValueCommand() override { leaveWatcher(); }
  bool ready() const override {
    if (wait_->passable()) {
      // The word may be IPC memory the user unmaps once the stream has
      // moved on: the watcher must be done with it first.
      leaveWatcher();
      return true;
    }
    if (wait_->head_since_ns.load(std::memory_order_relaxed) == 0) {
      int64_t none = 0;
      if (wait_->head_since_ns.compare_exchange_strong(none, steadyNowNs()))
        ExternalWatcher::get().add(wait_);  // only waits that hold a stream need watching
    }
    return false;
  }
  void runChunk(int64_t) override {}
  bool skippedOnFault() const override { return false; }
  std::string describe() const override { return wait_->what; }

 private:
  void leaveWatcher() const {
    if (!leaving_.exchange(true)) ExternalWatcher::get().remove(wait_.get());
  }

  std::shared_ptr<ValueWait> wait_;
  mutable std::atomic<bool> leaving_{false};
};

class WriteValueCommand final : public Command {
 public:
  WriteValueCommand(uint64_t* word, uint64_t value) : word_(word), value_(value) {}
  void runChunk(int64_t) override {
    std::atomic_ref<uint64_t>(*word_).store(value_, std::memory_order_release);
    // Wake watchers of this process and of others (a shared futex).
    futexWakeAll(futexWord(word_), /*shared=*/true);
  }
  void finish() override { scheduler().notifyExternal(); }  // local waits on the word
  std::string describe() const override { return "maiaStreamWriteValue64"; }

 private:
  uint64_t* word_;
  uint64_t value_;
};

Status resolveWord(Device* device, void* device_ptr, const char* what, uint64_t** out) {
  if (reinterpret_cast<uintptr_t>(device_ptr) % alignof(uint64_t) != 0)
    return makeError(maiaErrorInvalidDevicePointer, what, "(", device_ptr,
                     "): the word must be 8-byte aligned");
  if (deviceOwning(device_ptr) != device)
    return makeError(maiaErrorInvalidDevicePointer, what, "(", device_ptr,
                     "): not memory of the stream's device maia:", device->index(),
                     " (its own, or opened there from an IPC handle)");
  uintptr_t base = 0;
  size_t size = 0;
  MAIA_RETURN_IF_ERROR(device->arena().findAllocation(device_ptr, sizeof(uint64_t), what,
                                                      &base, &size));
  *out = static_cast<uint64_t*>(device->arena().hostAlias(device_ptr));
  return {};
}

}  // namespace

Status makeWaitValueCommand(Device* device, void* device_ptr, uint64_t value, unsigned flags,
                            uint32_t timeout_ms, std::unique_ptr<Command>* out) {
  constexpr const char* what = "maiaStreamWaitValue64";
  if (flags != maiaStreamWaitValueGeq && flags != maiaStreamWaitValueEq)
    return makeError(maiaErrorInvalidValue, what, ": unknown flags ", flags,
                     " (maiaStreamWaitValueGeq or maiaStreamWaitValueEq)");
  auto wait = std::make_shared<ValueWait>();
  MAIA_RETURN_IF_ERROR(resolveWord(device, device_ptr, what, &wait->word_alias));
  wait->value = value;
  wait->flags = flags;
  wait->timeout_ms = timeout_ms;
  wait->device = device;
  wait->exporter = ipc::importedFrom(device_ptr);
  char word[64];
  std::snprintf(word, sizeof(word), "%p %s %llu", device_ptr,
                flags == maiaStreamWaitValueEq ? "==" : ">=",
                static_cast<unsigned long long>(value));
  wait->what = std::string(what) + "(" + word + ")";
  *out = std::make_unique<WaitValueCommand>(std::move(wait));
  return {};
}

Status makeWriteValueCommand(Device* device, void* device_ptr, uint64_t value,
                             std::unique_ptr<Command>* out) {
  uint64_t* word = nullptr;
  MAIA_RETURN_IF_ERROR(resolveWord(device, device_ptr, "maiaStreamWriteValue64", &word));
  *out = std::make_unique<WriteValueCommand>(word, value);
  return {};
}

}  // namespace maia::driver
