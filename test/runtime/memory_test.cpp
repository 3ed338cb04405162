// Device and pinned memory, copies in every direction, bad pointers.
#include <atomic>
#include <cstring>
#include <numeric>
#include <vector>

#include "test_util.h"

using namespace maia_test;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(seed + i * 7);
  return bytes;
}

TEST(MemoryTest, HostToDeviceToHostRoundTrip) {
  for (size_t n : {size_t{1}, size_t{255}, size_t{4097}, size_t{3} << 20}) {
    auto in = pattern(n, 3);
    std::vector<uint8_t> out(n, 0);
    void* d = nullptr;
    MAIA_ASSERT_OK(maiaMalloc(&d, n));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d) % 256, 0u);
    MAIA_ASSERT_OK(maiaMemcpy(d, in.data(), n, maiaMemcpyHostToDevice));
    MAIA_ASSERT_OK(maiaMemcpy(out.data(), d, n, maiaMemcpyDeviceToHost));
    EXPECT_EQ(in, out) << "size " << n;
    MAIA_ASSERT_OK(maiaFree(d));
  }
}

TEST(MemoryTest, DeviceToDeviceOnOneAndAcrossDevices) {
  const size_t n = (size_t{2} << 20) + 13;
  auto in = pattern(n, 11);
  void *a = nullptr, *b = nullptr, *c = nullptr;
  MAIA_ASSERT_OK(maiaSetDevice(0));
  MAIA_ASSERT_OK(maiaMalloc(&a, n));
  MAIA_ASSERT_OK(maiaMalloc(&b, n));
  MAIA_ASSERT_OK(maiaSetDevice(1));
  MAIA_ASSERT_OK(maiaMalloc(&c, n));
  MAIA_ASSERT_OK(maiaSetDevice(0));
  maiaPointerAttributes attr;
  MAIA_ASSERT_OK(maiaPointerGetAttributes(&attr, c));
  EXPECT_EQ(attr.device, 1);
  MAIA_ASSERT_OK(maiaMemcpy(a, in.data(), n, maiaMemcpyHostToDevice));
  MAIA_ASSERT_OK(maiaMemcpy(b, a, n, maiaMemcpyDeviceToDevice));
  MAIA_ASSERT_OK(maiaMemcpyAsync(c, b, n, maiaMemcpyDefault, nullptr));
  MAIA_ASSERT_OK(maiaDeviceSynchronize());
  std::vector<uint8_t> out(n);
  MAIA_ASSERT_OK(maiaMemcpy(out.data(), c, n, maiaMemcpyDefault));
  EXPECT_EQ(in, out);
  for (void* p : {a, b, c}) MAIA_ASSERT_OK(maiaFree(p));
}

// Copies of 8 MiB and more write with streaming stores (streaming_copy.h),
// line by line from the first 64-byte aligned destination byte: every
// misalignment of either side, and tails shorter than a line, must land
// byte for byte, and nothing around the destination may be touched.
TEST(MemoryTest, LargeCopiesAtAnyAlignmentAreExact) {
  const size_t n = (size_t{8} << 20) + 77;
  const size_t margin = 128;
  auto in = pattern(n + margin, 5);
  void *src = nullptr, *dst = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&src, n + margin));
  MAIA_ASSERT_OK(maiaMalloc(&dst, n + 2 * margin));
  MAIA_ASSERT_OK(maiaMemcpy(src, in.data(), n + margin, maiaMemcpyHostToDevice));
  auto* from = static_cast<char*>(src);
  auto* base = static_cast<char*>(dst);
  std::vector<uint8_t> out(n + 2 * margin);
  for (auto [src_offset, dst_offset] : {std::pair<size_t, size_t>{0, 0}, {0, 3}, {5, 64},
                                        {17, 33}, {63, 1}}) {
    MAIA_ASSERT_OK(maiaMemset(dst, 0xee, n + 2 * margin));
    MAIA_ASSERT_OK(maiaMemcpy(base + margin + dst_offset, from + src_offset, n - dst_offset,
                              maiaMemcpyDeviceToDevice));
    MAIA_ASSERT_OK(maiaMemcpy(out.data(), dst, n + 2 * margin, maiaMemcpyDeviceToHost));
    const size_t first = margin + dst_offset, last = first + n - dst_offset;
    for (size_t i = 0; i < out.size(); ++i) {
      const uint8_t expected = i >= first && i < last ? in[src_offset + i - first] : 0xee;
      ASSERT_EQ(out[i], expected) << "byte " << i << ", source offset " << src_offset
                                  << ", destination offset " << dst_offset;
    }
  }
  for (void* p : {src, dst}) MAIA_ASSERT_OK(maiaFree(p));
}

TEST(MemoryTest, MemsetWritesBytesSynchronouslyAndOnAStream) {
  const size_t n = 5000;
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, n));
  MAIA_ASSERT_OK(maiaMemset(d, 0xab, n));
  MAIA_ASSERT_OK(maiaMemsetAsync(static_cast<char*>(d) + 100, 0x01, 50, nullptr));
  std::vector<uint8_t> out(n);
  MAIA_ASSERT_OK(maiaMemcpy(out.data(), d, n, maiaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], (i >= 100 && i < 150) ? 0x01 : 0xab) << "byte " << i;
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(MemoryTest, CopiesFromPinnedMemoryAreAsynchronousAndOrdered) {
  const size_t n = 1 << 16;
  uint8_t* pinned = nullptr;
  MAIA_ASSERT_OK(maiaHostAlloc(reinterpret_cast<void**>(&pinned), n));
  std::memset(pinned, 7, n);
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, n));
  MAIA_ASSERT_OK(maiaMemset(d, 0, n));
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, Gate::wait, &gate));
  MAIA_ASSERT_OK(maiaMemcpyAsync(d, pinned, n, maiaMemcpyHostToDevice, stream));
  MAIA_ASSERT_OK(maiaMemcpyAsync(pinned, d, n / 2, maiaMemcpyDeviceToHost, stream));
  // Returned while the stream is held: the copies have not run.
  EXPECT_EQ(maiaStreamQuery(stream), maiaErrorNotReady);
  std::memset(pinned, 9, n);  // what the H2D copy will read: it has not read yet
  gate.open = true;
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  std::vector<uint8_t> device_copy(n);
  MAIA_ASSERT_OK(maiaMemcpy(device_copy.data(), d, n, maiaMemcpyDeviceToHost));
  EXPECT_EQ(device_copy, std::vector<uint8_t>(n, 9));
  EXPECT_EQ(pinned[0], 9);
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(d));
  MAIA_ASSERT_OK(maiaFreeHost(pinned));
}

TEST(MemoryTest, CopyToPageableMemoryCompletesBeforeReturning) {
  const int64_t n = 1000;
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, n * sizeof(int64_t)));
  MAIA_ASSERT_OK(maiaMemset(d, 0, n * sizeof(int64_t)));
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  // A slow kernel (20 ms) then a copy into pageable memory: the copy call
  // must wait for both, since the device cannot write pageable memory later.
  maiaKernelArg args[4] = {vectorArg(d, maiaDtypeI64, n), scalarArg(maiaDtypeI64, int64_t{1}),
                           scalarArg(maiaDtypeI64, int64_t{42}),
                           scalarArg(maiaDtypeI64, int64_t{20'000'000})};
  int64_t grid[3] = {1, 1, 1};
  MAIA_ASSERT_OK(maiaLaunchKernel(basicKernel("axpb_i64"), grid, args, 4, stream));
  std::vector<int64_t> out(n, -1);
  MAIA_ASSERT_OK(maiaMemcpyAsync(out.data(), d, n * sizeof(int64_t), maiaMemcpyDeviceToHost,
                                 stream));
  EXPECT_EQ(out, std::vector<int64_t>(n, 42));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(MemoryTest, PointerAttributesNameDeviceBaseAndSize) {
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaSetDevice(1));
  MAIA_ASSERT_OK(maiaMalloc(&d, 1000));
  MAIA_ASSERT_OK(maiaSetDevice(0));
  maiaPointerAttributes attr;
  MAIA_ASSERT_OK(maiaPointerGetAttributes(&attr, static_cast<char*>(d) + 999));
  EXPECT_EQ(attr.type, maiaMemoryTypeDevice);
  EXPECT_EQ(attr.device, 1);
  EXPECT_EQ(attr.base, d);
  EXPECT_EQ(attr.size, 1000u);

  void* pinned = nullptr;
  MAIA_ASSERT_OK(maiaHostAlloc(&pinned, 300));
  MAIA_ASSERT_OK(maiaPointerGetAttributes(&attr, static_cast<char*>(pinned) + 5));
  EXPECT_EQ(attr.type, maiaMemoryTypeHost);
  EXPECT_EQ(attr.base, pinned);
  EXPECT_EQ(attr.size, 300u);

  int local = 0;
  MAIA_ASSERT_OK(maiaPointerGetAttributes(&attr, &local));
  EXPECT_EQ(attr.type, maiaMemoryTypeUnregistered);
  EXPECT_EQ(attr.device, -1);

  MAIA_ASSERT_OK(maiaFree(d));
  MAIA_EXPECT_ERROR(maiaPointerGetAttributes(&attr, d), maiaErrorInvalidDevicePointer,
                    "in no live allocation");
  MAIA_ASSERT_OK(maiaFreeHost(pinned));
}

TEST(MemoryTest, HostDereferenceOfADevicePointerFaults) {
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, 4096));
  MAIA_ASSERT_OK(maiaMemset(d, 1, 4096));  // the memory exists and holds data...
  GTEST_FLAG_SET(death_test_style, "fast");
  // ...but the host cannot read it through the device address.
  EXPECT_DEATH({ std::printf("%d\n", *static_cast<volatile int*>(d)); }, "");
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(MemoryTest, CapacityIsAccountedAndRestoredOnFree) {
  size_t free0 = 0, total = 0;
  MAIA_ASSERT_OK(maiaMemGetInfo(&free0, &total));
  EXPECT_EQ(total, size_t{1} << 30);
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, 10'000));
  size_t free1 = 0;
  MAIA_ASSERT_OK(maiaMemGetInfo(&free1, &total));
  EXPECT_EQ(free0 - free1, 10'240u);  // rounded to the 256-byte alignment
  MAIA_ASSERT_OK(maiaFree(d));
  MAIA_ASSERT_OK(maiaMemGetInfo(&free1, &total));
  EXPECT_EQ(free1, free0);
}

TEST(MemoryTest, OutOfMemoryIsAClearErrorAndDisturbsNothing) {
  void* keep = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&keep, 4096));
  auto in = pattern(4096, 5);
  MAIA_ASSERT_OK(maiaMemcpy(keep, in.data(), 4096, maiaMemcpyHostToDevice));
  void* big = nullptr;
  MAIA_EXPECT_ERROR(maiaMalloc(&big, size_t{2} << 30), maiaErrorOutOfMemory,
                    "out of memory on maia:0: tried to allocate 2147483648 bytes");
  EXPECT_EQ(big, nullptr);
  EXPECT_NE(std::string(maiaGetLastErrorMessage()).find("1024.00 MiB capacity"),
            std::string::npos)
      << maiaGetLastErrorMessage();
  MAIA_EXPECT_ERROR(maiaMalloc(&big, SIZE_MAX), maiaErrorOutOfMemory, "tried to allocate");
  // Everything else still works, and the data is intact.
  std::vector<uint8_t> out(4096);
  MAIA_ASSERT_OK(maiaMemcpy(out.data(), keep, 4096, maiaMemcpyDeviceToHost));
  EXPECT_EQ(in, out);
  MAIA_ASSERT_OK(maiaFree(keep));
}

TEST(MemoryTest, FreedBlocksCoalesceSoTheWholeCapacityIsUsableAgain) {
  std::vector<void*> blocks(64);
  for (auto& p : blocks) MAIA_ASSERT_OK(maiaMalloc(&p, 3 << 20));
  for (size_t i = 0; i < blocks.size(); i += 2) MAIA_ASSERT_OK(maiaFree(blocks[i]));
  for (size_t i = 1; i < blocks.size(); i += 2) MAIA_ASSERT_OK(maiaFree(blocks[i]));
  size_t free_bytes = 0, total = 0;
  MAIA_ASSERT_OK(maiaMemGetInfo(&free_bytes, &total));
  void* all = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&all, free_bytes));
  MAIA_ASSERT_OK(maiaFree(all));
}

TEST(MemoryTest, BadPointersAreRejectedByFree) {
  int local = 0;
  MAIA_EXPECT_ERROR(maiaFree(&local), maiaErrorInvalidDevicePointer, "not device memory");
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, 1024));
  MAIA_EXPECT_ERROR(maiaFree(static_cast<char*>(d) + 256), maiaErrorInvalidDevicePointer,
                    "points inside an allocation");
  MAIA_ASSERT_OK(maiaFree(d));
  MAIA_EXPECT_ERROR(maiaFree(d), maiaErrorInvalidDevicePointer, "already freed");
  MAIA_ASSERT_OK(maiaFree(nullptr));
  void* pinned = nullptr;
  MAIA_ASSERT_OK(maiaHostAlloc(&pinned, 64));
  MAIA_ASSERT_OK(maiaFreeHost(pinned));
  MAIA_EXPECT_ERROR(maiaFreeHost(pinned), maiaErrorInvalidValue, "not the start of a live");
}

TEST(MemoryTest, BadPointersAreRejectedByCopies) {
  std::vector<uint8_t> host(512, 3);
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, 100));
  MAIA_ASSERT_OK(maiaMemset(d, 0, 100));
  MAIA_EXPECT_ERROR(maiaMemcpy(nullptr, host.data(), 10, maiaMemcpyHostToDevice),
                    maiaErrorInvalidDevicePointer, "destination pointer is NULL");
  MAIA_EXPECT_ERROR(maiaMemcpy(host.data(), host.data() + 256, 10, maiaMemcpyHostToDevice),
                    maiaErrorInvalidDevicePointer, "is not device memory");
  MAIA_EXPECT_ERROR(maiaMemcpy(d, d, 10, maiaMemcpyHostToDevice),
                    maiaErrorInvalidDevicePointer, "source pointer");
  MAIA_EXPECT_ERROR(maiaMemcpy(d, host.data(), 200, maiaMemcpyHostToDevice),
                    maiaErrorInvalidDevicePointer, "destination overruns its allocation: 200");
  MAIA_EXPECT_ERROR(maiaMemcpy(host.data(), static_cast<char*>(d) + 50, 51,
                               maiaMemcpyDeviceToHost),
                    maiaErrorInvalidDevicePointer, "source overruns its allocation");
  MAIA_EXPECT_ERROR(maiaMemset(d, 1, 101), maiaErrorInvalidDevicePointer, "overruns");
  MAIA_EXPECT_ERROR(maiaMemset(host.data(), 1, 10), maiaErrorInvalidDevicePointer,
                    "maiaMemset writes device memory only");
  MAIA_EXPECT_ERROR(maiaMemcpy(d, host.data(), 10, static_cast<maiaMemcpyKind>(42)),
                    maiaErrorInvalidValue, "unknown maiaMemcpyKind 42");
  void* pinned = nullptr;
  MAIA_ASSERT_OK(maiaHostAlloc(&pinned, 64));
  MAIA_EXPECT_ERROR(maiaMemcpy(pinned, d, 100, maiaMemcpyDeviceToHost), maiaErrorInvalidValue,
                    "overruns its pinned allocation");
  // None of the rejected copies wrote anything.
  std::vector<uint8_t> out(100, 9);
  MAIA_ASSERT_OK(maiaMemcpy(out.data(), d, 100, maiaMemcpyDeviceToHost));
  EXPECT_EQ(out, std::vector<uint8_t>(100, 0));
  MAIA_ASSERT_OK(maiaFree(d));
  MAIA_EXPECT_ERROR(maiaMemcpy(host.data(), d, 10, maiaMemcpyDeviceToHost),
                    maiaErrorInvalidDevicePointer, "in no live allocation (freed?)");
  MAIA_ASSERT_OK(maiaFreeHost(pinned));
  // Zero bytes is a valid no-op.
  MAIA_ASSERT_OK(maiaMemcpy(host.data(), host.data(), 0, maiaMemcpyDefault));
}

}  // namespace

namespace {

TEST(MemoryTest, PatternFillWritesEveryElementOnAStream) {
  const size_t n = (size_t{3} << 20) + 7;  // several chunks and a tail
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, n * sizeof(uint32_t)));
  const uint32_t value = 0xdeadbeef;
  MAIA_ASSERT_OK(maiaMemsetPatternAsync(d, &value, sizeof(value), n, nullptr));
  const uint16_t half = 0x1234;
  MAIA_ASSERT_OK(maiaMemsetPatternAsync(d, &half, sizeof(half), 3, nullptr));
  std::vector<uint32_t> out(n);
  MAIA_ASSERT_OK(maiaMemcpy(out.data(), d, n * sizeof(uint32_t), maiaMemcpyDeviceToHost));
  EXPECT_EQ(out[0], 0x12341234u);
  EXPECT_EQ(out[1] & 0xffffu, 0x1234u);
  EXPECT_EQ(out[1] >> 16, 0xdeadu);
  for (size_t i = 2; i < n; ++i) ASSERT_EQ(out[i], value) << i;
  MAIA_EXPECT_ERROR(maiaMemsetPatternAsync(d, &value, 3, 1, nullptr), maiaErrorInvalidValue,
                    "pattern size 3");
  MAIA_EXPECT_ERROR(maiaMemsetPatternAsync(static_cast<char*>(d) + 1, &value, 4, 1, nullptr),
                    maiaErrorInvalidValue, "not aligned");
  MAIA_EXPECT_ERROR(maiaMemsetPatternAsync(d, &value, 4, n + 1, nullptr),
                    maiaErrorInvalidDevicePointer, "overruns");
  MAIA_ASSERT_OK(maiaFree(d));
}

// Fills of 8 MiB and more stream whole lines (streaming_copy.h): for every
// element size, starting at any element of the first line, every element
// gets the pattern and nothing beyond the fill is written; memset alike.
TEST(MemoryTest, LargeFillsAtAnyAlignmentAreExact) {
  const size_t bytes = (size_t{8} << 20) + 96;
  const size_t margin = 64;
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, bytes + 2 * margin));
  auto* base = static_cast<uint8_t*>(d);
  std::vector<uint8_t> out(bytes + 2 * margin);
  const uint8_t pattern[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  for (size_t size : {size_t{1}, size_t{2}, size_t{4}, size_t{8}, size_t{16}}) {
    for (size_t skip : {size_t{0}, size_t{1}, size_t{3}}) {  // elements into the first line
      const size_t first = margin + skip * size;
      const size_t count = (bytes - skip * size) / size;
      MAIA_ASSERT_OK(maiaMemset(d, 0xee, bytes + 2 * margin));
      if (size == 1 && skip == 3) {
        MAIA_ASSERT_OK(maiaMemset(base + first, pattern[0], count));
      } else {
        MAIA_ASSERT_OK(maiaMemsetPatternAsync(base + first, pattern, size, count, nullptr));
      }
      MAIA_ASSERT_OK(maiaMemcpy(out.data(), d, out.size(), maiaMemcpyDeviceToHost));
      for (size_t i = 0; i < out.size(); ++i) {
        const bool inside = i >= first && i < first + count * size;
        ASSERT_EQ(out[i], inside ? pattern[(i - first) % size] : 0xee)
            << "byte " << i << ", element size " << size << ", skip " << skip;
      }
    }
  }
  MAIA_ASSERT_OK(maiaFree(d));
}

TEST(MemoryTest, PatternFillOfSixteenByteElements) {  // complex128
  const size_t n = (size_t{1} << 20) + 3;
  struct Pair {
    double re, im;
  };
  void* d = nullptr;
  MAIA_ASSERT_OK(maiaMalloc(&d, n * sizeof(Pair)));
  const Pair value{1.5, -2.25};
  MAIA_ASSERT_OK(maiaMemsetPatternAsync(d, &value, sizeof(value), n, nullptr));
  std::vector<Pair> out(n);
  MAIA_ASSERT_OK(maiaMemcpy(out.data(), d, n * sizeof(Pair), maiaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(out[i].re == 1.5 && out[i].im == -2.25) << i;
  MAIA_EXPECT_ERROR(maiaMemsetPatternAsync(static_cast<char*>(d) + 8, &value, 16, 1, nullptr),
                    maiaErrorInvalidValue, "not aligned");
  MAIA_ASSERT_OK(maiaFree(d));
}

}  // namespace
