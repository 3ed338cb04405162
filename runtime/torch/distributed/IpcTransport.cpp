#include "IpcTransport.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "IpcPeerBuffers.h"
#include "MaiaCheck.h"
#include "MaiaStream.h"
#include "Reduction.h"

namespace torch_maia::distributed {
namespace {

using c10d::ReduceOp;

/// Slot size unless MAIA_DIST_IPC_SLOT_BYTES says otherwise: large enough
/// that a step barrier (tens of microseconds) is small against a piece's
/// copies, small enough that every group's two slots fit next to the model.
constexpr size_t kDefaultSlotBytes = size_t{4} << 20;
/// allreduce messages up to this size are reduced whole by every rank (one
/// barrier); larger ones are reduce-scattered then all-gathered (two
/// barriers per piece, 1/size of the reduction work per rank).
constexpr int64_t kDirectBytes = 64 << 10;

/// allreduce messages from this size on are reduced in place from the
/// peers' buffers (zero-copy) unless MAIA_DIST_IPC_ZERO_COPY_BYTES says
/// otherwise: below, the plan step's enqueue and the helper stream's
/// hand-off cost more than the staging copies they save.
constexpr int64_t kDefaultZeroCopyBytes = int64_t{1} << 20;

int64_t zeroCopyBytesFromEnv() {
  const char* value = std::getenv("MAIA_DIST_IPC_ZERO_COPY_BYTES");
  if (value == nullptr) return kDefaultZeroCopyBytes;
  char* end = nullptr;
  long long bytes = std::strtoll(value, &end, 10);
  TORCH_CHECK(end != value && *end == '\0' && bytes >= 0, "maia c10d: MAIA_DIST_IPC_ZERO_COPY_BYTES='",
              value, "' is not a byte count (0: never zero-copy)");
  return bytes;
}

size_t slotBytesFromEnv() {
  const char* value = std::getenv("MAIA_DIST_IPC_SLOT_BYTES");
  if (value == nullptr) return kDefaultSlotBytes;
  char* end = nullptr;
  long long bytes = std::strtoll(value, &end, 10);
  TORCH_CHECK(end != value && *end == '\0' && bytes >= 1024 && bytes % 64 == 0,
              "maia c10d: MAIA_DIST_IPC_SLOT_BYTES='", value,
              "' is not a byte count of at least 1024 and a multiple of 64");
  return static_cast<size_t>(bytes);
}

/// A point-to-point channel's slot: a quarter of a collective slot (each
/// rank holds two per peer), a multiple of 64 bytes.
size_t channelSlotBytes(size_t slot_bytes) {
  return std::max<size_t>(256, slot_bytes / 4 / 64 * 64);
}

std::vector<uint8_t> handleBytes(const maiaIpcMemHandle_t& handle) {
  return {handle.reserved, handle.reserved + MAIA_IPC_HANDLE_SIZE};
}

struct HostStep {
  std::function<std::string()> body;
  std::shared_ptr<LaunchStatus> status;
  std::string label;
};

void runHostStep(void* user_data) {
  std::unique_ptr<HostStep> step(static_cast<HostStep*>(user_data));
  // A launch that already failed (kept running by
  // MAIA_DIST_ASYNC_ERROR_HANDLING=0) skips its remaining waits: its outputs
  // are undefined, and its peers fail their waits through the control block.
  if (step->status->failed()) return;
  std::string cause = step->body();
  if (!cause.empty()) failExchange(*step->status, step->label, cause);
}

/// Enqueues body as a host function on stream (skipped once the launch
/// failed); a non-empty result fails the launch, named by what.
void enqueueHostStep(maiaStream_t stream, const std::shared_ptr<LaunchStatus>& status,
                     const std::string& label, const std::string& what,
                     std::function<std::string()> body) {
  auto step = std::make_unique<HostStep>(HostStep{std::move(body), status, label});
  const std::string name = label + ": " + what;  // the step's profiler slice
  MAIA_CHECK(maiaLaunchHostFuncNamed(stream, &runHostStep, step.get(), name.c_str()));
  step.release();  // runHostStep owns it now
}

/// How the steps a call adds now wait for their peers.
IpcControl::WaitLimit waitLimit(const Launch& launch) {
  return IpcControl::WaitLimit{launch.timeout, launch.status};
}

/// [begin, end) of chunk index of a piece of n elements split over size ranks.
std::pair<int64_t, int64_t> chunkOf(int64_t n, int size, int index) {
  return {n * index / size, n * (index + 1) / size};
}

}  // namespace

/// One zero-copy collective, as its plan step sees it. The peers read the
/// exposed buffer of each rank in place:
/// - allreduce: the buffer itself (numel elements, reduced in place);
/// - allgather: the input (numel elements per rank) into output;
/// - reduce-scatter: the input (size x numel elements) into output (numel).
struct ZeroCopyCollective {
  ZeroCopyKind kind = ZeroCopyKind::kAllreduce;
  std::shared_ptr<IpcControl> control;
  IpcControl::ExposedBuffer mine;
  /// allreduce only: the barrier between its reduce-scatter and all-gather.
  uint64_t reduced_epoch = 0;
  /// The last barrier: no rank returns while a peer still reads its buffer.
  uint64_t done_epoch = 0;
  int64_t numel = 0;
  at::ScalarType dtype = at::kFloat;
  ReduceOp::RedOpType op = ReduceOp::SUM;
  int rank = 0, size = 0;
  c10::DeviceIndex device = -1;
  void* data = nullptr;    // the exposed buffer, in this process
  void* output = nullptr;  // allgather and reduce-scatter
  std::string what;
  IpcControl::WaitLimit limit;
  std::shared_ptr<LaunchStatus> status;
  std::string label;
};

namespace {

/// The bytes every rank exposes for c (the same on every rank).
size_t exposedBytes(const ZeroCopyCollective& c) {
  const size_t bytes = c.numel * c10::elementSize(c.dtype);
  return c.kind == ZeroCopyKind::kReduceScatter ? c.size * bytes : bytes;
}

/// Whether the bytes [a, a + a_bytes) and [b, b + b_bytes) overlap.
bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  auto* x = static_cast<const char*>(a);
  auto* y = static_cast<const char*>(b);
  return a_bytes > 0 && b_bytes > 0 && x < y + b_bytes && y < x + a_bytes;
}

}  // namespace

/// The zero-copy collectives' state, shared with the steps they queued (they
/// run on driver cores, possibly after the transport's call returned).
struct IpcTransport::ZeroCopy {
  explicit ZeroCopy(c10::DeviceIndex device)
      : helper(streamFromPool(/*high_priority=*/true, device)), peers(device) {}

  /// The plan step, on a driver core once this rank's stream reached the
  /// collective: exposes this rank's buffer, waits until every rank has,
  /// opens theirs, and enqueues on the helper stream the data movement that
  /// reads them in place (enqueueMovement) and a last barrier, so that no
  /// rank returns while a peer still reads its buffer. Returns why it
  /// failed, or "".
  std::string plan(const ZeroCopyCollective& c);

  /// Where the plan step enqueues the data movement, once it knows the
  /// peers' buffers; the communication stream waits for it on flag.
  c10::Stream helper;
  /// Device word: the zero-copy launches whose movement has completed.
  void* flag = nullptr;
  uint64_t launches = 0;  // queued so far (host): the flag's next value
  IpcPeerBuffers peers;

 private:
  /// buffers: every rank's exposed buffer, mapped in this process.
  void enqueueMovement(const ZeroCopyCollective& c, const std::vector<char*>& buffers);
  void barrier(const ZeroCopyCollective& c, uint64_t epoch);
};

void IpcTransport::ZeroCopy::barrier(const ZeroCopyCollective& c, uint64_t epoch) {
  enqueueHostStep(driverStream(helper), c.status, c.label, c.what,
                  [control = c.control, epoch, what = c.what, limit = c.limit] {
                    return control->arriveAndWait(epoch, what, limit);
                  });
}

void IpcTransport::ZeroCopy::enqueueMovement(const ZeroCopyCollective& c,
                                             const std::vector<char*>& buffers) {
  const size_t element = c10::elementSize(c.dtype);
  const maiaStream_t stream = driverStream(helper);
  const auto options =
      at::TensorOptions().dtype(c.dtype).device(c10::DeviceType::PrivateUse1, c.device);
  switch (c.kind) {
    case ZeroCopyKind::kAllreduce: {
      auto chunk = [&](int q, int owner) {
        auto [lo, hi] = chunkOf(c.numel, c.size, owner);
        return at::from_blob(buffers[q] + lo * element, {hi - lo}, options);
      };
      // Reduce-scatter: this rank's chunk, its own elements first, then the
      // peers' in rank order (one rank computes each chunk: every rank gets
      // the same bits).
      if (at::Tensor own = chunk(c.rank, c.rank); own.numel() > 0) {
        std::vector<at::Tensor> sources{own};
        for (int q = 0; q < c.size; ++q)
          if (q != c.rank) sources.push_back(chunk(q, c.rank));
        combine(own, sources, c.op);
      }
      barrier(c, c.reduced_epoch);
      // All-gather: every peer's reduced chunk, out of its buffer.
      for (int q = 0; q < c.size; ++q) {
        if (q == c.rank) continue;
        at::Tensor from = chunk(q, q);
        if (from.numel() == 0) continue;
        MAIA_CHECK(maiaMemcpyAsync(chunk(c.rank, q).data_ptr(), from.data_ptr(), from.nbytes(),
                                   maiaMemcpyDeviceToDevice, stream));
      }
      return;
    }
    case ZeroCopyKind::kAllgather: {
      // This rank's own block was copied on the communication stream.
      const size_t bytes = c.numel * element;
      for (int q = 0; q < c.size; ++q)
        if (q != c.rank)
          MAIA_CHECK(maiaMemcpyAsync(static_cast<char*>(c.output) + q * bytes, buffers[q], bytes,
                                     maiaMemcpyDeviceToDevice, stream));
      return;
    }
    case ZeroCopyKind::kReduceScatter: {
      // Block rank of every rank's input, in rank order.
      std::vector<at::Tensor> sources;
      for (int q = 0; q < c.size; ++q)
        sources.push_back(
            at::from_blob(buffers[q] + c.rank * c.numel * element, {c.numel}, options));
      combine(at::from_blob(c.output, {c.numel}, options), sources, c.op);
      return;
    }
  }
}

std::string IpcTransport::ZeroCopy::plan(const ZeroCopyCollective& c) {
  c.control->expose(c.mine);
  std::string cause = c.control->arriveAndWait(c.mine.epoch, c.what, c.limit);
  if (!cause.empty()) return cause;
  // The helper stream's earlier movement (the only work reading the peers'
  // segments) is done: the communication stream waited for its flag before
  // this step. So segments of earlier plans can be closed -- those their
  // owners freed, and the least recently used when the import window is
  // full.
  peers.beginPlan();
  peers.closeFreed(driverStream(helper));
  std::vector<char*> buffers(c.size);
  for (int q = 0; q < c.size; ++q) {
    if (q == c.rank) {
      buffers[q] = static_cast<char*>(c.data);
      continue;
    }
    const IpcControl::ExposedBuffer theirs = c.control->exposed(q);
    if (theirs.epoch != c.mine.epoch)
      return c10::str("rank ", q, " exposed its buffer for step ", theirs.epoch,
                      ", this rank is at step ", c.mine.epoch);
    std::string error;
    void* data = peers.open(theirs.handle, theirs.offset, exposedBytes(c), driverStream(helper),
                            &error);
    if (data == nullptr) return c10::str("rank ", q, ": ", error);
    buffers[q] = static_cast<char*>(data);
  }
  try {
    c10::DeviceGuard device_guard(c10::Device(c10::DeviceType::PrivateUse1, c.device));
    c10::StreamGuard stream_guard(helper);
    enqueueMovement(c, buffers);
    barrier(c, c.done_epoch);
  } catch (const std::exception& e) {
    return c10::str("enqueueing the zero-copy ", c.what, " failed: ", e.what());
  }
  return {};
}

IpcTransport::IpcTransport(c10d::Store& store, const std::string& prefix, int rank,
                           std::vector<int> group_ranks, c10::DeviceIndex device)
    : rank_(rank),
      size_(static_cast<int>(group_ranks.size())),
      device_(device),
      slot_bytes_(slotBytesFromEnv()),
      zero_copy_bytes_(zeroCopyBytesFromEnv()),
      channel_slot_bytes_(channelSlotBytes(slot_bytes_)),
      sent_pieces_(size_, 0),
      received_pieces_(size_, 0) {
  control_ = std::make_shared<IpcControl>(store, prefix, rank, group_ranks);
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device));
  // Two collective slots, then two slots per peer for point-to-point.
  MAIA_CHECK(maiaMalloc(&own_scratch_, 2 * slot_bytes_ + 2 * size_ * channel_slot_bytes_));
  maiaIpcMemHandle_t handle;
  MAIA_CHECK(maiaIpcGetMemHandle(&handle, own_scratch_));
  store.set(prefix + "scratch/" + std::to_string(rank), handleBytes(handle));
  scratch_.assign(size_, nullptr);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank) {
      scratch_[peer] = own_scratch_;
      continue;
    }
    std::vector<uint8_t> bytes = store.get(prefix + "scratch/" + std::to_string(peer));
    TORCH_CHECK(bytes.size() == MAIA_IPC_HANDLE_SIZE, "maia c10d: rank ", group_ranks[peer],
                " published a scratch handle of ", bytes.size(), " bytes");
    maiaIpcMemHandle_t peer_handle;
    std::memcpy(peer_handle.reserved, bytes.data(), MAIA_IPC_HANDLE_SIZE);
    MAIA_CHECK(maiaIpcOpenMemHandle(&scratch_[peer], peer_handle, 0));
  }
  if (zero_copy_bytes_ > 0 && size_ > 1) {
    size_t free_bytes = 0, total_bytes = 0;
    MAIA_CHECK(maiaMemGetInfo(&free_bytes, &total_bytes));
    import_window_bytes_ = static_cast<int64_t>(total_bytes);
    zero_copy_ = std::make_shared<ZeroCopy>(device);
    MAIA_CHECK(maiaMalloc(&zero_copy_->flag, sizeof(uint64_t)));
    MAIA_CHECK(maiaMemset(zero_copy_->flag, 0, sizeof(uint64_t)));
    zero_copy_->peers.closeFreedInBackground(driverStream(zero_copy_->helper));
  }
}

IpcTransport::~IpcTransport() {
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device_));
  if (zero_copy_) {
    // The communication stream waits for the helper stream's last launch,
    // so once the device is idle no step holds zero_copy_ any more.
    (void)maiaDeviceSynchronize();
    if (zero_copy_->flag != nullptr) (void)maiaFree(zero_copy_->flag);
    zero_copy_.reset();  // closes the peers' buffers
  }
  // Closing waits for the device's queued work, which may still read the
  // mapping; the exporter's free is deferred while a peer has it open.
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && scratch_[peer] != nullptr) (void)maiaIpcCloseMemHandle(scratch_[peer]);
  if (own_scratch_ != nullptr) (void)maiaFree(own_scratch_);
}

void IpcTransport::hostStep(Launch& launch, const std::string& what,
                            std::function<std::string()> body) {
  enqueueHostStep(driverStream(launch.stream), launch.status, launch.label, what,
                  std::move(body));
}

void IpcTransport::sync(Launch& launch, const std::string& what) {
  hostStep(launch, what, [control = control_, epoch = ++epoch_, what, limit = waitLimit(launch)] {
    return control->arriveAndWait(epoch, what, limit);
  });
}

int64_t IpcTransport::slotElements(at::ScalarType dtype) const {
  return static_cast<int64_t>(slot_bytes_ / c10::elementSize(dtype));
}

at::Tensor IpcTransport::slotView(int rank, int slot, int64_t offset, int64_t numel,
                                  at::ScalarType dtype) const {
  auto* base = static_cast<char*>(scratch_[rank]) + slot * slot_bytes_;
  return at::from_blob(base + offset * c10::elementSize(dtype), {numel},
                       at::TensorOptions().dtype(dtype).device(c10::DeviceType::PrivateUse1,
                                                               device_));
}

void IpcTransport::copy(Launch& launch, const at::Tensor& dst, const at::Tensor& src) const {
  size_t bytes = src.nbytes();
  if (bytes == 0 || dst.data_ptr() == src.data_ptr()) return;  // in place (e.g. FSDP's views)
  MAIA_CHECK(maiaMemcpyAsync(dst.data_ptr(), src.data_ptr(), bytes, maiaMemcpyDeviceToDevice,
                             driverStream(launch.stream)));
}

size_t IpcTransport::peerBuffersOpened() const {
  return zero_copy_ ? zero_copy_->peers.opened() : 0;
}

uint64_t IpcTransport::zeroCopyLaunches() const { return zero_copy_ ? zero_copy_->launches : 0; }

bool IpcTransport::takesZeroCopy(const Launch& launch, size_t bytes) const {
  // The peers' buffers must fit the device's import window (its memory's
  // size) beside the segments other collectives keep open: at most half.
  const bool fits = (size_ - 1) * static_cast<int64_t>(bytes) <= import_window_bytes_ / 2;
  return zero_copy_ && static_cast<int64_t>(bytes) >= zero_copy_bytes_ && fits &&
         !isStreamCapturing(launch.stream);
}

at::Tensor IpcTransport::exposable(Launch& launch, const at::Tensor& input,
                                   bool overlaps_writes) const {
  if (!overlaps_writes) return input;
  at::Tensor copied = at::empty_like(input);
  copy(launch, copied, input);
  return copied;
}

void IpcTransport::launchZeroCopy(Launch& launch, ZeroCopyKind kind, const at::Tensor& exposed,
                                  int64_t numel, at::ScalarType dtype, ReduceOp::RedOpType op,
                                  void* output, const std::string& what) {
  ZeroCopyCollective c;
  c.kind = kind;
  c.numel = numel;
  c.dtype = dtype;
  c.op = op;
  c.output = output;
  c.what = what + " (zero-copy)";
  c.control = control_;
  maiaPointerAttributes attributes;
  MAIA_CHECK(maiaPointerGetAttributes(&attributes, exposed.data_ptr()));
  MAIA_CHECK(maiaIpcGetMemHandle(&c.mine.handle, exposed.data_ptr()));
  c.mine.offset = static_cast<char*>(exposed.data_ptr()) - static_cast<char*>(attributes.base);
  c.mine.epoch = ++epoch_;
  if (c.kind == ZeroCopyKind::kAllreduce) c.reduced_epoch = ++epoch_;
  c.done_epoch = ++epoch_;
  c.rank = rank_;
  c.size = size_;
  c.device = device_;
  c.data = exposed.data_ptr();
  c.limit = waitLimit(launch);
  c.status = launch.status;
  c.label = launch.label;
  const std::string step = c.what;
  const uint64_t launch_number = ++zero_copy_->launches;
  // The plan step always releases the communication stream's wait, also
  // when it or an earlier step failed: a launch kept running after a failure
  // (MAIA_DIST_ASYNC_ERROR_HANDLING=0) must not hang the stream.
  auto plan = [zc = zero_copy_, c = std::move(c), launch_number] {
    std::string cause;
    if (!c.status->failed()) cause = zc->plan(c);
    if (!cause.empty()) failExchange(*c.status, c.label, cause);
    (void)maiaStreamWriteValue64(driverStream(zc->helper), zc->flag, launch_number);
    return std::string();
  };
  const maiaStream_t comm = driverStream(launch.stream);
  enqueueHostStep(comm, std::make_shared<LaunchStatus>(), launch.label, step, std::move(plan));
  MAIA_CHECK(maiaStreamWaitValue64(comm, zero_copy_->flag, launch_number, maiaStreamWaitValueGeq,
                                   /*timeout_ms=*/0));
}

void IpcTransport::allreduce(Launch& launch, const at::Tensor& buffer, ReduceOp::RedOpType op) {
  const int64_t n = buffer.numel();
  if (n == 0) return;
  const auto dtype = buffer.scalar_type();
  if (takesZeroCopy(launch, buffer.nbytes())) {
    launchZeroCopy(launch, ZeroCopyKind::kAllreduce, buffer, n, dtype, op, nullptr,
                   describeReduction("allreduce", n, dtype, op));
    return;
  }
  const int64_t piece = slotElements(dtype);
  const bool direct = static_cast<int64_t>(buffer.nbytes()) <= kDirectBytes;
  const std::string what = describeReduction("allreduce", n, dtype, op);
  forEachPiece(n, piece, [&](int64_t begin, int64_t m, int slot) {
    at::Tensor mine = buffer.narrow(0, begin, m);
    if (direct) {
      copy(launch, slotView(rank_, slot, 0, m, dtype), mine);
      sync(launch, what);
      std::vector<at::Tensor> sources;
      for (int p = 0; p < size_; ++p) sources.push_back(slotView(p, slot, 0, m, dtype));
      combine(mine, sources, op);
      return;
    }
    // Reduce-scatter: publish the chunks the peers reduce, reduce chunk rank_.
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      auto [lo, hi] = chunkOf(m, size_, q);
      copy(launch, slotView(rank_, slot, lo, hi - lo, dtype), mine.narrow(0, lo, hi - lo));
    }
    sync(launch, what);
    auto [lo, hi] = chunkOf(m, size_, rank_);
    if (hi > lo) {
      at::Tensor own = mine.narrow(0, lo, hi - lo);
      at::Tensor result = slotView(rank_, slot, lo, hi - lo, dtype);
      std::vector<at::Tensor> sources;
      for (int p = 0; p < size_; ++p)
        sources.push_back(p == rank_ ? own : slotView(p, slot, lo, hi - lo, dtype));
      combine(result, sources, op);
      copy(launch, own, result);
    }
    sync(launch, what);
    // All-gather: every peer's reduced chunk from its slot.
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      auto [qlo, qhi] = chunkOf(m, size_, q);
      copy(launch, mine.narrow(0, qlo, qhi - qlo), slotView(q, slot, qlo, qhi - qlo, dtype));
    }
  });
}

void IpcTransport::broadcast(Launch& launch, const at::Tensor& buffer, int root) {
  const int64_t n = buffer.numel();
  if (n == 0) return;
  const auto dtype = buffer.scalar_type();
  forEachPiece(n, slotElements(dtype), [&](int64_t begin, int64_t m, int slot) {
    at::Tensor mine = buffer.narrow(0, begin, m);
    if (rank_ == root) copy(launch, slotView(rank_, slot, 0, m, dtype), mine);
    sync(launch, c10::str("broadcast of ", n, " ", dtype, " from ", root));
    if (rank_ != root) copy(launch, mine, slotView(root, slot, 0, m, dtype));
  });
}

void IpcTransport::reduce(Launch& launch, const at::Tensor& buffer, int root,
                          ReduceOp::RedOpType op) {
  const int64_t n = buffer.numel();
  if (n == 0) return;
  const auto dtype = buffer.scalar_type();
  forEachPiece(n, slotElements(dtype), [&](int64_t begin, int64_t m, int slot) {
    at::Tensor mine = buffer.narrow(0, begin, m);
    if (rank_ != root) copy(launch, slotView(rank_, slot, 0, m, dtype), mine);
    sync(launch, describeReduction("reduce", n, dtype, op) + c10::str(" to ", root));
    if (rank_ != root) return;
    std::vector<at::Tensor> sources;
    for (int p = 0; p < size_; ++p)
      sources.push_back(p == rank_ ? mine : slotView(p, slot, 0, m, dtype));
    // The root's own elements are an input: reduce into a peer-free copy
    // first when the root is not source 0 (combine writes out before it
    // reads the later sources).
    if (root != 0) {
      at::Tensor own = at::empty({m}, buffer.options());
      copy(launch, own, mine);
      sources[root] = own;
    }
    combine(mine, sources, op);
  });
}

void IpcTransport::allgather(Launch& launch, const at::Tensor& input, const at::Tensor& output) {
  const int64_t n = input.numel();
  if (n == 0) return;
  const auto dtype = input.scalar_type();
  const std::string what = c10::str("allgather of ", n, " ", dtype, " per rank");
  if (takesZeroCopy(launch, input.nbytes())) {
    // The peers read the input while this rank writes the other ranks'
    // blocks of output: an input inside those (not this rank's own block,
    // FSDP's in-place case) is read from a copy.
    const size_t bytes = input.nbytes();
    auto* out = static_cast<char*>(output.data_ptr());
    const at::Tensor exposed = exposable(
        launch, input,
        overlaps(input.data_ptr(), bytes, out, rank_ * bytes) ||
            overlaps(input.data_ptr(), bytes, out + (rank_ + 1) * bytes,
                     (size_ - rank_ - 1) * bytes));
    copy(launch, output.narrow(0, rank_ * n, n), exposed);
    launchZeroCopy(launch, ZeroCopyKind::kAllgather, exposed, n, dtype, ReduceOp::SUM, out, what);
    return;
  }
  forEachPiece(n, slotElements(dtype), [&](int64_t begin, int64_t m, int slot) {
    at::Tensor mine = input.narrow(0, begin, m);
    copy(launch, slotView(rank_, slot, 0, m, dtype), mine);
    copy(launch, output.narrow(0, rank_ * n + begin, m), mine);
    sync(launch, what);
    for (int p = 0; p < size_; ++p)
      if (p != rank_)
        copy(launch, output.narrow(0, p * n + begin, m), slotView(p, slot, 0, m, dtype));
  });
}

void IpcTransport::reduceScatter(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                                 ReduceOp::RedOpType op) {
  const int64_t n = output.numel();
  if (n == 0) return;
  const auto dtype = output.scalar_type();
  const std::string what = describeReduction("reduce_scatter", n, dtype, op) + " per rank";
  if (takesZeroCopy(launch, input.nbytes())) {
    // The peers read the input while this rank writes output, and output is
    // written before the later ranks' blocks are read: an output inside the
    // input (in place) gets the input from a copy.
    const at::Tensor exposed = exposable(
        launch, input,
        overlaps(input.data_ptr(), input.nbytes(), output.data_ptr(), output.nbytes()));
    launchZeroCopy(launch, ZeroCopyKind::kReduceScatter, exposed, n, dtype, op,
                   output.data_ptr(), what);
    return;
  }
  // A piece covers e elements of every rank's chunk: the slot holds size blocks.
  const int64_t e = slotElements(dtype) / size_;
  forEachPiece(n, e, [&](int64_t begin, int64_t m, int slot) {
    for (int q = 0; q < size_; ++q)
      if (q != rank_)
        copy(launch, slotView(rank_, slot, q * e, m, dtype), input.narrow(0, q * n + begin, m));
    sync(launch, what);
    at::Tensor own = input.narrow(0, rank_ * n + begin, m);
    // An output inside the input (in place) is written before own is read.
    if (rank_ != 0 && output.is_alias_of(input)) {
      at::Tensor saved = at::empty({m}, output.options());
      copy(launch, saved, own);
      own = saved;
    }
    std::vector<at::Tensor> sources;
    for (int p = 0; p < size_; ++p)
      sources.push_back(p == rank_ ? own : slotView(p, slot, rank_ * e, m, dtype));
    combine(output.narrow(0, begin, m), sources, op);
  });
}

void IpcTransport::gather(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                          int root) {
  const int64_t n = input.numel();
  if (n == 0) return;
  const auto dtype = input.scalar_type();
  const std::string what = c10::str("gather of ", n, " ", dtype, " to ", root);
  forEachPiece(n, slotElements(dtype), [&](int64_t begin, int64_t m, int slot) {
    at::Tensor mine = input.narrow(0, begin, m);
    if (rank_ == root)
      copy(launch, output.narrow(0, root * n + begin, m), mine);
    else
      copy(launch, slotView(rank_, slot, 0, m, dtype), mine);
    sync(launch, what);
    if (rank_ != root) return;
    for (int p = 0; p < size_; ++p)
      if (p != root)
        copy(launch, output.narrow(0, p * n + begin, m), slotView(p, slot, 0, m, dtype));
  });
}

void IpcTransport::scatter(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                           int root) {
  const int64_t n = output.numel();
  if (n == 0) return;
  const auto dtype = output.scalar_type();
  const std::string what = c10::str("scatter of ", n, " ", dtype, " from ", root);
  // A piece covers e elements of every rank's slice: the root's slot holds size blocks.
  const int64_t e = slotElements(dtype) / size_;
  forEachPiece(n, e, [&](int64_t begin, int64_t m, int slot) {
    if (rank_ == root) {
      for (int q = 0; q < size_; ++q)
        if (q != root)
          copy(launch, slotView(root, slot, q * e, m, dtype), input.narrow(0, q * n + begin, m));
      copy(launch, output.narrow(0, begin, m), input.narrow(0, root * n + begin, m));
    }
    sync(launch, what);
    if (rank_ != root)
      copy(launch, output.narrow(0, begin, m), slotView(root, slot, rank_ * e, m, dtype));
  });
}

void IpcTransport::alltoall(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                            std::vector<int64_t> input_split_bytes,
                            std::vector<int64_t> output_split_bytes) {
  const at::Tensor in = input.view(at::kByte), out = output.view(at::kByte);
  if (!input_split_bytes.empty() || !output_split_bytes.empty()) {
    // Uneven: a message per peer (every pair, empty ones too, so that
    // mismatched splits fail), the own block copied locally.
    int64_t in_offset = 0, out_offset = 0;
    for (int p = 0; p < size_; ++p) {
      at::Tensor to = in.narrow(0, in_offset, input_split_bytes[p]);
      at::Tensor from = out.narrow(0, out_offset, output_split_bytes[p]);
      in_offset += input_split_bytes[p];
      out_offset += output_split_bytes[p];
      if (p == rank_) {
        TORCH_CHECK(to.numel() == from.numel(), "maia c10d: all_to_all sends ", to.numel(),
                    " bytes to this rank itself but receives ", from.numel());
        copy(launch, from, to);
        continue;
      }
      queueMessage(launch, true, p, to, 0, IpcControl::kAllToAll);
      queueMessage(launch, false, p, from, 0, IpcControl::kAllToAll);
    }
    return;
  }
  // Equal splits: bytes per pair through the collective slots.
  const int64_t b = in.numel() / size_;
  if (b == 0) return;
  const std::string what = c10::str("alltoall of ", b, " bytes per pair");
  const int64_t e = slotElements(at::kByte) / size_;
  forEachPiece(b, e, [&](int64_t begin, int64_t m, int slot) {
    for (int q = 0; q < size_; ++q)
      if (q != rank_)
        copy(launch, slotView(rank_, slot, q * e, m, at::kByte), in.narrow(0, q * b + begin, m));
    copy(launch, out.narrow(0, rank_ * b + begin, m), in.narrow(0, rank_ * b + begin, m));
    sync(launch, what);
    for (int p = 0; p < size_; ++p)
      if (p != rank_)
        copy(launch, out.narrow(0, p * b + begin, m), slotView(p, slot, rank_ * e, m, at::kByte));
  });
}

void IpcTransport::barrier(Launch& launch) { sync(launch, "barrier"); }

at::Tensor IpcTransport::channelView(int owner, int peer, int slot, int64_t bytes) const {
  auto* base = static_cast<char*>(scratch_[owner]) + 2 * slot_bytes_ +
               (2 * peer + slot) * channel_slot_bytes_;
  return at::from_blob(base, {bytes},
                       at::TensorOptions().dtype(at::kByte).device(c10::DeviceType::PrivateUse1,
                                                                   device_));
}

void IpcTransport::queueMessage(const Launch& launch, bool send, int peer,
                                const at::Tensor& buffer, int tag, int32_t kind) {
  TORCH_CHECK(peer >= 0 && peer < size_ && peer != rank_, "maia c10d: ",
              send ? "send to" : "receive from", " rank ", peer, " in a group of ", size_,
              " (this rank is ", rank_, ")");
  const at::Tensor bytes = buffer.view(at::kByte).reshape({-1});
  messages_.push_back(Message{send, peer, bytes,
                              IpcControl::PieceHeader{bytes.numel(), static_cast<int32_t>(tag),
                                                      kind},
                              launch.timeout});
}

void IpcTransport::send(Launch& launch, const at::Tensor& buffer, int peer, int tag) {
  queueMessage(launch, true, peer, buffer, tag, IpcControl::kSendRecv);
}

void IpcTransport::recv(Launch& launch, const at::Tensor& buffer, int peer, int tag) {
  queueMessage(launch, false, peer, buffer, tag, IpcControl::kSendRecv);
}

void IpcTransport::recvAnysource(Launch& launch, const at::Tensor& buffer, int tag,
                                 std::shared_ptr<std::atomic<int>> source) {
  // The next piece from each peer that no queued receive will consume.
  std::vector<uint64_t> next(received_pieces_);
  for (const Message& message : messages_)
    if (!message.send) next[message.peer] += piecesOf(message);
  for (auto& piece : next) ++piece;
  std::string cause;
  const int peer = control_->waitAnySender(next, tag, waitLimit(launch), &cause);
  TORCH_CHECK(peer >= 0, launch.label, ": ", cause);
  source->store(peer);
  recv(launch, buffer, peer, tag);
}

int64_t IpcTransport::piecesOf(const Message& message) const {
  const auto slot = static_cast<int64_t>(channel_slot_bytes_);
  return std::max<int64_t>(1, (message.bytes.numel() + slot - 1) / slot);
}

void IpcTransport::movePiece(Launch& launch, const Message& message, int64_t index) {
  const int peer = message.peer;
  const uint64_t piece = ++(message.send ? sent_pieces_ : received_pieces_)[peer];
  const int slot = static_cast<int>(piece % 2);
  const auto slot_bytes = static_cast<int64_t>(channel_slot_bytes_);
  const int64_t begin = index * slot_bytes;
  const int64_t bytes = std::min(slot_bytes, message.bytes.numel() - begin);
  const at::Tensor data = message.bytes.narrow(0, begin, bytes);
  const std::string what = c10::str(message.send ? "send of " : "receive of ",
                                    message.header.message_bytes,
                                    message.send ? " bytes to " : " bytes from ", peer);
  const auto control = control_;
  const auto header = message.header;
  const IpcControl::WaitLimit limit{message.timeout, launch.status};
  if (message.send) {
    hostStep(launch, what, [=] { return control->waitSlotFree(peer, piece, limit); });
    copy(launch, channelView(rank_, peer, slot, bytes), data);
    hostStep(launch, what, [=] {
      control->publish(peer, piece, header);
      return std::string();
    });
  } else {
    hostStep(launch, what, [=] { return control->waitPublished(peer, piece, header, limit); });
    copy(launch, data, channelView(peer, rank_, slot, bytes));
    hostStep(launch, what, [=] {
      control->consume(peer, piece);
      return std::string();
    });
  }
}

void IpcTransport::exchange(Launch& launch) {
  std::vector<Message> messages = std::move(messages_);
  messages_.clear();
  int64_t rounds = 0;
  for (const Message& message : messages) rounds = std::max(rounds, piecesOf(message));
  // Round k: piece k of every send, then of every receive. A send waits only
  // for the receiver to consume the piece two before it, which the receiver
  // does in an earlier round, so no two ranks wait on each other.
  for (int64_t k = 0; k < rounds; ++k) {
    for (bool sends : {true, false})
      for (const Message& message : messages)
        if (message.send == sends && k < piecesOf(message)) movePiece(launch, message, k);
  }
}

}  // namespace torch_maia::distributed
