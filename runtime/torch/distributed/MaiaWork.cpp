#include "MaiaWork.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "MaiaCheck.h"
#include "MaiaStream.h"

namespace torch_maia::distributed {

LaunchEnd::LaunchEnd(c10::DeviceIndex launch_device, std::shared_ptr<LaunchStatus> launch_status)
    : device(launch_device), status(std::move(launch_status)) {
  MAIA_CHECK(maiaEventCreate(&event, maiaEventDisableTiming));
}

LaunchEnd::~LaunchEnd() {
  // Safe with the record still queued: the command holds its own reference.
  if (event != nullptr) (void)maiaEventDestroy(event);
}

MaiaWork::MaiaWork(int rank, c10d::OpType op, uint64_t seq, std::shared_ptr<LaunchEnd> end,
                   std::vector<at::Tensor> outputs, bool blocking)
    : c10d::Work(rank, op),
      seq_(seq),
      end_(std::move(end)),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()),
          std::vector<c10::Device>{c10::Device(c10::DeviceType::PrivateUse1, end_->device)})) {
  static const bool blocking_wait = [] {
    const char* value = std::getenv("MAIA_DIST_BLOCKING_WAIT");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  blocking_ = blocking || blocking_wait;
}

bool MaiaWork::isCompleted() {
  if (end_->status->failed()) return true;
  if (!end_->recorded.load(std::memory_order_acquire)) return false;  // still coalescing
  maiaError_t state = maiaEventQuery(end_->event);
  if (state == maiaErrorNotReady) return false;
  MAIA_CHECK(state);
  return true;
}

bool MaiaWork::isSuccess() const { return !end_->status->failed(); }

std::exception_ptr MaiaWork::exception() const {
  if (!end_->status->failed()) return nullptr;
  try {
    throwIfFailed();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

void MaiaWork::throwIfFailed() const {
  if (!end_->status->failed()) return;
  C10_THROW_ERROR(DistBackendError, end_->status->message());
}

void MaiaWork::blockCallerStream() {
  TORCH_CHECK(end_->recorded.load(std::memory_order_acquire),
              "maia c10d: wait() on a collective of a coalescing group that has not ended; "
              "call it after the group's end (torch.distributed._coalescing_manager exit)");
  MAIA_CHECK(maiaStreamWaitEvent(currentDriverStream(end_->device), end_->event));
}

bool MaiaWork::wait(std::chrono::milliseconds timeout) {
  TORCH_CHECK(timeout >= ::kNoTimeout || timeout == c10d::kUnsetTimeout,
              "maia c10d: Work.wait got a timeout of ", timeout.count(),
              " ms; pass a positive one, or none for a stream wait");
  // The exchange enforces the call's timeout itself (a failed or late peer
  // fails it), so a stream wait never waits forever.
  throwIfFailed();
  blockCallerStream();
  if (timeout == c10d::kUnsetTimeout) {
    waitOnHost(end_->timeout, "the collective's timeout");
  } else if (timeout != ::kNoTimeout) {
    waitOnHost(timeout, "Work.wait(timeout)");
  } else if (blocking_ && end_->call_timeout) {
    waitOnHost(end_->timeout, "the call's timeout");
  } else if (blocking_) {
    // The host helps run the device's work while it waits here.
    MAIA_CHECK(maiaEventSynchronize(end_->event));
    throwIfFailed();
  }
  return true;
}

void MaiaWork::waitOnHost(std::chrono::milliseconds limit, const char* what) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = end_->issued + limit;
  // Polled, not synchronized: maiaEventSynchronize has no deadline, and the
  // host may pick up the exchange's step itself while it waits there.
  // Short sleeps first (a collective often completes within microseconds),
  // at most 1 ms late once it does.
  auto pause = std::chrono::microseconds(20);
  while (!isCompleted()) {
    const auto now = Clock::now();
    if (now >= deadline) {
      std::string waiting = end_->status->waitingFor();
      failExchange(*end_->status, end_->label,
                   c10::str("not completed within ", limit.count(), " ms (", what, ")",
                            waiting.empty() ? "" : "; it was waiting for " + waiting));
      break;
    }
    std::this_thread::sleep_for(
        std::min<Clock::duration>(pause, std::chrono::duration_cast<Clock::duration>(
                                             deadline - now)));
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
  throwIfFailed();
}

void MaiaWork::synchronize() { blockCallerStream(); }

int MaiaWork::sourceRank() const {
  TORCH_CHECK(source_ != nullptr, "maia c10d: sourceRank() is for receives from any source");
  int source = source_->load(std::memory_order_acquire);
  TORCH_CHECK(source >= 0, "maia c10d: the receive from any source has not completed; wait() "
              "first");
  return source;
}

}  // namespace torch_maia::distributed
