#include "GlooTransport.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "MaiaCheck.h"
#include "MaiaHostAllocator.h"
#include "MaiaStream.h"

namespace torch_maia::distributed {

void LaunchStatus::fail(std::string message) {
  if (parent_) parent_->fail(message);
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_.load()) return;  // the first failure is the cause
  message_ = std::move(message);
  failed_.store(true, std::memory_order_release);
}

bool LaunchStatus::failed() const { return failed_.load(std::memory_order_acquire); }

std::string LaunchStatus::message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return message_;
}

void LaunchStatus::setWaitingFor(std::string what, std::function<std::string()> absent) {
  if (parent_) parent_->setWaitingFor(what, absent);  // a sub-launch's (between hosts)
  std::lock_guard<std::mutex> lock(mutex_);
  waiting_for_ = std::move(what);
  absent_ = std::move(absent);
}

std::string LaunchStatus::waitingFor() const {
  std::string what;
  std::function<std::string()> absent;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    what = waiting_for_;
    absent = absent_;
  }
  const std::string who = absent ? absent() : "";  // outside the lock: store I/O
  return who.empty() ? what : what + "; " + who;
}

std::string describeReduction(const char* collective, int64_t numel, at::ScalarType dtype,
                              c10d::ReduceOp::RedOpType op) {
  static const char* const names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX",
                                      "BAND", "BOR", "BXOR", "PREMUL_SUM"};
  const char* name = static_cast<int>(op) < 9 ? names[static_cast<int>(op)] : "?";
  return c10::str(collective, " (", name, ") of ", numel, " ", dtype);
}

bool abortOnAsyncError() {
  static const bool abort = [] {
    const char* value = std::getenv("MAIA_DIST_ASYNC_ERROR_HANDLING");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return abort;
}

void failExchange(LaunchStatus& status, const std::string& label, const std::string& cause) {
  std::string message = label + " failed: " + cause;
  status.fail(message);
  if (!abortOnAsyncError()) return;
  std::fprintf(stderr,
               "[maia c10d] %s\n[maia c10d] tearing the process down so that no rank goes on "
               "with wrong data (MAIA_DIST_ASYNC_ERROR_HANDLING=0 keeps it running and raises "
               "the error from the group's next wait, barrier or collective)\n",
               message.c_str());
  std::fflush(stderr);
  std::abort();
}

namespace {

/// What the host function on the communication stream runs: the launch's
/// Gloo operations, all issued before any is waited for (a batch of sends
/// and receives must be posted together or two ranks could wait on each
/// other's first operation).
struct Exchange {
  c10::intrusive_ptr<c10d::Backend> gloo;
  /// The launch's signature (empty: not compared).
  std::string signature;
  std::vector<ExchangeStep> steps;
  std::vector<std::function<void()>> on_exchanged;
  std::shared_ptr<LaunchStatus> status;
  std::string label;
  /// For the signature check: the shortest timeout of the steps (each step
  /// waits with its own).
  std::chrono::milliseconds timeout;
  /// Where the ranks record their collective exchanges (null: not tracked,
  /// or a point-to-point launch), and this one's number.
  std::shared_ptr<ExchangeProgress> progress;
  uint64_t number = 0;
};

std::string describe(const std::exception& error) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error))
    return c10_error->what_without_backtrace();
  return error.what();
}

void fail(const Exchange& exchange, const std::string& cause) {
  std::string absent = exchange.progress ? exchange.progress->absent(exchange.number) : "";
  failExchange(*exchange.status, exchange.label, absent.empty() ? cause : cause + "; " + absent);
}

/// How long to wait for a Gloo collective that ends at timeout itself: a
/// wait that gave up first would leave the operation running on buffers the
/// stream then releases, and report "Operation timed out!" instead of
/// Gloo's own error; the margin only guards against a Gloo that never ends.
std::chrono::milliseconds backstop(std::chrono::milliseconds timeout) { return 2 * timeout; }

/// Bytes of a signature the ranks compare (longer ones are compared by
/// their first bytes and their length).
constexpr int64_t kSignatureBytes = 240;

/// Gathers every rank's signature: "" if they agree, else what differs.
/// Gloo moves whatever sizes it is given and tears the process down from its
/// transport thread when they differ, so the ranks agree first.
std::string disagreement(const Exchange& exchange) {
  const auto& gloo = exchange.gloo;
  const int size = gloo->getSize();
  std::string mine = exchange.signature;
  std::string tagged = c10::str(mine.size(), ":", mine);
  tagged.resize(kSignatureBytes, '\0');
  at::Tensor in = at::from_blob(tagged.data(), {kSignatureBytes}, at::kByte);
  at::Tensor all = at::empty({size * kSignatureBytes}, at::kByte);
  c10d::AllgatherOptions options;
  options.timeout = exchange.timeout;
  gloo->_allgather_base(all, in, options)->wait(backstop(exchange.timeout));
  const char* base = static_cast<const char*>(all.data_ptr());
  for (int peer = 0; peer < size; ++peer) {
    const char* theirs = base + peer * kSignatureBytes;
    if (std::memcmp(theirs, tagged.data(), kSignatureBytes) == 0) continue;
    std::string text(theirs, strnlen(theirs, kSignatureBytes));
    text = text.substr(std::min(text.find(':') + 1, text.size()));
    return c10::str("rank ", peer, " is at another step: it runs ", text, ", this rank ", mine);
  }
  return {};
}

void runExchange(void* user_data) {
  std::unique_ptr<Exchange> exchange(static_cast<Exchange*>(user_data));
  LaunchStatus& status = *exchange->status;
  std::function<std::string()> absent;
  if (exchange->progress) {
    exchange->progress->reached(exchange->number);
    absent = [progress = exchange->progress, number = exchange->number] {
      return progress->absent(number);
    };
  }
  try {
    if (!exchange->signature.empty()) {
      status.setWaitingFor("the other ranks to reach the same collective (through Gloo)", absent);
      std::string cause = disagreement(*exchange);
      if (!cause.empty()) return fail(*exchange, cause);
    }
    status.setWaitingFor("the other ranks to complete the exchange (through Gloo)", absent);
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    works.reserve(exchange->steps.size());
    for (auto& step : exchange->steps) works.push_back(step.issue(step.timeout));
    for (size_t i = 0; i < works.size(); ++i) {
      const ExchangeStep& step = exchange->steps[i];
      works[i]->wait(step.ends_at_timeout ? backstop(step.timeout) : step.timeout);
    }
    status.setWaitingFor("");
    for (auto& done : exchange->on_exchanged) done();
  } catch (const std::exception& error) {
    fail(*exchange, describe(error));
  } catch (...) {
    fail(*exchange, "unknown error");
  }
}

/// A pinned host buffer with buffer's dtype and length, as a CPU tensor that
/// does not own it; the launch releases the memory once everything is
/// enqueued, recorded on the stream so it is not reused before the stream
/// is past its last use. With download, the device-to-host copy is enqueued.
at::Tensor stage(Launch& launch, const at::Tensor& buffer, bool download) {
  size_t bytes = buffer.nbytes();
  c10::DataPtr data = getMaiaHostAllocator()->allocate(bytes == 0 ? 1 : bytes);
  void* ptr = data.get();
  void* context = data.get_context();
  at::Tensor host = at::from_blob(ptr, {buffer.numel()},
                                  at::TensorOptions().dtype(buffer.scalar_type()));
  if (download && bytes > 0)
    MAIA_CHECK(maiaMemcpyAsync(ptr, buffer.data_ptr(), bytes, maiaMemcpyDeviceToHost,
                               driverStream(launch.stream)));
  auto owner = std::make_shared<c10::DataPtr>(std::move(data));
  launch.release.push_back([owner, ptr, context, stream = launch.stream] {
    getMaiaHostAllocator()->record_event(ptr, context, stream);
    owner->clear();
  });
  return host;
}

/// Enqueues, after the exchange, the copy of host back into buffer.
void upload(Launch& launch, const at::Tensor& host, const at::Tensor& buffer) {
  size_t bytes = buffer.nbytes();
  if (bytes == 0) return;
  launch.after.push_back([host, buffer, bytes, stream = launch.stream] {
    MAIA_CHECK(maiaMemcpyAsync(buffer.data_ptr(), host.data_ptr(), bytes, maiaMemcpyHostToDevice,
                               driverStream(stream)));
  });
}

at::Tensor bytesOf(const at::Tensor& host) { return host.view(at::kByte); }

}  // namespace

GlooTransport::GlooTransport(c10::intrusive_ptr<c10d::Backend> gloo) : gloo_(std::move(gloo)) {}

// Every rank skips a collective whose buffers are empty everywhere (their
// sizes agree across ranks), so Gloo never sees an empty buffer it might refuse.

void GlooTransport::allreduce(Launch& launch, const at::Tensor& buffer,
                              c10d::ReduceOp::RedOpType op) {
  if (buffer.numel() == 0) return;
  sign(launch, describeReduction("allreduce", buffer.numel(), buffer.scalar_type(), op));
  at::Tensor host = stage(launch, buffer, true);
  addStep(launch, [gloo = gloo_, host, op](std::chrono::milliseconds timeout) {
    std::vector<at::Tensor> tensors{host};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp(op);
    options.timeout = timeout;
    return gloo->allreduce(tensors, options);
  });
  upload(launch, host, buffer);
}

void GlooTransport::broadcast(Launch& launch, const at::Tensor& buffer, int root) {
  if (buffer.numel() == 0) return;
  sign(launch,
       c10::str("broadcast of ", buffer.numel(), " ", buffer.scalar_type(), " from ", root));
  at::Tensor host = stage(launch, buffer, rank() == root);
  addStep(launch, [gloo = gloo_, host, root](std::chrono::milliseconds timeout) {
    std::vector<at::Tensor> tensors{bytesOf(host)};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    options.timeout = timeout;
    return gloo->broadcast(tensors, options);
  });
  if (rank() != root) upload(launch, host, buffer);
}

void GlooTransport::reduce(Launch& launch, const at::Tensor& buffer, int root,
                           c10d::ReduceOp::RedOpType op) {
  if (buffer.numel() == 0) return;
  sign(launch, describeReduction("reduce", buffer.numel(), buffer.scalar_type(), op) +
                   c10::str(" to ", root));
  at::Tensor host = stage(launch, buffer, true);
  addStep(launch, [gloo = gloo_, host, root, op](std::chrono::milliseconds timeout) {
    std::vector<at::Tensor> tensors{host};
    c10d::ReduceOptions options;
    options.rootRank = root;
    options.reduceOp = c10d::ReduceOp(op);
    options.timeout = timeout;
    return gloo->reduce(tensors, options);
  });
  if (rank() == root) upload(launch, host, buffer);
}

void GlooTransport::allgather(Launch& launch, const at::Tensor& input, const at::Tensor& output) {
  if (output.numel() == 0) return;
  sign(launch, c10::str("allgather of ", input.numel(), " ", input.scalar_type(), " per rank"));
  at::Tensor host_in = stage(launch, input, true);
  at::Tensor host_out = stage(launch, output, false);
  addStep(launch, [gloo = gloo_, host_in, host_out](std::chrono::milliseconds timeout) {
    at::Tensor in = bytesOf(host_in), out = bytesOf(host_out);
    c10d::AllgatherOptions options;
    options.timeout = timeout;
    return gloo->_allgather_base(out, in, options);
  });
  upload(launch, host_out, output);
}

void GlooTransport::gather(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                           int root) {
  if (input.numel() == 0) return;
  sign(launch, c10::str("gather of ", input.numel(), " ", input.scalar_type(), " to ", root));
  at::Tensor host_in = stage(launch, input, true);
  at::Tensor host_out = rank() == root ? stage(launch, output, false) : at::Tensor();
  addStep(launch, [gloo = gloo_, host_in, host_out, root,
                    size = size()](std::chrono::milliseconds timeout) {
    std::vector<at::Tensor> inputs{bytesOf(host_in)};
    std::vector<std::vector<at::Tensor>> outputs;
    if (host_out.defined()) outputs.push_back(bytesOf(host_out).chunk(size));
    c10d::GatherOptions options;
    options.rootRank = root;
    options.timeout = timeout;
    return gloo->gather(outputs, inputs, options);
  });
  if (rank() == root) upload(launch, host_out, output);
}

void GlooTransport::scatter(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                            int root) {
  if (output.numel() == 0) return;
  sign(launch, c10::str("scatter of ", output.numel(), " ", output.scalar_type(), " from ", root));
  at::Tensor host_in = rank() == root ? stage(launch, input, true) : at::Tensor();
  at::Tensor host_out = stage(launch, output, false);
  addStep(launch, [gloo = gloo_, host_in, host_out, root,
                    size = size()](std::chrono::milliseconds timeout) {
    std::vector<at::Tensor> outputs{bytesOf(host_out)};
    std::vector<std::vector<at::Tensor>> inputs;
    if (host_in.defined()) inputs.push_back(bytesOf(host_in).chunk(size));
    c10d::ScatterOptions options;
    options.rootRank = root;
    options.timeout = timeout;
    return gloo->scatter(outputs, inputs, options);
  });
  upload(launch, host_out, output);
}

void GlooTransport::reduceScatter(Launch& launch, const at::Tensor& input,
                                  const at::Tensor& output, c10d::ReduceOp::RedOpType op) {
  if (output.numel() == 0) return;
  sign(launch, describeReduction("reduce_scatter", output.numel(), output.scalar_type(), op) +
                   " per rank");
  at::Tensor host_in = stage(launch, input, true);
  at::Tensor host_out = stage(launch, output, false);
  addStep(launch, [gloo = gloo_, host_in, host_out, op](std::chrono::milliseconds timeout) {
    at::Tensor in = host_in, out = host_out;
    c10d::ReduceScatterOptions options;
    options.reduceOp = c10d::ReduceOp(op);
    options.timeout = timeout;
    return gloo->_reduce_scatter_base(out, in, options);
  });
  upload(launch, host_out, output);
}

void GlooTransport::alltoall(Launch& launch, const at::Tensor& input, const at::Tensor& output,
                             std::vector<int64_t> input_split_bytes,
                             std::vector<int64_t> output_split_bytes) {
  // Called even when this rank's buffers are empty: its peers' may not be.
  // Split sizes differ between ranks by design: only the step is compared.
  sign(launch, c10::str("alltoall of ", input.scalar_type()));
  at::Tensor host_in = stage(launch, input, true);
  at::Tensor host_out = stage(launch, output, false);
  addStep(launch, [gloo = gloo_, host_in, host_out, in_splits = std::move(input_split_bytes),
                   out_splits = std::move(output_split_bytes)](
                      std::chrono::milliseconds timeout) mutable {
    at::Tensor in = bytesOf(host_in), out = bytesOf(host_out);
    c10d::AllToAllOptions options;
    options.timeout = timeout;
    return gloo->alltoall_base(out, in, out_splits, in_splits, options);
  });
  upload(launch, host_out, output);
}

void GlooTransport::send(Launch& launch, const at::Tensor& buffer, int peer, int tag) {
  launch.point_to_point = true;
  if (buffer.numel() == 0) return;
  at::Tensor host = stage(launch, buffer, true);
  addStep(launch, [gloo = gloo_, host, peer, tag](std::chrono::milliseconds) {
    std::vector<at::Tensor> tensors{bytesOf(host)};
    return gloo->send(tensors, peer, tag);
  }, /*ends_at_timeout=*/false);
}

void GlooTransport::recv(Launch& launch, const at::Tensor& buffer, int peer, int tag) {
  launch.point_to_point = true;
  if (buffer.numel() == 0) return;
  at::Tensor host = stage(launch, buffer, false);
  addStep(launch, [gloo = gloo_, host, peer, tag](std::chrono::milliseconds) {
    std::vector<at::Tensor> tensors{bytesOf(host)};
    return gloo->recv(tensors, peer, tag);
  }, /*ends_at_timeout=*/false);
  upload(launch, host, buffer);
}

void GlooTransport::recvAnysource(Launch& launch, const at::Tensor& buffer, int tag,
                                  std::shared_ptr<std::atomic<int>> source) {
  launch.point_to_point = true;
  TORCH_CHECK(buffer.numel() > 0, "maia c10d: recv from any source needs a non-empty tensor");
  at::Tensor host = stage(launch, buffer, false);
  auto work = std::make_shared<c10::intrusive_ptr<c10d::Work>>();
  addStep(launch, [gloo = gloo_, host, tag, work](std::chrono::milliseconds) {
    std::vector<at::Tensor> tensors{bytesOf(host)};
    *work = gloo->recvAnysource(tensors, tag);
    return *work;
  }, /*ends_at_timeout=*/false);
  launch.on_exchanged.push_back([work, source] { source->store((*work)->sourceRank()); });
  upload(launch, host, buffer);
}

void GlooTransport::barrier(Launch& launch) {
  sign(launch, "barrier");
  addStep(launch, [gloo = gloo_](std::chrono::milliseconds timeout) {
    c10d::BarrierOptions options;
    options.timeout = timeout;
    return gloo->barrier(options);
  });
}

void GlooTransport::exchange(Launch& launch) {
  if (launch.steps.empty()) return;
  operations_ += launch.steps.size();
  auto exchange = std::make_unique<Exchange>();
  exchange->gloo = gloo_;
  if (!launch.point_to_point) exchange->signature = launch.signature;
  exchange->steps = std::move(launch.steps);
  exchange->on_exchanged = std::move(launch.on_exchanged);
  exchange->status = launch.status;
  exchange->label = launch.label;
  if (progress_ && !launch.point_to_point) {
    exchange->progress = progress_;
    exchange->number = ++collective_exchanges_;
  }
  exchange->timeout = std::min_element(exchange->steps.begin(), exchange->steps.end(),
                                       [](const ExchangeStep& a, const ExchangeStep& b) {
                                         return a.timeout < b.timeout;
                                       })->timeout;
  MAIA_CHECK(maiaLaunchHostFuncNamed(driverStream(launch.stream), &runExchange, exchange.get(),
                                     exchange->label.c_str()));
  exchange.release();  // runExchange owns it now
  launch.steps.clear();
  launch.on_exchanged.clear();
  launch.signature.clear();
  launch.point_to_point = false;
}

void GlooTransport::addStep(
    Launch& launch,
    std::function<c10::intrusive_ptr<c10d::Work>(std::chrono::milliseconds)> issue,
    bool ends_at_timeout) {
  launch.steps.push_back(ExchangeStep{std::move(issue), launch.timeout, ends_at_timeout});
}

void GlooTransport::sign(Launch& launch, const std::string& step) {
  if (!launch.signature.empty()) launch.signature += "; ";
  launch.signature += step;
}

}  // namespace torch_maia::distributed
