// maia_compiler_bench: compile latency of the row-softmax kernel (cold CLI,
// warm worker, per phase) and the compiled kernel's bandwidth against a
// STREAM copy measured in the same run (8192 x 4096 fp32, all cores).
// Prints JSON. Not a test: timings never gate the suite.
#include <maia/runtime.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "subprocess.h"

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

namespace {

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

#define CHECK_OK(expr)                                                                 \
  do {                                                                                 \
    maiaError_t e_ = (expr);                                                           \
    if (e_ != maiaSuccess) {                                                           \
      std::fprintf(stderr, "%s failed: %s\n", #expr, maiaGetLastErrorMessage());       \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  std::string kernel = std::string(MAIA_E2E_KERNEL_DIR) + "/softmax.mlir";
  std::string source = maia_e2e::readFile(kernel);
  std::string out = "/tmp/maia-bench-softmax-" + std::to_string(getpid()) + ".maiabin";
  Json report;

  // Cold CLI: a fresh process per compile, timed from the parent.
  std::vector<double> cold;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    auto r = maia_e2e::runProcess({maia_e2e::compilerPath(), kernel, "-o", out});
    cold.push_back(msSince(start));
    if (r.exitCode != 0) {
      std::fprintf(stderr, "compile failed: %s\n", r.err.c_str());
      return 1;
    }
  }
  report["cli_cold_ms"] = {{"median", median(cold)}, {"min", *std::min_element(cold.begin(), cold.end())}};

  // Warm worker: round trip per request from the parent, phases from replies.
  maia_e2e::Worker worker({maia_e2e::compilerPath(), "--server"});
  std::vector<double> warm;
  std::map<std::string, std::vector<double>> phases;
  for (int i = 0; i < reps + 3; ++i) {
    std::string reply;
    auto start = Clock::now();
    worker.request(Json{{"id", i}, {"source", source}, {"output", out}}.dump(), &reply);
    double ms = msSince(start);
    Json parsed = Json::parse(reply);
    if (parsed["ok"] != true) {
      std::fprintf(stderr, "worker failed: %s\n", reply.c_str());
      return 1;
    }
    if (i < 3) continue;  // warm-up
    warm.push_back(ms);
    for (auto& [name, value] : parsed["timings_ms"].items()) phases[name].push_back(value.get<double>());
  }
  worker.finish();
  report["worker_warm_ms"] = {{"median", median(warm)}, {"min", *std::min_element(warm.begin(), warm.end())}};
  for (auto& [name, values] : phases) report["worker_phase_median_ms"][name] = median(values);

  // Bandwidth: softmax over 8192 x 4096 fp32 vs a device-to-device copy
  // (the driver splits it over all cores) and a host copy on 2 threads.
  const int64_t rows = 8192, cols = 4096;
  const size_t bytes = size_t(rows * cols) * sizeof(float);
  void *x, *y;
  CHECK_OK(maiaMalloc(&x, bytes));
  CHECK_OK(maiaMalloc(&y, bytes));
  std::vector<float> host(size_t(rows * cols));
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(int(i % 97) - 48) * 0.125f;
  CHECK_OK(maiaMemcpy(x, host.data(), bytes, maiaMemcpyHostToDevice));
  CHECK_OK(maiaMemcpy(y, host.data(), bytes, maiaMemcpyHostToDevice));
  maiaModule_t module;
  CHECK_OK(maiaModuleLoad(&module, out.c_str()));
  maiaKernel_t softmax;
  CHECK_OK(maiaModuleGetKernel(module, "softmax", &softmax));
  maiaKernelArg args[2];
  for (int a = 0; a < 2; ++a) {
    std::memset(&args[a], 0, sizeof(maiaKernelArg));
    args[a].kind = maiaArgMemref;
    args[a].dtype = maiaDtypeF32;
    args[a].data = a == 0 ? x : y;
    args[a].rank = 2;
    args[a].sizes[0] = rows;
    args[a].sizes[1] = cols;
    args[a].strides[0] = cols;
    args[a].strides[1] = 1;
  }
  int64_t grid[3] = {rows, 1, 1};
  std::vector<char> hostA(bytes, 1), hostB(bytes, 2);
  double bestKernel = 1e30, bestCopy = 1e30, bestHostCopy = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    CHECK_OK(maiaLaunchKernel(softmax, grid, args, 2, nullptr));
    CHECK_OK(maiaDeviceSynchronize());
    bestKernel = std::min(bestKernel, msSince(start));
    start = Clock::now();
    CHECK_OK(maiaMemcpyAsync(y, x, bytes, maiaMemcpyDeviceToDevice, nullptr));
    CHECK_OK(maiaDeviceSynchronize());
    bestCopy = std::min(bestCopy, msSince(start));
    start = Clock::now();
    std::thread half([&] { std::memcpy(hostB.data(), hostA.data(), bytes / 2); });
    std::memcpy(hostB.data() + bytes / 2, hostA.data() + bytes / 2, bytes / 2);
    half.join();
    bestHostCopy = std::min(bestHostCopy, msSince(start));
  }
  // Both move each byte twice (read + write).
  auto gbps = [&](double ms) { return 2.0 * double(bytes) / (ms * 1e6); };
  report["softmax_8192x4096"] = {
      {"kernel_ms_min", bestKernel},
      {"kernel_GBps", gbps(bestKernel)},
      {"stream_copy_device_GBps", gbps(bestCopy)},
      {"stream_copy_host_2threads_GBps", gbps(bestHostCopy)},
      {"ratio_vs_device_copy", gbps(bestKernel) / gbps(bestCopy)},
      {"ratio_vs_host_copy", gbps(bestKernel) / gbps(bestHostCopy)}};
  maiaModuleUnload(module);
  maiaFree(x);
  maiaFree(y);
  std::remove(out.c_str());
  std::printf("%s\n", report.dump(2).c_str());
  return 0;
}
