// maiaStreamWaitValue64 / maiaStreamWriteValue64: a stream waits for a word
// of device memory that another stream, or another process's stream, sets;
// a writer that dies or never writes is an error, not a hang.
//
// The two-process tests fork their peer before the driver is initialized:
// run them one per process, as ctest does.
#include <stdlib.h>

#include <chrono>
#include <thread>
#include <vector>

#include "forked_peer.h"
#include "test_util.h"

using namespace maia_test;

namespace {

constexpr int64_t kCount = 1000;

std::vector<int64_t> iota(int64_t n, int64_t start) {
  std::vector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = start + i;
  return values;
}

void upload(void* d, const std::vector<int64_t>& values) {
  MAIA_ASSERT_OK(maiaMemcpy(d, values.data(), values.size() * sizeof(int64_t),
                            maiaMemcpyHostToDevice));
}

/// Polls stream for up to seconds; true once it is idle (or failed).
bool settlesWithin(maiaStream_t stream, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (maiaStreamQuery(stream) != maiaErrorNotReady) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST(StreamValueTest, AStreamWaitsForAWriteOnAnotherStream) {
  void *flag = nullptr, *data = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&flag, sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMalloc(&data, kCount * sizeof(int64_t)));
  upload(flag, {0});
  upload(data, iota(kCount, 0));
  maiaStream_t waiter, writer;
  MAIA_ASSERT_OK(maiaStreamCreate(&waiter, 0));
  MAIA_ASSERT_OK(maiaStreamCreate(&writer, 0));
  MAIA_ASSERT_OK(maiaStreamWaitValue64(waiter, flag, 2, maiaStreamWaitValueGeq, 0));
  axpb(data, kCount, 2, 0, waiter);  // must see the writer's +1 first
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(writer, Gate::wait, &gate));
  axpb(data, kCount, 1, 1, writer);
  MAIA_ASSERT_OK(maiaStreamWriteValue64(writer, flag, 1));  // not enough
  MAIA_ASSERT_OK(maiaStreamWriteValue64(writer, flag, 5));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(maiaStreamQuery(waiter), maiaErrorNotReady);
  gate.open = true;
  MAIA_ASSERT_OK(maiaStreamSynchronize(waiter));
  std::vector<int64_t> expected = iota(kCount, 0);
  for (auto& v : expected) v = (v + 1) * 2;
  EXPECT_EQ(download(data, kCount), expected);
  // maiaStreamWaitValueEq: met by exactly the value.
  MAIA_ASSERT_OK(maiaStreamWaitValue64(waiter, flag, 5, maiaStreamWaitValueEq, 0));
  MAIA_ASSERT_OK(maiaStreamSynchronize(waiter));
  MAIA_ASSERT_OK(maiaStreamWaitValue64(waiter, flag, 4, maiaStreamWaitValueEq, 0));
  MAIA_ASSERT_OK(maiaStreamWriteValue64(writer, flag, 4));
  MAIA_ASSERT_OK(maiaStreamSynchronize(waiter));
  for (auto s : {waiter, writer}) MAIA_ASSERT_OK(maiaStreamDestroy(s));
  for (auto p : {flag, data}) MAIA_ASSERT_OK(maiaFree(p));
}

TEST(StreamValueTest, AWaitOccupiesNoCore) {
  // One core and eight waiting streams: other work still runs on the core
  // (polled, so that no host thread helps run it).
  setenv("MAIA_NUM_CORES", "1", 1);  // before the driver initializes
  void* flag = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&flag, sizeof(int64_t)));
  upload(flag, {0});
  std::vector<maiaStream_t> waiters(8);
  for (auto& s : waiters) {
    MAIA_ASSERT_OK(maiaStreamCreate(&s, 0));
    MAIA_ASSERT_OK(maiaStreamWaitValue64(s, flag, 1, maiaStreamWaitValueGeq, 0));
  }
  void* data = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&data, kCount * sizeof(int64_t)));
  upload(data, iota(kCount, 0));
  axpb(data, kCount, 3, 0, nullptr);
  EXPECT_TRUE(settlesWithin(nullptr, 5.0));
  EXPECT_EQ(maiaStreamQuery(waiters[0]), maiaErrorNotReady);
  MAIA_ASSERT_OK(maiaStreamWriteValue64(nullptr, flag, 1));
  for (auto s : waiters) {
    MAIA_ASSERT_OK(maiaStreamSynchronize(s));
    MAIA_ASSERT_OK(maiaStreamDestroy(s));
  }
  for (auto p : {flag, data}) MAIA_ASSERT_OK(maiaFree(p));
}

TEST(StreamValueTest, AStreamWaitsForAFlagAnotherProcessWrites) {
  Peer child([](Peer& parent) {
    void* flags = nullptr;
    MAIA_ASSERT_OK(maiaMalloc(&flags, 2 * sizeof(int64_t)));
    upload(flags, {0, 0});
    maiaIpcMemHandle_t handle;
    MAIA_ASSERT_OK(maiaIpcGetMemHandle(&handle, flags));
    parent.send(handle);
    EXPECT_EQ(parent.receive<Signal>(), kEnqueued);
    // Word 1 is the parent's answer, on its stream, after its wait.
    MAIA_ASSERT_OK(maiaStreamWaitValue64(nullptr, static_cast<int64_t*>(flags) + 1, 7,
                                         maiaStreamWaitValueEq, 10000));
    MAIA_ASSERT_OK(maiaStreamWriteValue64(nullptr, flags, 3));
    MAIA_ASSERT_OK(maiaStreamSynchronize(nullptr));
    parent.send(kDone);
    EXPECT_EQ(parent.receive<Signal>(), kExit);
    MAIA_ASSERT_OK(maiaFree(flags));
  });
  auto handle = child.receive<maiaIpcMemHandle_t>();
  void* flags = nullptr;
  MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&flags, handle, 0));
  void* data = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&data, kCount * sizeof(int64_t)));
  upload(data, iota(kCount, 0));
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  MAIA_ASSERT_OK(maiaStreamWaitValue64(stream, flags, 3, maiaStreamWaitValueGeq, 10000));
  axpb(data, kCount, 2, 1, stream);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(maiaStreamQuery(stream), maiaErrorNotReady);
  // Answer through the child's memory, in stream order.
  MAIA_ASSERT_OK(maiaStreamWriteValue64(nullptr, static_cast<int64_t*>(flags) + 1, 7));
  child.send(kEnqueued);
  EXPECT_EQ(child.receive<Signal>(), kDone);
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  std::vector<int64_t> expected = iota(kCount, 0);
  for (auto& v : expected) v = v * 2 + 1;
  EXPECT_EQ(download(data, kCount), expected);
  MAIA_ASSERT_OK(maiaIpcCloseMemHandle(flags));
  child.send(kExit);
  EXPECT_TRUE(child.join());
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(data));
}

TEST(StreamValueTest, AWriterThatExitsFailsTheWaitInsteadOfHanging) {
  Peer child([](Peer& parent) {
    void* flag = nullptr;
    MAIA_ASSERT_OK(maiaMalloc(&flag, sizeof(int64_t)));
    upload(flag, {0});
    maiaIpcMemHandle_t handle;
    MAIA_ASSERT_OK(maiaIpcGetMemHandle(&handle, flag));
    parent.send(handle);
    parent.receive<Signal>();  // kExit
    _exit(0);                  // without writing
  });
  auto handle = child.receive<maiaIpcMemHandle_t>();
  void* flag = nullptr;
  MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&flag, handle, 0));
  void* data = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&data, kCount * sizeof(int64_t)));
  upload(data, iota(kCount, 0));
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  MAIA_ASSERT_OK(maiaStreamWaitValue64(stream, flag, 1, maiaStreamWaitValueGeq, 0));
  axpb(data, kCount, 2, 1, stream);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(maiaStreamQuery(stream), maiaErrorNotReady);
  child.send(kExit);
  EXPECT_TRUE(child.join());
  EXPECT_TRUE(settlesWithin(stream, 2.0));
  MAIA_EXPECT_ERROR(maiaStreamSynchronize(stream), maiaErrorLaunchFailure,
                    "process " + std::to_string(child.pid()) +
                        ", which exported the memory, exited before the value was written");
  MAIA_ASSERT_OK(maiaDeviceReset(0));
  EXPECT_EQ(download(data, kCount), iota(kCount, 0));  // the work behind the wait was skipped
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(data));
}

TEST(StreamValueTest, AValueNeverWrittenFailsAfterTheTimeout) {
  void* flag = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&flag, sizeof(int64_t)));
  upload(flag, {0});
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  const auto start = std::chrono::steady_clock::now();
  MAIA_ASSERT_OK(maiaStreamWaitValue64(stream, flag, 1, maiaStreamWaitValueGeq, 100));
  EXPECT_TRUE(settlesWithin(stream, 5.0));
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.1);
  EXPECT_LT(waited, 2.0);
  MAIA_EXPECT_ERROR(maiaStreamSynchronize(stream), maiaErrorLaunchFailure,
                    "the value was not written within 100 ms");
  MAIA_ASSERT_OK(maiaDeviceReset(0));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(flag));
}

TEST(StreamValueTest, BadArgumentsAreClearErrors) {
  void* flag = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&flag, 16));
  int64_t host = 0;
  MAIA_EXPECT_ERROR(maiaStreamWaitValue64(nullptr, &host, 1, maiaStreamWaitValueGeq, 0),
                    maiaErrorInvalidDevicePointer, "not memory of the stream's device");
  MAIA_EXPECT_ERROR(maiaStreamWriteValue64(nullptr, static_cast<char*>(flag) + 4, 1),
                    maiaErrorInvalidDevicePointer, "8-byte aligned");
  MAIA_EXPECT_ERROR(maiaStreamWaitValue64(nullptr, static_cast<char*>(flag) + 16, 1,
                                          maiaStreamWaitValueGeq, 0),
                    maiaErrorInvalidDevicePointer, "maiaStreamWaitValue64");
  MAIA_EXPECT_ERROR(maiaStreamWaitValue64(nullptr, flag, 1, 7, 0), maiaErrorInvalidValue,
                    "unknown flags 7");
  maiaStream_t destroyed;
  MAIA_ASSERT_OK(maiaStreamCreate(&destroyed, 0));
  MAIA_ASSERT_OK(maiaStreamDestroy(destroyed));
  EXPECT_EQ(maiaStreamWriteValue64(destroyed, flag, 1), maiaErrorInvalidHandle);
  MAIA_ASSERT_OK(maiaFree(flag));
  MAIA_EXPECT_ERROR(maiaStreamWriteValue64(nullptr, flag, 1), maiaErrorInvalidDevicePointer,
                    "maiaStreamWriteValue64");
}

}  // namespace
