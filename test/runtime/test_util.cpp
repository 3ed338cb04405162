#include "test_util.h"

namespace maia_test {

std::string kernelPath(const std::string& name) {
  return std::string(MAIA_KERNEL_DIR) + "/" + name + ".maiabin";
}

maiaModule_t basicModule() {
  static maiaModule_t module = [] {
    maiaModule_t m = nullptr;
    if (maiaModuleLoad(&m, kernelPath("basic_kernels").c_str()) != maiaSuccess) {
      ADD_FAILURE() << "cannot load basic_kernels: " << maiaGetLastErrorMessage();
    }
    return m;
  }();
  return module;
}

maiaKernel_t basicKernel(const char* name) {
  maiaKernel_t kernel = nullptr;
  if (maiaModuleGetKernel(basicModule(), name, &kernel) != maiaSuccess) {
    ADD_FAILURE() << "no kernel " << name << ": " << maiaGetLastErrorMessage();
  }
  return kernel;
}

void axpb(void* data, int64_t n, int64_t mul, int64_t add, maiaStream_t stream,
          int64_t spin_ns, int64_t programs) {
  maiaKernelArg args[4] = {vectorArg(data, maiaDtypeI64, n), scalarArg(maiaDtypeI64, mul),
                           scalarArg(maiaDtypeI64, add), scalarArg(maiaDtypeI64, spin_ns)};
  int64_t grid[3] = {programs, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("axpb_i64"), grid, args, 4, stream));
}

std::vector<int64_t> download(void* d, int64_t n) {
  std::vector<int64_t> out(n);
  maiaError_t error = maiaMemcpy(out.data(), d, n * sizeof(int64_t), maiaMemcpyDeviceToHost);
  EXPECT_EQ(error, maiaSuccess) << maiaGetLastErrorMessage();
  return out;
}

}  // namespace maia_test
