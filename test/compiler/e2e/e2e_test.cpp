// End to end: MLIR kernels compiled by maia-compile (the CLI and the compile
// worker, as child processes), loaded and launched through the driver's C
// API, checked against C++ references on sizes that leave vector tails and
// on non-contiguous views.
#include <gtest/gtest.h>
#include <maia/runtime.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "subprocess.h"

namespace fs = std::filesystem;
using maia_e2e::compilerPath;
using maia_e2e::ProcessResult;
using maia_e2e::runProcess;
using Json = nlohmann::json;

#define MAIA_ASSERT_OK(expr)                                                              \
  do {                                                                                    \
    maiaError_t maia_err_ = (expr);                                                       \
    ASSERT_EQ(maia_err_, maiaSuccess) << #expr << " -> " << maiaGetErrorName(maia_err_) \
                                      << ": " << maiaGetLastErrorMessage();               \
  } while (0)

namespace {

std::string kernelSource(const std::string& name) {
  return std::string(MAIA_E2E_KERNEL_DIR) + "/" + name + ".mlir";
}

/// A scratch directory per test.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "maia-e2e-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// f32 device memory with host staging.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count) : count_(count) {
    EXPECT_EQ(maiaMalloc(&ptr_, std::max<size_t>(count, 1) * sizeof(float)), maiaSuccess);
  }
  ~DeviceBuffer() { maiaFree(ptr_); }
  void upload(const std::vector<float>& host) {
    ASSERT_EQ(host.size(), count_);
    MAIA_ASSERT_OK(maiaMemcpy(ptr_, host.data(), count_ * sizeof(float), maiaMemcpyHostToDevice));
  }
  std::vector<float> download() const {
    std::vector<float> host(count_);
    EXPECT_EQ(maiaMemcpy(host.data(), ptr_, count_ * sizeof(float), maiaMemcpyDeviceToHost),
              maiaSuccess);
    return host;
  }
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  size_t count_;
};

maiaKernelArg memrefArg(void* data, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                        int64_t offset = 0) {
  maiaKernelArg arg;
  memset(&arg, 0, sizeof(arg));
  arg.kind = maiaArgMemref;
  arg.dtype = maiaDtypeF32;
  arg.data = data;
  arg.offset = offset;
  arg.rank = int32_t(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    arg.sizes[d] = sizes[d];
    arg.strides[d] = strides[d];
  }
  return arg;
}

std::vector<float> randomVector(size_t n, unsigned seed, float lo = -4, float hi = 4) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

void expectClose(const std::vector<float>& actual, const std::vector<float>& expected,
                 double rtol, double atol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  size_t failures = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double tolerance = atol + rtol * std::fabs(expected[i]);
    if (std::fabs(double(actual[i]) - expected[i]) > tolerance || std::isnan(actual[i])) {
      if (++failures <= 5)
        ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected "
                      << expected[i];
    }
  }
  EXPECT_EQ(failures, 0u) << what;
}

/// Compiles a kernel file with the CLI into dir; returns the binary path.
std::string compileWithCli(const std::string& name, const ScratchDir& dir,
                           const std::vector<std::string>& extra = {}) {
  std::string output = dir.file(name + ".maiabin");
  std::vector<std::string> argv = {compilerPath(), kernelSource(name), "-o", output};
  argv.insert(argv.end(), extra.begin(), extra.end());
  ProcessResult result = runProcess(argv);
  EXPECT_FALSE(result.signaled) << result.err;
  EXPECT_EQ(result.exitCode, 0) << result.err;
  return output;
}

class Module {
 public:
  explicit Module(const std::string& path) {
    EXPECT_EQ(maiaModuleLoad(&module_, path.c_str()), maiaSuccess) << maiaGetLastErrorMessage();
  }
  ~Module() {
    if (module_) maiaModuleUnload(module_);
  }
  maiaKernel_t kernel(const char* name) {
    maiaKernel_t kernel = nullptr;
    EXPECT_EQ(maiaModuleGetKernel(module_, name, &kernel), maiaSuccess)
        << maiaGetLastErrorMessage();
    return kernel;
  }

 private:
  maiaModule_t module_ = nullptr;
};

void launch(maiaKernel_t kernel, int64_t programs, const std::vector<maiaKernelArg>& args) {
  int64_t grid[3] = {programs, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(kernel, grid, args.data(), int(args.size()), nullptr));
  MAIA_ASSERT_OK(maiaDeviceSynchronize());
}

// ----------------------------------------------------------- references

std::vector<float> softmaxReference(const std::vector<float>& x, int64_t rows, int64_t cols,
                                    int64_t ld) {
  std::vector<float> y(size_t(rows * ld), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    double max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) max = std::max<double>(max, x[r * ld + c]);
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(double(x[r * ld + c]) - max);
    for (int64_t c = 0; c < cols; ++c)
      y[r * ld + c] = float(std::exp(double(x[r * ld + c]) - max) / sum);
  }
  return y;
}

// ----------------------------------------------------------- kernels via the CLI

class CompilerE2ETest : public ::testing::Test {
 protected:
  ScratchDir dir;
};

TEST_F(CompilerE2ETest, ElementwiseVectorKernelMatchesReferenceOnOddSizes) {
  Module module(compileWithCli("elementwise", dir));
  maiaKernel_t kernel = module.kernel("tanh_exp_axpy");
  ASSERT_NE(kernel, nullptr);
  for (int64_t n : {1, 15, 17, 1023, 1025, 4099}) {
    std::vector<float> a = randomVector(size_t(n), 1), b = randomVector(size_t(n), 2, -10, 10);
    DeviceBuffer da{size_t(n)}, db{size_t(n)}, dout{size_t(n)};
    da.upload(a);
    db.upload(b);
    float s = 0.75f;
    launch(kernel, (n + 1023) / 1024,
           {memrefArg(da.get(), {n}, {1}), memrefArg(db.get(), {n}, {1}),
            memrefArg(dout.get(), {n}, {1}), maiaKernelArgFloat(maiaDtypeF32, s)});
    std::vector<float> expected(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) expected[i] = std::tanh(a[i]) + s * std::exp(b[i]);
    expectClose(dout.download(), expected, 2e-6, 2e-6, "n=" + std::to_string(n));
  }
}

TEST_F(CompilerE2ETest, ElementwiseKernelReadsATransposedView) {
  Module module(compileWithCli("elementwise", dir));
  maiaKernel_t kernel = module.kernel("scale_shift_2d");
  ASSERT_NE(kernel, nullptr);
  const int64_t rows = 13, cols = 7;
  // storage is cols x rows; the kernel sees its transpose (strides 1, rows)
  // starting at an offset of 3 elements.
  const int64_t offset = 3;
  std::vector<float> storage = randomVector(size_t(offset + rows * cols), 3);
  DeviceBuffer dx{storage.size()}, dout{size_t(rows * cols)};
  dx.upload(storage);
  launch(kernel, rows,
         {memrefArg(dx.get(), {rows, cols}, {1, rows}, offset),
          memrefArg(dout.get(), {rows, cols}, {cols, 1}), maiaKernelArgFloat(maiaDtypeF32, 2.0),
          maiaKernelArgFloat(maiaDtypeF32, -1.0)});
  std::vector<float> expected(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      expected[r * cols + c] = storage[offset + r + c * rows] * 2.0f - 1.0f;
  expectClose(dout.download(), expected, 1e-6, 1e-6, "transposed");
}

TEST_F(CompilerE2ETest, RowSumMatchesReferenceOnOddSizes) {
  Module module(compileWithCli("row_sum", dir));
  maiaKernel_t kernel = module.kernel("row_sum");
  ASSERT_NE(kernel, nullptr);
  for (int64_t cols : {1, 15, 33, 1000}) {
    const int64_t rows = 37, ld = cols + 3;  // padded rows: a non-contiguous view
    std::vector<float> x = randomVector(size_t(rows * ld), 4);
    DeviceBuffer dx{x.size()}, dout{size_t(rows)};
    dx.upload(x);
    launch(kernel, rows, {memrefArg(dx.get(), {rows, cols}, {ld, 1}), memrefArg(dout.get(), {rows}, {1})});
    std::vector<float> expected(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c) sum += x[r * ld + c];
      expected[r] = float(sum);
    }
    expectClose(dout.download(), expected, 1e-5, 1e-4, "cols=" + std::to_string(cols));
  }
}

TEST_F(CompilerE2ETest, RowSoftmaxMatchesReferenceOnOddSizes) {
  Module module(compileWithCli("softmax", dir));
  maiaKernel_t kernel = module.kernel("softmax");
  ASSERT_NE(kernel, nullptr);
  for (int64_t cols : {1, 7, 16, 17, 4099}) {
    const int64_t rows = 13, ld = cols + 5;
    std::vector<float> x = randomVector(size_t(rows * ld), 5, -20, 20);
    DeviceBuffer dx{x.size()}, dy{x.size()};
    dx.upload(x);
    dy.upload(std::vector<float>(x.size(), 0.0f));
    launch(kernel, rows,
           {memrefArg(dx.get(), {rows, cols}, {ld, 1}), memrefArg(dy.get(), {rows, cols}, {ld, 1})});
    expectClose(dy.download(), softmaxReference(x, rows, cols, ld), 1e-5, 1e-7,
                "cols=" + std::to_string(cols));
  }
}

TEST_F(CompilerE2ETest, DriverRefusesAStrideTheMetadataForbids) {
  Module module(compileWithCli("softmax", dir));
  maiaKernel_t kernel = module.kernel("softmax");
  ASSERT_NE(kernel, nullptr);
  DeviceBuffer dx{64}, dy{64};
  // The inner stride is static 1 in the kernel's type.
  std::vector<maiaKernelArg> args = {memrefArg(dx.get(), {4, 8}, {1, 4}),
                                     memrefArg(dy.get(), {4, 8}, {8, 1})};
  int64_t grid[3] = {4, 1, 1};
  EXPECT_EQ(maiaLaunchKernel(kernel, grid, args.data(), 2, nullptr), maiaErrorInvalidLaunch);
  EXPECT_NE(std::string(maiaGetLastErrorMessage()).find("stride"), std::string::npos)
      << maiaGetLastErrorMessage();
}

TEST_F(CompilerE2ETest, DriverRefusesABinaryForAFeatureTheHostLacks) {
  // avx512fp16 is absent on this machine class (Zen); skip where it exists.
  ProcessResult version = runProcess({compilerPath(), "--version"});
  std::string path = dir.file("fp16.maiabin");
  ProcessResult result = runProcess({compilerPath(), kernelSource("row_sum"), "-o", path,
                                     "--target-features=+avx512fp16"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  ProcessResult inspect = runProcess({compilerPath(), "--inspect", path});
  if (inspect.exitCode == 0) GTEST_SKIP() << "the host CPU has avx512fp16";
  EXPECT_EQ(inspect.exitCode, 1);
  EXPECT_NE(inspect.err.find("avx512fp16"), std::string::npos) << inspect.err;
  maiaModule_t module = nullptr;
  EXPECT_EQ(maiaModuleLoad(&module, path.c_str()), maiaErrorUnsupportedImage);
  EXPECT_NE(std::string(maiaGetLastErrorMessage()).find("avx512fp16"), std::string::npos)
      << maiaGetLastErrorMessage();
}

// ----------------------------------------------------------- the worker

class CompileWorkerTest : public ::testing::Test {
 protected:
  ScratchDir dir;
  maia_e2e::Worker worker{{compilerPath(), "--server"}};

  Json request(const Json& body) {
    std::string reply;
    EXPECT_TRUE(worker.request(body.dump(), &reply)) << "the worker died";
    Json parsed = Json::parse(reply, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(parsed.is_discarded()) << "reply is not JSON: " << reply;
    return parsed;
  }
};

TEST_F(CompileWorkerTest, CompilesKernelsThatRunThroughTheDriver) {
  std::string source = maia_e2e::readFile(kernelSource("softmax"));
  std::string path = dir.file("softmax.maiabin");
  Json reply = request({{"id", 7}, {"source", source}, {"output", path}});
  ASSERT_EQ(reply["ok"], true) << reply.dump();
  EXPECT_EQ(reply["id"], 7);
  EXPECT_EQ(reply["output_path"], path);
  EXPECT_EQ(reply["metadata"]["kernels"][0]["name"], "softmax");
  EXPECT_TRUE(reply["timings_ms"].contains("link"));

  Module module(path);
  maiaKernel_t kernel = module.kernel("softmax");
  ASSERT_NE(kernel, nullptr);
  const int64_t rows = 9, cols = 1001;
  std::vector<float> x = randomVector(size_t(rows * cols), 6);
  DeviceBuffer dx{x.size()}, dy{x.size()};
  dx.upload(x);
  launch(kernel, rows,
         {memrefArg(dx.get(), {rows, cols}, {cols, 1}), memrefArg(dy.get(), {rows, cols}, {cols, 1})});
  expectClose(dy.download(), softmaxReference(x, rows, cols, cols), 1e-5, 1e-7, "worker");

  // A base64 reply carries the same kind of binary.
  Json inline_reply = request({{"id", "b"}, {"source", maia_e2e::readFile(kernelSource("row_sum"))}});
  ASSERT_EQ(inline_reply["ok"], true) << inline_reply.dump();
  EXPECT_FALSE(inline_reply["output_base64"].get<std::string>().empty());
}

TEST_F(CompileWorkerTest, ErrorsAreRepliesAndTheWorkerKeepsServing) {
  Json bad = request({{"id", 1}, {"source", "func.func @f( {"}});
  EXPECT_EQ(bad["ok"], false);
  EXPECT_NE(bad["diagnostics"].get<std::string>().find("error"), std::string::npos);

  std::string reply;
  ASSERT_TRUE(worker.request("this is not json", &reply));
  EXPECT_NE(reply.find("malformed request"), std::string::npos) << reply;

  Json noSource = request({{"id", 2}});
  EXPECT_EQ(noSource["ok"], false);
  EXPECT_NE(noSource["error"].get<std::string>().find("source"), std::string::npos);

  Json badEmit = request({{"id", 3}, {"source", ""}, {"emit", "exe"}});
  EXPECT_EQ(badEmit["ok"], false);

  Json good = request({{"id", 4}, {"source", maia_e2e::readFile(kernelSource("row_sum"))},
                       {"emit", "llvm"}});
  EXPECT_EQ(good["ok"], true) << good.dump();
  EXPECT_NE(good["output"].get<std::string>().find("define void @row_sum(ptr"),
            std::string::npos);

  Json bye = request({{"id", 5}, {"command", "shutdown"}});
  EXPECT_EQ(bye["ok"], true);
  ProcessResult status = worker.finish();
  EXPECT_FALSE(status.signaled);
  EXPECT_EQ(status.exitCode, 0);
}

TEST(CompileWorkerLimitsTest, OversizedRequestIsRefusedAndServingContinues) {
  maia_e2e::Worker worker({compilerPath(), "--server", "--max-request-mib=1"});
  std::string huge = "{\"id\": 1, \"source\": \"" + std::string(3u << 20, 'x') + "\"}\n";
  ASSERT_TRUE(worker.send(huge));
  std::string reply;
  ASSERT_TRUE(worker.readLine(&reply));
  EXPECT_NE(reply.find("request too large"), std::string::npos) << reply;
  ASSERT_TRUE(worker.request("{\"id\": 2, \"command\": \"version\"}", &reply));
  EXPECT_NE(reply.find("\"ok\":true"), std::string::npos) << reply;
  ProcessResult status = worker.finish();
  EXPECT_FALSE(status.signaled);
  EXPECT_EQ(status.exitCode, 0);
}

}  // namespace
