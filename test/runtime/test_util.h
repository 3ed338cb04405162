// Shared helpers for the driver tests.
#pragma once

#include <gtest/gtest.h>
#include <maia/runtime.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

/// Asserts a driver call succeeded, printing the driver's message if not.
#define MAIA_ASSERT_OK(expr)                                                   \
  do {                                                                         \
    maiaError_t maia_err_ = (expr);                                            \
    ASSERT_EQ(maia_err_, maiaSuccess)                                          \
        << #expr << " -> " << maiaGetErrorName(maia_err_) << ": "              \
        << maiaGetLastErrorMessage();                                          \
  } while (0)

/// Expects a driver call to fail with code and a message containing needle.
#define MAIA_EXPECT_ERROR(expr, code, needle)                                  \
  do {                                                                         \
    maiaError_t maia_err_ = (expr);                                            \
    EXPECT_EQ(maia_err_, code) << #expr << " -> " << maiaGetErrorName(maia_err_); \
    EXPECT_NE(std::string(maiaGetLastErrorMessage()).find(needle), std::string::npos) \
        << "message was: " << maiaGetLastErrorMessage();                       \
  } while (0)

namespace maia_test {

/// Path of a kernel binary built by test/runtime/CMakeLists.txt.
std::string kernelPath(const std::string& name);

/// A memref argument viewing count elements at device pointer p.
inline maiaKernelArg vectorArg(void* p, maiaDtype dtype, int64_t count, int64_t stride = 1) {
  return maiaKernelArgVector(p, dtype, count, stride);
}
inline maiaKernelArg scalarArg(maiaDtype dtype, int64_t value) {
  return maiaKernelArgInt(dtype, value);
}
inline maiaKernelArg scalarArg(maiaDtype dtype, double value) {
  return maiaKernelArgFloat(dtype, value);
}

/// A host function that holds its stream until the test opens the gate:
/// the way to observe asynchrony without depending on timing.
struct Gate {
  std::atomic<bool> open{false};
  static void wait(void* self) {
    while (!static_cast<Gate*>(self)->open.load()) std::this_thread::yield();
  }
};

/// Loads basic_kernels.maiabin once per process.
maiaModule_t basicModule();
maiaKernel_t basicKernel(const char* name);

/// Queues data[i] = data[i] * mul + add over n int64 elements, each program
/// first busy-waiting spin_ns: order-dependent results, widened races.
void axpb(void* data, int64_t n, int64_t mul, int64_t add, maiaStream_t stream,
          int64_t spin_ns = 0, int64_t programs = 4);

/// What axpb computes for one element: wrapping value * mul + add.
inline int64_t axpbValue(int64_t value, int64_t mul, int64_t add) {
  return static_cast<int64_t>(static_cast<uint64_t>(value) * static_cast<uint64_t>(mul) +
                              static_cast<uint64_t>(add));
}

/// Copies n int64 elements from device pointer d to the host (synchronous).
std::vector<int64_t> download(void* d, int64_t n);

}  // namespace maia_test
