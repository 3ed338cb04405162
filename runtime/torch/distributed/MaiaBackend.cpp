#include "MaiaBackend.h"

#include <ATen/ATen.h>
#include <c10/core/StreamGuard.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <optional>

#include "MaiaCachingAllocator.h"
#include "MaiaCheck.h"
#include "MaiaStream.h"
#include "MonitoredBarrier.h"

namespace torch_maia::distributed {
namespace {

using c10d::OpType;
using c10d::ReduceOp;

constexpr int kMaxDevices = 16;

/// The device's communication stream: one per device for the whole process
/// (see MaiaBackend.h), from the high-priority pool like NCCL's streams from
/// CUDA's pool, so a core that frees up serves a collective its peers wait
/// for before queued compute.
c10::Stream commStream(c10::DeviceIndex device) {
  static std::mutex mutex;
  static std::array<std::optional<c10::Stream>, kMaxDevices> streams;
  std::lock_guard<std::mutex> lock(mutex);
  auto& stream = streams.at(device);
  if (!stream) stream = streamFromPool(/*high_priority=*/true, device);
  return *stream;
}

/// Makes stream wait for the work queued so far on the caller's current
/// stream of device.
void orderAfterCaller(c10::DeviceIndex device, const c10::Stream& stream) {
  maiaStream_t caller = currentDriverStream(device);
  maiaStream_t comm = driverStream(stream);
  if (caller == comm) return;
  maiaEvent_t ready = nullptr;
  MAIA_CHECK(maiaEventCreate(&ready, maiaEventDisableTiming));
  maiaError_t error = maiaEventRecord(ready, caller);
  if (error == maiaSuccess) error = maiaStreamWaitEvent(comm, ready);
  (void)maiaEventDestroy(ready);  // the queued record and wait keep what they need
  MAIA_CHECK(error);
}

bool isMaiaDtype(at::ScalarType dtype) {
  switch (dtype) {
    case at::kHalf: case at::kBFloat16: case at::kFloat: case at::kDouble: case at::kBool:
    case at::kByte: case at::kChar: case at::kShort: case at::kInt: case at::kLong:
      return true;
    default:
      return false;
  }
}

/// Checks that t can take part in collective; the first tensor sets *device.
void checkTensor(const at::Tensor& t, const char* collective, c10::DeviceIndex* device) {
  TORCH_CHECK(t.defined(), "maia c10d: ", collective, " got an undefined tensor");
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, "maia c10d: ", collective,
              " got a tensor on ", t.device(),
              "; the maia backend takes maia tensors (CPU tensors go to gloo, e.g. "
              "init_process_group(backend=\"cpu:gloo,maia:maia\"))");
  TORCH_CHECK(t.layout() == c10::kStrided, "maia c10d: ", collective,
              " takes strided (dense) tensors, got layout ", t.layout());
  TORCH_CHECK_TYPE(isMaiaDtype(t.scalar_type()), "maia c10d: ", collective,
                   " does not support dtype ", t.scalar_type(),
                   " (maia tensors are float16, bfloat16, float32, float64, bool, uint8, int8, "
                   "int16, int32 or int64)");
  if (*device < 0) {
    *device = t.device().index();
    return;
  }
  TORCH_CHECK(t.device().index() == *device, "maia c10d: ", collective, " got tensors on maia:",
              static_cast<int>(*device), " and maia:", static_cast<int>(t.device().index()),
              "; one call takes the tensors of one device");
}

c10::DeviceIndex checkTensors(std::initializer_list<const std::vector<at::Tensor>*> lists,
                              const char* collective, c10::DeviceIndex device = -1) {
  for (const auto* list : lists)
    for (const auto& t : *list) checkTensor(t, collective, &device);
  TORCH_CHECK(device >= 0, "maia c10d: ", collective, " got no tensor");
  return device;
}

void checkSameDtype(const at::Tensor& a, const at::Tensor& b, const char* collective) {
  TORCH_CHECK_TYPE(a.scalar_type() == b.scalar_type(), "maia c10d: ", collective,
                   " needs one dtype, got ", a.scalar_type(), " and ", b.scalar_type());
}

/// The dtype a reduction travels and reduces in: float16/bfloat16 in float32
/// (so sums do not round at every rank), bool as uint8, int16 as int32
/// (wrapping back to int16 gives int16's own results).
at::ScalarType wireDtype(at::ScalarType dtype) {
  switch (dtype) {
    case at::kHalf: case at::kBFloat16: return at::kFloat;
    case at::kBool: return at::kByte;
    case at::kShort: return at::kInt;
    default: return dtype;
  }
}

const char* opName(const ReduceOp& op) {
  switch (op.op_) {
    case ReduceOp::SUM: return "SUM";
    case ReduceOp::AVG: return "AVG";
    case ReduceOp::PRODUCT: return "PRODUCT";
    case ReduceOp::MIN: return "MIN";
    case ReduceOp::MAX: return "MAX";
    case ReduceOp::BAND: return "BAND";
    case ReduceOp::BOR: return "BOR";
    case ReduceOp::BXOR: return "BXOR";
    case ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNUSED";
  }
}

/// The op the transport applies for op on dtype (after the backend's own
/// steps: AVG divides, PREMUL_SUM multiplies first); checks the pair.
ReduceOp::RedOpType wireOp(const ReduceOp& op, at::ScalarType dtype, const char* collective) {
  bool is_bool = dtype == at::kBool;
  switch (op.op_) {
    case ReduceOp::SUM:
      return is_bool ? ReduceOp::MAX : ReduceOp::SUM;  // a logical or, as on CUDA
    case ReduceOp::AVG:
      TORCH_CHECK_TYPE(!is_bool, "maia c10d: ", collective, " with ReduceOp.AVG on bool tensors");
      return ReduceOp::SUM;
    case ReduceOp::PREMUL_SUM:
      TORCH_CHECK_TYPE(at::isFloatingType(dtype), "maia c10d: ", collective,
                       " with ReduceOp.PREMUL_SUM needs floating tensors, got ", dtype);
      return ReduceOp::SUM;
    case ReduceOp::PRODUCT:
      return is_bool ? ReduceOp::MIN : ReduceOp::PRODUCT;
    case ReduceOp::MIN:
    case ReduceOp::MAX:
      return op.op_;
    case ReduceOp::BAND:
    case ReduceOp::BOR:
    case ReduceOp::BXOR:
      TORCH_CHECK_TYPE(at::isIntegralType(dtype, /*includeBool=*/true), "maia c10d: ", collective,
                       " with ReduceOp.", opName(op), " needs integer or bool tensors, got ",
                       dtype);
      return op.op_;
    default:
      TORCH_CHECK(false, "maia c10d: ", collective, " does not support ReduceOp.", opName(op));
  }
}

/// wireOp of every tensor, checked before anything is enqueued.
std::vector<ReduceOp::RedOpType> wireOps(const std::vector<at::Tensor>& tensors,
                                         const ReduceOp& op, const char* collective) {
  std::vector<ReduceOp::RedOpType> ops;
  ops.reserve(tensors.size());
  for (const auto& t : tensors) ops.push_back(wireOp(op, t.scalar_type(), collective));
  return ops;
}

/// The reduction's input: t itself, flat, when it is already what the
/// transport takes and may be overwritten (in-place collectives); otherwise
/// a converted copy, premultiplied for PREMUL_SUM. Runs on the current
/// (communication) stream.
at::Tensor reductionInput(const at::Tensor& t, const ReduceOp& op, bool may_alias) {
  at::ScalarType wire = wireDtype(t.scalar_type());
  bool premul = op.op_ == ReduceOp::PREMUL_SUM;
  if (may_alias && !premul && t.scalar_type() == wire && t.is_contiguous()) return t.view({-1});
  at::Tensor flat = at::empty({t.numel()}, t.options().dtype(wire));
  flat.view(t.sizes()).copy_(t);
  if (premul) {
    auto* factor = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
    TORCH_CHECK(factor != nullptr, "maia c10d: ReduceOp.PREMUL_SUM without its factor");
    if (factor->tensor_factor.defined())
      flat.mul_(factor->tensor_factor.to(flat.options()));
    else
      flat.mul_(factor->double_factor);
  }
  return flat;
}

/// Where a reduction's result lands for t: t itself when it can, else a temporary.
at::Tensor reductionOutput(const at::Tensor& t) {
  at::ScalarType wire = wireDtype(t.scalar_type());
  if (t.scalar_type() == wire && t.is_contiguous()) return t.view({-1});
  return at::empty({t.numel()}, t.options().dtype(wire));
}

/// After the exchange: AVG's division, then the copy into t unless flat is t.
void finishReduction(Launch& launch, const at::Tensor& t, const at::Tensor& flat,
                     const ReduceOp& op, int size) {
  bool average = op.op_ == ReduceOp::AVG;
  bool alias = flat.is_alias_of(t);
  if (alias && !average) return;
  launch.after.push_back([t, flat, average, alias, size] {
    if (average) {
      if (at::isFloatingType(flat.scalar_type()))
        flat.div_(size);
      else
        flat.div_(size, "trunc");
    }
    if (!alias) t.copy_(flat.view(t.sizes()));
  });
}

/// t as a flat buffer to send: itself when contiguous, else a contiguous copy.
at::Tensor sendBuffer(const at::Tensor& t) {
  return t.is_contiguous() ? t.view({-1}) : t.contiguous().view({-1});
}

/// A flat buffer to receive t's elements: t itself when contiguous.
at::Tensor recvBuffer(const at::Tensor& t) {
  return t.is_contiguous() ? t.view({-1}) : at::empty({t.numel()}, t.options());
}

/// After the exchange, copies flat into t unless flat is t.
void copyBack(Launch& launch, const at::Tensor& t, const at::Tensor& flat) {
  if (flat.is_alias_of(t)) return;
  launch.after.push_back([t, flat] { t.copy_(flat.view(t.sizes())); });
}

/// After the exchange, copies slice i of flat into targets[i].
void copyBackSlices(Launch& launch, const std::vector<at::Tensor>& targets,
                    const at::Tensor& flat) {
  launch.after.push_back([targets, flat] {
    int64_t offset = 0;
    for (const auto& t : targets) {
      t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  });
}

/// One flat buffer of the tensors, back to back.
at::Tensor concat(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flats;
  flats.reserve(tensors.size());
  for (const auto& t : tensors) flats.push_back(t.reshape({-1}));
  return at::cat(flats);
}

void keepAlive(const at::Tensor& t, const c10::Stream& stream) {
  const c10::DataPtr& data = t.storage().data_ptr();
  if (data.get() != nullptr) getMaiaCachingAllocator()->recordStream(data, stream);
}

}  // namespace

struct MaiaBackend::Pending {
  Pending() = default;
  Pending(const Pending&) = delete;
  Pending& operator=(const Pending&) = delete;
  /// A launch abandoned by an error still releases its staging buffers the
  /// safe way (recorded on the stream that may still copy into them).
  ~Pending() {
    for (auto& release : launch.release) {
      try {
        release();
      } catch (...) {
      }
    }
  }

  Launch launch;
  std::shared_ptr<LaunchEnd> end;
  Transport* transport = nullptr;
  std::vector<c10::intrusive_ptr<MaiaWork>> works;
};

/// One collective call: orders the communication stream after the caller's
/// stream, makes it current while the call enqueues, and ends with the Work.
class MaiaBackend::Call {
 public:
  /// timeout: the call's own (its options'), or kUnsetTimeout for the group's.
  Call(MaiaBackend& backend, OpType op, c10::DeviceIndex device,
       std::chrono::milliseconds timeout = c10d::kUnsetTimeout)
      : backend_(backend), op_(op) {
    const bool own_timeout = timeout != c10d::kUnsetTimeout;
    TORCH_CHECK(!own_timeout || timeout.count() > 0, "maia c10d: ", c10d::opTypeToString(op),
                " got a timeout of ", timeout.count(),
                " ms; give a positive one, or none for the process group's");
    backend.throwIfFailed(op);
    if (backend.coalescing_) {
      if (!backend.group_) backend.group_ = backend.newPending(OpType::COALESCED, device);
      pending_ = backend.group_.get();
      TORCH_CHECK(pending_->launch.device == device,
                  "maia c10d: a coalescing group takes the tensors of one device; it has maia:",
                  static_cast<int>(pending_->launch.device), ", this ",
                  c10d::opTypeToString(op), " maia:", static_cast<int>(device));
    } else {
      owned_ = backend.newPending(op, device);
      pending_ = owned_.get();
    }
    if (own_timeout) {
      // A coalescing group ends within the shortest timeout its calls gave.
      LaunchEnd& end = *pending_->end;
      end.timeout = end.call_timeout ? std::min(end.timeout, timeout) : timeout;
      end.call_timeout = true;
    }
    pending_->launch.timeout = own_timeout ? timeout : backend.timeout_.load();
    orderAfterCaller(device, pending_->launch.stream);
    guard_.emplace(pending_->launch.stream);
  }

  Launch& launch() { return pending_->launch; }
  Transport& transport() { return *pending_->transport; }
  int rank() const { return backend_.getRank(); }
  int size() const { return backend_.getSize(); }

  /// Keeps the callers' tensors' memory from reuse until the stream is past them.
  void keep(const std::vector<at::Tensor>& tensors) {
    for (const auto& t : tensors) keepAlive(t, pending_->launch.stream);
  }

  c10::intrusive_ptr<c10d::Work> finish(std::vector<at::Tensor> outputs, bool blocking = false,
                                        std::shared_ptr<std::atomic<int>> source = nullptr) {
    keep(outputs);
    auto work = c10::make_intrusive<MaiaWork>(rank(), op_, pending_->launch.seq, pending_->end,
                                              std::move(outputs), blocking);
    if (source) work->setSource(std::move(source));
    pending_->works.push_back(work);
    if (owned_) backend_.flush(*owned_);
    return work;
  }

 private:
  MaiaBackend& backend_;
  OpType op_;
  std::unique_ptr<Pending> owned_;
  Pending* pending_ = nullptr;
  std::optional<c10::StreamGuard> guard_;
};

MaiaBackend::MaiaBackend(c10::intrusive_ptr<c10d::Backend> gloo,
                         c10::intrusive_ptr<c10d::Store> store, std::chrono::milliseconds timeout,
                         std::string group_name, std::vector<std::string> hosts,
                         c10::intrusive_ptr<c10d::Backend> leaders, c10::DeviceIndex device)
    : c10d::Backend(gloo->getRank(), gloo->getSize()),
      gloo_(gloo),
      store_(store),
      gloo_transport_(std::move(gloo)),
      timeout_(timeout),
      group_name_(std::move(group_name)),
      device_(device) {
  TORCH_CHECK(static_cast<int>(hosts.size()) == getSize(), "maia c10d: got ", hosts.size(),
              " host names for a group of ", getSize());
  host_ = hosts[getRank()];
  std::vector<int> ranks(getSize());
  std::iota(ranks.begin(), ranks.end(), 0);
  gloo_transport_.trackProgress(std::make_shared<ExchangeProgress>(
      store, "maia_gloo_progress/flat/", getRank(), std::move(ranks)));
  setUpTransports(*store, hosts, std::move(leaders), /*hierarchical=*/true);
}

namespace {

bool glooOnly() {
  const char* value = std::getenv("MAIA_DIST_TRANSPORT");
  if (value == nullptr || std::strcmp(value, "auto") == 0) return false;
  TORCH_CHECK(std::strcmp(value, "gloo") == 0, "maia c10d: MAIA_DIST_TRANSPORT='", value,
              "' is not 'auto' (IPC within a host, Gloo between hosts) or 'gloo'");
  return true;
}

/// Ranks per host if the group spans hosts that hold contiguous blocks of
/// equal size, else 0. Every rank computes it from the same list (and
/// torch_maia/distributed.py the same way, to make the leaders' group).
int hostBlock(const std::vector<std::string>& hosts) {
  const int size = static_cast<int>(hosts.size());
  const int block = static_cast<int>(std::count(hosts.begin(), hosts.end(), hosts[0]));
  if (block == size || size % block != 0) return 0;
  std::vector<std::string> distinct(hosts);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (static_cast<int>(distinct.size()) != size / block) return 0;
  for (int r = 0; r < size; ++r)
    if (hosts[r] != hosts[r - r % block]) return 0;
  return block;
}

}  // namespace

void MaiaBackend::setUpTransports(c10d::Store& group_store, const std::vector<std::string>& hosts,
                                  c10::intrusive_ptr<c10d::Backend> leaders_gloo,
                                  bool hierarchical) {
  const int rank = getRank(), size = getSize();
  if (size < 2 || device_ < 0 || glooOnly()) return;
  auto store = c10::make_intrusive<c10d::PrefixStore>(
      "maia_ipc/", c10::intrusive_ptr<c10d::Store>::reclaim_copy(&group_store));
  std::vector<int> mine;
  for (int r = 0; r < size; ++r)
    if (hosts[r] == host_) mine.push_back(r);
  if (static_cast<int>(mine.size()) == size) {
    ipc_ = std::make_unique<IpcTransport>(*store, "flat/", rank, mine, device_);
    device_transport_ = ipc_.get();
    return;
  }
  const int block = hostBlock(hosts);
  if (block == 0 || !hierarchical) {
    TORCH_WARN_ONCE("maia c10d: process group '", group_name_, "' spans hosts ",
                    block == 0 ? "in blocks of unequal or non-contiguous ranks"
                               : "and was split from another group",
                    ": every collective goes through Gloo");
    return;
  }
  const int host = rank / block, local_rank = rank % block;
  TORCH_CHECK((local_rank == 0) == static_cast<bool>(leaders_gloo), "maia c10d: rank ", rank,
              (local_rank == 0 ? " leads its host but got no" : " got a"),
              " Gloo group of the hosts' leaders");
  std::unique_ptr<IpcTransport> local;
  if (block > 1)
    local = std::make_unique<IpcTransport>(*store,
                                           "host" + std::to_string(host) + "/", local_rank,
                                           mine, device_);
  std::unique_ptr<GlooTransport> leaders;
  if (leaders_gloo) {
    leaders = std::make_unique<GlooTransport>(std::move(leaders_gloo));
    std::vector<int> leader_ranks;
    for (int h = 0; h < size / block; ++h) leader_ranks.push_back(h * block);
    leaders->trackProgress(std::make_shared<ExchangeProgress>(
        store_, "maia_gloo_progress/leaders/", host, std::move(leader_ranks)));
  }
  hier_ = std::make_unique<HierTransport>(gloo_transport_, std::move(local), std::move(leaders),
                                          host, size / block, local_rank, block);
  device_transport_ = hier_.get();
}

std::map<std::string, uint64_t> MaiaBackend::launchCounts() const {
  std::map<std::string, uint64_t> counts;
  counts[device_transport_->name()] += launches_device_.load();
  counts[gloo_transport_.name()] += launches_gloo_.load();
  counts["gloo_operations"] = gloo_transport_.operations();
  if (ipc_) {
    counts["ipc_zero_copy"] = ipc_->zeroCopyLaunches();
    counts["ipc_peer_buffers_opened"] = ipc_->peerBuffersOpened();
  }
  return counts;
}

MaiaBackend::~MaiaBackend() = default;

void MaiaBackend::setGroupUid(const std::string& pg_uid) {
  c10d::Backend::setGroupUid(pg_uid);
  group_name_ = pg_uid;
}

c10::intrusive_ptr<c10d::Backend::Options> MaiaBackend::getBackendOptions() {
  auto options = c10::make_intrusive<MaiaOptions>(timeout_.load());
  options->group_name = group_name_;
  return options;
}

Transport& MaiaBackend::transportFor(OpType /*op*/, c10::DeviceIndex device) {
  // The device transports take every collective (forwarding to Gloo what
  // they do not move themselves), so a coalesced group is one launch.
  if (device == device_) {
    ++launches_device_;
    return *device_transport_;
  }
  ++launches_gloo_;
  return gloo_transport_;
}

std::unique_ptr<MaiaBackend::Pending> MaiaBackend::newPending(OpType op, c10::DeviceIndex device) {
  auto pending = std::make_unique<Pending>();
  Launch& launch = pending->launch;
  launch.device = device;
  launch.stream = commStream(device);
  launch.op = op;
  launch.seq = ++seq_;
  launch.label = c10::str(c10d::opTypeToString(op), " (sequence number ", launch.seq,
                          ") of process group '", group_name_, "' on rank ", getRank(), " of ",
                          getSize());
  launch.timeout = timeout_.load();
  launch.status = std::make_shared<LaunchStatus>(group_status_);
  pending->end = std::make_shared<LaunchEnd>(device, launch.status);
  pending->end->label = launch.label;
  pending->end->timeout = launch.timeout;
  pending->transport = &transportFor(op, device);
  return pending;
}

void MaiaBackend::flush(Pending& pending) {
  Launch& launch = pending.launch;
  c10::StreamGuard guard(launch.stream);
  pending.transport->exchange(launch);
  for (auto& step : launch.after) step();
  launch.after.clear();
  MAIA_CHECK(maiaEventRecord(pending.end->event, driverStream(launch.stream)));
  pending.end->recorded.store(true, std::memory_order_release);
  // Completed now, in stream order: the future records an event on the
  // (current) communication stream, and whoever waits on it or reads its
  // value has its own stream wait for that event, as with NCCL's futures.
  for (auto& work : pending.works) work->future()->markCompleted(c10::IValue(work->outputs()));
  for (auto& release : launch.release) release();
  launch.release.clear();
}

void MaiaBackend::throwIfFailed(OpType op) const {
  if (!group_status_->failed()) return;
  C10_THROW_ERROR(DistBackendError,
                  c10::str("maia c10d: cannot run ", c10d::opTypeToString(op),
                           ": an earlier collective of this process group failed: ",
                           group_status_->message()));
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                      const c10d::BroadcastOptions& opts) {
  auto device = checkTensors({&tensors}, "broadcast");
  Call call(*this, OpType::BROADCAST, device, opts.timeout);
  call.keep(tensors);
  for (const auto& t : tensors) {
    bool root = getRank() == opts.rootRank;
    at::Tensor flat = root ? sendBuffer(t) : recvBuffer(t);
    call.transport().broadcast(call.launch(), flat, static_cast<int>(opts.rootRank));
    if (!root) copyBack(call.launch(), t, flat);
  }
  return call.finish(tensors);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::allreduceInPlace(
    std::vector<at::Tensor>& tensors, const ReduceOp& reduce_op, OpType op_type, const char* name,
    std::chrono::milliseconds timeout) {
  auto device = checkTensors({&tensors}, name);
  auto ops = wireOps(tensors, reduce_op, name);
  Call call(*this, op_type, device, timeout);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    at::Tensor flat = reductionInput(t, reduce_op, /*may_alias=*/true);
    call.transport().allreduce(call.launch(), flat, ops[i]);
    finishReduction(call.launch(), t, flat, reduce_op, getSize());
  }
  return call.finish(tensors);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                      const c10d::AllreduceOptions& opts) {
  return allreduceInPlace(tensors, opts.reduceOp, OpType::ALLREDUCE, "allreduce", opts.timeout);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  // One launch: the exchanges of all tensors run in one host function.
  return allreduceInPlace(tensors, opts.reduceOp, OpType::ALLREDUCE_COALESCED,
                          "allreduce_coalesced", opts.timeout);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::reduce(std::vector<at::Tensor>& tensors,
                                                   const c10d::ReduceOptions& opts) {
  auto device = checkTensors({&tensors}, "reduce");
  auto ops = wireOps(tensors, opts.reduceOp, "reduce");
  Call call(*this, OpType::REDUCE, device, opts.timeout);
  call.keep(tensors);
  bool root = getRank() == opts.rootRank;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    auto op = ops[i];
    // Only the root's tensor changes: elsewhere the transport gets a copy.
    at::Tensor flat = reductionInput(t, opts.reduceOp, /*may_alias=*/root);
    call.transport().reduce(call.launch(), flat, static_cast<int>(opts.rootRank), op);
    if (root) finishReduction(call.launch(), t, flat, opts.reduceOp, getSize());
  }
  return call.finish(tensors);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                      std::vector<at::Tensor>& inputs,
                                                      const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(inputs.size() == 1 && outputs.size() == 1,
              "maia c10d: allgather takes one input tensor and one list of outputs");
  auto device = checkTensors({&inputs, &outputs[0]}, "allgather");
  const at::Tensor& input = inputs[0];
  TORCH_CHECK(static_cast<int>(outputs[0].size()) == getSize(), "maia c10d: allgather needs ",
              getSize(), " output tensors (one per rank), got ", outputs[0].size());
  for (const auto& out : outputs[0]) {
    checkSameDtype(input, out, "allgather");
    TORCH_CHECK(out.numel() == input.numel(), "maia c10d: allgather outputs must have the "
                "input's ", input.numel(), " elements, got one of ", out.numel());
  }
  Call call(*this, OpType::ALLGATHER, device, opts.timeout);
  call.keep(inputs);
  at::Tensor gathered = at::empty({input.numel() * getSize()}, input.options());
  call.transport().allgather(call.launch(), sendBuffer(input), gathered);
  copyBackSlices(call.launch(), outputs[0], gathered);
  return call.finish(outputs[0]);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                            const c10d::AllgatherOptions& opts) {
  std::vector<at::Tensor> outputs{output}, inputs{input};
  auto device = checkTensors({&inputs, &outputs}, "all_gather_into_tensor");
  checkSameDtype(input, output, "all_gather_into_tensor");
  TORCH_CHECK(output.numel() == input.numel() * getSize(),
              "maia c10d: all_gather_into_tensor needs an output of ", getSize(), " x ",
              input.numel(), " elements, got ", output.numel());
  Call call(*this, OpType::_ALLGATHER_BASE, device, opts.timeout);
  call.keep(inputs);
  at::Tensor flat = recvBuffer(output);
  call.transport().allgather(call.launch(), sendBuffer(input), flat);
  copyBack(call.launch(), output, flat);
  return call.finish(outputs);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(output_lists.size() == static_cast<size_t>(getSize()),
              "maia c10d: allgather_coalesced needs one output list per rank");
  // Each rank's list mirrors the inputs: gather input i into output_lists[r][i].
  std::vector<at::Tensor> all_outputs;
  auto device = checkTensors({&inputs}, "allgather_coalesced");
  for (auto& list : output_lists) {
    TORCH_CHECK(list.size() == inputs.size(),
                "maia c10d: allgather_coalesced output lists must mirror the inputs");
    checkTensors({&list}, "allgather_coalesced", device);
    all_outputs.insert(all_outputs.end(), list.begin(), list.end());
  }
  Call call(*this, OpType::ALLGATHER_COALESCED, device, opts.timeout);
  call.keep(inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<at::Tensor> targets;
    for (auto& list : output_lists) {
      checkSameDtype(inputs[i], list[i], "allgather_coalesced");
      TORCH_CHECK(list[i].numel() == inputs[i].numel(),
                  "maia c10d: allgather_coalesced output sizes must match the inputs");
      targets.push_back(list[i]);
    }
    at::Tensor gathered = at::empty({inputs[i].numel() * getSize()}, inputs[i].options());
    call.transport().allgather(call.launch(), sendBuffer(inputs[i]), gathered);
    copyBackSlices(call.launch(), targets, gathered);
  }
  return call.finish(all_outputs);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "maia c10d: allgather_into_tensor_coalesced "
              "needs as many outputs as inputs");
  auto device = checkTensors({&inputs, &outputs}, "allgather_into_tensor_coalesced");
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkSameDtype(inputs[i], outputs[i], "allgather_into_tensor_coalesced");
    TORCH_CHECK(outputs[i].numel() == inputs[i].numel() * getSize(),
                "maia c10d: allgather_into_tensor_coalesced output ", i, " needs ", getSize(),
                " x ", inputs[i].numel(), " elements, got ", outputs[i].numel());
  }
  Call call(*this, OpType::COALESCED, device, opts.timeout);
  call.keep(inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    at::Tensor flat = recvBuffer(outputs[i]);
    call.transport().allgather(call.launch(), sendBuffer(inputs[i]), flat);
    copyBack(call.launch(), outputs[i], flat);
  }
  return call.finish(outputs);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                   std::vector<at::Tensor>& inputs,
                                                   const c10d::GatherOptions& opts) {
  TORCH_CHECK(inputs.size() == 1, "maia c10d: gather takes one input tensor");
  bool root = getRank() == opts.rootRank;
  auto device = checkTensors({&inputs}, "gather");
  const at::Tensor& input = inputs[0];
  std::vector<at::Tensor> targets;
  if (root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                "maia c10d: gather needs ", getSize(), " output tensors on the root");
    checkTensors({&outputs[0]}, "gather", device);
    for (const auto& out : outputs[0]) {
      checkSameDtype(input, out, "gather");
      TORCH_CHECK(out.numel() == input.numel(),
                  "maia c10d: gather outputs must have the input's size");
    }
    targets = outputs[0];
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(),
                "maia c10d: gather takes output tensors only on the root");
  }
  Call call(*this, OpType::GATHER, device, opts.timeout);
  call.keep(inputs);
  at::Tensor gathered =
      root ? at::empty({input.numel() * getSize()}, input.options()) : at::Tensor();
  call.transport().gather(call.launch(), sendBuffer(input), gathered,
                          static_cast<int>(opts.rootRank));
  if (root) copyBackSlices(call.launch(), targets, gathered);
  return call.finish(targets);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::scatter(std::vector<at::Tensor>& outputs,
                                                    std::vector<std::vector<at::Tensor>>& inputs,
                                                    const c10d::ScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == 1, "maia c10d: scatter takes one output tensor");
  bool root = getRank() == opts.rootRank;
  auto device = checkTensors({&outputs}, "scatter");
  const at::Tensor& output = outputs[0];
  if (root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
                "maia c10d: scatter needs ", getSize(), " input tensors on the root");
    checkTensors({&inputs[0]}, "scatter", device);
    for (const auto& in : inputs[0]) {
      checkSameDtype(in, output, "scatter");
      TORCH_CHECK(in.numel() == output.numel(),
                  "maia c10d: scatter inputs must have the output's size");
    }
  } else {
    TORCH_CHECK(inputs.empty() || inputs[0].empty(),
                "maia c10d: scatter takes input tensors only on the root");
  }
  Call call(*this, OpType::SCATTER, device, opts.timeout);
  if (root) call.keep(inputs[0]);
  at::Tensor source = root ? concat(inputs[0]) : at::Tensor();
  at::Tensor flat = recvBuffer(output);
  call.transport().scatter(call.launch(), source, flat, static_cast<int>(opts.rootRank));
  copyBack(call.launch(), output, flat);
  return call.finish(outputs);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == 1 && inputs.size() == 1,
              "maia c10d: reduce_scatter takes one output and one list of inputs");
  auto device = checkTensors({&outputs, &inputs[0]}, "reduce_scatter");
  const at::Tensor& output = outputs[0];
  TORCH_CHECK(static_cast<int>(inputs[0].size()) == getSize(), "maia c10d: reduce_scatter needs ",
              getSize(), " input tensors (one per rank), got ", inputs[0].size());
  for (const auto& in : inputs[0]) {
    checkSameDtype(in, output, "reduce_scatter");
    TORCH_CHECK(in.numel() == output.numel(),
                "maia c10d: reduce_scatter inputs must have the output's size");
  }
  auto op = wireOp(opts.reduceOp, output.scalar_type(), "reduce_scatter");
  Call call(*this, OpType::REDUCE_SCATTER, device, opts.timeout);
  call.keep(inputs[0]);
  at::Tensor source = reductionInput(concat(inputs[0]), opts.reduceOp, /*may_alias=*/true);
  at::Tensor flat = reductionOutput(output);
  call.transport().reduceScatter(call.launch(), source, flat, op);
  finishReduction(call.launch(), output, flat, opts.reduceOp, getSize());
  return call.finish(outputs);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  std::vector<at::Tensor> outputs{output}, inputs{input};
  auto device = checkTensors({&outputs, &inputs}, "reduce_scatter_tensor");
  checkSameDtype(input, output, "reduce_scatter_tensor");
  TORCH_CHECK(input.numel() == output.numel() * getSize(),
              "maia c10d: reduce_scatter_tensor needs an input of ", getSize(), " x ",
              output.numel(), " elements, got ", input.numel());
  auto op = wireOp(opts.reduceOp, output.scalar_type(), "reduce_scatter_tensor");
  Call call(*this, OpType::_REDUCE_SCATTER_BASE, device, opts.timeout);
  call.keep(inputs);
  // The input is not the caller's to overwrite: the transport gets a copy
  // unless it is already in the wire dtype and contiguous (it only reads it).
  at::Tensor source = reductionInput(input, opts.reduceOp, /*may_alias=*/true);
  at::Tensor flat = reductionOutput(output);
  call.transport().reduceScatter(call.launch(), source, flat, op);
  finishReduction(call.launch(), output, flat, opts.reduceOp, getSize());
  return call.finish(outputs);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "maia c10d: reduce_scatter_tensor_coalesced "
              "needs as many outputs as inputs");
  auto device = checkTensors({&outputs, &inputs}, "reduce_scatter_tensor_coalesced");
  std::vector<ReduceOp::RedOpType> ops;
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkSameDtype(inputs[i], outputs[i], "reduce_scatter_tensor_coalesced");
    TORCH_CHECK(inputs[i].numel() == outputs[i].numel() * getSize(),
                "maia c10d: reduce_scatter_tensor_coalesced input ", i, " needs ", getSize(),
                " x ", outputs[i].numel(), " elements, got ", inputs[i].numel());
    ops.push_back(wireOp(opts.reduceOp, outputs[i].scalar_type(),
                         "reduce_scatter_tensor_coalesced"));
  }
  Call call(*this, OpType::COALESCED, device, opts.timeout);
  call.keep(inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    at::Tensor source = reductionInput(inputs[i], opts.reduceOp, /*may_alias=*/true);
    at::Tensor flat = reductionOutput(outputs[i]);
    call.transport().reduceScatter(call.launch(), source, flat, ops[i]);
    finishReduction(call.launch(), outputs[i], flat, opts.reduceOp, getSize());
  }
  return call.finish(outputs);
}

namespace {

/// Bytes per dim-0 row of t.
int64_t rowBytes(const at::Tensor& t) {
  int64_t elements = 1;
  for (int64_t d = 1; d < t.dim(); ++d) elements *= t.size(d);
  return elements * static_cast<int64_t>(t.element_size());
}

/// Split sizes in rows (equal when splits is empty) as bytes per peer.
std::vector<int64_t> splitBytes(const at::Tensor& t, const std::vector<int64_t>& splits, int size,
                                const char* what) {
  TORCH_CHECK(t.dim() >= 1, "maia c10d: all_to_all_single needs tensors of at least one "
              "dimension");
  std::vector<int64_t> bytes(size);
  if (splits.empty()) {
    TORCH_CHECK(t.size(0) % size == 0, "maia c10d: all_to_all_single ", what, " of ", t.size(0),
                " rows does not split evenly over ", size, " ranks; pass split sizes");
    for (auto& b : bytes) b = t.size(0) / size * rowBytes(t);
    return bytes;
  }
  TORCH_CHECK(static_cast<int>(splits.size()) == size, "maia c10d: all_to_all_single needs ",
              size, " ", what, " split sizes, got ", splits.size());
  int64_t rows = std::accumulate(splits.begin(), splits.end(), int64_t{0});
  TORCH_CHECK(rows == t.size(0), "maia c10d: all_to_all_single ", what, " split sizes add up to ",
              rows, " rows, the tensor has ", t.size(0));
  for (int i = 0; i < size; ++i) {
    TORCH_CHECK(splits[i] >= 0, "maia c10d: negative split size");
    bytes[i] = splits[i] * rowBytes(t);
  }
  return bytes;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> MaiaBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                          std::vector<int64_t>& output_split_sizes,
                                                          std::vector<int64_t>& input_split_sizes,
                                                          const c10d::AllToAllOptions& opts) {
  std::vector<at::Tensor> outputs{output}, inputs{input};
  auto device = checkTensors({&outputs, &inputs}, "all_to_all_single");
  checkSameDtype(input, output, "all_to_all_single");
  auto in_bytes = splitBytes(input, input_split_sizes, getSize(), "input");
  auto out_bytes = splitBytes(output, output_split_sizes, getSize(), "output");
  // No splits from the caller means the same on every rank: equal splits,
  // which the transports may move without agreeing on sizes first.
  if (input_split_sizes.empty() && output_split_sizes.empty()) {
    TORCH_CHECK(input.numel() == output.numel(), "maia c10d: all_to_all_single without split "
                "sizes needs input and output of the same size, got ", input.numel(), " and ",
                output.numel());
    in_bytes.clear();
    out_bytes.clear();
  }
  Call call(*this, OpType::ALLTOALL_BASE, device, opts.timeout);
  call.keep(inputs);
  at::Tensor flat = recvBuffer(output);
  call.transport().alltoall(call.launch(), sendBuffer(input), flat, std::move(in_bytes),
                            std::move(out_bytes));
  copyBack(call.launch(), output, flat);
  return call.finish(outputs);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllToAllOptions& opts) {
  TORCH_CHECK(static_cast<int>(outputs.size()) == getSize() &&
                  static_cast<int>(inputs.size()) == getSize(),
              "maia c10d: all_to_all needs ", getSize(), " input and output tensors");
  auto device = checkTensors({&outputs, &inputs}, "all_to_all");
  std::vector<int64_t> in_bytes, out_bytes;
  int64_t out_elements = 0;
  for (int i = 0; i < getSize(); ++i) {
    checkSameDtype(inputs[0], inputs[i], "all_to_all");
    checkSameDtype(inputs[0], outputs[i], "all_to_all");
    in_bytes.push_back(static_cast<int64_t>(inputs[i].nbytes()));
    out_bytes.push_back(static_cast<int64_t>(outputs[i].nbytes()));
    out_elements += outputs[i].numel();
  }
  Call call(*this, OpType::ALLTOALL, device, opts.timeout);
  call.keep(inputs);
  at::Tensor source = concat(inputs);
  at::Tensor received = at::empty({out_elements}, outputs[0].options());
  call.transport().alltoall(call.launch(), source, received, std::move(in_bytes),
                            std::move(out_bytes));
  copyBackSlices(call.launch(), outputs, received);
  return call.finish(outputs);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::send(std::vector<at::Tensor>& tensors, int dst_rank,
                                                 int tag) {
  TORCH_CHECK(tensors.size() == 1, "maia c10d: send takes one tensor");
  auto device = checkTensors({&tensors}, "send");
  Call call(*this, OpType::SEND, device);
  call.keep(tensors);
  call.transport().send(call.launch(), sendBuffer(tensors[0]), dst_rank, tag);
  return call.finish({});
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::recv(std::vector<at::Tensor>& tensors, int src_rank,
                                                 int tag) {
  TORCH_CHECK(tensors.size() == 1, "maia c10d: recv takes one tensor");
  auto device = checkTensors({&tensors}, "recv");
  Call call(*this, OpType::RECV, device);
  at::Tensor flat = recvBuffer(tensors[0]);
  call.transport().recv(call.launch(), flat, src_rank, tag);
  copyBack(call.launch(), tensors[0], flat);
  return call.finish(tensors);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::recvAnysource(std::vector<at::Tensor>& tensors,
                                                          int tag) {
  TORCH_CHECK(tensors.size() == 1, "maia c10d: recv takes one tensor");
  auto device = checkTensors({&tensors}, "recv");
  Call call(*this, OpType::RECVANYSOURCE, device);
  auto source = std::make_shared<std::atomic<int>>(-1);
  at::Tensor flat = recvBuffer(tensors[0]);
  call.transport().recvAnysource(call.launch(), flat, tag, source);
  copyBack(call.launch(), tensors[0], flat);
  return call.finish(tensors, /*blocking=*/true, source);
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::barrier(const c10d::BarrierOptions& opts) {
  c10::DeviceIndex device = -1;
  if (opts.device && opts.device->type() == c10::DeviceType::PrivateUse1)
    device = opts.device->index();
  if (device < 0) device = currentStream().device_index();
  Call call(*this, OpType::BARRIER, device, opts.timeout);
  call.transport().barrier(call.launch());
  return call.finish({}, /*blocking=*/true);
}

void MaiaBackend::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  const bool own_timeout = opts.timeout != c10d::kUnsetTimeout;
  TORCH_CHECK(!own_timeout || opts.timeout.count() > 0,
              "maia c10d: monitored_barrier got a timeout of ", opts.timeout.count(),
              " ms; give a positive one, or none for the process group's");
  const uint64_t number = ++monitored_barriers_;
  auto prefix = [](uint64_t n) { return c10::str("maia_monitored_barrier/", n, "/"); };
  MonitoredBarrierArgs args;
  args.label = c10::str("monitored_barrier (number ", number, ") of process group '",
                        group_name_, "'");
  args.key_prefix = prefix(number);
  args.previous_key_prefix = number > 1 ? prefix(number - 1) : std::string();
  args.rank = getRank();
  args.size = getSize();
  const std::chrono::milliseconds group_timeout = timeout_.load();
  args.timeout = own_timeout ? opts.timeout : group_timeout;
  args.verdict_timeout = std::max(args.timeout, group_timeout);
  args.wait_all_ranks = wait_all_ranks;
  distributed::monitoredBarrier(*store_, args);
}

void MaiaBackend::startCoalescing() {
  TORCH_CHECK(!coalescing_, "maia c10d: startCoalescing inside a coalescing group");
  coalescing_ = true;
}

c10::intrusive_ptr<c10d::Work> MaiaBackend::endCoalescing() {
  TORCH_CHECK(coalescing_, "maia c10d: endCoalescing without startCoalescing");
  coalescing_ = false;
  std::unique_ptr<Pending> group = std::move(group_);
  if (!group) group = newPending(OpType::COALESCED, currentStream().device_index());
  std::vector<at::Tensor> outputs;
  for (const auto& work : group->works)
    outputs.insert(outputs.end(), work->outputs().begin(), work->outputs().end());
  auto work = c10::make_intrusive<MaiaWork>(getRank(), OpType::COALESCED, group->launch.seq,
                                            group->end, std::move(outputs), false);
  group->works.push_back(work);
  flush(*group);
  return work;
}

c10::intrusive_ptr<c10d::Backend> MaiaBackend::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                     const std::vector<int>& ranks,
                                                     const c10::intrusive_ptr<Options>& opts) {
  auto gloo_split = gloo_->split(c10::make_intrusive<c10d::PrefixStore>("gloo/", store), ranks,
                                 gloo_->getBackendOptions());
  if (!gloo_split) return nullptr;
  std::string name = opts ? opts->group_name : std::string();
  auto child = c10::make_intrusive<MaiaBackend>(
      std::move(gloo_split), store, opts ? opts->timeout : timeout_.load(), name,
      std::vector<std::string>(ranks.size(), host_), nullptr, -1);
  // The child's transports (its constructor had no host list: it exchanges
  // them here, and takes IPC only if its ranks share a host).
  child->device_ = device_;
  const int child_rank = child->getRank(), child_size = child->getSize();
  if (child_size >= 2 && device_ >= 0 && !glooOnly()) {
    auto hosts_store = c10::make_intrusive<c10d::PrefixStore>("maia_host/", store);
    hosts_store->set(std::to_string(child_rank), std::vector<uint8_t>(host_.begin(), host_.end()));
    std::vector<std::string> hosts(child_size);
    for (int r = 0; r < child_size; ++r) {
      auto bytes = hosts_store->get(std::to_string(r));
      hosts[r].assign(bytes.begin(), bytes.end());
    }
    child->setUpTransports(*store, hosts, nullptr, /*hierarchical=*/false);
  }
  return child;
}

}  // namespace torch_maia::distributed
