#include "IpcTransport.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "MaiaCheck.h"
#include "MaiaStream.h"

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

/// How the steps a call adds now wait for their peers.
IpcControl::WaitLimit waitLimit(const Launch& launch) {
  return IpcControl::WaitLimit{launch.timeout, launch.status};
}

/// [begin, end) of chunk index of a piece of n elements split over size ranks.
std::pair<int64_t, int64_t> chunkOf(int64_t n, int size, int index) {
  return {n * index / size, n * (index + 1) / size};
}

}  // namespace

IpcTransport::IpcTransport(c10d::Store& store, const std::string& prefix, int rank,
                           std::vector<int> group_ranks, c10::DeviceIndex device)
    : rank_(rank),
      size_(static_cast<int>(group_ranks.size())),
      device_(device),
      slot_bytes_(slotBytesFromEnv()),
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
}

IpcTransport::~IpcTransport() {
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device_));
  // Closing waits for the device's queued work, which may still read the
  // mapping; the exporter's free is deferred while a peer has it open.
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && scratch_[peer] != nullptr) (void)maiaIpcCloseMemHandle(scratch_[peer]);
  if (own_scratch_ != nullptr) (void)maiaFree(own_scratch_);
}

void IpcTransport::hostStep(Launch& launch, const std::string& what,
                            std::function<std::string()> body) {
  auto step = std::make_unique<HostStep>(HostStep{std::move(body), launch.status, launch.label});
  const std::string name = launch.label + ": " + what;  // the step's profiler slice
  MAIA_CHECK(maiaLaunchHostFuncNamed(driverStream(launch.stream), &runHostStep, step.get(),
                                     name.c_str()));
  step.release();  // runHostStep owns it now
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

void IpcTransport::combine(const at::Tensor& result, const std::vector<at::Tensor>& sources,
                           ReduceOp::RedOpType op) const {
  at::Tensor out = result;  // the *_out functions take a non-const reference
  const bool bitwise = op == ReduceOp::BAND || op == ReduceOp::BOR || op == ReduceOp::BXOR;
  // maia implements the bitwise ops in place only (their .Tensor_out would
  // fall back to the host): start from a copy of the first source.
  if (bitwise && !sources[0].is_same(out)) out.copy_(sources[0]);
  for (size_t i = 1; i < sources.size(); ++i) {
    const at::Tensor& a = i == 1 ? sources[0] : out;
    const at::Tensor& b = sources[i];
    switch (op) {
      case ReduceOp::SUM: at::add_out(out, a, b); break;
      case ReduceOp::PRODUCT: at::mul_out(out, a, b); break;
      case ReduceOp::MIN: at::minimum_out(out, a, b); break;
      case ReduceOp::MAX: at::maximum_out(out, a, b); break;
      case ReduceOp::BAND: out.bitwise_and_(b); break;
      case ReduceOp::BOR: out.bitwise_or_(b); break;
      case ReduceOp::BXOR: out.bitwise_xor_(b); break;
      default: TORCH_CHECK(false, "maia c10d: the IPC transport got reduction ", int(op));
    }
  }
}

void IpcTransport::allreduce(Launch& launch, const at::Tensor& buffer, ReduceOp::RedOpType op) {
  const int64_t n = buffer.numel();
  if (n == 0) return;
  const auto dtype = buffer.scalar_type();
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
  forEachPiece(n, slotElements(dtype), [&](int64_t begin, int64_t m, int slot) {
    at::Tensor mine = input.narrow(0, begin, m);
    copy(launch, slotView(rank_, slot, 0, m, dtype), mine);
    copy(launch, output.narrow(0, rank_ * n + begin, m), mine);
    sync(launch, c10::str("allgather of ", n, " ", dtype, " per rank"));
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
  // A piece covers e elements of every rank's chunk: the slot holds size blocks.
  const int64_t e = slotElements(dtype) / size_;
  forEachPiece(n, e, [&](int64_t begin, int64_t m, int slot) {
    for (int q = 0; q < size_; ++q)
      if (q != rank_)
        copy(launch, slotView(rank_, slot, q * e, m, dtype), input.narrow(0, q * n + begin, m));
    sync(launch, describeReduction("reduce_scatter", n, dtype, op) + " per rank");
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
