// Driver benchmarks: launch overhead and latency, copy bandwidth, and a
// bandwidth-bound kernel, each reported with a baseline measured in the
// same run (host memcpy, a STREAM triad on host threads with temporal and
// with non-temporal stores, stream_triad.h) and the ratio.
//
// Usage: maia-driver-bench [--json FILE] [--quick] [--only launch|graph|copy|triad|stores]
// Results are the minimum (bandwidth) or median (latency) over repetitions.
#include <maia/profiler.h>
#include <maia/runtime.h>

#include "stream_triad.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void check(maiaError_t error, const char* what) {
  if (error == maiaSuccess) return;
  std::fprintf(stderr, "maia-driver-bench: %s: %s: %s\n", what, maiaGetErrorName(error),
               maiaGetLastErrorMessage());
  std::exit(1);
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// Best times of baseline and candidate, measured alternately so that both
/// see the same machine (this VM's memory bandwidth drifts by 30%+).
template <typename Base, typename Candidate>
std::pair<double, double> bestOfInterleaved(int repetitions, Base&& base, Candidate&& candidate) {
  double best_base = 1e30, best_candidate = 1e30;
  for (int i = 0; i < repetitions; ++i) {
    auto start = Clock::now();
    base();
    best_base = std::min(best_base, seconds(Clock::now() - start));
    start = Clock::now();
    candidate();
    best_candidate = std::min(best_candidate, seconds(Clock::now() - start));
  }
  return {best_base, best_candidate};
}

template <typename Fn>
double bestOf(int repetitions, Fn&& fn) {
  double best = 1e30;
  for (int i = 0; i < repetitions; ++i) {
    auto start = Clock::now();
    fn();
    best = std::min(best, seconds(Clock::now() - start));
  }
  return best;
}

struct Result {
  std::string name;
  double value;
  std::string unit;
  double baseline;  // 0 if none
  std::string baseline_name;
  double target;    // ratio (or absolute) target, 0 if none
};

std::vector<Result> g_results;

void reportRatio(const std::string& name, double value, const std::string& unit,
                 const std::string& baseline_name, double baseline, double target_ratio) {
  g_results.push_back({name, value, unit, baseline, baseline_name, target_ratio});
  std::printf("%-34s %9.2f %-5s | %-28s %9.2f %-5s | ratio %5.2f (target >= %.2f)\n",
              name.c_str(), value, unit.c_str(), baseline_name.c_str(), baseline, unit.c_str(),
              value / baseline, target_ratio);
}

void reportAbsolute(const std::string& name, double value, const std::string& unit,
                    double target_max) {
  g_results.push_back({name, value, unit, 0, "", target_max});
  std::printf("%-34s %9.3f %-5s (target <= %.2f %s)\n", name.c_str(), value, unit.c_str(),
              target_max, unit.c_str());
}


struct Gate {
  std::atomic<bool> open{false};
  static void wait(void* self) {
    while (!static_cast<Gate*>(self)->open.load()) std::this_thread::yield();
  }
};

void benchLaunch(maiaKernel_t empty, int launches) {
  maiaStream_t stream;
  check(maiaStreamCreate(&stream, 0), "maiaStreamCreate");
  int64_t grid[3] = {1, 1, 1};
  // Enqueue cost on a busy stream: the stream is held by a host function,
  // so every launch only queues. A round queues fewer launches than a
  // stream holds (MAIA_QUEUE_DEPTH, 1024 by default): one more would wait
  // for the gate this thread opens.
  constexpr int kGatedLaunches = 1000;
  std::vector<double> enqueue_us;
  enqueue_us.reserve(3 * launches);
  for (int round = 0; round < 3 * launches / kGatedLaunches; ++round) {
    Gate gate;
    check(maiaLaunchHostFunc(stream, Gate::wait, &gate), "maiaLaunchHostFunc");
    for (int i = 0; i < kGatedLaunches; ++i) {
      auto start = Clock::now();
      maiaLaunchKernel(empty, grid, nullptr, 0, stream);
      enqueue_us.push_back(seconds(Clock::now() - start) * 1e6);
    }
    gate.open = true;
    check(maiaStreamSynchronize(stream), "maiaStreamSynchronize");
  }
  reportAbsolute("launch enqueue, busy stream", median(enqueue_us), "us", 0.5);

  // Launch-to-completion of an empty kernel on a warm stream.
  std::vector<double> latency_us;
  for (int i = 0; i < launches; ++i) {
    auto start = Clock::now();
    maiaLaunchKernel(empty, grid, nullptr, 0, stream);
    check(maiaStreamSynchronize(stream), "maiaStreamSynchronize");
    latency_us.push_back(seconds(Clock::now() - start) * 1e6);
  }
  reportAbsolute("launch-to-completion, warm stream", median(latency_us), "us", 5.0);

  // The same, polling maiaStreamQuery instead of synchronizing: a waiting
  // host may run the kernel itself, a polling one never does, so this is
  // the hand-off to a device core.
  latency_us.clear();
  for (int i = 0; i < launches; ++i) {
    auto start = Clock::now();
    maiaLaunchKernel(empty, grid, nullptr, 0, stream);
    while (maiaStreamQuery(stream) == maiaErrorNotReady) {
    }
    latency_us.push_back(seconds(Clock::now() - start) * 1e6);
  }
  reportAbsolute("launch-to-completion, host polling", median(latency_us), "us", 5.0);
  check(maiaStreamDestroy(stream), "maiaStreamDestroy");
}

/// Host cost of replaying a captured graph of 10 and of 1000 empty kernels
/// (one enqueue whatever the kernel count), against 1000 eager launches,
/// all on a stream held by a host function so only the enqueue is timed.
void benchGraphReplay(maiaKernel_t empty, int repeats) {
  maiaStream_t stream;
  check(maiaStreamCreate(&stream, 0), "maiaStreamCreate");
  int64_t grid[3] = {1, 1, 1};
  auto capture = [&](int kernels) {
    maiaGraph_t graph;
    maiaGraphExec_t exec;
    check(maiaStreamBeginCapture(stream), "maiaStreamBeginCapture");
    for (int i = 0; i < kernels; ++i)
      check(maiaLaunchKernel(empty, grid, nullptr, 0, stream), "maiaLaunchKernel");
    check(maiaStreamEndCapture(stream, &graph), "maiaStreamEndCapture");
    check(maiaGraphInstantiate(&exec, graph), "maiaGraphInstantiate");
    check(maiaGraphDestroy(graph), "maiaGraphDestroy");
    return exec;
  };
  auto gatedMicros = [&](auto&& enqueue) {
    std::vector<double> us;
    for (int r = 0; r < repeats; ++r) {
      Gate gate;
      check(maiaLaunchHostFunc(stream, Gate::wait, &gate), "maiaLaunchHostFunc");
      auto start = Clock::now();
      enqueue();
      us.push_back(seconds(Clock::now() - start) * 1e6);
      gate.open = true;
      check(maiaStreamSynchronize(stream), "maiaStreamSynchronize");
    }
    return median(us);
  };
  maiaGraphExec_t small = capture(10), large = capture(1000);
  double small_us = gatedMicros([&] { check(maiaGraphLaunch(small, stream), "maiaGraphLaunch"); });
  double large_us = gatedMicros([&] { check(maiaGraphLaunch(large, stream), "maiaGraphLaunch"); });
  double eager_us = gatedMicros([&] {
    for (int i = 0; i < 1000; ++i) maiaLaunchKernel(empty, grid, nullptr, 0, stream);
  });
  reportAbsolute("graph replay, 10 kernels", small_us, "us", 2.0);
  reportAbsolute("graph replay, 1000 kernels", large_us, "us", 2.0);
  g_results.push_back({"1000 eager launches (baseline)", eager_us, "us", 0, "", 0});
  std::printf("%-34s %9.3f us    (the same kernels launched one by one)\n",
              "1000 eager launches (baseline)", eager_us);
  // Device side: 20 replays of the 1000-kernel graph back to back, per
  // kernel; unprofiled (the cost a profiler's hooks must not raise) and
  // profiled (each replayed kernel then gets a record).
  auto devicePerKernelNs = [&](bool profiled) {
    std::vector<double> ns;
    for (int round = 0; round < 7; ++round) {
      if (profiled) check(maiaProfilerStart(), "maiaProfilerStart");
      auto start = Clock::now();
      for (int r = 0; r < 20; ++r) check(maiaGraphLaunch(large, stream), "maiaGraphLaunch");
      check(maiaStreamSynchronize(stream), "maiaStreamSynchronize");
      ns.push_back(seconds(Clock::now() - start) * 1e9 / (20 * 1000));
      if (profiled) {
        check(maiaProfilerStop(), "maiaProfilerStop");
        std::vector<maiaActivityRecord> records(20 * 1001);
        size_t got = 0;
        check(maiaProfilerFlush(records.data(), records.size(), &got), "maiaProfilerFlush");
      }
    }
    return median(ns);
  };
  const double device_ns = devicePerKernelNs(false), profiled_ns = devicePerKernelNs(true);
  g_results.push_back({"graph replay, device ns per kernel", device_ns, "ns", 0, "", 0});
  g_results.push_back({"  the same, profiled", profiled_ns, "ns", 0, "", 0});
  std::printf("%-34s %9.1f ns    (20 replays of 1000 empty kernels, one sync)\n",
              "graph replay, device ns per kernel", device_ns);
  std::printf("%-34s %9.1f ns    (a record per replayed kernel)\n", "  the same, profiled",
              profiled_ns);
  check(maiaGraphExecDestroy(small), "maiaGraphExecDestroy");
  check(maiaGraphExecDestroy(large), "maiaGraphExecDestroy");
  check(maiaStreamDestroy(stream), "maiaStreamDestroy");
}

/// Host time per launch of a small eager-like kernel (three 256-element
/// memrefs and a scalar, one program) while the cores run the ones before
/// it: what an eager op pays, with the host and the cores sharing the
/// stream's state (absent from the gated enqueue figure above). Target: at
/// most half of a small eager op on the CPU (1.4-1.5 us here), the rest
/// being PyTorch's own dispatch.
void benchLaunchStream(maiaKernel_t triad, int launches) {
  constexpr int64_t kElements = 256;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  for (void** p : {&a, &b, &c}) check(maiaMalloc(p, kElements * sizeof(float)), "maiaMalloc");
  auto vec = [](void* data) { return maiaKernelArgVector(data, maiaDtypeF32, kElements, 1); };
  maiaKernelArg args[4] = {vec(a), vec(b), vec(c), maiaKernelArgFloat(maiaDtypeF32, 2.0f)};
  int64_t grid[3] = {1, 1, 1};
  constexpr int kRound = 2000;
  double best = bestOf(std::max(launches / kRound, 1), [&] {
    for (int i = 0; i < kRound; ++i)
      check(maiaLaunchKernel(triad, grid, args, 4, nullptr), "maiaLaunchKernel");
    check(maiaStreamSynchronize(nullptr), "maiaStreamSynchronize");
  });
  reportAbsolute("launch, running stream (3 memrefs)", best / kRound * 1e6, "us", 0.75);
  for (void* p : {a, b, c}) check(maiaFree(p), "maiaFree");
}

/// Runs fn(begin, end) over [0, n) split into contiguous blocks, one per
/// host thread: the baseline for what the device's cores can do.
template <typename Fn>
void hostParallel(int threads, size_t n, Fn&& fn) {
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back([&, t] { fn(n * t / threads, n * (t + 1) / threads); });
  fn(0, n / threads);
  for (auto& thread : pool) thread.join();
}

void benchCopies(size_t bytes, int repetitions, int cores) {
  std::vector<char> host_a(bytes, 1), host_b(bytes, 2);  // touched: resident
  double gb = static_cast<double>(bytes) / 1e9;
  // The baseline is memcpy on as many host threads as the device has cores:
  // a device copy splits over its cores, so a 1-thread memcpy flattered it.
  auto host_memcpy = [&] {
    hostParallel(cores, bytes, [&](size_t b, size_t e) {
      std::memcpy(host_b.data() + b, host_a.data() + b, e - b);
    });
  };
  void *pinned_a = nullptr, *pinned_b = nullptr, *dev_a = nullptr, *dev_b = nullptr;
  check(maiaHostAlloc(&pinned_a, bytes), "maiaHostAlloc");
  check(maiaHostAlloc(&pinned_b, bytes), "maiaHostAlloc");
  std::memset(pinned_a, 3, bytes);
  check(maiaMalloc(&dev_a, bytes), "maiaMalloc");
  check(maiaMalloc(&dev_b, bytes), "maiaMalloc");
  // Each copy against host memcpy measured alongside it.
  auto timed_copy = [&](void* dst, const void* src, maiaMemcpyKind kind) {
    return bestOfInterleaved(repetitions, host_memcpy, [&] {
      check(maiaMemcpyAsync(dst, src, bytes, kind, nullptr), "maiaMemcpyAsync");
      check(maiaStreamSynchronize(nullptr), "maiaStreamSynchronize");
    });
  };
  auto [h2d_base, h2d] = timed_copy(dev_a, pinned_a, maiaMemcpyHostToDevice);
  auto [d2d_base, d2d] = timed_copy(dev_b, dev_a, maiaMemcpyDeviceToDevice);
  auto [d2h_base, d2h] = timed_copy(pinned_b, dev_b, maiaMemcpyDeviceToHost);
  const std::string baseline = "host memcpy, " + std::to_string(cores) + " threads";
  reportRatio("copy H2D (pinned)", gb / h2d, "GB/s", baseline, gb / h2d_base, 0.8);
  reportRatio("copy D2D", gb / d2d, "GB/s", baseline, gb / d2d_base, 0.8);
  reportRatio("copy D2H (pinned)", gb / d2h, "GB/s", baseline, gb / d2h_base, 0.8);
  check(maiaFree(dev_a), "maiaFree");
  check(maiaFree(dev_b), "maiaFree");
  check(maiaFreeHost(pinned_a), "maiaFreeHost");
  check(maiaFreeHost(pinned_b), "maiaFreeHost");
}

void benchTriad(maiaKernel_t triad, int64_t n, int repetitions, int cores) {
  size_t bytes = static_cast<size_t>(n) * sizeof(float);
  // STREAM counts 2 reads + 1 write, whatever the stores cost: the
  // temporal baseline also reads every written line (write-allocate), the
  // non-temporal one does not.
  double gb = 3.0 * static_cast<double>(bytes) / 1e9;
  std::vector<float> a(n, 0.0f), b(n, 1.0f), c(n, 2.0f);
  const float scale = 3.0f;
  auto host_triad = [&](int nontemporal) {
    return [&, nontemporal] {
      maia_stream_triad(a.data(), b.data(), c.data(), scale, n, cores, nontemporal);
    };
  };
  void *da = nullptr, *db = nullptr, *dc = nullptr;
  for (void** p : {&da, &db, &dc}) check(maiaMalloc(p, bytes), "maiaMalloc");
  check(maiaMemcpy(db, b.data(), bytes, maiaMemcpyHostToDevice), "maiaMemcpy");
  check(maiaMemcpy(dc, c.data(), bytes, maiaMemcpyHostToDevice), "maiaMemcpy");
  auto vec = [n](void* data) { return maiaKernelArgVector(data, maiaDtypeF32, n, 1); };
  maiaKernelArg args[4] = {vec(da), vec(db), vec(dc), maiaKernelArgFloat(maiaDtypeF32, scale)};
  int64_t grid[3] = {static_cast<int64_t>(cores) * 16, 1, 1};
  auto kernel = [&] {
    check(maiaLaunchKernel(triad, grid, args, 4, nullptr), "maiaLaunchKernel");
    check(maiaStreamSynchronize(nullptr), "maiaStreamSynchronize");
  };
  auto [stream_s, kernel_s] = bestOfInterleaved(repetitions, host_triad(0), kernel);
  auto [stream_nt_s, kernel_again_s] = bestOfInterleaved(repetitions, host_triad(1), kernel);
  const double best_kernel_s = std::min(kernel_s, kernel_again_s);
  const std::string threads = std::to_string(cores) + " host threads";
  reportRatio("triad_f32 kernel on the core pool", gb / best_kernel_s, "GB/s",
              "STREAM triad, " + threads, gb / stream_s, 0.85);
  reportRatio("triad_f32 kernel on the core pool", gb / best_kernel_s, "GB/s",
              "NT-store triad, " + threads, gb / stream_nt_s, 0.85);
  for (void* p : {da, db, dc}) check(maiaFree(p), "maiaFree");
}

/// Where streaming stores start to pay: the host triad with temporal and
/// with non-temporal stores over outputs of 1 to 256 MiB, alternated, best
/// of N each. Each timed run follows an untimed one of the same kind, so
/// each sees the cache it leaves itself: streaming stores evict the output,
/// and a temporal run right after one would pay to fetch it, which in a
/// steady state it does not. The eager kernels', device copies' and
/// compiled kernels' threshold (8 MiB, docs/runtime.md "Streaming stores")
/// comes from here.
void benchStoreSweep(int cores, bool quick) {
  const int64_t largest = int64_t{1} << (quick ? 24 : 26);
  std::vector<float> a(largest, 0.0f), b(largest, 1.0f), c(largest, 2.0f);
  const std::string threads = std::to_string(cores) + " threads";
  for (int64_t n = int64_t{1} << 18; n <= largest; n *= 2) {
    const int repetitions = static_cast<int>(std::max<int64_t>(5, (int64_t{1} << 26) / n / 2));
    // One untimed run, then a timed one, of the given kind.
    auto warmTime = [&](int nontemporal) {
      maia_stream_triad(a.data(), b.data(), c.data(), 3.0f, n, cores, nontemporal);
      auto start = Clock::now();
      maia_stream_triad(a.data(), b.data(), c.data(), 3.0f, n, cores, nontemporal);
      return seconds(Clock::now() - start);
    };
    double temporal_s = 1e30, streaming_s = 1e30;
    for (int i = 0; i < repetitions; ++i) {
      temporal_s = std::min(temporal_s, warmTime(0));
      streaming_s = std::min(streaming_s, warmTime(1));
    }
    const double gb = 3.0 * static_cast<double>(n) * sizeof(float) / 1e9;
    char name[64];
    std::snprintf(name, sizeof(name), "NT-store triad, %lld MiB output",
                  static_cast<long long>(n * sizeof(float) >> 20));
    reportRatio(name, gb / streaming_s, "GB/s", "temporal triad, " + threads, gb / temporal_s,
                0.0);
  }
}

void writeJson(const char* path) {
  FILE* f = std::fopen(path, "w");
  if (f == nullptr) {
    std::perror(path);
    std::exit(1);
  }
  std::fprintf(f, "{\n  \"benchmark\": \"maia-driver-bench\",\n  \"results\": [\n");
  for (size_t i = 0; i < g_results.size(); ++i) {
    const Result& r = g_results[i];
    std::fprintf(f,
                 "    {\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\", \"baseline\": %.6g, "
                 "\"baseline_name\": \"%s\", \"ratio\": %.4g, \"target\": %.4g}%s\n",
                 r.name.c_str(), r.value, r.unit.c_str(), r.baseline, r.baseline_name.c_str(),
                 r.baseline > 0 ? r.value / r.baseline : 0.0, r.target,
                 i + 1 < g_results.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  const char* json = nullptr;
  bool quick = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: maia-driver-bench [--json FILE] [--quick] [--only launch|graph|copy|triad|stores]\n");
      return 2;
    }
  }
  maiaDeviceProp prop;
  check(maiaGetDeviceProperties(&prop, 0), "maiaGetDeviceProperties");
  std::printf("maia-driver-bench: %d cores, capability %s\n\n", prop.core_count,
              prop.compute_capability);
  maiaModule_t module;
  check(maiaModuleLoad(&module, MAIA_KERNELS), "maiaModuleLoad");
  maiaKernel_t empty, triad;
  check(maiaModuleGetKernel(module, "empty", &empty), "empty");
  check(maiaModuleGetKernel(module, "triad_f32", &triad), "triad_f32");

  if (only.empty() || only == "launch") {
    benchLaunch(empty, quick ? 2000 : 20000);
    benchLaunchStream(triad, quick ? 20000 : 200000);
  }
  if (only.empty() || only == "graph") benchGraphReplay(empty, quick ? 51 : 301);
  if (only.empty() || only == "copy")
    benchCopies(quick ? (size_t{32} << 20) : (size_t{256} << 20), quick ? 3 : 8, prop.core_count);
  if (only.empty() || only == "triad")
    benchTriad(triad, quick ? (int64_t{1} << 22) : (int64_t{1} << 25), quick ? 3 : 10,
               prop.core_count);
  if (only == "stores") benchStoreSweep(prop.core_count, quick);  // not in the default run
  if (json != nullptr) writeJson(json);
  check(maiaModuleUnload(module), "maiaModuleUnload");
  return 0;
}
