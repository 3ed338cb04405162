// GFLOP/s of the device GEMM (gemm_f32, or gemm_bf16/gemm_f16 with --dtype,
// of maia_gemm_kernels_{v4,v3}.maiabin) through the driver: launch + stream
// synchronize, buffers allocated once, best of N. The torch.mm baseline is
// measured by gemm_bench.py, which runs this program in the same run and
// prints the ratios.
//
// Usage: maia-gemm-bench [--size N]... [--reps R] [--dtype f32|bf16|f16]
//                        [--isa v4|v3] [--json]
//   default sizes 1024 and 4096 (square, row-major), R = 5, f32, the v4
//   (AVX-512) binary if the host runs it, else v3 (AVX2).
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

/// The element type under test; host buffers hold its bits.
struct Dtype {
  std::string name;  // "f32", "bf16", "f16"
  maiaDtype code;
  size_t size;

  void store(float x, unsigned char* p) const {
    if (size == 4) return (void)std::memcpy(p, &x, 4);
    uint16_t h;
    if (code == maiaDtypeF16) {
      _Float16 y = static_cast<_Float16>(x);
      std::memcpy(&h, &y, 2);
    } else {  // bf16, round to nearest even (finite inputs only)
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      h = static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
    }
    std::memcpy(p, &h, 2);
  }
  float load(const unsigned char* p) const {
    float x;
    if (size == 4) {
      std::memcpy(&x, p, 4);
      return x;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    if (code == maiaDtypeF16) {
      _Float16 y;
      std::memcpy(&y, &h, 2);
      return static_cast<float>(y);
    }
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    std::memcpy(&x, &bits, 4);
    return x;
  }
};

Dtype parseDtype(const std::string& name) {
  if (name == "f32") return {name, maiaDtypeF32, 4};
  if (name == "bf16") return {name, maiaDtypeBF16, 2};
  if (name == "f16") return {name, maiaDtypeF16, 2};
  std::fprintf(stderr, "maia-gemm-bench: --dtype must be f32, bf16 or f16\n");
  std::exit(2);
}

/// The AVX-512 binary if the driver accepts it on this host, else AVX2
/// (only `only`, if given).
maiaModule_t loadGemmModule(const std::string& only, std::string* which) {
  maiaModule_t module = nullptr;
  for (const char* variant : {"v4", "v3"}) {
    if (!only.empty() && only != variant) continue;
    std::string path =
        std::string(MAIA_GEMM_KERNEL_DIR) + "/maia_gemm_kernels_" + variant + ".maiabin";
    maiaError_t error = maiaModuleLoad(&module, path.c_str());
    if (error == maiaSuccess) {
      *which = variant;
      return module;
    }
    if (error != maiaErrorUnsupportedImage) check(error, path.c_str());
  }
  std::fprintf(stderr, "maia-gemm-bench: this host runs none of the binaries asked for\n");
  std::exit(1);
}

maiaKernelArg matrixArg(void* data, const Dtype& dtype, int64_t rows, int64_t cols) {
  maiaKernelArg arg = maiaKernelArgVector(data, dtype.code, 1, 0);
  arg.rank = 3;
  arg.sizes[0] = 1, arg.sizes[1] = rows, arg.sizes[2] = cols;
  arg.strides[0] = rows * cols, arg.strides[1] = cols, arg.strides[2] = 1;
  return arg;
}

struct Result {
  double best_seconds = 1e30, gflops = 0, max_rel_error = 0;
  int64_t grid[3] = {1, 1, 1};
};

Result benchSize(maiaKernel_t kernel, const Dtype& dtype, int cores, int64_t n, int reps) {
  const size_t count = static_cast<size_t>(n * n), bytes = count * dtype.size;
  // a and b: the inputs as the device sees them (rounded to dtype).
  std::vector<float> a(count), b(count);
  std::vector<unsigned char> ha(bytes), hb(bytes), hc(bytes);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < count; ++i) {
    dtype.store(dist(rng), &ha[i * dtype.size]);
    dtype.store(dist(rng), &hb[i * dtype.size]);
    a[i] = dtype.load(&ha[i * dtype.size]);
    b[i] = dtype.load(&hb[i * dtype.size]);
  }
  void *da, *db, *dc;
  check(maiaMalloc(&da, bytes), "maiaMalloc A");
  check(maiaMalloc(&db, bytes), "maiaMalloc B");
  check(maiaMalloc(&dc, bytes), "maiaMalloc C");
  check(maiaMemcpy(da, ha.data(), bytes, maiaMemcpyHostToDevice), "copy A");
  check(maiaMemcpy(db, hb.data(), bytes, maiaMemcpyHostToDevice), "copy B");

  maiaKernelArg args[5] = {matrixArg(da, dtype, n, n), matrixArg(db, dtype, n, n),
                           matrixArg(dc, dtype, n, n), maiaKernelArgFloat(maiaDtypeF32, 1.0),
                           maiaKernelArgFloat(maiaDtypeF32, 0.0)};
  Result r;
  maia_gemm_grid(n, n, n, 1, cores, r.grid);
  maiaStream_t stream;
  check(maiaStreamCreate(&stream, 0), "maiaStreamCreate");
  // One warm-up launch: first touch of the packing scratch, caches.
  for (int i = 0; i < reps + 1; ++i) {
    auto start = Clock::now();
    check(maiaLaunchKernel(kernel, r.grid, args, 5, stream), "maiaLaunchKernel");
    check(maiaStreamSynchronize(stream), "maiaStreamSynchronize");
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (i > 0) r.best_seconds = std::min(r.best_seconds, s);
  }
  r.gflops = 2.0 * n * n * n / r.best_seconds * 1e-9;

  // Sanity: a few entries against a double-precision dot product.
  check(maiaMemcpy(hc.data(), dc, bytes, maiaMemcpyDeviceToHost), "copy C");
  for (int s = 0; s < 64; ++s) {
    int64_t i = rng() % n, j = rng() % n;
    double ref = 0, mag = 0;
    for (int64_t k = 0; k < n; ++k) {
      ref += double(a[i * n + k]) * b[k * n + j];
      mag += std::fabs(double(a[i * n + k]) * b[k * n + j]);
    }
    float got = dtype.load(&hc[(i * n + j) * dtype.size]);
    r.max_rel_error = std::max(r.max_rel_error, std::fabs(got - ref) / mag);
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
  Dtype dtype = parseDtype("f32");
  std::string isa;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--size") && i + 1 < argc) {
      sizes.push_back(std::atoll(argv[++i]));
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc) {
      dtype = parseDtype(argv[++i]);
    } else if (!std::strcmp(argv[i], "--isa") && i + 1 < argc) {
      isa = argv[++i];
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else {
      std::fprintf(stderr,
                   "usage: maia-gemm-bench [--size N]... [--reps R] [--dtype f32|bf16|f16] "
                   "[--isa v4|v3] [--json]\n");
      return 2;
    }
  }
  if (sizes.empty()) sizes = {1024, 4096};

  std::string variant;
  maiaModule_t module = loadGemmModule(isa, &variant);
  const std::string name = "gemm_" + dtype.name;
  maiaKernel_t kernel;
  check(maiaModuleGetKernel(module, name.c_str(), &kernel), name.c_str());
  maiaDeviceProp prop;
  check(maiaGetDeviceProperties(&prop, 0), "maiaGetDeviceProperties");

  for (int64_t n : sizes) {
    Result r = benchSize(kernel, dtype, prop.core_count, n, reps);
    if (json) {
      std::printf("{\"kernel\": \"%s\", \"binary\": \"%s\", \"n\": %lld, \"cores\": %d, "
                  "\"grid\": [%lld, %lld, %lld], \"best_s\": %.6f, \"gflops\": %.2f, "
                  "\"reps\": %d, \"max_rel_error\": %.3g}\n",
                  name.c_str(), variant.c_str(), static_cast<long long>(n), prop.core_count,
                  static_cast<long long>(r.grid[0]), static_cast<long long>(r.grid[1]),
                  static_cast<long long>(r.grid[2]), r.best_seconds, r.gflops, reps,
                  r.max_rel_error);
    } else {
      std::printf("%s (%s) %5lld^3 on %d cores: %8.2f GFLOP/s  (best of %d: %.3f ms, "
                  "max rel error %.2g)\n",
                  name.c_str(), variant.c_str(), static_cast<long long>(n), prop.core_count,
                  r.gflops, reps, r.best_seconds * 1e3, r.max_rel_error);
    }
    std::fflush(stdout);
  }
  check(maiaModuleUnload(module), "maiaModuleUnload");
  return 0;
}
