// GFLOP/s of the device GEMM (gemm_f32, or gemm_bf16/gemm_f16 with --dtype,
// of maia_gemm_kernels_{v4,v3}.maiabin) through the driver: launch + stream
// synchronize, buffers allocated once, best of N. The torch.mm baseline is
// measured by gemm_bench.py, which runs this program in the same run and
// prints the ratios.
//
// Usage: maia-gemm-bench [--size N]... [--shape SPEC]... [--reps R]
//                        [--dtype f32|bf16|f16] [--isa v4|v3] [--grid R,C,B]
//                        [--kernel-dir DIR]
//                        [--json]
//   default sizes 1024 and 4096 (square, row-major), R = 5, f32, the v4
//   (AVX-512) binary if the host runs it, else v3 (AVX2).
//   --shape MxNxK[:bt][:ct][:bB][:ab]: C[M x N] = A[M x K] @ B[K x N],
//   row-major unless bt (B is the transpose of a row-major N x K matrix, as
//   nn.Linear's weight) or ct (C column-major, as a channels-last
//   convolution output); bB: a batch of B products sharing one A (a
//   convolution's kernel over B images), or with ab each with its own A
//   (bmm).
//   --grid R,C,B: launch this grid instead of maia_gemm_grid's.
//   --kernel-dir: where maia_gemm_kernels_{v4,v3}.maiabin are (default: this
//   build's), e.g. a copy of an older build to compare against.
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
maiaModule_t loadGemmModule(const std::string& dir, const std::string& only,
                            std::string* which) {
  maiaModule_t module = nullptr;
  for (const char* variant : {"v4", "v3"}) {
    if (!only.empty() && only != variant) continue;
    std::string path =
        dir + "/maia_gemm_kernels_" + variant + ".maiabin";
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

/// One product to time: shape, batch and operand layouts (--shape).
struct Shape {
  int64_t m, n, k, batch = 1;
  bool b_transposed = false, c_column_major = false, a_batched = false;
};

Shape parseShape(const std::string& spec) {
  Shape s{};
  long long m, n, k;
  int used = 0;
  if (std::sscanf(spec.c_str(), "%lldx%lldx%lld%n", &m, &n, &k, &used) != 3 || m < 1 || n < 1 ||
      k < 1) {
    std::fprintf(stderr, "maia-gemm-bench: --shape wants MxNxK[:bt][:ct][:bB][:ab], got '%s'\n",
                 spec.c_str());
    std::exit(2);
  }
  s.m = m, s.n = n, s.k = k;
  for (size_t at = used; at < spec.size();) {
    size_t end = spec.find(':', at + 1);
    std::string flag = spec.substr(at + 1, end == std::string::npos ? end : end - at - 1);
    if (spec[at] != ':' || flag.empty()) {
      std::fprintf(stderr, "maia-gemm-bench: bad flags in --shape '%s'\n", spec.c_str());
      std::exit(2);
    }
    if (flag == "bt") {
      s.b_transposed = true;
    } else if (flag == "ab") {
      s.a_batched = true;
    } else if (flag == "ct") {
      s.c_column_major = true;
    } else if (flag[0] == 'b' && std::atoll(flag.c_str() + 1) >= 1) {
      s.batch = std::atoll(flag.c_str() + 1);
    } else {
      std::fprintf(stderr, "maia-gemm-bench: unknown flag '%s' in --shape\n", flag.c_str());
      std::exit(2);
    }
    at = end == std::string::npos ? spec.size() : end;
  }
  return s;
}

/// A [batch x rows x cols] operand; row-major unless column_major; a batch
/// of 1 with batch_stride 0 broadcasts.
maiaKernelArg operandArg(void* data, const Dtype& dtype, int64_t batch, int64_t rows,
                         int64_t cols, bool column_major) {
  maiaKernelArg arg = maiaKernelArgVector(data, dtype.code, 1, 0);
  arg.rank = 3;
  arg.sizes[0] = batch, arg.sizes[1] = rows, arg.sizes[2] = cols;
  arg.strides[0] = rows * cols;
  arg.strides[1] = column_major ? 1 : cols;
  arg.strides[2] = column_major ? rows : 1;
  return arg;
}

struct Result {
  double best_seconds = 1e30, gflops = 0, max_rel_error = 0;
  int64_t grid[3] = {1, 1, 1};
};

Result benchShape(maiaKernel_t kernel, const Dtype& dtype, int cores, const Shape& shape,
                  int reps, const int64_t* grid) {
  const int64_t m = shape.m, n = shape.n, k = shape.k, batch = shape.batch;
  const int64_t a_batch = shape.a_batched ? batch : 1;
  const size_t a_count = static_cast<size_t>(a_batch * m * k), b_count = static_cast<size_t>(batch * k * n),
               c_count = static_cast<size_t>(batch * m * n);
  // a and b: the inputs as the device sees them (rounded to dtype), in
  // their memory order.
  std::vector<float> a(a_count), b(b_count);
  std::vector<unsigned char> ha(a_count * dtype.size), hb(b_count * dtype.size),
      hc(c_count * dtype.size);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto fill = [&](std::vector<float>& values, std::vector<unsigned char>& bits) {
    for (size_t i = 0; i < values.size(); ++i) {
      dtype.store(dist(rng), &bits[i * dtype.size]);
      values[i] = dtype.load(&bits[i * dtype.size]);
    }
  };
  fill(a, ha);
  fill(b, hb);
  void *da, *db, *dc;
  check(maiaMalloc(&da, ha.size()), "maiaMalloc A");
  check(maiaMalloc(&db, hb.size()), "maiaMalloc B");
  check(maiaMalloc(&dc, hc.size()), "maiaMalloc C");
  check(maiaMemcpy(da, ha.data(), ha.size(), maiaMemcpyHostToDevice), "copy A");
  check(maiaMemcpy(db, hb.data(), hb.size(), maiaMemcpyHostToDevice), "copy B");

  maiaKernelArg args[5] = {operandArg(da, dtype, a_batch, m, k, false),
                           operandArg(db, dtype, batch, k, n, shape.b_transposed),
                           operandArg(dc, dtype, batch, m, n, shape.c_column_major),
                           maiaKernelArgFloat(maiaDtypeF32, 1.0),
                           maiaKernelArgFloat(maiaDtypeF32, 0.0)};
  Result r;
  maia_gemm_grid(m, n, k, batch, cores, r.grid);
  if (grid != nullptr) std::copy(grid, grid + 3, r.grid);
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
  r.gflops = 2.0 * batch * m * n * k / r.best_seconds * 1e-9;

  // Sanity: a few entries against a double-precision dot product.
  check(maiaMemcpy(hc.data(), dc, hc.size(), maiaMemcpyDeviceToHost), "copy C");
  auto b_at = [&](int64_t p, int64_t kk, int64_t j) {
    return b[p * k * n + (shape.b_transposed ? j * k + kk : kk * n + j)];
  };
  for (int s = 0; s < 64; ++s) {
    int64_t p = rng() % batch, i = rng() % m, j = rng() % n;
    double ref = 0, mag = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      double product = double(a[(shape.a_batched ? p : 0) * m * k + i * k + kk]) * b_at(p, kk, j);
      ref += product;
      mag += std::fabs(product);
    }
    int64_t at = p * m * n + (shape.c_column_major ? j * m + i : i * n + j);
    float got = dtype.load(&hc[at * dtype.size]);
    r.max_rel_error = std::max(r.max_rel_error, std::fabs(got - ref) / mag);
  }
  check(maiaStreamDestroy(stream), "maiaStreamDestroy");
  for (void* p : {da, db, dc}) check(maiaFree(p), "maiaFree");
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Shape> shapes;
  std::vector<std::string> specs;
  int reps = 5;
  bool json = false;
  Dtype dtype = parseDtype("f32");
  std::string isa, kernel_dir = MAIA_GEMM_KERNEL_DIR;
  int64_t grid[3] = {0, 0, 0};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--size") && i + 1 < argc) {
      std::string size = argv[++i];
      specs.push_back(size);
      shapes.push_back(parseShape(size + "x" + size + "x" + size));
    } else if (!std::strcmp(argv[i], "--shape") && i + 1 < argc) {
      specs.push_back(argv[++i]);
      shapes.push_back(parseShape(specs.back()));
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc) {
      dtype = parseDtype(argv[++i]);
    } else if (!std::strcmp(argv[i], "--grid") && i + 1 < argc) {
      long long g0, g1, g2;
      if (std::sscanf(argv[++i], "%lld,%lld,%lld", &g0, &g1, &g2) != 3 || g0 < 1 || g1 < 1 ||
          g2 < 1) {
        std::fprintf(stderr, "maia-gemm-bench: --grid wants R,C,B (each >= 1)\n");
        return 2;
      }
      grid[0] = g0, grid[1] = g1, grid[2] = g2;
    } else if (!std::strcmp(argv[i], "--kernel-dir") && i + 1 < argc) {
      kernel_dir = argv[++i];
    } else if (!std::strcmp(argv[i], "--isa") && i + 1 < argc) {
      isa = argv[++i];
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else {
      std::fprintf(stderr,
                   "usage: maia-gemm-bench [--size N]... [--shape MxNxK[:bt][:ct][:bB][:ab]]... "
                   "[--reps R] [--dtype f32|bf16|f16] [--isa v4|v3] [--grid R,C,B] [--kernel-dir DIR] "
                   "[--json]\n");
      return 2;
    }
  }
  if (shapes.empty()) {
    for (const char* size : {"1024", "4096"}) {
      specs.push_back(size);
      shapes.push_back(parseShape(specs.back() + "x" + size + "x" + size));
    }
  }

  std::string variant;
  maiaModule_t module = loadGemmModule(kernel_dir, isa, &variant);
  const std::string name = "gemm_" + dtype.name;
  maiaKernel_t kernel;
  check(maiaModuleGetKernel(module, name.c_str(), &kernel), name.c_str());
  maiaDeviceProp prop;
  check(maiaGetDeviceProperties(&prop, 0), "maiaGetDeviceProperties");

  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& shape = shapes[i];
    Result r = benchShape(kernel, dtype, prop.core_count, shape, reps,
                          grid[0] > 0 ? grid : nullptr);
    if (json) {
      std::printf("{\"kernel\": \"%s\", \"binary\": \"%s\", \"shape\": \"%s\", \"m\": %lld, "
                  "\"n\": %lld, \"k\": %lld, \"batch\": %lld, \"cores\": %d, "
                  "\"grid\": [%lld, %lld, %lld], \"best_s\": %.9f, \"gflops\": %.2f, "
                  "\"reps\": %d, \"max_rel_error\": %.3g}\n",
                  name.c_str(), variant.c_str(), specs[i].c_str(),
                  static_cast<long long>(shape.m), static_cast<long long>(shape.n),
                  static_cast<long long>(shape.k), static_cast<long long>(shape.batch),
                  prop.core_count, static_cast<long long>(r.grid[0]),
                  static_cast<long long>(r.grid[1]), static_cast<long long>(r.grid[2]),
                  r.best_seconds, r.gflops, reps, r.max_rel_error);
    } else {
      std::printf("%s (%s) %s on %d cores: %8.2f GFLOP/s  (best of %d: %.3f ms, "
                  "max rel error %.2g)\n",
                  name.c_str(), variant.c_str(), specs[i].c_str(), prop.core_count, r.gflops,
                  reps, r.best_seconds * 1e3, r.max_rel_error);
    }
    std::fflush(stdout);
  }
  check(maiaModuleUnload(module), "maiaModuleUnload");
  return 0;
}
