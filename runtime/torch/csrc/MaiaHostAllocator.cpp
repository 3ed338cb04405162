#include "MaiaHostAllocator.h"

#include <cstring>
#include <utility>

#include "MaiaCheck.h"
#include "MaiaStream.h"

namespace torch_maia {
namespace {

/// An owned driver event marking the end of a stream's use of a pinned
/// block. An empty HostEvent counts as complete: it stands for a stream that
/// refused the record and was waited for instead.
class HostEvent {
 public:
  HostEvent() = default;
  HostEvent(HostEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  HostEvent& operator=(HostEvent&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  HostEvent(const HostEvent&) = delete;
  HostEvent& operator=(const HostEvent&) = delete;
  ~HostEvent() {
    if (event_ != nullptr && maiaEventDestroy(event_) != maiaSuccess) maiaGetLastError();
  }

  /// Never throws: it runs when a pinned tensor is freed, inside a deleter.
  static HostEvent recordedOn(const c10::Stream& stream) {
    HostEvent marker;
    maiaStream_t handle = nullptr;
    try {
      handle = driverStream(stream);
    } catch (const c10::Error&) {
      return marker;  // not a maia stream: nothing of ours to wait for
    }
    if (maiaEventCreate(&marker.event_, maiaEventDisableTiming) == maiaSuccess &&
        maiaEventRecord(marker.event_, handle) == maiaSuccess)
      return marker;
    // A device with a sticky error refuses new work: wait for the stream.
    maiaGetLastError();
    if (maiaStreamSynchronize(handle) != maiaSuccess) maiaGetLastError();
    return HostEvent();  // marker's destructor releases a created event
  }

  bool query() const {
    if (event_ == nullptr) return true;
    maiaError_t status = maiaEventQuery(event_);
    if (status == maiaErrorNotReady) return false;
    if (status != maiaSuccess) maiaGetLastError();  // the record ran or was skipped
    return true;
  }

 private:
  maiaEvent_t event_ = nullptr;
};

struct MaiaHostAllocatorImpl
    : public at::CachingHostAllocatorImpl<c10::Stream, HostEvent, at::HostBlock<c10::Stream>> {
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

 private:
  void allocate_host_memory(size_t size, void** ptr) override {
    maiaError_t error = maiaHostAlloc(ptr, size);
    if (error == maiaErrorOutOfMemory) {
      // Cached pinned blocks are the memory we can give back; try once more.
      maiaGetLastError();
      empty_cache();
      error = maiaHostAlloc(ptr, size);
    }
    MAIA_CHECK(error);
  }

  void free_block(at::HostBlock<c10::Stream>* block) override {
    // Called with the allocator's locks held, from empty_cache: report, do
    // not throw, so that its bookkeeping stays consistent.
    if (maiaFreeHost(block->ptr_) != maiaSuccess) {
      TORCH_WARN("maia pinned allocator: maiaFreeHost(", block->ptr_,
                 ") failed: ", maiaGetLastErrorMessage());
      maiaGetLastError();
    }
  }

  void record_stream(std::optional<std::vector<HostEvent>>& events,
                     c10::Stream stream) override {
    events->push_back(HostEvent::recordedOn(stream));
  }

  bool query_event(HostEvent& event) override { return event.query(); }

  c10::Stream get_current_stream() const override { return currentStream(-1); }

  bool stream_is_capturing(c10::Stream stream) const override {
    return stream.device_type() == c10::DeviceType::PrivateUse1 && isStreamCapturing(stream);
  }
};

DECLARE_HOST_ALLOCATOR(MaiaHostAllocator, MaiaHostAllocatorImpl, deleteMaiaHostBlock,
                       g_maia_host_allocator)

}  // namespace

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &g_maia_host_allocator)

at::HostAllocator* getMaiaHostAllocator() { return &g_maia_host_allocator; }

bool isPinnedPtr(const void* ptr) {
  if (ptr == nullptr) return false;
  maiaPointerAttributes attributes;
  if (maiaPointerGetAttributes(&attributes, ptr) != maiaSuccess) {
    maiaGetLastError();
    return false;
  }
  return attributes.type == maiaMemoryTypeHost;
}

}  // namespace torch_maia
