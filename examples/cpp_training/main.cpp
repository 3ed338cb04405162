// maia from C++, without Python: a program that links libtorch and the Maia
// package (Maia::torch). Loading libmaia_torch.so registered the "maia"
// device; everything below goes through c10/ATen/torch::nn, plus maia/torch.h
// and the driver's C API where no generic form exists. Each check prints a
// line; the exit status is 0 if all pass, 1 if one fails, 2 on an
// exception. Built and run by the test cpp.example
// (test/cpp, docs/cpp.md).
#include <ATen/DeviceAccelerator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/torch.h>

#include <maia/runtime.h>
#include <maia/torch.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

int g_failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s  %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++g_failures;
}

bool allClose(const at::Tensor& a, const at::Tensor& b, double rtol, double atol) {
  return a.sizes() == b.sizes() && at::allclose(a.cpu(), b.cpu(), rtol, atol);
}

constexpr auto kMaia = c10::DeviceType::PrivateUse1;
constexpr size_t kAggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);

// What loading libmaia_torch.so registered, seen through PyTorch's registries.
void checkRegistration(const c10::Device& device) {
  check(c10::is_privateuse1_backend_registered() && c10::get_privateuse1_backend() == "maia",
        "PrivateUse1 is named \"maia\"");
  check(device.type() == kMaia && device.str() == "maia:0", "c10::Device(\"maia:0\") is PrivateUse1");
  check(at::accelerator::getAccelerator() == kMaia, "maia is the accelerator");
  check(at::isPrivateUse1HooksRegistered() && at::detail::getPrivateUse1Hooks().isBuilt(),
        "PrivateUse1 hooks registered");
  check(c10::impl::hasDeviceGuardImpl(kMaia), "device guard registered");
  check(c10::GetAllocator(kMaia) != nullptr && c10::getDeviceAllocator(kMaia) != nullptr,
        "device allocator registered");
  check(at::accelerator::deviceCount() >= 1,
        "device count " + std::to_string(at::accelerator::deviceCount()));
  const at::Generator& generator = at::globalContext().defaultGenerator(device);
  check(generator.device() == device, "default generator of maia:0");

  maiaDeviceProp prop{};
  const bool have_prop = maiaGetDeviceProperties(&prop, 0) == maiaSuccess;
  check(have_prop && prop.core_count > 0,
        std::string("driver: ") + prop.name + ", " + std::to_string(prop.core_count) + " cores, " +
            std::to_string(prop.total_memory >> 20) + " MiB");

  at::Tensor t = torch::ones({2, 3}, torch::TensorOptions().device(device));
  check(t.device() == device && t.key_set().has(c10::DispatchKey::PrivateUse1) &&
            t.key_set().has(c10::DispatchKey::AutogradPrivateUse1),
        "a maia tensor carries the PrivateUse1 and AutogradPrivateUse1 keys");
}

// Eager operators on the device (kernels loaded from the installed
// lib/maia/kernels) against the same ones on the CPU.
void checkEagerOps(const c10::Device& device) {
  torch::manual_seed(1);
  at::Tensor a = torch::randn({64, 48});
  at::Tensor b = torch::randn({48, 32});
  auto compute = [](const at::Tensor& x, const at::Tensor& y) {
    at::Tensor h = torch::relu(x.matmul(y) + 0.5);
    return torch::softmax(h.sum(1), 0) + h.mean() * torch::tanh(h).amax(0).sum();
  };
  at::Tensor expected = compute(a, b);
  at::Tensor got = compute(a.to(device), b.to(device));
  check(got.device() == device, "eager results stay on maia");
  check(allClose(got, expected, 1e-4, 1e-5), "eager ops equal the CPU's");

  torch::manual_seed(7);
  at::Tensor r1 = torch::randn({1000}, torch::TensorOptions().device(device));
  torch::manual_seed(7);
  at::Tensor r2 = torch::randn({1000}, torch::TensorOptions().device(device));
  check(torch::equal(r1.cpu(), r2.cpu()) && std::abs(r1.mean().item<double>()) < 0.2,
        "device randn is seeded by torch::manual_seed");
}

torch::nn::Sequential makeModel() {
  torch::manual_seed(0);
  return torch::nn::Sequential(torch::nn::Linear(8, 32), torch::nn::Tanh(),
                               torch::nn::Linear(32, 16), torch::nn::ReLU(),
                               torch::nn::Linear(16, 1));
}

struct TrainResult {
  std::vector<double> losses;
  std::vector<at::Tensor> parameters;  // on the CPU
};

TrainResult train(const c10::Device& device, const at::Tensor& x, const at::Tensor& y) {
  torch::nn::Sequential model = makeModel();
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  at::Tensor xd = x.to(device);
  at::Tensor yd = y.to(device);
  TrainResult result;
  for (int step = 0; step < 60; ++step) {
    optimizer.zero_grad();
    at::Tensor loss = (model->forward(xd) - yd).pow(2).mean();  // mean squared error
    loss.backward();
    optimizer.step();
    result.losses.push_back(loss.item<double>());
  }
  for (const at::Tensor& p : model->parameters()) {
    TORCH_CHECK(p.device() == device && p.grad().device() == device, "parameter left ", device);
    result.parameters.push_back(p.detach().cpu());
  }
  return result;
}

// An MLP trained with autograd and SGD on maia, step for step like on the CPU.
void checkTraining(const c10::Device& device) {
  torch::manual_seed(2);
  at::Tensor x = torch::randn({256, 8});
  at::Tensor y = torch::tanh(x.matmul(torch::randn({8, 1})));
  TrainResult cpu = train(c10::Device(c10::DeviceType::CPU), x, y);
  TrainResult maia = train(device, x, y);
  bool same_losses = true;
  for (size_t i = 0; i < cpu.losses.size(); ++i)
    same_losses &= std::abs(cpu.losses[i] - maia.losses[i]) <= 1e-4 + 1e-3 * std::abs(cpu.losses[i]);
  std::printf("      loss %.5f -> %.5f (CPU %.5f -> %.5f)\n", maia.losses.front(),
              maia.losses.back(), cpu.losses.front(), cpu.losses.back());
  check(maia.losses.back() < 0.25 * maia.losses.front(), "training loss decreases");
  check(same_losses, "losses equal the CPU's at every step");
  bool same_parameters = cpu.parameters.size() == maia.parameters.size();
  for (size_t i = 0; same_parameters && i < cpu.parameters.size(); ++i)
    same_parameters = allClose(maia.parameters[i], cpu.parameters[i], 1e-3, 1e-4);
  check(same_parameters, "trained parameters equal the CPU's");
}

// Streams and events through c10 (the device guard), and a torch stream's
// driver handle (maia/torch.h) used with the driver's C API.
void checkStreamsAndEvents(const c10::Device& device) {
  c10::impl::VirtualGuardImpl guard_impl(kMaia);
  c10::Stream main_stream = at::accelerator::getCurrentStream(device.index());
  c10::Stream side = guard_impl.getStreamFromGlobalPool(device);
  check(side != main_stream && side.device() == device, "a pool stream besides the current one");

  torch::manual_seed(3);
  at::Tensor host = torch::randn({128, 128});
  at::Tensor x = host.to(device);  // on the current (default) stream
  c10::Event ready(kMaia);
  ready.record(main_stream);
  at::Tensor z;
  c10::Event done(kMaia);
  {
    c10::StreamGuard on_side(side);
    check(at::accelerator::getCurrentStream(device.index()) == side, "StreamGuard sets the current stream");
    ready.block(side);  // the side stream waits for x
    z = torch::tanh(x.matmul(x)) * 2;
    done.record(side);
  }
  done.block(main_stream);  // later work on the default stream waits for z
  check(allClose((z + 1).cpu(), torch::tanh(host.matmul(host)) * 2 + 1, 1e-4, 1e-5),
        "work on a side stream, ordered by events");

  maiaStream_t raw = torch_maia::driverStream(side);
  check(maiaStreamSynchronize(raw) == maiaSuccess && maiaStreamQuery(raw) == maiaSuccess,
        "driver handle of the side stream: synchronized, idle");

  c10::Event start(kMaia, c10::EventFlag::BACKEND_DEFAULT);
  c10::Event end(kMaia, c10::EventFlag::BACKEND_DEFAULT);
  start.record(main_stream);
  for (int i = 0; i < 4; ++i) x = torch::tanh(x.matmul(x));
  end.record(main_stream);
  end.synchronize();
  const double ms = start.elapsedTime(end);
  check(end.query() && ms >= 0, "event timing: " + std::to_string(ms) + " ms");
  at::accelerator::synchronizeDevice(device.index());
}

// The caching allocator's statistics through at::accelerator.
void checkMemoryStats(const c10::Device& device) {
  const c10::DeviceIndex index = device.index();
  at::accelerator::synchronizeDevice(index);
  at::accelerator::emptyCache();
  at::accelerator::resetPeakStats(index);
  const int64_t base = at::accelerator::getDeviceStats(index).allocated_bytes[kAggregate].current;
  constexpr int64_t kBytes = 16 << 20;
  {
    at::Tensor t = torch::empty({kBytes / 4}, torch::TensorOptions().device(device));
    t.fill_(1);
    auto stats = at::accelerator::getDeviceStats(index);
    check(stats.allocated_bytes[kAggregate].current >= base + kBytes &&
              stats.reserved_bytes[kAggregate].current >= stats.allocated_bytes[kAggregate].current,
          "allocated " + std::to_string(stats.allocated_bytes[kAggregate].current) +
              " B, reserved " + std::to_string(stats.reserved_bytes[kAggregate].current) + " B");
  }
  auto after = at::accelerator::getDeviceStats(index);
  check(after.allocated_bytes[kAggregate].current == base &&
            after.allocated_bytes[kAggregate].peak >= base + kBytes,
        "freed: allocated back to " + std::to_string(base) + " B, peak kept");
  const int64_t cached = after.reserved_bytes[kAggregate].current;
  at::accelerator::emptyCache();
  check(at::accelerator::getDeviceStats(index).reserved_bytes[kAggregate].current < cached,
        "emptyCache returns the cached segments");
  auto [free_bytes, total_bytes] = at::accelerator::getMemoryInfo(index);
  check(total_bytes > 0 && free_bytes <= total_bytes, "memory info: " +
        std::to_string(free_bytes >> 20) + " of " + std::to_string(total_bytes >> 20) + " MiB free");
}

}  // namespace

int main() {
  try {
    const c10::Device device("maia:0");
    checkRegistration(device);
    checkEagerOps(device);
    checkTraining(device);
    checkStreamsAndEvents(device);
    checkMemoryStats(device);
    for (const auto& [op, count] : torch_maia::ops::fallbackCounts())
      std::printf("      host fallback: %s x%lld\n", op.c_str(), static_cast<long long>(count));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  std::printf("%s\n", g_failures == 0 ? "all checks passed" : "FAILED");
  return g_failures == 0 ? 0 : 1;
}
