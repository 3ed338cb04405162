// GFLOP/s of the device GEMM (gemm_f32 of maia_gemm_kernels_{v4,v3}.maiabin)
// through the driver: launch + stream synchronize, buffers allocated once,
// best of N. The torch.mm baseline is measured by gemm_bench.py, which runs
// this program in the same run and prints the ratios.
//
// Usage: maia-gemm-bench [--size N]... [--reps R] [--json]
//   default sizes 1024 and 4096 (square, row-major fp32), R = 5.
//   --json prints one JSON object per size instead of a table line.
#include <maia/runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gemm_launch.h"

namespace {

using Clock = std::chrono::steady_clock;

void check(maiaError_t error, const char* what) {
  if (error == maiaSuccess) return;
  std::fprintf(stderr, "maia-gemm-bench: %s: %s: %s\n", what, maiaGetErrorName(error),
               maiaGetLastErrorMessage());
  std::exit(1);
}

/// The AVX-512 binary if the driver accepts it on this host, else AVX2.
maiaModule_t loadGemmModule(std::string* which) {
  maiaModule_t module = nullptr;
  for (const char* variant : {"v4", "v3"}) {
    std::string path = std::string(MAIA_GEMM_KERNEL_DIR) + "/maia_gemm_kernels_" + variant + ".maiabin";
    maiaError_t error = maiaModuleLoad(&module, path.c_str());
    if (error == maiaSuccess) {
      *which = variant;
      return module;
    }
    if (error != maiaErrorUnsupportedImage) check(error, path.c_str());
  }
  std::fprintf(stderr, "maia-gemm-bench: this host supports neither x86-64-v4 nor v3\n");
  std::exit(1);
}

maiaKernelArg matrixArg(void* data, int64_t rows, int64_t cols) {
  maiaKernelArg arg = maiaKernelArgVector(data, maiaDtypeF32, 1, 0);
  arg.rank = 3;
  arg.sizes[0] = 1, arg.sizes[1] = rows, arg.sizes[2] = cols;
  arg.strides[0] = rows * cols, arg.strides[1] = cols, arg.strides[2] = 1;
  return arg;
}

struct Result {
  int64_t n;
  double best_seconds, gflops, max_rel_error;
  int64_t grid[3];
};

Result benchSize(maiaKernel_t kernel, int cores, int64_t n, int reps) {
  const size_t count = static_cast<size_t>(n * n);
  std::vector<float> a(count), b(count), c(count);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto* v : {&a, &b})
    for (float& x : *v) x = dist(rng);
  void *da, *db, *dc;
  check(maiaMalloc(&da, count * 4), "maiaMalloc A");
  check(maiaMalloc(&db, count * 4), "maiaMalloc B");
  check(maiaMalloc(&dc, count * 4), "maiaMalloc C");
  check(maiaMemcpy(da, a.data(), count * 4, maiaMemcpyHostToDevice), "copy A");
  check(maiaMemcpy(db, b.data(), count * 4, maiaMemcpyHostToDevice), "copy B");

  maiaKernelArg args[5] = {matrixArg(da, n, n), matrixArg(db, n, n), matrixArg(dc, n, n),
                           maiaKernelArgFloat(maiaDtypeF32, 1.0), maiaKernelArgFloat(maiaDtypeF32, 0.0)};
  Result r{n, 1e30, 0, 0, {}};
  maia_gemm_grid(n, n, 1, cores, r.grid);
  maiaStream_t stream;
  check(maiaStreamCreate(&stream, 0), "maiaStreamCreate");
  // One warm-up launch: first-touch of the packing scratch, caches.
  for (int i = 0; i < reps + 1; ++i) {
    auto start = Clock::now();
    check(maiaLaunchKernel(kernel, r.grid, args, 5, stream), "maiaLaunchKernel");
    check(maiaStreamSynchronize(stream), "maiaStreamSynchronize");
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (i > 0) r.best_seconds = std::min(r.best_seconds, s);
  }
  r.gflops = 2.0 * n * n * n / r.best_seconds * 1e-9;

  // Sanity: a few entries against a double-precision dot product.
  check(maiaMemcpy(c.data(), dc, count * 4, maiaMemcpyDeviceToHost), "copy C");
  for (int s = 0; s < 64; ++s) {
    int64_t i = rng() % n, j = rng() % n;
    double ref = 0, mag = 0;
    for (int64_t k = 0; k < n; ++k) {
      ref += double(a[i * n + k]) * b[k * n + j];
      mag += std::fabs(double(a[i * n + k]) * b[k * n + j]);
    }
    r.max_rel_error = std::max(r.max_rel_error, std::fabs(c[i * n + j] - ref) / mag);
  }
  check(maiaStreamDestroy(stream), "maiaStreamDestroy");
  for (void* p : {da, db, dc}) check(maiaFree(p), "maiaFree");
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes;
  int reps = 5;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--size") && i + 1 < argc) {
      sizes.push_back(std::atoll(argv[++i]));
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else {
      std::fprintf(stderr, "usage: maia-gemm-bench [--size N]... [--reps R] [--json]\n");
      return 2;
    }
  }
  if (sizes.empty()) sizes = {1024, 4096};

  std::string variant;
  maiaModule_t module = loadGemmModule(&variant);
  maiaKernel_t kernel;
  check(maiaModuleGetKernel(module, "gemm_f32", &kernel), "gemm_f32");
  maiaDeviceProp prop;
  check(maiaGetDeviceProperties(&prop, 0), "maiaGetDeviceProperties");

  for (int64_t n : sizes) {
    Result r = benchSize(kernel, prop.core_count, n, reps);
    if (json) {
      std::printf("{\"kernel\": \"gemm_f32\", \"binary\": \"%s\", \"n\": %lld, \"cores\": %d, "
                  "\"grid\": [%lld, %lld, %lld], \"best_s\": %.6f, \"gflops\": %.2f, "
                  "\"reps\": %d, \"max_rel_error\": %.3g}\n",
                  variant.c_str(), static_cast<long long>(n), prop.core_count,
                  static_cast<long long>(r.grid[0]), static_cast<long long>(r.grid[1]),
                  static_cast<long long>(r.grid[2]), r.best_seconds, r.gflops, reps,
                  r.max_rel_error);
    } else {
      std::printf("gemm_f32 (%s) %5lld^3 on %d cores: %8.2f GFLOP/s  (best of %d: %.3f ms, "
                  "max rel error %.2g)\n",
                  variant.c_str(), static_cast<long long>(n), prop.core_count, r.gflops, reps,
                  r.best_seconds * 1e3, r.max_rel_error);
    }
    std::fflush(stdout);
  }
  check(maiaModuleUnload(module), "maiaModuleUnload");
  return 0;
}
