// Faults in device work: reported at the next synchronizing call, sticky
// until maiaDeviceReset, confined to the faulting device, nothing lost.
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <vector>

#include "test_util.h"

using namespace maia_test;

namespace {

void launchTrap(void* flags, int64_t bad_program, maiaStream_t stream) {
  maiaKernelArg args[2] = {vectorArg(flags, maiaDtypeI32, 16),
                           scalarArg(maiaDtypeI64, bad_program)};
  int64_t grid[3] = {16, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("trap_at"), grid, args, 2, stream));
}

TEST(StickyErrorTest, AKernelFaultSurfacesAtTheNextSynchronizeAndStaysUntilReset) {
  void *flags = nullptr, *data = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&flags, 16 * sizeof(int32_t)));
  MAIA_ASSERT_OK(maiaMalloc(&data, 8 * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(data, 0, 8 * sizeof(int64_t)));
  axpb(data, 8, 1, 3, nullptr);
  // Finish it first: once the device faults, work on every stream is skipped.
  MAIA_ASSERT_OK(maiaDeviceSynchronize());
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  launchTrap(flags, 3, stream);  // the launch itself is fine: it is queued
  MAIA_EXPECT_ERROR(maiaStreamSynchronize(stream), maiaErrorLaunchFailure,
                    "kernel 'trap_at' of ");
  std::string message = maiaGetLastErrorMessage();
  EXPECT_NE(message.find("at program id (3, 0, 0)"), std::string::npos) << message;
  EXPECT_NE(message.find("SIGILL"), std::string::npos) << message;
  // Sticky: every synchronizing call and every launch on maia:0 reports it.
  MAIA_EXPECT_ERROR(maiaDeviceSynchronize(), maiaErrorLaunchFailure, "sticky until");
  MAIA_EXPECT_ERROR(maiaStreamQuery(stream), maiaErrorLaunchFailure, "trap_at");
  int64_t grid[3] = {1, 1, 1};
  MAIA_EXPECT_ERROR(maiaLaunchKernel(basicKernel("empty"), grid, nullptr, 0, stream),
                    maiaErrorLaunchFailure, "trap_at");
  // The other device is unaffected.
  MAIA_ASSERT_OK(maiaSetDevice(1));
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("empty"), grid, nullptr, 0, nullptr));
  MAIA_ASSERT_OK(maiaDeviceSynchronize());
  MAIA_ASSERT_OK(maiaSetDevice(0));
  // Reset clears the error; memory and its contents survive.
  MAIA_ASSERT_OK(maiaDeviceReset(0));
  EXPECT_EQ(download(data, 8), std::vector<int64_t>(8, 3));
  axpb(data, 8, 2, 0, stream);
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  EXPECT_EQ(download(data, 8), std::vector<int64_t>(8, 6));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(flags));
  MAIA_ASSERT_OK(maiaFree(data));
}

// The fault is inside a library routine the kernel called (no frame of the
// kernel binary on top of the stack): still the kernel's fault.
TEST(StickyErrorTest, AFaultInALibraryRoutineAKernelCalledIsTheKernels) {
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  maiaKernelArg args[1] = {scalarArg(maiaDtypeI64, int64_t{16})};
  int64_t grid[3] = {1, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("fault_in_library"), grid, args, 1, stream));
  MAIA_EXPECT_ERROR(maiaStreamSynchronize(stream), maiaErrorLaunchFailure,
                    "kernel 'fault_in_library' of ");
  std::string message = maiaGetLastErrorMessage();
  EXPECT_NE(message.find("SIGSEGV"), std::string::npos) << message;
  MAIA_ASSERT_OK(maiaDeviceReset(0));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
}

TEST(StickyErrorTest, WorkQueuedAfterAFaultIsSkippedAndEventsStillComplete) {
  void *flags = nullptr, *data = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&flags, 16 * sizeof(int32_t)));
  MAIA_ASSERT_OK(maiaMalloc(&data, 8 * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(data, 0, 8 * sizeof(int64_t)));
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  maiaEvent_t after;
  MAIA_ASSERT_OK(maiaEventCreate(&after, maiaEventDefault));
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, Gate::wait, &gate));
  launchTrap(flags, 0, stream);
  axpb(data, 8, 1, 100, stream);  // queued behind the fault: must not run
  MAIA_ASSERT_OK(maiaEventRecord(after, stream));
  gate.open = true;
  MAIA_EXPECT_ERROR(maiaEventSynchronize(after), maiaErrorLaunchFailure, "trap_at");
  MAIA_ASSERT_OK(maiaDeviceReset(0));
  EXPECT_EQ(download(data, 8), std::vector<int64_t>(8, 0));
  MAIA_ASSERT_OK(maiaEventDestroy(after));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(flags));
  MAIA_ASSERT_OK(maiaFree(data));
}

TEST(StickyErrorTest, FreeingMemoryStillWorksOnAFaultedDevice) {
  void *flags = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&flags, 16 * sizeof(int32_t)));
  launchTrap(flags, 5, nullptr);
  MAIA_EXPECT_ERROR(maiaDeviceSynchronize(), maiaErrorLaunchFailure, "trap_at");
  MAIA_ASSERT_OK(maiaFree(flags));
  MAIA_ASSERT_OK(maiaDeviceReset(0));
}

/// The child died of the SIGSEGV, or (under AddressSanitizer, whose SEGV
/// handler reports and exits) exited with a failure; surviving exits 0.
bool crashedOnTheFault(int status) {
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGSEGV;
  return WIFEXITED(status) && WEXITSTATUS(status) != 0;
}

// Only kernel code's faults are device errors. A host function runs on a
// core like a kernel, but a fault in it is a host bug: it must crash the
// process loudly, not turn into a sticky error. (The child initializes the
// driver itself: a forked child cannot use its parent's.)
TEST(StickyErrorDeathTest, AFaultInAHostFunctionCrashesTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        maiaStream_t stream = nullptr;
        maiaStreamCreate(&stream, 0);
        maiaLaunchHostFunc(
            // Address 16 (unmapped page 0), not nullptr: UBSan would stop a
            // store to null itself, before the fault handler sees it.
            // (volatile: GCC would warn about a constant address).
            stream,
            [](void*) {
              volatile uintptr_t address = 16;
              *reinterpret_cast<volatile int*>(address) = 1;
            },
            nullptr);
        maiaError_t error = maiaStreamSynchronize(stream);
        std::fprintf(stderr, "survived: %s\n", maiaGetErrorName(error));
        std::_Exit(0);
      },
      crashedOnTheFault, "");
}

}  // namespace
