// Graph capture and replay for torch.accelerator.Graph on maia: an
// at::GraphImplInterface over the driver's stream capture
// (maiaStreamBeginCapture ... maiaGraphLaunch), registered in
// GraphImplRegistry under the backend's name.
//
// capture_begin makes a capturing stream current (a pool stream if the
// current one is the default stream, which cannot capture) and routes the
// caching allocator's allocations from that stream to a private memory
// pool: the tensors a capture creates keep their memory, and every replay
// writes the same addresses. Replays run on the stream current at replay.
#include <ATen/core/GraphImplInterface.h>

#include <atomic>
#include <optional>

#include "MaiaCachingAllocator.h"
#include "MaiaCheck.h"
#include "MaiaFunctions.h"
#include "MaiaStream.h"

namespace torch_maia {
namespace {

/// Ids of private pools made for a single graph: {n, 0}, as CUDA's graphs
/// number theirs (shared pools from a user's handle are {0, n}).
c10::MempoolId_t newGraphPoolId() {
  static std::atomic<c10::CaptureId_t> next{1};
  return {next.fetch_add(1), 0};
}

class MaiaGraph final : public at::GraphImplInterface {
 public:
  explicit MaiaGraph(const at::GraphImplArgs& args) : keep_graph_(args.keep_graph) {}
  ~MaiaGraph() override {
    try {
      reset();
    } catch (const c10::Error& error) {
      TORCH_WARN("maia graph: releasing a graph failed: ", error.what_without_backtrace());
    }
  }

  void capture_begin(c10::MempoolId_t pool, at::GraphCaptureMode /*mode*/) override {
    // Every mode behaves as Global: while a stream captures, the driver
    // refuses synchronizing calls on its device from any thread.
    TORCH_CHECK(!capturing_ && graph_ == nullptr && exec_ == nullptr,
                "this maia graph already holds a capture; call reset() before capturing again");
    device_ = currentDevice();
    c10::Stream current = currentStream(device_);
    capture_stream_ = current;
    restore_stream_.reset();
    if (current.id() == 0) {
      // The default stream cannot capture: capture on a pool stream, after
      // the work already queued on the default stream.
      capture_stream_ = streamFromPool(/*high_priority=*/false, device_);
      // The pool may hand out the stream of a capture in progress: waiting
      // on it would invalidate that capture (one per device anyway).
      TORCH_CHECK(!isStreamCapturing(capture_stream_), "maia:", static_cast<int>(device_),
                  " is already capturing a graph; maia captures one graph per device at a time");
      maiaEvent_t queued = nullptr;
      MAIA_CHECK(maiaEventCreate(&queued, maiaEventDisableTiming));
      maiaError_t error = maiaEventRecord(queued, driverStream(current));
      if (error == maiaSuccess) error = maiaStreamWaitEvent(driverStream(capture_stream_), queued);
      maiaEventDestroy(queued);
      MAIA_CHECK(error);
      restore_stream_ = exchangeStream(capture_stream_);
    }
    pool_ = pool.first == 0 && pool.second == 0 ? newGraphPoolId() : pool;
    try {
      beginAllocateToPool(device_, pool_, capture_stream_.id());
    } catch (...) {
      restoreStream();  // e.g. another graph captures on this device
      throw;
    }
    holds_pool_ = true;
    maiaError_t error = maiaStreamBeginCapture(driverStream(capture_stream_));
    if (error != maiaSuccess) {
      endAllocateToPool(device_, pool_);
      restoreStream();
      MAIA_CHECK(error);
    }
    capturing_ = true;
  }

  void capture_end() override {
    TORCH_CHECK(capturing_, "capture_end: this maia graph is not capturing");
    capturing_ = false;
    maiaGraph_t graph = nullptr;
    maiaError_t error = maiaStreamEndCapture(driverStream(capture_stream_), &graph);
    endAllocateToPool(device_, pool_);
    restoreStream();
    MAIA_CHECK(error);
    graph_ = graph;
    if (!keep_graph_) {
      instantiate();
      destroyGraph();
    }
  }

  void instantiate() override {
    TORCH_CHECK(graph_ != nullptr, "instantiate: this maia graph holds no captured graph",
                exec_ != nullptr ? " (already instantiated; keep_graph=False drops it then)" : "");
    if (exec_ != nullptr) {
      MAIA_CHECK(maiaGraphExecDestroy(exec_));
      exec_ = nullptr;
    }
    MAIA_CHECK(maiaGraphInstantiate(&exec_, graph_));
  }

  void replay() override {
    TORCH_CHECK(!capturing_, "replay: this maia graph is still capturing");
    if (exec_ == nullptr) {
      TORCH_CHECK(graph_ != nullptr, "replay: this maia graph has not captured anything");
      instantiate();
    }
    MAIA_CHECK(maiaGraphLaunch(exec_, currentDriverStream(device_)));
  }

  void reset() override {
    if (capturing_) {
      // Ends the capture so that the stream is usable again; its graph is dropped.
      capturing_ = false;
      maiaGraph_t graph = nullptr;
      if (maiaStreamEndCapture(driverStream(capture_stream_), &graph) == maiaSuccess)
        maiaGraphDestroy(graph);
      maiaGetLastError();
      endAllocateToPool(device_, pool_);
      restoreStream();
    }
    if (exec_ != nullptr) {
      MAIA_CHECK(maiaGraphExecDestroy(exec_));  // queued replays keep what they need
      exec_ = nullptr;
    }
    destroyGraph();
    if (holds_pool_) {
      holds_pool_ = false;
      releasePool(device_, pool_);
    }
  }

  c10::MempoolId_t pool() const override { return pool_; }

  void enable_debug_mode() override {}  // nothing extra to check or log on maia

  void debug_dump(const std::string& /*path*/) override {
    TORCH_CHECK(false, "debug_dump is not supported by maia graphs");
  }

 private:
  void destroyGraph() {
    if (graph_ == nullptr) return;
    maiaGraph_t graph = graph_;
    graph_ = nullptr;
    MAIA_CHECK(maiaGraphDestroy(graph));
  }

  void restoreStream() {
    if (restore_stream_) exchangeStream(*restore_stream_);
    restore_stream_.reset();
  }

  const bool keep_graph_;
  c10::DeviceIndex device_ = 0;
  c10::Stream capture_stream_{c10::Stream::DEFAULT, c10::Device(c10::DeviceType::PrivateUse1, 0)};
  std::optional<c10::Stream> restore_stream_;  // the stream current before capture_begin
  c10::MempoolId_t pool_{0, 0};
  bool holds_pool_ = false;
  bool capturing_ = false;
  maiaGraph_t graph_ = nullptr;
  maiaGraphExec_t exec_ = nullptr;
};

}  // namespace
}  // namespace torch_maia

namespace at {
// The registry's key is c10::DeviceTypeName(PrivateUse1, /*lowercase=*/false):
// the backend's name upper-cased once it is registered, PRIVATEUSEONE before.
REGISTER_GRAPH_IMPL(MAIA, torch_maia::MaiaGraph);
REGISTER_GRAPH_IMPL(PRIVATEUSEONE, torch_maia::MaiaGraph);
}  // namespace at
