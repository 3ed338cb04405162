// Inter-process memory and events: two processes of one host share device
// memory and order work through events, and every misuse or peer failure is
// a clear error rather than a hang or a leak.
//
// Each test forks its peer before either process touches the driver (a
// child of an initialized driver is refused): run them one per process, as
// ctest does.
#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "forked_peer.h"
#include "test_util.h"

using namespace maia_test;

namespace {


void upload(void* d, const std::vector<int64_t>& values) {
  MAIA_ASSERT_OK(maiaMemcpy(d, values.data(), values.size() * sizeof(int64_t),
                            maiaMemcpyHostToDevice));
}

std::vector<int64_t> iota(int64_t n, int64_t start) {
  std::vector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = start + i;
  return values;
}

size_t freeBytes() {
  size_t free_bytes = 0, total = 0;
  EXPECT_EQ(maiaMemGetInfo(&free_bytes, &total), maiaSuccess) << maiaGetLastErrorMessage();
  return free_bytes;
}

/// What a leak of an import would leave behind: open files and mappings of
/// device memfds (this process's own two views are constant).
int openFiles() {
  int count = 0;
  DIR* dir = opendir("/proc/self/fd");
  while (readdir(dir) != nullptr) ++count;
  closedir(dir);
  return count;
}
int deviceMemoryMappings() {
  std::ifstream maps("/proc/self/maps");
  int count = 0;
  for (std::string line; std::getline(maps, line);)
    if (line.find("memfd:maia-device-") != std::string::npos) ++count;
  return count;
}

/// deviceMemoryMappings() once the driver has made its own.
int mappingsOfAnInitializedDriver() {
  int devices = 0;
  EXPECT_EQ(maiaGetDeviceCount(&devices), maiaSuccess) << maiaGetLastErrorMessage();
  return deviceMemoryMappings();
}

constexpr int64_t kCount = 1000;

/// A new allocation of kCount int64 values start, start + 1, ... whose
/// handle is sent to peer.
void* shareWith(Peer& peer, int64_t start) {
  void* d = nullptr;
  EXPECT_EQ(maiaMalloc(&d, kCount * sizeof(int64_t)), maiaSuccess) << maiaGetLastErrorMessage();
  upload(d, iota(kCount, start));
  maiaIpcMemHandle_t handle;
  EXPECT_EQ(maiaIpcGetMemHandle(&handle, d), maiaSuccess) << maiaGetLastErrorMessage();
  peer.send(handle);
  return d;
}

TEST(IpcTest, WritesOfOneProcessAreSeenByTheOther) {
  Peer child([](Peer& parent) {
    auto handle = parent.receive<maiaIpcMemHandle_t>();
    void* shared = nullptr;
    MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&shared, handle, 0));
    // The pointer is a device pointer of this process: copies and kernels.
    EXPECT_EQ(download(shared, kCount), iota(kCount, 100));
    axpb(shared, kCount, 3, 1, nullptr);
    MAIA_ASSERT_OK(maiaDeviceSynchronize());
    maiaPointerAttributes attr;
    MAIA_ASSERT_OK(maiaPointerGetAttributes(&attr, shared));
    EXPECT_EQ(attr.type, maiaMemoryTypeDevice);
    EXPECT_EQ(attr.size, kCount * sizeof(int64_t));
    void* again = nullptr;
    MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&again, handle, 0));
    EXPECT_EQ(again, shared);
    MAIA_ASSERT_OK(maiaIpcCloseMemHandle(again));
    EXPECT_EQ(download(shared, 1)[0], 301);  // one close of two: still open
    MAIA_ASSERT_OK(maiaIpcCloseMemHandle(shared));
    parent.send(kDone);
  });
  void* before = nullptr;  // so that the shared allocation starts mid-page
  MAIA_ASSERT_OK(maiaMalloc(&before, 256));
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, kCount * sizeof(int64_t)));
  upload(d, iota(kCount, 100));
  maiaIpcMemHandle_t handle;
  // Any pointer into the allocation names the whole of it.
  MAIA_ASSERT_OK(maiaIpcGetMemHandle(&handle, static_cast<int64_t*>(d) + 5));
  child.send(handle);
  EXPECT_EQ(child.receive<Signal>(), kDone);
  std::vector<int64_t> expected(kCount);
  for (int64_t i = 0; i < kCount; ++i) expected[i] = axpbValue(100 + i, 3, 1);
  EXPECT_EQ(download(d, kCount), expected);
  EXPECT_TRUE(child.join());
  MAIA_ASSERT_OK(maiaFree(d));
  MAIA_ASSERT_OK(maiaFree(before));
}

TEST(IpcTest, AStreamWaitsForAnEventRecordedInAnotherProcess) {
  Peer child([](Peer& parent) {
    auto memory = parent.receive<maiaIpcMemHandle_t>();
    auto event_handle = parent.receive<maiaIpcEventHandle_t>();
    void* shared = nullptr;
    MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&shared, memory, 0));
    maiaEvent_t event;
    MAIA_ASSERT_OK(maiaIpcOpenEventHandle(&event, event_handle));
    maiaStream_t stream;
    MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
    MAIA_ASSERT_OK(maiaStreamWaitEvent(stream, event));
    axpb(shared, kCount, 2, 7, stream);
    // The parent's record is held behind its gate until we say so.
    EXPECT_EQ(maiaEventQuery(event), maiaErrorNotReady);
    EXPECT_EQ(maiaStreamQuery(stream), maiaErrorNotReady);
    parent.send(kEnqueued);
    MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
    MAIA_ASSERT_OK(maiaEventSynchronize(event));
    EXPECT_EQ(maiaEventQuery(event), maiaSuccess);
    MAIA_EXPECT_ERROR(maiaEventRecord(event, stream), maiaErrorInvalidValue,
                      "record it in the process that created it");
    MAIA_ASSERT_OK(maiaIpcCloseMemHandle(shared));
    MAIA_ASSERT_OK(maiaEventDestroy(event));
    MAIA_ASSERT_OK(maiaStreamDestroy(stream));
    parent.send(kDone);
  });
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, kCount * sizeof(int64_t)));
  upload(d, iota(kCount, 0));
  maiaEvent_t event;
  MAIA_ASSERT_OK(maiaEventCreate(&event, maiaEventInterprocess | maiaEventDisableTiming));
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, Gate::wait, &gate));
  axpb(d, kCount, 5, 3, stream);
  MAIA_ASSERT_OK(maiaEventRecord(event, stream));
  maiaIpcMemHandle_t memory;
  maiaIpcEventHandle_t event_handle;
  MAIA_ASSERT_OK(maiaIpcGetMemHandle(&memory, d));
  MAIA_ASSERT_OK(maiaIpcGetEventHandle(&event_handle, event));
  child.send(memory);
  child.send(event_handle);
  EXPECT_EQ(child.receive<Signal>(), kEnqueued);
  gate.open = true;
  EXPECT_EQ(child.receive<Signal>(), kDone);
  // axpb does not commute: only "ours, then the child's" gives this.
  std::vector<int64_t> expected(kCount);
  for (int64_t i = 0; i < kCount; ++i) expected[i] = axpbValue(axpbValue(i, 5, 3), 2, 7);
  EXPECT_EQ(download(d, kCount), expected);
  EXPECT_TRUE(child.join());
  MAIA_ASSERT_OK(maiaEventDestroy(event));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(IpcTest, WithoutPtraceAccessTheFilesComeFromTheExportersServer) {
  // A process that changed its user is not dumpable: without
  // CAP_SYS_PTRACE, which a non-root user lacks, its peers cannot take its
  // files with pidfd_getfd (as under Yama ptrace_scope 1 between ranks).
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to become an unprivileged user";
  ASSERT_EQ(setgid(65534), 0);
  ASSERT_EQ(setuid(65534), 0);
  const pid_t exporter = getpid();
  Peer child([exporter](Peer& parent) {
    auto handle = parent.receive<maiaIpcMemHandle_t>();
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, exporter, 0));
    ASSERT_GE(pidfd, 0);
    EXPECT_EQ(syscall(SYS_pidfd_getfd, pidfd, 0, 0), -1);  // the fallback's premise
    EXPECT_EQ(errno, EPERM);
    close(pidfd);
    void* shared = nullptr;
    MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&shared, handle, 0));
    EXPECT_EQ(download(shared, kCount), iota(kCount, 7));
    upload(shared, iota(kCount, 8));
    MAIA_ASSERT_OK(maiaIpcCloseMemHandle(shared));
    parent.send(kDone);
  });
  void* d = shareWith(child, 7);
  EXPECT_EQ(child.receive<Signal>(), kDone);
  EXPECT_EQ(download(d, kCount), iota(kCount, 8));
  EXPECT_TRUE(child.join());
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(IpcTest, BadHandlesAreClearErrors) {
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, 4096));
  maiaIpcMemHandle_t handle;
  MAIA_ASSERT_OK(maiaIpcGetMemHandle(&handle, d));
  void* opened = nullptr;
  MAIA_EXPECT_ERROR(maiaIpcOpenMemHandle(&opened, handle, 0), maiaErrorInvalidValue,
                    "made by this process");
  maiaIpcMemHandle_t garbage;
  std::memset(garbage.reserved, 0x5a, sizeof(garbage.reserved));
  MAIA_EXPECT_ERROR(maiaIpcOpenMemHandle(&opened, garbage, 0), maiaErrorInvalidHandle,
                    "not a MAIA IPC handle");
  maiaIpcMemHandle_t damaged = handle;
  damaged.reserved[40] ^= 1;  // a bit of the offset
  MAIA_EXPECT_ERROR(maiaIpcOpenMemHandle(&opened, damaged, 0), maiaErrorInvalidHandle,
                    "damaged");
  maiaIpcEventHandle_t as_event;
  std::memcpy(as_event.reserved, handle.reserved, sizeof(as_event.reserved));
  maiaEvent_t event = nullptr;
  MAIA_EXPECT_ERROR(maiaIpcOpenEventHandle(&event, as_event), maiaErrorInvalidHandle,
                    "memory handle was passed where an IPC event handle is expected");
  MAIA_EXPECT_ERROR(maiaIpcOpenMemHandle(&opened, handle, 8), maiaErrorInvalidValue,
                    "unknown flags");
  MAIA_EXPECT_ERROR(maiaIpcCloseMemHandle(d), maiaErrorInvalidDevicePointer,
                    "not a pointer returned by maiaIpcOpenMemHandle");
  int host = 0;
  MAIA_EXPECT_ERROR(maiaIpcGetMemHandle(&handle, &host), maiaErrorInvalidDevicePointer,
                    "not device memory");
  maiaEvent_t local;
  MAIA_ASSERT_OK(maiaEventCreate(&local, maiaEventDefault));
  maiaIpcEventHandle_t event_handle;
  MAIA_EXPECT_ERROR(maiaIpcGetEventHandle(&event_handle, local), maiaErrorInvalidValue,
                    "not created with maiaEventInterprocess");
  MAIA_ASSERT_OK(maiaEventDestroy(local));
  MAIA_ASSERT_OK(maiaFree(d));
  MAIA_EXPECT_ERROR(maiaIpcGetMemHandle(&handle, d), maiaErrorInvalidDevicePointer,
                    "no live allocation");
}

TEST(IpcTest, AHandleOfAFreedAllocationIsStale) {
  Peer child([](Peer& parent) {
    for (int round = 0; round < 2; ++round) {
      auto handle = parent.receive<maiaIpcMemHandle_t>();
      void* opened = nullptr;
      MAIA_EXPECT_ERROR(maiaIpcOpenMemHandle(&opened, handle, 0), maiaErrorInvalidHandle,
                        "stale IPC handle");
      parent.send(kDone);
    }
    auto event_handle = parent.receive<maiaIpcEventHandle_t>();
    maiaEvent_t event = nullptr;
    MAIA_EXPECT_ERROR(maiaIpcOpenEventHandle(&event, event_handle), maiaErrorInvalidHandle,
                      "destroyed the event");
    parent.send(kDone);
  });
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, 4096));
  maiaIpcMemHandle_t handle;
  MAIA_ASSERT_OK(maiaIpcGetMemHandle(&handle, d));
  MAIA_ASSERT_OK(maiaFree(d));
  child.send(handle);
  EXPECT_EQ(child.receive<Signal>(), kDone);
  // Freed and allocated again at the same address: still stale.
  void* again = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&again, 4096));
  EXPECT_EQ(again, d);
  maiaIpcMemHandle_t fresh;
  MAIA_ASSERT_OK(maiaIpcGetMemHandle(&fresh, again));
  EXPECT_NE(std::memcmp(&fresh, &handle, sizeof(handle)), 0);
  child.send(handle);
  EXPECT_EQ(child.receive<Signal>(), kDone);
  maiaEvent_t event;
  MAIA_ASSERT_OK(maiaEventCreate(&event, maiaEventInterprocess));
  maiaIpcEventHandle_t event_handle;
  MAIA_ASSERT_OK(maiaIpcGetEventHandle(&event_handle, event));
  MAIA_ASSERT_OK(maiaEventDestroy(event));
  child.send(event_handle);
  EXPECT_EQ(child.receive<Signal>(), kDone);
  EXPECT_TRUE(child.join());
  MAIA_ASSERT_OK(maiaFree(again));
}

TEST(IpcTest, AHandleOfAnExitedProcessIsRefused) {
  Peer child([](Peer& parent) {
    void* d = nullptr;
    MAIA_ASSERT_OK(maiaMalloc(&d, 4096));
    maiaIpcMemHandle_t handle;
    MAIA_ASSERT_OK(maiaIpcGetMemHandle(&handle, d));
    maiaEvent_t event;
    MAIA_ASSERT_OK(maiaEventCreate(&event, maiaEventInterprocess));
    maiaIpcEventHandle_t event_handle;
    MAIA_ASSERT_OK(maiaIpcGetEventHandle(&event_handle, event));
    parent.send(handle);
    parent.send(event_handle);
  });
  auto handle = child.receive<maiaIpcMemHandle_t>();
  auto event_handle = child.receive<maiaIpcEventHandle_t>();
  ASSERT_TRUE(child.join());
  void* opened = nullptr;
  MAIA_EXPECT_ERROR(maiaIpcOpenMemHandle(&opened, handle, 0), maiaErrorPeerExited,
                    "has exited");
  maiaEvent_t event = nullptr;
  MAIA_EXPECT_ERROR(maiaIpcOpenEventHandle(&event, event_handle), maiaErrorPeerExited,
                    "has exited");
}

TEST(IpcTest, AnOwnerExitingDuringAWaitIsAnErrorNotAHang) {
  Peer child([](Peer& parent) {
    maiaEvent_t event;
    MAIA_ASSERT_OK(maiaEventCreate(&event, maiaEventInterprocess));
    // The record is queued behind a gate that never opens.
    static Gate never;
    MAIA_ASSERT_OK(maiaLaunchHostFunc(nullptr, Gate::wait, &never));
    MAIA_ASSERT_OK(maiaEventRecord(event, nullptr));
    maiaIpcEventHandle_t handle;
    MAIA_ASSERT_OK(maiaIpcGetEventHandle(&handle, event));
    parent.send(handle);
    parent.receive<Signal>();  // kExit
    _exit(0);  // with the record still pending
  });
  auto handle = child.receive<maiaIpcEventHandle_t>();
  maiaEvent_t event;
  MAIA_ASSERT_OK(maiaIpcOpenEventHandle(&event, handle));
  maiaEvent_t second;
  MAIA_ASSERT_OK(maiaIpcOpenEventHandle(&second, handle));
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, kCount * sizeof(int64_t)));
  upload(d, iota(kCount, 0));
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  MAIA_ASSERT_OK(maiaStreamWaitEvent(stream, event));
  axpb(d, kCount, 2, 1, stream);
  EXPECT_EQ(maiaEventQuery(event), maiaErrorNotReady);
  child.send(kExit);
  EXPECT_TRUE(child.join());
  MAIA_EXPECT_ERROR(maiaEventSynchronize(second), maiaErrorPeerExited,
                    "exited before the awaited record completed");
  MAIA_EXPECT_ERROR(maiaStreamSynchronize(stream), maiaErrorLaunchFailure,
                    "interprocess event: process " + std::to_string(child.pid()));
  MAIA_EXPECT_ERROR(maiaEventQuery(event), maiaErrorPeerExited, "exited");
  MAIA_ASSERT_OK(maiaDeviceReset(0));
  EXPECT_EQ(download(d, kCount), iota(kCount, 0));  // the work behind the wait was skipped
  for (auto e : {event, second}) MAIA_ASSERT_OK(maiaEventDestroy(e));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(d));
}

/// The importer's side of the lifetime tests: opens `opens` times, reports
/// the data, closes when told, and checks it left nothing behind.
void importer(Peer& exporter, int opens) {
  int devices = 0;
  MAIA_ASSERT_OK(maiaGetDeviceCount(&devices));  // the driver's own files and mappings
  const int files = openFiles();
  const int mappings = deviceMemoryMappings();
  auto handle = exporter.receive<maiaIpcMemHandle_t>();
  void* shared = nullptr;
  for (int i = 0; i < opens; ++i) MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&shared, handle, 0));
  EXPECT_EQ(deviceMemoryMappings(), mappings + 2);  // the two views of the import
  EXPECT_EQ(download(shared, kCount), iota(kCount, 42));
  exporter.send(kReady);
  for (int i = 0; i < opens; ++i) {
    EXPECT_EQ(exporter.receive<Signal>(), kExit);
    // Whatever the exporter did meanwhile (free, allocate anew), the
    // memory is intact while open.
    EXPECT_EQ(download(shared, kCount), iota(kCount, 42));
    MAIA_ASSERT_OK(maiaIpcCloseMemHandle(shared));
    exporter.send(kDone);
  }
  maiaPointerAttributes attr;
  EXPECT_NE(maiaPointerGetAttributes(&attr, shared), maiaSuccess);
  EXPECT_EQ(openFiles(), files);
  EXPECT_EQ(deviceMemoryMappings(), mappings);
}

TEST(IpcTest, CloseThenFreeLeaksNothing) {
  Peer child([](Peer& exporter) { importer(exporter, 1); });
  const size_t baseline = freeBytes();
  void* d = shareWith(child, 42);
  EXPECT_EQ(child.receive<Signal>(), kReady);
  child.send(kExit);
  EXPECT_EQ(child.receive<Signal>(), kDone);
  MAIA_ASSERT_OK(maiaFree(d));
  EXPECT_EQ(freeBytes(), baseline);
  EXPECT_TRUE(child.join());
}

TEST(IpcTest, FreeWhileOpenElsewhereKeepsThePagesUntilTheLastClose) {
  Peer child([](Peer& exporter) { importer(exporter, 2); });
  const size_t baseline = freeBytes();
  void* d = nullptr;
  const size_t bytes = kCount * sizeof(int64_t);
  MAIA_ASSERT_OK(maiaMalloc(&d, bytes));
  upload(d, iota(kCount, 42));
  maiaIpcMemHandle_t handle;
  MAIA_ASSERT_OK(maiaIpcGetMemHandle(&handle, d));
  child.send(handle);
  EXPECT_EQ(child.receive<Signal>(), kReady);
  MAIA_ASSERT_OK(maiaFree(d));
  // Retired, not free: a new allocation must not get (and overwrite) it.
  EXPECT_LT(freeBytes(), baseline);
  void* reuse = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&reuse, bytes));
  EXPECT_NE(reuse, d);
  upload(reuse, iota(kCount, -1000));
  child.send(kExit);  // the first close of two
  EXPECT_EQ(child.receive<Signal>(), kDone);
  MAIA_ASSERT_OK(maiaFree(reuse));
  EXPECT_LT(freeBytes(), baseline);  // still open once
  child.send(kExit);
  EXPECT_EQ(child.receive<Signal>(), kDone);
  EXPECT_EQ(freeBytes(), baseline);
  void* after = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&after, bytes));
  EXPECT_EQ(after, d);  // the retired block was returned
  MAIA_ASSERT_OK(maiaFree(after));
  EXPECT_TRUE(child.join());
}

TEST(IpcTest, AnImporterSeesTheOwnersFreeAndClosesBehindItsStream) {
  Peer child([](Peer& exporter) {
    const int mappings = mappingsOfAnInitializedDriver();
    auto handle = exporter.receive<maiaIpcMemHandle_t>();
    void* shared = nullptr;
    MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&shared, handle, 0));
    int freed = -1;
    MAIA_ASSERT_OK(maiaIpcMemHandleFreedByOwner(shared, &freed));
    EXPECT_EQ(freed, 0);
    // Work queued before the close reads the memory after the owner's free.
    maiaStream_t stream = nullptr;
    MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
    void* copy = nullptr;
    MAIA_ASSERT_OK(maiaMalloc(&copy, kCount * sizeof(int64_t)));
    exporter.send(kReady);
    EXPECT_EQ(exporter.receive<Signal>(), kExit);  // the owner freed it
    MAIA_ASSERT_OK(maiaIpcMemHandleFreedByOwner(shared, &freed));
    EXPECT_EQ(freed, 1);
    MAIA_ASSERT_OK(maiaMemcpyAsync(copy, shared, kCount * sizeof(int64_t),
                                   maiaMemcpyDeviceToDevice, stream));
    MAIA_ASSERT_OK(maiaIpcCloseMemHandleAsync(shared, stream));
    // Closed for the caller at once; unmapped behind the stream's copy.
    EXPECT_EQ(maiaIpcMemHandleFreedByOwner(shared, &freed), maiaErrorInvalidDevicePointer);
    EXPECT_EQ(maiaIpcCloseMemHandleAsync(shared, stream), maiaErrorInvalidDevicePointer);
    MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
    EXPECT_EQ(download(copy, kCount), iota(kCount, 42));
    EXPECT_EQ(deviceMemoryMappings(), mappings);
    MAIA_ASSERT_OK(maiaFree(copy));
    MAIA_ASSERT_OK(maiaStreamDestroy(stream));
    exporter.send(kDone);
  });
  const size_t baseline = freeBytes();
  void* d = shareWith(child, 42);
  EXPECT_EQ(child.receive<Signal>(), kReady);
  MAIA_ASSERT_OK(maiaFree(d));
  EXPECT_LT(freeBytes(), baseline);  // retired while the child has it open
  child.send(kExit);
  EXPECT_EQ(child.receive<Signal>(), kDone);
  EXPECT_EQ(freeBytes(), baseline);
  EXPECT_TRUE(child.join());
}

TEST(IpcTest, AsyncCloseOnAnIdleStreamUnmapsAtOnceOnAnotherDevicesIsRefused) {
  Peer child([](Peer& exporter) {
    const int mappings = mappingsOfAnInitializedDriver();
    auto handle = exporter.receive<maiaIpcMemHandle_t>();
    void* shared = nullptr;
    MAIA_ASSERT_OK(maiaSetDevice(0));
    MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&shared, handle, 0));
    MAIA_ASSERT_OK(maiaSetDevice(1));
    maiaStream_t other = nullptr;
    MAIA_ASSERT_OK(maiaStreamCreate(&other, 0));
    EXPECT_EQ(maiaIpcCloseMemHandleAsync(shared, other), maiaErrorInvalidValue);
    EXPECT_NE(std::string(maiaGetLastErrorMessage()).find("another device"), std::string::npos);
    MAIA_ASSERT_OK(maiaStreamDestroy(other));
    int freed = -1;
    EXPECT_EQ(maiaIpcMemHandleFreedByOwner(nullptr, &freed), maiaErrorInvalidDevicePointer);
    // Still open (the refusal dropped nothing); an idle stream of its
    // device has no work that could read it: unmapped before the call returns.
    MAIA_ASSERT_OK(maiaSetDevice(0));
    maiaStream_t idle = nullptr;
    MAIA_ASSERT_OK(maiaStreamCreate(&idle, 0));
    MAIA_ASSERT_OK(maiaIpcCloseMemHandleAsync(shared, idle));
    EXPECT_EQ(deviceMemoryMappings(), mappings);
    MAIA_ASSERT_OK(maiaStreamDestroy(idle));
    exporter.send(kDone);
  });
  void* d = shareWith(child, 0);
  EXPECT_EQ(child.receive<Signal>(), kDone);
  MAIA_ASSERT_OK(maiaFree(d));
  EXPECT_TRUE(child.join());
}

TEST(IpcTest, RangesOfAnAllocationMapOnlyThemselves) {
  Peer child([](Peer& exporter) {
    const int mappings = mappingsOfAnInitializedDriver();
    auto handle = exporter.receive<maiaIpcMemHandle_t>();
    constexpr size_t kItem = sizeof(int64_t);
    void* middle = nullptr;
    void* again = nullptr;
    void* tail = nullptr;
    MAIA_ASSERT_OK(maiaIpcOpenMemHandleRange(&middle, handle, 100 * kItem, 200 * kItem, 0));
    MAIA_ASSERT_OK(maiaIpcOpenMemHandleRange(&again, handle, 100 * kItem, 200 * kItem, 0));
    MAIA_ASSERT_OK(maiaIpcOpenMemHandleRange(&tail, handle, 900 * kItem, 100 * kItem, 0));
    EXPECT_EQ(again, middle);
    EXPECT_NE(tail, middle);
    EXPECT_EQ(download(middle, 200), iota(200, 42 + 100));
    EXPECT_EQ(download(tail, 100), iota(100, 42 + 900));
    // The registered allocation is the range: a copy past its end is refused.
    std::vector<int64_t> past(201);
    EXPECT_NE(maiaMemcpy(past.data(), middle, past.size() * kItem, maiaMemcpyDeviceToHost),
              maiaSuccess);
    void* bad = nullptr;
    EXPECT_EQ(maiaIpcOpenMemHandleRange(&bad, handle, 900 * kItem, 101 * kItem, 0),
              maiaErrorInvalidValue);
    EXPECT_NE(std::string(maiaGetLastErrorMessage()).find("not a non-empty range"),
              std::string::npos);
    EXPECT_EQ(maiaIpcOpenMemHandleRange(&bad, handle, 0, 0, 0), maiaErrorInvalidValue);
    exporter.send(kReady);
    EXPECT_EQ(exporter.receive<Signal>(), kExit);  // freed by the owner: retired
    for (void* p : {middle, again, tail}) MAIA_ASSERT_OK(maiaIpcCloseMemHandle(p));
    EXPECT_EQ(deviceMemoryMappings(), mappings);
    exporter.send(kDone);
  });
  const size_t baseline = freeBytes();
  void* d = shareWith(child, 42);
  EXPECT_EQ(child.receive<Signal>(), kReady);
  MAIA_ASSERT_OK(maiaFree(d));
  EXPECT_LT(freeBytes(), baseline);  // two ranges open, one importer entry
  child.send(kExit);
  EXPECT_EQ(child.receive<Signal>(), kDone);
  EXPECT_EQ(freeBytes(), baseline);  // the last range closed: returned
  EXPECT_TRUE(child.join());
}

TEST(IpcTest, MemoryStaysOpenAfterItsExporterExits) {
  Peer child([](Peer& importer) {
    void* d = shareWith(importer, 42);
    EXPECT_EQ(importer.receive<Signal>(), kReady);  // then exits without freeing
  });
  // The driver's and the kernel module's own files and mappings first.
  int devices = 0;
  MAIA_ASSERT_OK(maiaGetDeviceCount(&devices));
  ASSERT_NE(basicKernel("axpb_i64"), nullptr);
  const int files = openFiles();
  const int mappings = deviceMemoryMappings();
  auto handle = child.receive<maiaIpcMemHandle_t>();
  void* shared = nullptr;
  MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&shared, handle, 0));
  child.send(kReady);
  ASSERT_TRUE(child.join());
  // Our mapping holds the pages of the exporter's memfd.
  axpb(shared, kCount, 2, 0, nullptr);
  std::vector<int64_t> expected(kCount);
  for (int64_t i = 0; i < kCount; ++i) expected[i] = 2 * (42 + i);
  EXPECT_EQ(download(shared, kCount), expected);
  MAIA_ASSERT_OK(maiaIpcCloseMemHandle(shared));
  EXPECT_EQ(openFiles(), files);
  EXPECT_EQ(deviceMemoryMappings(), mappings);
}

TEST(IpcTest, AHandleOpensOnTheCallersCurrentDevice) {
  Peer child([](Peer& parent) {
    auto handle = parent.receive<maiaIpcMemHandle_t>();
    MAIA_ASSERT_OK(maiaSetDevice(1));
    void* shared = nullptr;
    MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&shared, handle, 0));
    maiaPointerAttributes attr;
    MAIA_ASSERT_OK(maiaPointerGetAttributes(&attr, shared));
    EXPECT_EQ(attr.device, 1);
    maiaStream_t stream;
    MAIA_ASSERT_OK(maiaStreamGetDefault(&stream, 1));
    axpb(shared, kCount, 1, 5, stream);  // a kernel of device 1 on it
    MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
    MAIA_ASSERT_OK(maiaIpcCloseMemHandle(shared));
    parent.send(kDone);
  });
  void* d = shareWith(child, 0);  // on device 0
  EXPECT_EQ(child.receive<Signal>(), kDone);
  EXPECT_EQ(download(d, kCount), iota(kCount, 5));
  EXPECT_TRUE(child.join());
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(IpcTest, TheMemoryIsReleasedWhenTheLastOfSeveralImportersCloses) {
  auto importer = [](Peer& exporter) {
    auto handle = exporter.receive<maiaIpcMemHandle_t>();
    void* shared = nullptr;
    MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&shared, handle, 0));
    exporter.send(kReady);
    EXPECT_EQ(exporter.receive<Signal>(), kExit);
    EXPECT_EQ(download(shared, kCount), iota(kCount, 3));
    MAIA_ASSERT_OK(maiaIpcCloseMemHandle(shared));
    exporter.send(kDone);
  };
  Peer first(importer);
  Peer second(importer);
  const size_t baseline = freeBytes();
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, kCount * sizeof(int64_t)));
  upload(d, iota(kCount, 3));
  maiaIpcMemHandle_t handle;
  MAIA_ASSERT_OK(maiaIpcGetMemHandle(&handle, d));
  for (Peer* peer : {&first, &second}) {
    peer->send(handle);
    EXPECT_EQ(peer->receive<Signal>(), kReady);
  }
  MAIA_ASSERT_OK(maiaFree(d));
  for (Peer* peer : {&first, &second}) {
    EXPECT_LT(freeBytes(), baseline);  // still open in this one
    peer->send(kExit);
    EXPECT_EQ(peer->receive<Signal>(), kDone);
  }
  EXPECT_EQ(freeBytes(), baseline);
  EXPECT_TRUE(first.join());
  EXPECT_TRUE(second.join());
}

TEST(IpcTest, AnImporterThatDiesWithoutClosingReleasesTheMemory) {
  Peer child([](Peer& exporter) {
    auto handle = exporter.receive<maiaIpcMemHandle_t>();
    void* shared = nullptr;
    MAIA_ASSERT_OK(maiaIpcOpenMemHandle(&shared, handle, 0));
    exporter.send(kReady);
    exporter.receive<Signal>();
    _exit(0);  // never closes
  });
  const size_t baseline = freeBytes();
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, kCount * sizeof(int64_t)));
  maiaIpcMemHandle_t handle;
  MAIA_ASSERT_OK(maiaIpcGetMemHandle(&handle, d));
  child.send(handle);
  EXPECT_EQ(child.receive<Signal>(), kReady);
  MAIA_ASSERT_OK(maiaFree(d));
  EXPECT_LT(freeBytes(), baseline);  // open in a live process
  child.send(kExit);
  child.waitExited();
  EXPECT_EQ(freeBytes(), baseline);  // a zombie maps nothing any more
  EXPECT_TRUE(child.join());
}

}  // namespace

namespace {

/// Opens and closes a peer's handles from several threads while the peer
/// frees them: every open either maps the right data or reports a stale
/// handle, and nothing stays allocated once both sides are done.
TEST(IpcTest, OpensRacingTheExportersFreesAreEitherValidOrStale) {
  constexpr int kBlocks = 32;
  constexpr int64_t kWords = 512;
  Peer child([](Peer& parent) {
    std::vector<maiaIpcMemHandle_t> handles(kBlocks);
    for (auto& handle : handles) handle = parent.receive<maiaIpcMemHandle_t>();
    int devices = 0;
    MAIA_ASSERT_OK(maiaGetDeviceCount(&devices));
    const int mappings = deviceMemoryMappings();
    parent.send(kReady);
    std::atomic<int> opened{0}, stale{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 200; ++i) {
          const int block = (i * 7 + t * 13) % kBlocks;
          void* shared = nullptr;
          maiaError_t error = maiaIpcOpenMemHandle(&shared, handles[block], 0);
          if (error == maiaErrorInvalidHandle) {
            ++stale;
            continue;
          }
          ASSERT_EQ(error, maiaSuccess) << maiaGetLastErrorMessage();
          ++opened;
          std::vector<int64_t> word(1);
          ASSERT_EQ(maiaMemcpy(word.data(), static_cast<int64_t*>(shared) + kWords - 1,
                               sizeof(int64_t), maiaMemcpyDeviceToHost),
                    maiaSuccess);
          EXPECT_EQ(word[0], block * kWords + kWords - 1);
          ASSERT_EQ(maiaIpcCloseMemHandle(shared), maiaSuccess) << maiaGetLastErrorMessage();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_GT(opened.load(), 0);
    EXPECT_EQ(deviceMemoryMappings(), mappings);
    parent.send(kDone);
  });
  const size_t baseline = freeBytes();
  std::vector<void*> blocks(kBlocks);
  for (int b = 0; b < kBlocks; ++b) {
    MAIA_ASSERT_OK(maiaMalloc(&blocks[b], kWords * sizeof(int64_t)));
    upload(blocks[b], iota(kWords, b * kWords));
    maiaIpcMemHandle_t handle;
    MAIA_ASSERT_OK(maiaIpcGetMemHandle(&handle, blocks[b]));
    child.send(handle);
  }
  EXPECT_EQ(child.receive<Signal>(), kReady);
  for (int b = 0; b < kBlocks; b += 2) MAIA_ASSERT_OK(maiaFree(blocks[b]));  // racing the opens
  EXPECT_EQ(child.receive<Signal>(), kDone);
  for (int b = 1; b < kBlocks; b += 2) MAIA_ASSERT_OK(maiaFree(blocks[b]));
  EXPECT_EQ(freeBytes(), baseline);
  EXPECT_TRUE(child.join());
}

}  // namespace

namespace {

/// An owner of an interprocess event: records it behind a gate, opens the
/// gate when told, and reports when its record completed.
void gatedOwner(Peer& waiter) {
  maiaEvent_t event;
  MAIA_ASSERT_OK(maiaEventCreate(&event, maiaEventInterprocess));
  static Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(nullptr, Gate::wait, &gate));
  MAIA_ASSERT_OK(maiaEventRecord(event, nullptr));
  maiaIpcEventHandle_t handle;
  MAIA_ASSERT_OK(maiaIpcGetEventHandle(&handle, event));
  waiter.send(handle);
  EXPECT_EQ(waiter.receive<Signal>(), kReady);
  gate.open = true;
  MAIA_ASSERT_OK(maiaEventSynchronize(event));
  waiter.send(kDone);
  EXPECT_EQ(waiter.receive<Signal>(), kExit);
}

TEST(IpcTest, AStreamWaitsForEventsOfTwoProcesses) {
  Peer first(gatedOwner);
  Peer second(gatedOwner);
  maiaEvent_t events[2];
  MAIA_ASSERT_OK(maiaIpcOpenEventHandle(&events[0], first.receive<maiaIpcEventHandle_t>()));
  MAIA_ASSERT_OK(maiaIpcOpenEventHandle(&events[1], second.receive<maiaIpcEventHandle_t>()));
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, kCount * sizeof(int64_t)));
  upload(d, iota(kCount, 0));
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  for (maiaEvent_t event : events) MAIA_ASSERT_OK(maiaStreamWaitEvent(stream, event));
  axpb(d, kCount, 1, 1, stream);
  first.send(kReady);
  EXPECT_EQ(first.receive<Signal>(), kDone);
  EXPECT_EQ(maiaEventQuery(events[0]), maiaSuccess);
  EXPECT_EQ(maiaStreamQuery(stream), maiaErrorNotReady);  // the second still holds it
  EXPECT_EQ(download(d, kCount), iota(kCount, 0));
  second.send(kReady);
  EXPECT_EQ(second.receive<Signal>(), kDone);
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  EXPECT_EQ(download(d, kCount), iota(kCount, 1));
  for (Peer* peer : {&first, &second}) {
    peer->send(kExit);
    EXPECT_TRUE(peer->join());
  }
  for (maiaEvent_t event : events) MAIA_ASSERT_OK(maiaEventDestroy(event));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(d));
}

}  // namespace
