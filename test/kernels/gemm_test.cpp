// Tests of the device GEMM kernels (runtime/kernels/gemm) through the driver
// C API: every result is compared with a double-precision reference under
// an error bound derived from the fp32 accumulation (and, for bf16/f16, one
// rounding of the output). Both binaries are tested when the host runs them.
#include <gtest/gtest.h>
#include <maia/runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gemm_launch.h"

namespace {

#define MAIA_ASSERT_OK(expr)                                                          \
  do {                                                                                \
    maiaError_t maia_err_ = (expr);                                                   \
    ASSERT_EQ(maia_err_, maiaSuccess)                                                 \
        << #expr << " -> " << maiaGetErrorName(maia_err_) << ": " << maiaGetLastErrorMessage(); \
  } while (0)

// ------------------------------------------------------------ host dtypes

enum class Dtype { F32, BF16, F16 };

float bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint16_t floatToBf16(float f) {  // round to nearest even (no NaN inputs here)
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
float f16ToFloat(uint16_t h) {
  _Float16 x;
  std::memcpy(&x, &h, 2);
  return static_cast<float>(x);
}
uint16_t floatToF16(float f) {
  _Float16 x = static_cast<_Float16>(f);
  uint16_t h;
  std::memcpy(&h, &x, 2);
  return h;
}

size_t elementSize(Dtype t) { return t == Dtype::F32 ? 4 : 2; }
maiaDtype maiaDtypeOf(Dtype t) {
  return t == Dtype::F32 ? maiaDtypeF32 : t == Dtype::BF16 ? maiaDtypeBF16 : maiaDtypeF16;
}
const char* kernelName(Dtype t) {
  return t == Dtype::F32 ? "gemm_f32" : t == Dtype::BF16 ? "gemm_bf16" : "gemm_f16";
}
/// Unit roundoff of the output type (0: fp32 results are not rounded again).
double outputRoundoff(Dtype t) {
  return t == Dtype::F32 ? 0.0 : t == Dtype::BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}

/// Host storage of one operand in its dtype, read and written as float.
struct HostBuffer {
  Dtype dtype;
  std::vector<unsigned char> bytes;
  HostBuffer(Dtype t, size_t count) : dtype(t), bytes(count * elementSize(t)) {}
  size_t count() const { return bytes.size() / elementSize(dtype); }
  float get(size_t i) const {
    if (dtype == Dtype::F32) {
      float f;
      std::memcpy(&f, &bytes[i * 4], 4);
      return f;
    }
    uint16_t h;
    std::memcpy(&h, &bytes[i * 2], 2);
    return dtype == Dtype::BF16 ? bf16ToFloat(h) : f16ToFloat(h);
  }
  void set(size_t i, float f) {
    if (dtype == Dtype::F32) return (void)std::memcpy(&bytes[i * 4], &f, 4);
    uint16_t h = dtype == Dtype::BF16 ? floatToBf16(f) : floatToF16(f);
    std::memcpy(&bytes[i * 2], &h, 2);
  }
};

// -------------------------------------------------------- operand layouts

enum class Layout {
  RowMajor,   // strides (rows * cols, cols, 1)
  ColMajor,   // transposed: (rows * cols, 1, rows)
  Padded,     // row-major with a leading dimension cols + 3 and offset 5
  Strided,    // every other column: (.., 2 * cols, 2)
};
enum class Batch {
  Full,       // one matrix per batch element
  Stride0,    // sizes[0] = batch, strides[0] = 0 (an expanded tensor)
  Size1,      // sizes[0] = 1 (broadcast by the kernel)
};

/// A logical [batch, rows, cols] operand in device-memref terms.
struct Operand {
  int64_t batch, rows, cols;
  int64_t offset = 0, strides[3] = {0, 0, 0};
  int64_t storage = 0;  // elements to allocate
  int64_t index(int64_t b, int64_t i, int64_t j) const {
    return offset + b * strides[0] + i * strides[1] + j * strides[2];
  }
};

Operand makeOperand(int64_t batch, int64_t rows, int64_t cols, Layout layout, Batch how) {
  Operand op{how == Batch::Size1 ? 1 : batch, rows, cols};
  int64_t matrix = 0;
  switch (layout) {
    case Layout::RowMajor: op.strides[1] = cols, op.strides[2] = 1, matrix = rows * cols; break;
    case Layout::ColMajor: op.strides[1] = 1, op.strides[2] = rows, matrix = rows * cols; break;
    case Layout::Padded:
      op.offset = 5, op.strides[1] = cols + 3, op.strides[2] = 1, matrix = rows * (cols + 3);
      break;
    case Layout::Strided: op.strides[1] = 2 * cols, op.strides[2] = 2, matrix = rows * 2 * cols; break;
  }
  op.strides[0] = how == Batch::Full ? matrix : 0;
  int64_t matrices = how == Batch::Full ? batch : 1;
  op.storage = op.offset + std::max<int64_t>(matrix * matrices, 1);
  return op;
}

// ------------------------------------------------------------- the cases

struct Case {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  Dtype dtype = Dtype::F32;
  Layout la = Layout::RowMajor, lb = Layout::RowMajor, lc = Layout::RowMajor;
  Batch ba = Batch::Full, bb = Batch::Full;
  float alpha = 1.0f, beta = 0.0f;
  bool nan_c = false;          // C starts as NaN (only meaningful with beta == 0)
  bool nan_ab = false;         // A and B hold NaN (only meaningful with alpha == 0 or k == 0)
  std::vector<int64_t> grid = {};  // empty: maia_gemm_grid
};

std::string describe(const Case& c) {
  return "batch " + std::to_string(c.batch) + ", " + std::to_string(c.m) + "x" +
         std::to_string(c.n) + "x" + std::to_string(c.k) + ", " + kernelName(c.dtype) +
         ", alpha " + std::to_string(c.alpha) + ", beta " + std::to_string(c.beta);
}

class GemmTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    std::string path = std::string(MAIA_KERNEL_DIR) + "/maia_gemm_kernels_" + GetParam() + ".maiabin";
    maiaError_t error = maiaModuleLoad(&module_, path.c_str());
    if (error == maiaErrorUnsupportedImage)
      GTEST_SKIP() << "the host CPU cannot run the " << GetParam()
                   << " binary (driver: " << maiaGetLastErrorMessage() << ")";
    MAIA_ASSERT_OK(error);
    MAIA_ASSERT_OK(maiaGetDeviceProperties(&prop_, 0));
  }
  void TearDown() override {
    if (module_) {
      EXPECT_EQ(maiaModuleUnload(module_), maiaSuccess);
    }
  }

  /// Runs one case on the device and checks every element of C.
  void check(const Case& c);

  maiaModule_t module_ = nullptr;
  maiaDeviceProp prop_{};
};

maiaKernelArg memrefArg(void* data, maiaDtype dtype, const Operand& op) {
  maiaKernelArg arg = maiaKernelArgVector(data, dtype, 1, 0);
  arg.rank = 3;
  arg.offset = op.offset;
  arg.sizes[0] = op.batch, arg.sizes[1] = op.rows, arg.sizes[2] = op.cols;
  for (int d = 0; d < 3; ++d) arg.strides[d] = op.strides[d];
  return arg;
}
maiaKernelArg memrefArg(void* data, Dtype t, const Operand& op) {
  return memrefArg(data, maiaDtypeOf(t), op);
}

void GemmTest::check(const Case& c) {
  SCOPED_TRACE(describe(c));
  Operand a = makeOperand(c.batch, c.m, c.k, c.la, c.ba);
  Operand b = makeOperand(c.batch, c.k, c.n, c.lb, c.bb);
  Operand out = makeOperand(c.batch, c.m, c.n, c.lc, Batch::Full);
  HostBuffer ha(c.dtype, a.storage), hb(c.dtype, b.storage), hc(c.dtype, out.storage);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 0; i < ha.count(); ++i) ha.set(i, c.nan_ab ? nan : dist(rng));
  for (size_t i = 0; i < hb.count(); ++i) hb.set(i, c.nan_ab ? nan : dist(rng));
  for (size_t i = 0; i < hc.count(); ++i) hc.set(i, c.nan_c ? nan : dist(rng));

  void *da, *db, *dc;
  MAIA_ASSERT_OK(maiaMalloc(&da, ha.bytes.size()));
  MAIA_ASSERT_OK(maiaMalloc(&db, hb.bytes.size()));
  MAIA_ASSERT_OK(maiaMalloc(&dc, hc.bytes.size()));
  MAIA_ASSERT_OK(maiaMemcpy(da, ha.bytes.data(), ha.bytes.size(), maiaMemcpyHostToDevice));
  MAIA_ASSERT_OK(maiaMemcpy(db, hb.bytes.data(), hb.bytes.size(), maiaMemcpyHostToDevice));
  MAIA_ASSERT_OK(maiaMemcpy(dc, hc.bytes.data(), hc.bytes.size(), maiaMemcpyHostToDevice));

  maiaKernel_t kernel;
  MAIA_ASSERT_OK(maiaModuleGetKernel(module_, kernelName(c.dtype), &kernel));
  maiaKernelArg args[5] = {memrefArg(da, c.dtype, a), memrefArg(db, c.dtype, b),
                           memrefArg(dc, c.dtype, out), maiaKernelArgFloat(maiaDtypeF32, c.alpha),
                           maiaKernelArgFloat(maiaDtypeF32, c.beta)};
  int64_t grid[3];
  if (c.grid.empty()) {
    maia_gemm_grid(c.m, c.n, c.k, c.batch, prop_.core_count, grid);
  } else {
    for (int d = 0; d < 3; ++d) grid[d] = c.grid[d];
  }
  MAIA_ASSERT_OK(maiaLaunchKernel(kernel, grid, args, 5, nullptr));
  HostBuffer result(c.dtype, out.storage);
  MAIA_ASSERT_OK(maiaMemcpy(result.bytes.data(), dc, result.bytes.size(), maiaMemcpyDeviceToHost));
  for (void* p : {da, db, dc}) MAIA_ASSERT_OK(maiaFree(p));

  // Error bound: fp32 accumulation of k products (gamma_k), the alpha/beta
  // update, then one rounding to the output type.
  const double u32 = std::ldexp(1.0, -24), uout = outputRoundoff(c.dtype);
  int failures = 0;
  for (int64_t bi = 0; bi < c.batch; ++bi)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0, mag = 0;
        if (c.k > 0 && c.alpha != 0.0f)
          for (int64_t p = 0; p < c.k; ++p) {
            double prod = double(ha.get(a.index(a.batch == 1 ? 0 : bi, i, p))) *
                          hb.get(b.index(b.batch == 1 ? 0 : bi, p, j));
            sum += prod;
            mag += std::fabs(prod);
          }
        double c0 = c.beta == 0.0f ? 0.0 : hc.get(out.index(bi, i, j));
        double ref = c.alpha * sum + c.beta * c0;
        double bound = (c.k + 3) * u32 * (std::fabs(c.alpha) * mag + std::fabs(c.beta * c0));
        bound = bound * (1 + uout) + uout * std::fabs(ref) + 1e-7;
        float got = result.get(out.index(bi, i, j));
        if (!(std::fabs(got - ref) <= bound) && failures++ < 5)
          ADD_FAILURE() << "C[" << bi << "," << i << "," << j << "] = " << got << ", expected "
                        << ref << " (bound " << bound << ")";
      }
  EXPECT_EQ(failures, 0);
}

// ------------------------------------------------------------------ tests

TEST_P(GemmTest, Shapes) {
  const int64_t shapes[][3] = {{1, 1, 1},    {2, 3, 4},     {17, 33, 65},  {64, 64, 64},
                               {100, 1, 300}, {1, 100, 300}, {300, 7, 5},  {5, 300, 7},
                               {129, 257, 513}, {3, 4100, 3}, {31, 45, 600},
                               {150, 2100, 1100},  // several MC, KC (367 + 367 + 366) and NC blocks
                               {2000, 1, 64}};    // matrix-vector: computed as C^T
  for (auto& s : shapes) check(Case{.m = s[0], .n = s[1], .k = s[2]});
}

TEST_P(GemmTest, TransposedAndStridedOperands) {
  const Layout layouts[] = {Layout::RowMajor, Layout::ColMajor, Layout::Padded, Layout::Strided};
  for (Layout la : layouts)
    for (Layout lb : layouts)
      check(Case{.m = 37, .n = 41, .k = 29, .la = la, .lb = lb});
  // A transposed B packs 16 x 16 blocks: whole panels over two K blocks
  // that are not multiples of 16 (275 + 274) and a partial last panel.
  check(Case{.m = 30, .n = 110, .k = 549, .lb = Layout::ColMajor});
}

TEST_P(GemmTest, TransposedAndStridedOutput) {
  for (Layout lc : {Layout::ColMajor, Layout::Padded, Layout::Strided})
    check(Case{.m = 45, .n = 70, .k = 19, .lc = lc, .beta = 0.5f});
  check(Case{.m = 45, .n = 70, .k = 300, .la = Layout::ColMajor, .lb = Layout::ColMajor,
             .lc = Layout::ColMajor});
}

// Products with at most 4 rows or columns (small_m.h): every row count of
// the small loops, both loops (B read along K or along N), K with and
// without a vector tail, N with and without whole column blocks, A and C in
// every layout, and the transposed orientation (few columns).
TEST_P(GemmTest, FewRowsOrColumns) {
  const Layout layouts[] = {Layout::RowMajor, Layout::ColMajor, Layout::Padded, Layout::Strided};
  for (int64_t m : {1, 2, 3, 4})
    for (Layout lb : {Layout::ColMajor, Layout::RowMajor, Layout::Strided})
      for (int64_t k : {1, 16, 37, 256})
        for (int64_t n : {1, 9, 64, 131})
          check(Case{.m = m, .n = n, .k = k, .lb = lb});
  for (Layout la : layouts)
    for (Layout lc : layouts)
      for (Layout lb : {Layout::ColMajor, Layout::RowMajor}) {
        check(Case{.m = 3, .n = 70, .k = 45, .la = la, .lb = lb, .lc = lc, .beta = 0.5f});
        check(Case{.m = 70, .n = 2, .k = 45, .la = la, .lb = lb, .lc = lc, .alpha = 2.0f});
      }
  check(Case{.m = 1, .n = 96, .k = 40, .lb = Layout::ColMajor, .nan_c = true});
  check(Case{.m = 1, .n = 96, .k = 40, .lb = Layout::RowMajor, .nan_c = true});
  check(Case{.batch = 3, .m = 2, .n = 300, .k = 33, .lb = Layout::ColMajor, .bb = Batch::Size1});
  check(Case{.m = 1, .n = 4096, .k = 512, .lb = Layout::ColMajor, .grid = {1, 2, 1}});
}

// Partial tiles (edge_kernel.h): every row count of a partial 14-row tile
// (M = 14 + r), last panels of 1, 15, 16, 17 and 31 columns (one vector
// of 16 or two, masked), into a row-major C (stores under a lane mask) and
// a column-major one (transposed stores), with K over two K blocks so the
// second adds onto C; beta == 0 must not read C even in the masked lanes.
TEST_P(GemmTest, EdgeTiles) {
  for (int64_t m = 15; m <= 28; ++m) check(Case{.m = m, .n = 49, .k = 20, .beta = 0.5f});
  for (int64_t n : {33, 47, 48, 49, 63, 196})
    for (Layout lc : {Layout::RowMajor, Layout::ColMajor})
      check(Case{.m = 37, .n = n, .k = 400, .lc = lc, .alpha = 1.5f, .beta = -0.5f});
  for (Layout lc : {Layout::RowMajor, Layout::ColMajor})
    check(Case{.m = 23, .n = 49, .k = 30, .lc = lc, .beta = 0.0f, .nan_c = true});
  // Zoo shapes with edges in both directions (ResNet-18 convolutions).
  check(Case{.m = 128, .n = 784, .k = 70});
  check(Case{.m = 512, .n = 49, .k = 450, .lb = Layout::ColMajor});
  check(Case{.batch = 2, .m = 256, .n = 196, .k = 50, .ba = Batch::Stride0});
}

TEST_P(GemmTest, AlphaBeta) {
  for (float alpha : {1.0f, 2.5f, -1.0f})
    for (float beta : {0.0f, 1.0f, -0.5f}) check(Case{.m = 23, .n = 50, .k = 270, .alpha = alpha, .beta = beta});
}

TEST_P(GemmTest, BetaZeroIgnoresNanInC) {
  check(Case{.m = 33, .n = 65, .k = 17, .beta = 0.0f, .nan_c = true});
  check(Case{.m = 33, .n = 65, .k = 17, .lc = Layout::ColMajor, .beta = 0.0f, .nan_c = true});
}

TEST_P(GemmTest, EmptyKScalesC) {
  check(Case{.m = 9, .n = 40, .k = 0, .beta = 0.5f});
  check(Case{.m = 9, .n = 40, .k = 0, .beta = 0.0f, .nan_c = true});
}

TEST_P(GemmTest, AlphaZeroDoesNotReadAB) {
  check(Case{.m = 20, .n = 20, .k = 20, .alpha = 0.0f, .beta = 2.0f, .nan_ab = true});
}

TEST_P(GemmTest, Batched) {
  check(Case{.batch = 3, .m = 40, .n = 50, .k = 60});
  check(Case{.batch = 4, .m = 17, .n = 33, .k = 9, .beta = 1.0f});
  check(Case{.batch = 5, .m = 20, .n = 70, .k = 30, .ba = Batch::Stride0});
  check(Case{.batch = 5, .m = 20, .n = 70, .k = 30, .bb = Batch::Size1});
  check(Case{.batch = 3, .m = 31, .n = 9, .k = 40, .la = Layout::ColMajor, .lb = Layout::Padded,
             .ba = Batch::Size1, .bb = Batch::Stride0, .alpha = 0.5f, .beta = -1.0f});
}

// A batch sharing A (a convolution's kernel over the images) packs each A
// block once for the images of a program: several images per B scratch
// (N = 49), one per scratch (N = 2100, two N blocks), two A blocks and two
// K blocks, beta, A broadcast by size 1 or by stride 0, and grids that give
// a program one, two or all images.
TEST_P(GemmTest, BatchSharingA) {
  for (const std::vector<int64_t>& g : {std::vector<int64_t>{1, 1, 1}, {1, 1, 2}, {2, 1, 3}}) {
    check(Case{.batch = 5, .m = 150, .n = 49, .k = 400, .ba = Batch::Stride0, .beta = 0.5f,
               .grid = g});
    check(Case{.batch = 3, .m = 30, .n = 2100, .k = 400, .ba = Batch::Size1, .grid = g});
  }
  check(Case{.batch = 4, .m = 64, .n = 196, .k = 90, .lb = Layout::Padded, .lc = Layout::Padded,
             .ba = Batch::Stride0, .alpha = -1.0f, .grid = {1, 1, 1}});
}

TEST_P(GemmTest, AnyGridIsCorrect) {
  const std::vector<int64_t> grids[] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {3, 2, 2},
                                        {7, 5, 3}, {64, 64, 1}, {1, 1, 8}};
  for (const auto& g : grids) check(Case{.batch = 3, .m = 50, .n = 70, .k = 20, .grid = g});
}

TEST_P(GemmTest, HalfPrecision) {
  for (Dtype t : {Dtype::BF16, Dtype::F16}) {
    check(Case{.m = 17, .n = 33, .k = 65, .dtype = t});
    check(Case{.m = 129, .n = 70, .k = 600, .dtype = t, .alpha = 0.5f, .beta = 0.75f});
    check(Case{.m = 21, .n = 35, .k = 30, .dtype = t, .la = Layout::ColMajor, .lb = Layout::Strided,
               .lc = Layout::ColMajor});
    check(Case{.batch = 3, .m = 20, .n = 30, .k = 40, .dtype = t, .bb = Batch::Stride0,
               .beta = 0.0f, .nan_c = true});
    check(Case{.m = 5, .n = 6, .k = 0, .dtype = t, .beta = 2.0f});
    check(Case{.m = 30, .n = 2100, .k = 50, .dtype = t, .beta = 1.0f});
  }
}

/// bf16/f16 outputs are rounded once, after the whole sum in fp32: 1 + e +
/// e (e half an ulp of 1) is 1 + 2e, but rounding after the first K block
/// would give 1 (a tie rounds to even) and never recover.
TEST_P(GemmTest, HalfPrecisionRoundsOnce) {
  for (Dtype t : {Dtype::BF16, Dtype::F16}) {
    const int64_t k = 1000;
    const float e = t == Dtype::BF16 ? std::ldexp(1.0f, -8) : std::ldexp(1.0f, -11);
    HostBuffer ha(t, k), hb(t, k), hc(t, 1);
    for (int64_t p = 0; p < k; ++p) ha.set(p, 1.0f), hb.set(p, 0.0f);
    hb.set(0, 1.0f), hb.set(1, e), hb.set(k - 1, e);
    void *da, *db, *dc;
    MAIA_ASSERT_OK(maiaMalloc(&da, ha.bytes.size()));
    MAIA_ASSERT_OK(maiaMalloc(&db, hb.bytes.size()));
    MAIA_ASSERT_OK(maiaMalloc(&dc, hc.bytes.size()));
    MAIA_ASSERT_OK(maiaMemcpy(da, ha.bytes.data(), ha.bytes.size(), maiaMemcpyHostToDevice));
    MAIA_ASSERT_OK(maiaMemcpy(db, hb.bytes.data(), hb.bytes.size(), maiaMemcpyHostToDevice));
    maiaKernel_t kernel;
    MAIA_ASSERT_OK(maiaModuleGetKernel(module_, kernelName(t), &kernel));
    maiaKernelArg args[5] = {memrefArg(da, t, makeOperand(1, 1, k, Layout::RowMajor, Batch::Full)),
                             memrefArg(db, t, makeOperand(1, k, 1, Layout::RowMajor, Batch::Full)),
                             memrefArg(dc, t, makeOperand(1, 1, 1, Layout::RowMajor, Batch::Full)),
                             maiaKernelArgFloat(maiaDtypeF32, 1.0), maiaKernelArgFloat(maiaDtypeF32, 0.0)};
    const int64_t grid[3] = {1, 1, 1};
    MAIA_ASSERT_OK(maiaLaunchKernel(kernel, grid, args, 5, nullptr));
    MAIA_ASSERT_OK(maiaMemcpy(hc.bytes.data(), dc, hc.bytes.size(), maiaMemcpyDeviceToHost));
    EXPECT_EQ(hc.get(0), 1.0f + 2 * e) << kernelName(t);
    for (void* p : {da, db, dc}) MAIA_ASSERT_OK(maiaFree(p));
  }
}

/// Operands whose shapes disagree fault the kernel: the driver reports a
/// sticky launch failure naming it instead of computing garbage.
TEST_P(GemmTest, MismatchedShapesFault) {
  void* d;
  MAIA_ASSERT_OK(maiaMalloc(&d, 4096));
  maiaKernel_t kernel;
  MAIA_ASSERT_OK(maiaModuleGetKernel(module_, "gemm_f32", &kernel));
  maiaKernelArg args[5] = {memrefArg(d, Dtype::F32, makeOperand(1, 4, 5, Layout::RowMajor, Batch::Full)),
                           memrefArg(d, Dtype::F32, makeOperand(1, 6, 4, Layout::RowMajor, Batch::Full)),
                           memrefArg(d, Dtype::F32, makeOperand(1, 4, 4, Layout::RowMajor, Batch::Full)),
                           maiaKernelArgFloat(maiaDtypeF32, 1.0), maiaKernelArgFloat(maiaDtypeF32, 0.0)};
  const int64_t grid[3] = {1, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(kernel, grid, args, 5, nullptr));
  EXPECT_EQ(maiaDeviceSynchronize(), maiaErrorLaunchFailure);
  EXPECT_NE(std::string(maiaGetLastErrorMessage()).find("gemm_f32"), std::string::npos)
      << maiaGetLastErrorMessage();
  MAIA_ASSERT_OK(maiaDeviceReset(0));
  MAIA_ASSERT_OK(maiaFree(d));
}

// ----------------------------------------------- float64 and the integers

template <typename T>
struct WideType;
template <>
struct WideType<double> {
  static constexpr maiaDtype kDtype = maiaDtypeF64;
  static constexpr const char* kKernel = "gemm_f64";
};
#define MAIA_WIDE_INT(type, dtype, kernel)          \
  template <>                                       \
  struct WideType<type> {                           \
    static constexpr maiaDtype kDtype = dtype;      \
    static constexpr const char* kKernel = kernel;  \
  };
MAIA_WIDE_INT(int64_t, maiaDtypeI64, "gemm_i64")
MAIA_WIDE_INT(int32_t, maiaDtypeI32, "gemm_i32")
MAIA_WIDE_INT(int16_t, maiaDtypeI16, "gemm_i16")
MAIA_WIDE_INT(int8_t, maiaDtypeI8, "gemm_i8")
MAIA_WIDE_INT(uint8_t, maiaDtypeU8, "gemm_u8")
#undef MAIA_WIDE_INT

/// Runs one case of the float64 or an integer kernel and checks C: integers
/// exactly against a wrapping reference (the CPU's), float64 within the
/// error bound of a double sum. Integer operands span the whole type, so
/// products and sums wrap.
template <typename T>
void checkWide(maiaModule_t module, int core_count, const Case& c) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  SCOPED_TRACE(describe(c) + " as " + WideType<T>::kKernel);
  Operand a = makeOperand(c.batch, c.m, c.k, c.la, c.ba);
  Operand b = makeOperand(c.batch, c.k, c.n, c.lb, c.bb);
  Operand out = makeOperand(c.batch, c.m, c.n, c.lc, Batch::Full);
  std::vector<T> ha(a.storage), hb(b.storage), hc(out.storage);
  std::mt19937_64 rng(99);
  auto draw = [&rng](bool nan) {
    if constexpr (kFloat)
      return nan ? std::numeric_limits<T>::quiet_NaN()
                 : std::uniform_real_distribution<T>(-1, 1)(rng);
    else
      return static_cast<T>(rng());
  };
  for (T& v : ha) v = draw(c.nan_ab);
  for (T& v : hb) v = draw(c.nan_ab);
  for (T& v : hc) v = draw(c.nan_c);

  void *da, *db, *dc;
  MAIA_ASSERT_OK(maiaMalloc(&da, ha.size() * sizeof(T)));
  MAIA_ASSERT_OK(maiaMalloc(&db, hb.size() * sizeof(T)));
  MAIA_ASSERT_OK(maiaMalloc(&dc, hc.size() * sizeof(T)));
  MAIA_ASSERT_OK(maiaMemcpy(da, ha.data(), ha.size() * sizeof(T), maiaMemcpyHostToDevice));
  MAIA_ASSERT_OK(maiaMemcpy(db, hb.data(), hb.size() * sizeof(T), maiaMemcpyHostToDevice));
  MAIA_ASSERT_OK(maiaMemcpy(dc, hc.data(), hc.size() * sizeof(T), maiaMemcpyHostToDevice));
  maiaKernel_t kernel;
  MAIA_ASSERT_OK(maiaModuleGetKernel(module, WideType<T>::kKernel, &kernel));
  auto scalar = [](float v) {
    return kFloat ? maiaKernelArgFloat(maiaDtypeF64, v)
                  : maiaKernelArgInt(maiaDtypeI64, static_cast<int64_t>(v));
  };
  const maiaDtype dtype = WideType<T>::kDtype;
  maiaKernelArg args[5] = {memrefArg(da, dtype, a), memrefArg(db, dtype, b),
                           memrefArg(dc, dtype, out), scalar(c.alpha), scalar(c.beta)};
  int64_t grid[3];
  if (c.grid.empty()) {
    maia_gemm_grid(c.m, c.n, c.k, c.batch, core_count, grid);
  } else {
    for (int d = 0; d < 3; ++d) grid[d] = c.grid[d];
  }
  MAIA_ASSERT_OK(maiaLaunchKernel(kernel, grid, args, 5, nullptr));
  std::vector<T> result(out.storage);
  MAIA_ASSERT_OK(maiaMemcpy(result.data(), dc, result.size() * sizeof(T), maiaMemcpyDeviceToHost));
  for (void* p : {da, db, dc}) MAIA_ASSERT_OK(maiaFree(p));

  int failures = 0;
  for (int64_t bi = 0; bi < c.batch; ++bi)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        const T got = result[out.index(bi, i, j)];
        auto at = [&](const std::vector<T>& h, const Operand& op, int64_t r, int64_t col) {
          return h[op.index(op.batch == 1 ? 0 : bi, r, col)];
        };
        bool ok;
        if constexpr (kFloat) {
          double sum = 0, mag = 0;
          if (c.alpha != 0)
            for (int64_t p = 0; p < c.k; ++p) {
              sum += at(ha, a, i, p) * at(hb, b, p, j);
              mag += std::fabs(at(ha, a, i, p) * at(hb, b, p, j));
            }
          const double c0 = c.beta == 0 ? 0 : hc[out.index(bi, i, j)];
          const double ref = c.alpha * sum + c.beta * c0;
          ok = std::fabs(got - ref) <= (c.k + 3) * std::ldexp(1.0, -52) *
                                           (std::fabs(c.alpha) * mag + std::fabs(c.beta * c0));
        } else {
          uint64_t sum = 0;
          for (int64_t p = 0; p < c.k; ++p)
            sum += static_cast<uint64_t>(int64_t{at(ha, a, i, p)}) *
                   static_cast<uint64_t>(int64_t{at(hb, b, p, j)});
          uint64_t ref = static_cast<uint64_t>(static_cast<int64_t>(c.alpha)) * sum;
          if (c.beta != 0)
            ref += static_cast<uint64_t>(static_cast<int64_t>(c.beta)) *
                   static_cast<uint64_t>(int64_t{hc[out.index(bi, i, j)]});
          ok = got == static_cast<T>(ref);
        }
        if (!ok && failures++ < 5)
          ADD_FAILURE() << "C[" << bi << "," << i << "," << j << "] = " << +got;
      }
  EXPECT_EQ(failures, 0);
}

template <typename T>
void checkWideCases(maiaModule_t module, int core_count) {
  const Layout layouts[] = {Layout::RowMajor, Layout::ColMajor, Layout::Strided};
  for (Layout la : layouts)
    for (Layout lb : layouts)
      for (Layout lc : {Layout::RowMajor, Layout::ColMajor})
        checkWide<T>(module, core_count,
                     Case{.m = 13, .n = 70, .k = 9, .la = la, .lb = lb, .lc = lc, .beta = 3.0f});
  checkWide<T>(module, core_count, Case{.m = 130, .n = 140, .k = 150, .lc = Layout::Padded});
  checkWide<T>(module, core_count,
               Case{.batch = 3, .m = 9, .n = 65, .k = 7, .ba = Batch::Size1, .bb = Batch::Stride0,
                    .alpha = -2.0f, .beta = 1.0f});
  checkWide<T>(module, core_count, Case{.m = 5, .n = 6, .k = 0, .beta = 2.0f});
  checkWide<T>(module, core_count, Case{.m = 8, .n = 8, .k = 8, .alpha = 0.0f, .beta = 1.0f,
                                        .nan_ab = true});
  checkWide<T>(module, core_count, Case{.m = 8, .n = 8, .k = 8, .nan_c = true});
  for (const std::vector<int64_t>& g : {std::vector<int64_t>{1, 1, 1}, {7, 5, 3}, {64, 64, 1}})
    checkWide<T>(module, core_count, Case{.batch = 3, .m = 50, .n = 70, .k = 20, .grid = g});
}

/// float64 and integer products (rare in models: no packed microkernel):
/// every layout, batch broadcast, alpha/beta, K = 0, alpha = 0 ignoring A
/// and B, beta = 0 ignoring C, any grid.
TEST_P(GemmTest, Float64AndIntegers) {
  checkWideCases<double>(module_, prop_.core_count);
  checkWideCases<int64_t>(module_, prop_.core_count);
  checkWideCases<int32_t>(module_, prop_.core_count);
  checkWideCases<int16_t>(module_, prop_.core_count);
  checkWideCases<int8_t>(module_, prop_.core_count);
  checkWideCases<uint8_t>(module_, prop_.core_count);
}

std::string isaName(const ::testing::TestParamInfo<const char*>& param) { return param.param; }
/// The v3 binary must load on AVX2-only hosts: it may not declare AVX-512.
TEST_P(GemmTest, DeclaresTheFeaturesOfItsIsa) {
  const char* json;
  MAIA_ASSERT_OK(maiaModuleGetMetadata(module_, &json));
  std::string metadata = json;
  EXPECT_NE(metadata.find("\"avx2\""), std::string::npos);
  EXPECT_NE(metadata.find("\"fma\""), std::string::npos);
  EXPECT_EQ(metadata.find("avx512") != std::string::npos, std::string(GetParam()) == "v4");
  int count;
  MAIA_ASSERT_OK(maiaModuleGetKernelCount(module_, &count));
  EXPECT_EQ(count, 9);  // f32, bf16, f16, f64 and five integer types
}

INSTANTIATE_TEST_SUITE_P(Isa, GemmTest, ::testing::Values("v4", "v3"), isaName);

// ------------------------------------------------------- the grid helper

TEST(GemmGrid, TinyProblemsStayOnOneCore) {
  int64_t g[3];
  maia_gemm_grid(16, 16, 16, 1, 2, g);
  EXPECT_EQ(g[0] * g[1] * g[2], 1);
  maia_gemm_grid(128, 128, 8, 1, 2, g);  // a short K is little work too
  EXPECT_EQ(g[0] * g[1] * g[2], 1);
}

TEST(GemmGrid, ALinearLayerAtBatchOneSplitsItsColumns) {
  int64_t g[3];
  maia_gemm_grid(1, 1024, 1024, 1, 2, g);
  EXPECT_EQ(g[1], 2);
  EXPECT_EQ(g[0] * g[2], 1);
}

TEST(GemmGrid, OneLargeMatrixSplitsAlongItsLongerSide) {
  int64_t g[3];
  maia_gemm_grid(4096, 4096, 4096, 1, 2, g);
  EXPECT_EQ(g[0], 2);
  EXPECT_EQ(g[1] * g[2], 1);
  maia_gemm_grid(64, 8192, 64, 1, 2, g);
  EXPECT_EQ(g[1], 2);
  EXPECT_EQ(g[0] * g[2], 1);
}

TEST(GemmGrid, BatchesBalanceTheCores) {
  int64_t g[3];
  maia_gemm_grid(256, 256, 256, 4, 2, g);  // whole matrices suffice, two per core
  EXPECT_EQ(g[0] * g[1], 1);
  EXPECT_EQ(g[2], 2);
  maia_gemm_grid(256, 256, 256, 17, 2, g);  // 8 and 9 matrices
  EXPECT_EQ(g[0] * g[1], 1);
  EXPECT_EQ(g[2], 2);
  maia_gemm_grid(256, 256, 256, 3, 2, g);  // 3 matrices: split each in two
  EXPECT_EQ(g[0] * g[1], 2);
  EXPECT_EQ(g[2], 3);
  maia_gemm_grid(256, 256, 256, 3, 1, g);  // one core: no split
  EXPECT_EQ(g[0] * g[1] * g[2], 1);
}

}  // namespace
