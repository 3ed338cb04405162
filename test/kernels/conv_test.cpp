// Tests of the implicit-GEMM convolution kernel (runtime/kernels/gemm/
// conv_kernels.cpp) through the driver C API, for both binaries: every
// output element against a double-precision reference, in the layouts
// PyTorch does not hand the kernel today (a channels-last output) as well
// as those it does, both reduction orders and any launch grid.
#include <gtest/gtest.h>
#include <maia/runtime.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "conv_launch.h"

namespace {

#define MAIA_ASSERT_OK(expr)                                                                  \
  do {                                                                                        \
    maiaError_t maia_err_ = (expr);                                                           \
    ASSERT_EQ(maia_err_, maiaSuccess)                                                         \
        << #expr << " -> " << maiaGetErrorName(maia_err_) << ": " << maiaGetLastErrorMessage(); \
  } while (0)

struct Case {
  int64_t n = 1, c = 1, h = 1, w = 1, o = 1, kh = 1, kw = 1;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool nhwc_in = false, nhwc_out = false, channels_inner = false, bias = true;
  std::vector<int64_t> grid = {};  // empty: maia_conv_grid

  int64_t oh() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
};

std::string describe(const Case& c) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "in " + s(c.n) + "x" + s(c.c) + "x" + s(c.h) + "x" + s(c.w) + (c.nhwc_in ? " nhwc" : " nchw") +
         ", weight " + s(c.o) + "x" + s(c.kh) + "x" + s(c.kw) + ", stride " + s(c.sh) + "," +
         s(c.sw) + ", pad " + s(c.ph) + "," + s(c.pw) + ", dilation " + s(c.dh) + "," + s(c.dw) +
         (c.nhwc_out ? ", out nhwc" : ", out nchw") + (c.channels_inner ? ", k=(i,j,c)" : ", k=(c,i,j)") +
         (c.bias ? ", bias" : "");
}

/// Strides of an [N, C, H, W] tensor, NCHW or NHWC in memory.
std::vector<int64_t> strides(int64_t c, int64_t h, int64_t w, bool nhwc) {
  if (nhwc) return {h * w * c, 1, w * c, c};
  return {c * h * w, h * w, w, 1};
}

maiaKernelArg memref(void* data, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  maiaKernelArg arg = maiaKernelArgVector(data, maiaDtypeF32, 1, 0);
  arg.rank = static_cast<int32_t>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) arg.sizes[d] = sizes[d], arg.strides[d] = strides[d];
  return arg;
}

class ConvTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    std::string path = std::string(MAIA_KERNEL_DIR) + "/maia_conv_kernels_" + GetParam() + ".maiabin";
    maiaError_t error = maiaModuleLoad(&module_, path.c_str());
    if (error == maiaErrorUnsupportedImage)
      GTEST_SKIP() << "the host CPU cannot run the " << GetParam() << " binary";
    MAIA_ASSERT_OK(error);
    MAIA_ASSERT_OK(maiaGetDeviceProperties(&prop_, 0));
  }
  void TearDown() override {
    if (module_) {
      EXPECT_EQ(maiaModuleUnload(module_), maiaSuccess);
    }
  }
  void check(const Case& c);

  maiaModule_t module_ = nullptr;
  maiaDeviceProp prop_{};
};

void ConvTest::check(const Case& c) {
  SCOPED_TRACE(describe(c));
  const int64_t oh = c.oh(), ow = c.ow(), taps = c.kh * c.kw, k = c.c * taps;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> in(c.n * c.c * c.h * c.w), weight(c.o * k), bias(c.o);
  for (float& v : in) v = dist(rng);
  for (float& v : weight) v = dist(rng);  // logical [O, C, KH, KW], row-major
  for (float& v : bias) v = dist(rng);
  // B = [K, O] row-major in the reduction order the kernel is told.
  std::vector<float> matrix(k * c.o);
  for (int64_t o = 0; o < c.o; ++o)
    for (int64_t ch = 0; ch < c.c; ++ch)
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t row = c.channels_inner ? t * c.c + ch : ch * taps + t;
        matrix[row * c.o + o] = weight[(o * c.c + ch) * taps + t];
      }
  const auto in_strides = strides(c.c, c.h, c.w, c.nhwc_in);
  const auto out_strides = strides(c.o, oh, ow, c.nhwc_out);
  std::vector<float> in_memory(in.size());
  for (int64_t b = 0; b < c.n; ++b)
    for (int64_t ch = 0; ch < c.c; ++ch)
      for (int64_t y = 0; y < c.h; ++y)
        for (int64_t x = 0; x < c.w; ++x)
          in_memory[b * in_strides[0] + ch * in_strides[1] + y * in_strides[2] + x * in_strides[3]] =
              in[((b * c.c + ch) * c.h + y) * c.w + x];
  const size_t out_count = c.n * c.o * oh * ow;
  std::vector<float> out(out_count, std::nanf(""));  // never read: NaN would show

  void *din, *dw, *db, *dout;
  MAIA_ASSERT_OK(maiaMalloc(&din, std::max<size_t>(in.size(), 1) * 4));
  MAIA_ASSERT_OK(maiaMalloc(&dw, std::max<size_t>(matrix.size(), 1) * 4));
  MAIA_ASSERT_OK(maiaMalloc(&db, c.o * 4));
  MAIA_ASSERT_OK(maiaMalloc(&dout, std::max<size_t>(out_count, 1) * 4));
  MAIA_ASSERT_OK(maiaMemcpy(din, in_memory.data(), in.size() * 4, maiaMemcpyHostToDevice));
  MAIA_ASSERT_OK(maiaMemcpy(dw, matrix.data(), matrix.size() * 4, maiaMemcpyHostToDevice));
  MAIA_ASSERT_OK(maiaMemcpy(db, bias.data(), bias.size() * 4, maiaMemcpyHostToDevice));
  MAIA_ASSERT_OK(maiaMemcpy(dout, out.data(), out_count * 4, maiaMemcpyHostToDevice));

  maiaKernel_t kernel;
  MAIA_ASSERT_OK(maiaModuleGetKernel(module_, "conv2d_f32", &kernel));
  std::vector<maiaKernelArg> args = {
      memref(dout, {c.n, c.o, oh, ow}, out_strides), memref(din, {c.n, c.c, c.h, c.w}, in_strides),
      memref(dw, {k, c.o}, {c.o, 1}), memref(db, {c.o}, {1})};
  for (int64_t v : {c.kh, c.kw, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, int64_t{c.channels_inner},
                    int64_t{c.bias}})
    args.push_back(maiaKernelArgInt(maiaDtypeI64, v));
  int64_t grid[3] = {1, 1, 1};
  if (c.grid.empty()) {
    maia_conv_grid(c.n * oh * ow, c.o, k, prop_.core_count, grid);
  } else {
    grid[0] = c.grid[0], grid[1] = c.grid[1];
  }
  MAIA_ASSERT_OK(maiaLaunchKernel(kernel, grid, args.data(), static_cast<int>(args.size()), nullptr));
  MAIA_ASSERT_OK(maiaMemcpy(out.data(), dout, out_count * 4, maiaMemcpyDeviceToHost));
  for (void* p : {din, dw, db, dout}) MAIA_ASSERT_OK(maiaFree(p));

  int failures = 0;
  for (int64_t b = 0; b < c.n; ++b)
    for (int64_t o = 0; o < c.o; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double sum = c.bias ? bias[o] : 0.0, mag = std::fabs(sum);
          for (int64_t ch = 0; ch < c.c; ++ch)
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                const int64_t iy = y * c.sh - c.ph + i * c.dh, ix = x * c.sw - c.pw + j * c.dw;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                const double p = double(in[((b * c.c + ch) * c.h + iy) * c.w + ix]) *
                                 weight[((o * c.c + ch) * c.kh + i) * c.kw + j];
                sum += p;
                mag += std::fabs(p);
              }
          const double bound = (k + 2) * std::ldexp(1.0, -24) * mag + 1e-7;
          const float got = out[b * out_strides[0] + o * out_strides[1] + y * out_strides[2] +
                                x * out_strides[3]];
          if (!(std::fabs(got - sum) <= bound) && failures++ < 5)
            ADD_FAILURE() << "out[" << b << "," << o << "," << y << "," << x << "] = " << got
                          << ", expected " << sum << " (bound " << bound << ")";
        }
  EXPECT_EQ(failures, 0);
}

Case withLayouts(Case c, bool nhwc_in, bool nhwc_out, bool channels_inner) {
  c.nhwc_in = nhwc_in, c.nhwc_out = nhwc_out, c.channels_inner = channels_inner;
  return c;
}

TEST_P(ConvTest, EveryLayoutAndReductionOrder) {
  const Case shapes[] = {
      {.n = 2, .c = 3, .h = 23, .w = 30, .o = 16, .kh = 7, .kw = 7, .sh = 2, .sw = 2, .ph = 3, .pw = 3},
      {.n = 1, .c = 16, .h = 30, .w = 30, .o = 40, .kh = 3, .kw = 3, .ph = 1, .pw = 1},
      {.n = 2, .c = 48, .h = 7, .w = 9, .o = 70, .kh = 3, .kw = 3, .ph = 1, .pw = 1},  // 432 k: 2 blocks
      {.n = 2, .c = 32, .h = 29, .w = 29, .o = 33, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1},
      {.n = 3, .c = 20, .h = 7, .w = 7, .o = 35, .bias = false},
      {.n = 1, .c = 5, .h = 11, .w = 9, .o = 9, .kh = 3, .kw = 2, .sh = 2, .ph = 1, .dh = 2, .dw = 3},
  };
  for (const Case& s : shapes)
    for (bool nhwc_in : {false, true})
      for (bool nhwc_out : {false, true})
        for (bool inner : {false, true}) check(withLayouts(s, nhwc_in, nhwc_out, inner));
}

TEST_P(ConvTest, AnyGridIsCorrect) {
  const Case base{.n = 2, .c = 8, .h = 12, .w = 15, .o = 45, .kh = 3, .kw = 3, .ph = 1, .pw = 1};
  for (std::vector<int64_t> g : {std::vector<int64_t>{1, 1}, {2, 1}, {1, 2}, {5, 3}, {40, 4}}) {
    Case c = base;
    c.grid = g;
    check(c);
    check(withLayouts(c, true, true, true));
  }
}

TEST_P(ConvTest, TinyAndDegenerate) {
  check(Case{});                                                        // 1x1x1x1
  check(Case{.c = 2, .h = 3, .w = 3, .o = 1, .kh = 3, .kw = 3, .sh = 4, .sw = 4, .ph = 5, .pw = 5});
  check(Case{.n = 2, .c = 4, .h = 5, .w = 4, .o = 3, .kh = 5, .kw = 4, .bias = false});
}

INSTANTIATE_TEST_SUITE_P(Binaries, ConvTest, ::testing::Values("v4", "v3"));

}  // namespace
