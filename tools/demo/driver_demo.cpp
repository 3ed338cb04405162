// The driver demo: drives the simulated MAIA device through its C API alone.
// Allocates device memory, copies inputs in, runs kernels on two streams
// ordered by an event, copies the result back, checks it, and prints the
// device properties and timings.
#include <maia/runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check(maiaError_t error, const char* what) {
  if (error == maiaSuccess) return;
  std::fprintf(stderr, "maia-driver-demo: %s failed: %s: %s\n", what, maiaGetErrorName(error),
               maiaGetLastErrorMessage());
  std::exit(1);
}


}  // namespace

int main() {
  int count = 0;
  check(maiaGetDeviceCount(&count), "maiaGetDeviceCount");
  std::printf("MAIA devices: %d\n", count);
  for (int i = 0; i < count; ++i) {
    maiaDeviceProp prop;
    check(maiaGetDeviceProperties(&prop, i), "maiaGetDeviceProperties");
    std::printf("  maia:%d  %s  capability %s  %.1f GiB  %d cores  stream priorities %d..%d\n",
                i, prop.name, prop.compute_capability,
                static_cast<double>(prop.total_memory) / (1 << 30), prop.core_count,
                prop.stream_priority_least, prop.stream_priority_greatest);
  }

  const int64_t n = int64_t{1} << 24;  // 16 Mi floats, 64 MiB per buffer
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  check(maiaSetDevice(0), "maiaSetDevice");
  float *host_b = nullptr, *host_c = nullptr, *host_out = nullptr;
  check(maiaHostAlloc(reinterpret_cast<void**>(&host_b), bytes), "maiaHostAlloc");
  check(maiaHostAlloc(reinterpret_cast<void**>(&host_c), bytes), "maiaHostAlloc");
  check(maiaHostAlloc(reinterpret_cast<void**>(&host_out), bytes), "maiaHostAlloc");
  for (int64_t i = 0; i < n; ++i) {
    host_b[i] = static_cast<float>(i % 1000);
    host_c[i] = 0.5f;
  }
  void *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  check(maiaMalloc(&a, bytes), "maiaMalloc");
  check(maiaMalloc(&b, bytes), "maiaMalloc");
  check(maiaMalloc(&c, bytes), "maiaMalloc");
  check(maiaMalloc(&d, bytes), "maiaMalloc");

  maiaModule_t module = nullptr;
  check(maiaModuleLoad(&module, MAIA_KERNELS), "maiaModuleLoad");
  maiaKernel_t triad = nullptr, add = nullptr;
  check(maiaModuleGetKernel(module, "triad_f32", &triad), "maiaModuleGetKernel(triad_f32)");
  check(maiaModuleGetKernel(module, "add_f32", &add), "maiaModuleGetKernel(add_f32)");

  maiaStream_t producer = nullptr, consumer = nullptr;
  check(maiaStreamCreate(&producer, 0), "maiaStreamCreate");
  check(maiaStreamCreate(&consumer, 0), "maiaStreamCreate");
  maiaEvent_t start = nullptr, produced = nullptr, done = nullptr;
  check(maiaEventCreate(&start, maiaEventDefault), "maiaEventCreate");
  check(maiaEventCreate(&produced, maiaEventDefault), "maiaEventCreate");
  check(maiaEventCreate(&done, maiaEventDefault), "maiaEventCreate");

  auto wall_start = std::chrono::steady_clock::now();
  // Producer: copy inputs in, a = b + 2 * c.
  check(maiaEventRecord(start, producer), "maiaEventRecord");
  check(maiaMemcpyAsync(b, host_b, bytes, maiaMemcpyHostToDevice, producer), "copy b");
  check(maiaMemcpyAsync(c, host_c, bytes, maiaMemcpyHostToDevice, producer), "copy c");
  int64_t grid[3] = {256, 1, 1};
  auto vec = [n](void* data) { return maiaKernelArgVector(data, maiaDtypeF32, n, 1); };
  maiaKernelArg triad_args[4] = {vec(a), vec(b), vec(c), maiaKernelArgFloat(maiaDtypeF32, 2.0)};
  check(maiaLaunchKernel(triad, grid, triad_args, 4, producer), "launch triad_f32");
  check(maiaEventRecord(produced, producer), "maiaEventRecord");
  // Consumer: waits for the producer's event, d = a + b, copies d out.
  check(maiaStreamWaitEvent(consumer, produced), "maiaStreamWaitEvent");
  maiaKernelArg add_args[3] = {vec(a), vec(b), vec(d)};
  check(maiaLaunchKernel(add, grid, add_args, 3, consumer), "launch add_f32");
  check(maiaMemcpyAsync(host_out, d, bytes, maiaMemcpyDeviceToHost, consumer), "copy d out");
  check(maiaEventRecord(done, consumer), "maiaEventRecord");
  auto enqueued = std::chrono::steady_clock::now();
  check(maiaEventSynchronize(done), "maiaEventSynchronize");
  auto wall_end = std::chrono::steady_clock::now();

  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    float expected = 2.0f * static_cast<float>(i % 1000) + 1.0f;
    if (std::fabs(host_out[i] - expected) > 1e-4f * std::fabs(expected)) ++wrong;
  }
  float device_ms = 0;
  check(maiaEventElapsedTime(&device_ms, start, done), "maiaEventElapsedTime");
  auto us = [](auto duration) {
    return std::chrono::duration<double, std::micro>(duration).count();
  };
  std::printf("\nTwo streams, one event: %lld floats, 2 H2D copies, triad_f32 on stream 1,\n"
              "add_f32 on stream 2 after the event, 1 D2H copy.\n",
              static_cast<long long>(n));
  std::printf("  host time to enqueue all 9 commands: %8.1f us\n", us(enqueued - wall_start));
  std::printf("  device time (events start..done):    %8.1f us\n", device_ms * 1000.0);
  std::printf("  wall time to completion:             %8.1f us\n", us(wall_end - wall_start));
  std::printf("  effective bandwidth: %.1f GB/s over %zu MiB moved\n",
              7.0 * bytes / (device_ms * 1e6), 7 * bytes >> 20);
  std::printf("  result: %s (%lld wrong of %lld; d[123] = %.1f)\n", wrong ? "WRONG" : "correct",
              static_cast<long long>(wrong), static_cast<long long>(n), host_out[123]);

  check(maiaEventDestroy(start), "maiaEventDestroy");
  check(maiaEventDestroy(produced), "maiaEventDestroy");
  check(maiaEventDestroy(done), "maiaEventDestroy");
  check(maiaStreamDestroy(producer), "maiaStreamDestroy");
  check(maiaStreamDestroy(consumer), "maiaStreamDestroy");
  check(maiaModuleUnload(module), "maiaModuleUnload");
  for (void* p : {a, b, c, d}) check(maiaFree(p), "maiaFree");
  for (float* p : {host_b, host_c, host_out}) check(maiaFreeHost(p), "maiaFreeHost");
  return wrong == 0 ? 0 : 1;
}
