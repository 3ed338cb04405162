// Kernel launches: results, grids, strides, argument validation.
#include <climits>
#include <vector>

#include "test_util.h"

using namespace maia_test;

namespace {

class LaunchTest : public ::testing::Test {
 protected:
  void upload(void* d, const std::vector<float>& values) {
    MAIA_ASSERT_OK(maiaMemcpy(d, values.data(), values.size() * sizeof(float),
                              maiaMemcpyHostToDevice));
  }
  std::vector<float> downloadF32(void* d, size_t n) {
    std::vector<float> out(n);
    EXPECT_EQ(maiaMemcpy(out.data(), d, n * sizeof(float), maiaMemcpyDeviceToHost), maiaSuccess);
    return out;
  }
};

TEST_F(LaunchTest, ElementwiseKernelOverOddSizesAndGrids) {
  for (int64_t n : {1, 7, 1000, 100'003}) {
    for (int64_t programs : {int64_t{1}, int64_t{3}, int64_t{64}, n + 5}) {
      std::vector<float> a(n), b(n);
      for (int64_t i = 0; i < n; ++i) {
        a[i] = static_cast<float>(i) * 0.5f;
        b[i] = 3.0f - static_cast<float>(i);
      }
      void *da, *db, *dout;
      MAIA_ASSERT_OK(maiaMalloc(&da, n * sizeof(float)));
      MAIA_ASSERT_OK(maiaMalloc(&db, n * sizeof(float)));
      MAIA_ASSERT_OK(maiaMalloc(&dout, n * sizeof(float)));
      upload(da, a);
      upload(db, b);
      maiaKernelArg args[3] = {vectorArg(da, maiaDtypeF32, n), vectorArg(db, maiaDtypeF32, n),
                               vectorArg(dout, maiaDtypeF32, n)};
      int64_t grid[3] = {programs, 1, 1};
      MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("add_f32"), grid, args, 3, nullptr));
      auto out = downloadF32(dout, n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(out[i], a[i] + b[i]) << "n=" << n << " programs=" << programs << " i=" << i;
      for (void* p : {da, db, dout}) MAIA_ASSERT_OK(maiaFree(p));
    }
  }
}

TEST_F(LaunchTest, DynamicStridesAcceptNonContiguousViews) {
  const int64_t n = 500;
  std::vector<float> a(2 * n), b(3 * n);
  for (int64_t i = 0; i < 2 * n; ++i) a[i] = static_cast<float>(i);
  for (int64_t i = 0; i < 3 * n; ++i) b[i] = static_cast<float>(-2 * i);
  void *da, *db, *dout;
  MAIA_ASSERT_OK(maiaMalloc(&da, a.size() * sizeof(float)));
  MAIA_ASSERT_OK(maiaMalloc(&db, b.size() * sizeof(float)));
  MAIA_ASSERT_OK(maiaMalloc(&dout, n * sizeof(float)));
  upload(da, a);
  upload(db, b);
  // a[::2], reversed b[::-3] (negative stride from the last element), out.
  maiaKernelArg args[3] = {vectorArg(da, maiaDtypeF32, n, 2), vectorArg(db, maiaDtypeF32, n, -3),
                           vectorArg(dout, maiaDtypeF32, n)};
  args[1].offset = 3 * n - 1;
  int64_t grid[3] = {5, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("add_f32"), grid, args, 3, nullptr));
  auto out = downloadF32(dout, n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[2 * i] + b[3 * n - 1 - 3 * i]) << i;
  for (void* p : {da, db, dout}) MAIA_ASSERT_OK(maiaFree(p));
}

TEST_F(LaunchTest, EveryProgramIdOfA3DGridRunsExactlyOnce) {
  const int64_t gx = 5, gy = 3, gz = 4, programs = gx * gy * gz;
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, programs * 3 * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(d, 0, programs * 3 * sizeof(int64_t)));
  maiaKernelArg arg{};
  arg.kind = maiaArgMemref;
  arg.dtype = maiaDtypeI64;
  arg.data = d;
  arg.rank = 2;
  arg.sizes[0] = programs;
  arg.sizes[1] = 3;
  arg.strides[0] = 3;
  arg.strides[1] = 1;
  int64_t grid[3] = {gx, gy, gz};
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("record_program_ids"), grid, &arg, 1, nullptr));
  auto out = download(d, programs * 3);
  for (int64_t z = 0; z < gz; ++z)
    for (int64_t y = 0; y < gy; ++y)
      for (int64_t x = 0; x < gx; ++x) {
        int64_t row = x + gx * (y + gy * z);
        ASSERT_EQ(out[row * 3 + 0], x + 1);
        ASSERT_EQ(out[row * 3 + 1], y + 1);
        ASSERT_EQ(out[row * 3 + 2], z + 1);
      }
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST_F(LaunchTest, ScalarArgumentsArePassedInTheKernelsType) {
  const int64_t n = 4099;
  std::vector<float> b(n, 1.5f), c(n);
  for (int64_t i = 0; i < n; ++i) c[i] = static_cast<float>(i);
  void *da, *db, *dc;
  for (void** p : {&da, &db, &dc}) MAIA_ASSERT_OK(maiaMalloc(p, n * sizeof(float)));
  upload(db, b);
  upload(dc, c);
  maiaKernelArg args[4] = {vectorArg(da, maiaDtypeF32, n), vectorArg(db, maiaDtypeF32, n),
                           vectorArg(dc, maiaDtypeF32, n), scalarArg(maiaDtypeF32, 0.25)};
  int64_t grid[3] = {16, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("triad_f32"), grid, args, 4, nullptr));
  auto out = downloadF32(da, n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 1.5f + 0.25f * c[i]) << i;
  for (void* p : {da, db, dc}) MAIA_ASSERT_OK(maiaFree(p));
}

TEST_F(LaunchTest, KernelWithoutArgumentsRuns) {
  int64_t grid[3] = {1000, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("empty"), grid, nullptr, 0, nullptr));
  MAIA_ASSERT_OK(maiaDeviceSynchronize());
}

TEST_F(LaunchTest, MismatchedLaunchesAreRejectedAndDisturbNothing) {
  const int64_t n = 100;
  void *a, *b, *out, *other_device;
  for (void** p : {&a, &b, &out}) MAIA_ASSERT_OK(maiaMalloc(p, n * sizeof(float)));
  MAIA_ASSERT_OK(maiaSetDevice(1));
  MAIA_ASSERT_OK(maiaMalloc(&other_device, n * sizeof(float)));
  MAIA_ASSERT_OK(maiaSetDevice(0));
  maiaKernel_t add = basicKernel("add_f32");
  maiaKernel_t triad = basicKernel("triad_f32");
  int64_t grid[3] = {4, 1, 1};
  auto good = [&] {
    return std::vector<maiaKernelArg>{vectorArg(a, maiaDtypeF32, n), vectorArg(b, maiaDtypeF32, n),
                                      vectorArg(out, maiaDtypeF32, n)};
  };
  auto args = good();
  MAIA_EXPECT_ERROR(maiaLaunchKernel(add, grid, args.data(), 2, nullptr), maiaErrorInvalidLaunch,
                    "kernel 'add_f32' takes 3 arguments, the launch passes 2");
  args[1] = scalarArg(maiaDtypeF32, 1.0);
  MAIA_EXPECT_ERROR(maiaLaunchKernel(add, grid, args.data(), 3, nullptr), maiaErrorInvalidLaunch,
                    "argument 1 of kernel 'add_f32' must be a memref, the launch passes a scalar");
  args = good();
  args[2].dtype = maiaDtypeI32;
  MAIA_EXPECT_ERROR(maiaLaunchKernel(add, grid, args.data(), 3, nullptr), maiaErrorInvalidLaunch,
                    "argument 2 of kernel 'add_f32' has dtype i32, the kernel expects f32");
  args = good();
  args[0].rank = 2;
  args[0].sizes[1] = 1;
  args[0].strides[1] = 1;
  MAIA_EXPECT_ERROR(maiaLaunchKernel(add, grid, args.data(), 3, nullptr), maiaErrorInvalidLaunch,
                    "has rank 2, the kernel expects rank 1");
  args = good();
  args[0].sizes[0] = n + 1;
  MAIA_EXPECT_ERROR(maiaLaunchKernel(add, grid, args.data(), 3, nullptr),
                    maiaErrorInvalidDevicePointer, "argument 0 of kernel 'add_f32' overruns");
  args = good();
  args[1].offset = -1;
  MAIA_EXPECT_ERROR(maiaLaunchKernel(add, grid, args.data(), 3, nullptr), maiaErrorInvalidLaunch,
                    "reaches element -1 before its data pointer");
  args = good();
  args[2].data = other_device;
  MAIA_EXPECT_ERROR(maiaLaunchKernel(add, grid, args.data(), 3, nullptr), maiaErrorInvalidLaunch,
                    "argument 2 of kernel 'add_f32' is on maia:1 but the stream is on maia:0");
  std::vector<float> host(n);
  args = good();
  args[0].data = host.data();
  MAIA_EXPECT_ERROR(maiaLaunchKernel(add, grid, args.data(), 3, nullptr), maiaErrorInvalidLaunch,
                    "is not device memory");
  maiaKernelArg triad_args[4] = {vectorArg(a, maiaDtypeF32, n / 2, 2),
                                 vectorArg(b, maiaDtypeF32, n), vectorArg(out, maiaDtypeF32, n),
                                 scalarArg(maiaDtypeF32, 1.0)};
  MAIA_EXPECT_ERROR(maiaLaunchKernel(triad, grid, triad_args, 4, nullptr), maiaErrorInvalidLaunch,
                    "has stride 2 in dimension 0, the kernel was compiled for stride 1");
  args = good();
  int64_t zero_grid[3] = {4, 0, 1};
  MAIA_EXPECT_ERROR(maiaLaunchKernel(add, zero_grid, args.data(), 3, nullptr),
                    maiaErrorInvalidLaunch, "grid (4, 0, 1) of kernel 'add_f32' has no programs");
  int64_t huge_grid[3] = {INT64_MAX, 2, 1};
  MAIA_EXPECT_ERROR(maiaLaunchKernel(add, huge_grid, args.data(), 3, nullptr),
                    maiaErrorInvalidLaunch, "more than 2^40 programs");
  MAIA_EXPECT_ERROR(maiaLaunchKernel(add, nullptr, args.data(), 3, nullptr),
                    maiaErrorInvalidValue, "grid is NULL");
  MAIA_EXPECT_ERROR(maiaLaunchKernel(add, grid, nullptr, 3, nullptr), maiaErrorInvalidValue,
                    "argument array is NULL");
  int not_a_kernel = 0;
  EXPECT_EQ(maiaLaunchKernel(reinterpret_cast<maiaKernel_t>(&not_a_kernel), grid, args.data(), 3,
                             nullptr),
            maiaErrorInvalidHandle);
  // After all that, a correct launch works.
  std::vector<float> ones(n, 1.0f);
  MAIA_ASSERT_OK(maiaMemcpy(a, ones.data(), n * sizeof(float), maiaMemcpyHostToDevice));
  MAIA_ASSERT_OK(maiaMemcpy(b, ones.data(), n * sizeof(float), maiaMemcpyHostToDevice));
  args = good();
  MAIA_ASSERT_OK(maiaLaunchKernel(add, grid, args.data(), 3, nullptr));
  EXPECT_EQ(downloadF32(out, n), std::vector<float>(n, 2.0f));
  for (void* p : {a, b, out, other_device}) MAIA_ASSERT_OK(maiaFree(p));
}

TEST_F(LaunchTest, UnloadingAModuleWithLaunchesQueuedIsSafe) {
  maiaModule_t module;
  MAIA_ASSERT_OK(maiaModuleLoad(&module, kernelPath("basic_kernels").c_str()));
  maiaKernel_t kernel;
  MAIA_ASSERT_OK(maiaModuleGetKernel(module, "axpb_i64", &kernel));
  const int64_t n = 64;
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(d, 0, n * sizeof(int64_t)));
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, Gate::wait, &gate));
  maiaKernelArg args[4] = {vectorArg(d, maiaDtypeI64, n), scalarArg(maiaDtypeI64, int64_t{1}),
                           scalarArg(maiaDtypeI64, int64_t{6}), scalarArg(maiaDtypeI64, int64_t{0})};
  int64_t grid[3] = {2, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(kernel, grid, args, 4, stream));
  MAIA_ASSERT_OK(maiaModuleUnload(module));
  EXPECT_EQ(maiaLaunchKernel(kernel, grid, args, 4, stream), maiaErrorInvalidHandle);
  gate.open = true;
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  EXPECT_EQ(download(d, n), std::vector<int64_t>(n, 6));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(d));
}

}  // namespace
