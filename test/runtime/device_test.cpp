// Devices: count, properties, current device, configuration, fork safety.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "test_util.h"

namespace {

TEST(DeviceTest, CountDefaultsToTwo) {
  int count = -1;
  MAIA_ASSERT_OK(maiaGetDeviceCount(&count));
  EXPECT_EQ(count, 2);
}

TEST(DeviceTest, PropertiesDescribeTheDevice) {
  maiaDeviceProp prop;
  MAIA_ASSERT_OK(maiaGetDeviceProperties(&prop, 1));
  EXPECT_STREQ(prop.name, "MAIA simulated device");
  EXPECT_EQ(std::string(prop.compute_capability).rfind("maia-sim-1.0+x86-64", 0), 0u)
      << prop.compute_capability;
  EXPECT_EQ(prop.total_memory, size_t{1} << 30);  // MAIA_DEVICE_MEMORY=1G from ctest
  EXPECT_EQ(prop.core_count, static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_EQ(prop.device_index, 1);
  EXPECT_EQ(prop.stream_priority_least, 0);
  EXPECT_LT(prop.stream_priority_greatest, 0);
}

TEST(DeviceTest, CurrentDeviceIsPerHostThread) {
  MAIA_ASSERT_OK(maiaSetDevice(1));
  int seen_by_other_thread = -1;
  std::thread other([&] {
    maiaGetDevice(&seen_by_other_thread);
    maiaSetDevice(0);
  });
  other.join();
  EXPECT_EQ(seen_by_other_thread, 0);
  int current = -1;
  MAIA_ASSERT_OK(maiaGetDevice(&current));
  EXPECT_EQ(current, 1);
  MAIA_ASSERT_OK(maiaSetDevice(0));
}

TEST(DeviceTest, InvalidDeviceIndexIsRejectedAndChangesNothing) {
  MAIA_ASSERT_OK(maiaSetDevice(1));
  MAIA_EXPECT_ERROR(maiaSetDevice(2), maiaErrorInvalidDevice,
                    "device index 2 is out of range: valid indices are 0..1");
  MAIA_EXPECT_ERROR(maiaSetDevice(-1), maiaErrorInvalidDevice, "device index -1");
  maiaDeviceProp prop;
  MAIA_EXPECT_ERROR(maiaGetDeviceProperties(&prop, 7), maiaErrorInvalidDevice, "index 7");
  maiaStream_t stream;
  MAIA_EXPECT_ERROR(maiaStreamGetDefault(&stream, 2), maiaErrorInvalidDevice, "index 2");
  int current = -1;
  MAIA_ASSERT_OK(maiaGetDevice(&current));
  EXPECT_EQ(current, 1);
  MAIA_ASSERT_OK(maiaSetDevice(0));
}

TEST(DeviceTest, NullOutputParameterIsRejected) {
  MAIA_EXPECT_ERROR(maiaGetDeviceCount(nullptr), maiaErrorInvalidValue, "out_count");
  MAIA_EXPECT_ERROR(maiaGetDeviceProperties(nullptr, 0), maiaErrorInvalidValue, "out_prop");
}

TEST(DeviceTest, LastErrorIsKeptPerThreadUntilRead) {
  maiaGetLastError();
  EXPECT_EQ(maiaSetDevice(9), maiaErrorInvalidDevice);
  EXPECT_EQ(maiaPeekAtLastError(), maiaErrorInvalidDevice);
  EXPECT_EQ(maiaPeekAtLastError(), maiaErrorInvalidDevice);
  std::thread([] { EXPECT_EQ(maiaPeekAtLastError(), maiaSuccess); }).join();
  EXPECT_EQ(maiaGetLastError(), maiaErrorInvalidDevice);
  EXPECT_EQ(maiaGetLastError(), maiaSuccess);
  EXPECT_STREQ(maiaGetErrorName(maiaErrorOutOfMemory), "maiaErrorOutOfMemory");
  EXPECT_STREQ(maiaGetErrorString(maiaErrorInvalidDevice), "invalid device index");
  EXPECT_STREQ(maiaGetErrorName(static_cast<maiaError_t>(999)), "maiaErrorUnknown");
}

// The configuration is read once per process, so each of these runs in a
// fresh process (a "threadsafe" death test re-executes the test binary).
class DeviceConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(DeviceConfigTest, VisibleDevicesSetsTheCount) {
  EXPECT_EXIT(
      {
        setenv("MAIA_VISIBLE_DEVICES", "0,3,5", 1);
        int count = 0;
        maiaGetDeviceCount(&count);
        std::exit(count);
      },
      ::testing::ExitedWithCode(3), "");
}

TEST_F(DeviceConfigTest, NoVisibleDevicesMeansZeroDevicesAndClearErrors) {
  EXPECT_EXIT(
      {
        setenv("MAIA_VISIBLE_DEVICES", "", 1);
        int count = -1;
        maiaGetDeviceCount(&count);
        void* p = nullptr;
        maiaError_t error = maiaMalloc(&p, 16);
        std::fprintf(stderr, "%s\n", maiaGetLastErrorMessage());
        std::exit(count == 0 && error == maiaErrorInvalidDevice ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "no MAIA devices are visible");
}

TEST_F(DeviceConfigTest, MalformedEnvironmentIsReportedByEveryCall) {
  EXPECT_EXIT(
      {
        setenv("MAIA_DEVICE_MEMORY", "lots", 1);
        int count = 0;
        maiaError_t first = maiaGetDeviceCount(&count);
        maiaError_t second = maiaSetDevice(0);
        std::fprintf(stderr, "%s\n", maiaGetLastErrorMessage());
        std::exit(first == maiaErrorInitialization && second == maiaErrorInitialization ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "MAIA_DEVICE_MEMORY='lots' is not a size");
}

TEST(DeviceForkTest, ForkedChildCannotUseTheParentsDriver) {
  int count = 0;
  MAIA_ASSERT_OK(maiaGetDeviceCount(&count));  // the parent initializes the driver
  GTEST_FLAG_SET(death_test_style, "fast");     // plain fork(), as multiprocessing does
  EXPECT_EXIT(
      {
        void* p = nullptr;
        maiaError_t error = maiaMalloc(&p, 64);
        std::fprintf(stderr, "%s\n", maiaGetLastErrorMessage());
        _exit(error == maiaErrorInitialization ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "cannot be used in a forked child");
  void* p = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&p, 64));  // the parent is unaffected
  MAIA_ASSERT_OK(maiaFree(p));
}

}  // namespace
