// Loading kernel binaries: introspection through the C API, and refusal of
// every malformed binary with a clean error instead of a crash.
#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "test_util.h"

namespace {

using maia_test::kernelPath;

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// bytes with the first occurrence of from replaced by to (same length, so
/// every offset in the ELF stays valid).
std::string patched(std::string bytes, std::string_view from, std::string_view to) {
  EXPECT_EQ(from.size(), to.size()) << "patch must keep the length: " << from;
  size_t at = bytes.find(from);
  EXPECT_NE(at, std::string::npos) << "not in the binary: " << from;
  if (at != std::string::npos && from.size() == to.size()) bytes.replace(at, to.size(), to);
  return bytes;
}

template <typename T>
T readAt(const std::string& bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

template <typename T>
void writeAt(std::string& bytes, size_t offset, const T& value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

/// Where the structures of a (trusted, well-formed) test binary lie.
struct ElfLayout {
  Elf64_Ehdr header;
  size_t text_section = 0;
  size_t metadata_offset = 0, metadata_size = 0;

  size_t sectionHeaderOffset(size_t index) const {
    return header.e_shoff + index * sizeof(Elf64_Shdr);
  }
};

ElfLayout layoutOf(const std::string& bytes) {
  ElfLayout layout;
  layout.header = readAt<Elf64_Ehdr>(bytes, 0);
  auto section = [&](size_t i) {
    return readAt<Elf64_Shdr>(bytes, layout.sectionHeaderOffset(i));
  };
  Elf64_Shdr names = section(layout.header.e_shstrndx);
  for (size_t i = 0; i < layout.header.e_shnum; ++i) {
    Elf64_Shdr s = section(i);
    std::string name = bytes.c_str() + names.sh_offset + s.sh_name;
    if (name == ".text") layout.text_section = i;
    if (name == ".maia.meta") {
      layout.metadata_offset = s.sh_offset;
      layout.metadata_size = s.sh_size;
    }
  }
  EXPECT_NE(layout.text_section, 0u);
  EXPECT_NE(layout.metadata_size, 0u);
  return layout;
}

class ModuleTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (maiaModule_t module : modules_) maiaModuleUnload(module);
    for (const std::string& path : temp_files_) std::remove(path.c_str());
  }

  /// Loads bytes from memory; the module is unloaded at the end of the test.
  maiaError_t loadData(const std::string& bytes, maiaModule_t* out) {
    maiaError_t error = maiaModuleLoadData(out, bytes.data(), bytes.size());
    if (error == maiaSuccess) modules_.push_back(*out);
    return error;
  }

  maiaError_t loadFile(const std::string& path, maiaModule_t* out) {
    maiaError_t error = maiaModuleLoad(out, path.c_str());
    if (error == maiaSuccess) modules_.push_back(*out);
    return error;
  }

  /// Writes bytes to a file removed at the end of the test.
  std::string writeTemp(const std::string& name, const std::string& bytes) {
    std::string path = ::testing::TempDir() + "maia_module_test_" + std::to_string(getpid()) +
                       "_" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    temp_files_.push_back(path);
    return path;
  }

  maiaKernel_t kernel(maiaModule_t module, const char* name) {
    maiaKernel_t kernel = nullptr;
    EXPECT_EQ(maiaModuleGetKernel(module, name, &kernel), maiaSuccess)
        << maiaGetLastErrorMessage();
    return kernel;
  }

  const std::string basic_ = readBytes(kernelPath("basic_kernels"));

 private:
  std::vector<maiaModule_t> modules_;
  std::vector<std::string> temp_files_;
};

const char* const kBasicKernelNames[] = {"empty",    "add_f32",            "triad_f32",
                                         "axpb_i64", "record_program_ids", "trap_at",
                                         "wait_for_flag", "fault_in_library"};
constexpr int kBasicKernelCount = sizeof(kBasicKernelNames) / sizeof(kBasicKernelNames[0]);

// ------------------------------------------------------------ loading

TEST_F(ModuleTest, LoadsFromFile) {
  maiaModule_t module = nullptr;
  MAIA_ASSERT_OK(loadFile(kernelPath("basic_kernels"), &module));
  ASSERT_NE(module, nullptr);
  int count = 0;
  MAIA_ASSERT_OK(maiaModuleGetKernelCount(module, &count));
  EXPECT_EQ(count, kBasicKernelCount);
}

TEST_F(ModuleTest, LoadsFromMemoryAndCopiesTheBytes) {
  std::string bytes = basic_;
  maiaModule_t module = nullptr;
  MAIA_ASSERT_OK(loadData(bytes, &module));
  // The driver owns a copy: the caller may reuse its buffer at once.
  std::fill(bytes.begin(), bytes.end(), '\0');
  const char* json = nullptr;
  MAIA_ASSERT_OK(maiaModuleGetMetadata(module, &json));
  EXPECT_NE(std::string(json).find("maia-kernel-binary"), std::string::npos);
  EXPECT_NE(kernel(module, "add_f32"), nullptr);
}

TEST_F(ModuleTest, ReportsTheEmbeddedMetadataJson) {
  maiaModule_t module = nullptr;
  MAIA_ASSERT_OK(loadData(basic_, &module));
  const char* json = nullptr;
  MAIA_ASSERT_OK(maiaModuleGetMetadata(module, &json));
  ElfLayout layout = layoutOf(basic_);
  // The section's text without its C string terminator.
  std::string section = basic_.substr(layout.metadata_offset, layout.metadata_size);
  EXPECT_EQ(std::string(json) + '\0', section);
  EXPECT_EQ(json[0], '{');
}

TEST_F(ModuleTest, LoadsTheSameBinaryTwiceIndependently) {
  maiaModule_t first = nullptr, second = nullptr;
  MAIA_ASSERT_OK(maiaModuleLoadData(&first, basic_.data(), basic_.size()));
  MAIA_ASSERT_OK(loadData(basic_, &second));
  EXPECT_NE(first, second);
  maiaKernel_t first_kernel = kernel(first, "empty");
  maiaKernel_t second_kernel = kernel(second, "empty");
  EXPECT_NE(first_kernel, second_kernel);
  MAIA_ASSERT_OK(maiaModuleUnload(first));
  const char* name = nullptr;
  MAIA_EXPECT_ERROR(maiaKernelGetName(first_kernel, &name), maiaErrorInvalidHandle, "kernel");
  MAIA_ASSERT_OK(maiaKernelGetName(second_kernel, &name));
  EXPECT_STREQ(name, "empty");
}

TEST_F(ModuleTest, ReloadingARewrittenFileMapsTheNewContents) {
  std::string path = writeTemp("rewritten.maiabin", basic_);
  maiaModule_t before = nullptr, after = nullptr;
  MAIA_ASSERT_OK(loadFile(path, &before));
  // Same length, one kernel renamed: as if recompiled in place.
  writeTemp("rewritten.maiabin",
            patched(basic_, R"("name": "empty")", R"("name": "emptz")"));
  MAIA_ASSERT_OK(loadFile(path, &after));
  maiaKernel_t k = nullptr;
  MAIA_ASSERT_OK(maiaModuleGetKernel(after, "emptz", &k));
  EXPECT_EQ(maiaModuleGetKernel(after, "empty", &k), maiaErrorNotFound);
  MAIA_ASSERT_OK(maiaModuleGetKernel(before, "empty", &k));
}

// ------------------------------------------------------------ introspection

TEST_F(ModuleTest, ListsKernelsByIndexInMetadataOrder) {
  maiaModule_t module = nullptr;
  MAIA_ASSERT_OK(loadData(basic_, &module));
  const int expected_args[] = {0, 3, 4, 4, 1, 2, 1, 1};
  static_assert(std::size(expected_args) == kBasicKernelCount);
  for (int i = 0; i < kBasicKernelCount; ++i) {
    SCOPED_TRACE(kBasicKernelNames[i]);
    maiaKernel_t k = nullptr;
    MAIA_ASSERT_OK(maiaModuleGetKernelByIndex(module, i, &k));
    const char* name = nullptr;
    MAIA_ASSERT_OK(maiaKernelGetName(k, &name));
    EXPECT_STREQ(name, kBasicKernelNames[i]);
    int args = -1;
    MAIA_ASSERT_OK(maiaKernelGetArgCount(k, &args));
    EXPECT_EQ(args, expected_args[i]);
    EXPECT_EQ(kernel(module, kBasicKernelNames[i]), k);
  }
}

TEST_F(ModuleTest, DescribesArguments) {
  maiaModule_t module = nullptr;
  MAIA_ASSERT_OK(loadData(basic_, &module));
  maiaKernelArgInfo info{};

  MAIA_ASSERT_OK(maiaKernelGetArgInfo(kernel(module, "add_f32"), 2, &info));
  EXPECT_EQ(info.kind, maiaArgMemref);
  EXPECT_EQ(info.dtype, maiaDtypeF32);
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.strides[0], INT64_MIN) << "null in the metadata means dynamic";

  MAIA_ASSERT_OK(maiaKernelGetArgInfo(kernel(module, "triad_f32"), 0, &info));
  EXPECT_EQ(info.strides[0], 1);
  MAIA_ASSERT_OK(maiaKernelGetArgInfo(kernel(module, "triad_f32"), 3, &info));
  EXPECT_EQ(info.kind, maiaArgScalar);
  EXPECT_EQ(info.dtype, maiaDtypeF32);
  EXPECT_EQ(info.rank, 0);

  MAIA_ASSERT_OK(maiaKernelGetArgInfo(kernel(module, "record_program_ids"), 0, &info));
  EXPECT_EQ(info.dtype, maiaDtypeI64);
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.strides[0], 3);
  EXPECT_EQ(info.strides[1], 1);

  MAIA_ASSERT_OK(maiaKernelGetArgInfo(kernel(module, "trap_at"), 1, &info));
  EXPECT_EQ(info.kind, maiaArgScalar);
  EXPECT_EQ(info.dtype, maiaDtypeI64);
}

TEST_F(ModuleTest, UnknownKernelNameListsTheAvailableKernels) {
  maiaModule_t module = nullptr;
  MAIA_ASSERT_OK(loadData(basic_, &module));
  maiaKernel_t k = nullptr;
  MAIA_EXPECT_ERROR(maiaModuleGetKernel(module, "add_f16", &k), maiaErrorNotFound, "'add_f16'");
  EXPECT_NE(std::string(maiaGetLastErrorMessage()).find("add_f32, triad_f32"), std::string::npos)
      << maiaGetLastErrorMessage();
  EXPECT_EQ(k, nullptr) << "out parameters are written only on success";
}

TEST_F(ModuleTest, RejectsIndicesOutOfRange) {
  maiaModule_t module = nullptr;
  MAIA_ASSERT_OK(loadData(basic_, &module));
  maiaKernel_t k = nullptr;
  MAIA_EXPECT_ERROR(maiaModuleGetKernelByIndex(module, kBasicKernelCount, &k),
                    maiaErrorInvalidValue, "index 8 is out of range");
  MAIA_EXPECT_ERROR(maiaModuleGetKernelByIndex(module, -1, &k), maiaErrorInvalidValue,
                    "index -1");
  EXPECT_EQ(k, nullptr);
  maiaKernelArgInfo info{};
  info.rank = 42;
  MAIA_EXPECT_ERROR(maiaKernelGetArgInfo(kernel(module, "add_f32"), 3, &info),
                    maiaErrorInvalidValue, "has 3 arguments");
  MAIA_EXPECT_ERROR(maiaKernelGetArgInfo(kernel(module, "empty"), 0, &info),
                    maiaErrorInvalidValue, "'empty' has 0 arguments");
  EXPECT_EQ(info.rank, 42);
}

// ------------------------------------------------------------ handles

TEST_F(ModuleTest, UnloadedHandlesAreInvalid) {
  maiaModule_t module = nullptr;
  MAIA_ASSERT_OK(maiaModuleLoadData(&module, basic_.data(), basic_.size()));
  maiaKernel_t k = kernel(module, "add_f32");
  MAIA_ASSERT_OK(maiaModuleUnload(module));

  int count = 0;
  const char* text = nullptr;
  maiaKernelArgInfo info{};
  MAIA_EXPECT_ERROR(maiaModuleGetKernelCount(module, &count), maiaErrorInvalidHandle,
                    "already unloaded");
  MAIA_EXPECT_ERROR(maiaModuleGetMetadata(module, &text), maiaErrorInvalidHandle, "module");
  MAIA_EXPECT_ERROR(maiaModuleGetKernel(module, "add_f32", &k), maiaErrorInvalidHandle, "module");
  MAIA_EXPECT_ERROR(maiaKernelGetName(k, &text), maiaErrorInvalidHandle,
                    "its module was unloaded");
  MAIA_EXPECT_ERROR(maiaKernelGetArgCount(k, &count), maiaErrorInvalidHandle, "kernel");
  MAIA_EXPECT_ERROR(maiaKernelGetArgInfo(k, 0, &info), maiaErrorInvalidHandle, "kernel");
}

TEST_F(ModuleTest, DoubleUnloadIsInvalidHandle) {
  maiaModule_t module = nullptr;
  MAIA_ASSERT_OK(maiaModuleLoadData(&module, basic_.data(), basic_.size()));
  MAIA_ASSERT_OK(maiaModuleUnload(module));
  MAIA_EXPECT_ERROR(maiaModuleUnload(module), maiaErrorInvalidHandle, "maiaModuleUnload");
}

TEST_F(ModuleTest, RejectsHandlesThatWereNeverIssued) {
  int count = 0;
  const char* name = nullptr;
  MAIA_EXPECT_ERROR(maiaModuleGetKernelCount(reinterpret_cast<maiaModule_t>(&count), &count),
                    maiaErrorInvalidHandle, "not a loaded module");
  MAIA_EXPECT_ERROR(maiaModuleUnload(nullptr), maiaErrorInvalidHandle, "not a loaded module");
  MAIA_EXPECT_ERROR(maiaKernelGetName(reinterpret_cast<maiaKernel_t>(&count), &name),
                    maiaErrorInvalidHandle, "not a kernel of a loaded module");
  MAIA_EXPECT_ERROR(maiaKernelGetName(nullptr, &name), maiaErrorInvalidHandle, "kernel");
}

// Launches cache the kernels they found valid per thread; an unload must
// still make the next launch of a cached kernel fail, also while queued
// launches keep the module mapped.
TEST_F(ModuleTest, ALaunchedKernelIsRefusedOnceItsModuleIsUnloaded) {
  maiaModule_t module = nullptr;
  MAIA_ASSERT_OK(maiaModuleLoadData(&module, basic_.data(), basic_.size()));
  maiaKernel_t empty = kernel(module, "empty");
  int64_t grid[3] = {1, 1, 1};
  maia_test::Gate gate;
  MAIA_ASSERT_OK(maiaLaunchHostFunc(nullptr, maia_test::Gate::wait, &gate));
  for (int i = 0; i < 3; ++i) MAIA_ASSERT_OK(maiaLaunchKernel(empty, grid, nullptr, 0, nullptr));
  MAIA_ASSERT_OK(maiaModuleUnload(module));
  MAIA_EXPECT_ERROR(maiaLaunchKernel(empty, grid, nullptr, 0, nullptr), maiaErrorInvalidHandle,
                    "its module was unloaded");
  gate.open = true;
  MAIA_ASSERT_OK(maiaDeviceSynchronize());
}

TEST_F(ModuleTest, RejectsNullArguments) {
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(maiaModuleLoad(nullptr, kernelPath("basic_kernels").c_str()),
                    maiaErrorInvalidValue, "out_module");
  MAIA_EXPECT_ERROR(maiaModuleLoad(&module, nullptr), maiaErrorInvalidValue, "path is NULL");
  MAIA_EXPECT_ERROR(maiaModuleLoadData(nullptr, basic_.data(), basic_.size()),
                    maiaErrorInvalidValue, "out_module");
  MAIA_EXPECT_ERROR(maiaModuleLoadData(&module, nullptr, 100), maiaErrorInvalidValue,
                    "data is NULL");
  EXPECT_EQ(module, nullptr);

  MAIA_ASSERT_OK(loadData(basic_, &module));
  maiaKernel_t k = kernel(module, "add_f32");
  MAIA_EXPECT_ERROR(maiaModuleGetMetadata(module, nullptr), maiaErrorInvalidValue, "out_json");
  MAIA_EXPECT_ERROR(maiaModuleGetKernelCount(module, nullptr), maiaErrorInvalidValue,
                    "out_count");
  MAIA_EXPECT_ERROR(maiaModuleGetKernelByIndex(module, 0, nullptr), maiaErrorInvalidValue,
                    "out_kernel");
  MAIA_EXPECT_ERROR(maiaModuleGetKernel(module, "add_f32", nullptr), maiaErrorInvalidValue,
                    "out_kernel");
  MAIA_EXPECT_ERROR(maiaModuleGetKernel(module, nullptr, &k), maiaErrorInvalidValue,
                    "name is NULL");
  MAIA_EXPECT_ERROR(maiaKernelGetName(k, nullptr), maiaErrorInvalidValue, "out_name");
  MAIA_EXPECT_ERROR(maiaKernelGetArgCount(k, nullptr), maiaErrorInvalidValue, "out_count");
  MAIA_EXPECT_ERROR(maiaKernelGetArgInfo(k, 0, nullptr), maiaErrorInvalidValue, "out_info");
}

TEST_F(ModuleTest, ConcurrentLoadsAndUnloadsSucceed) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        maiaModule_t module = nullptr;
        maiaKernel_t k = nullptr;
        const char* name = nullptr;
        if (maiaModuleLoadData(&module, basic_.data(), basic_.size()) != maiaSuccess ||
            maiaModuleGetKernel(module, "trap_at", &k) != maiaSuccess ||
            maiaKernelGetName(k, &name) != maiaSuccess || std::strcmp(name, "trap_at") != 0 ||
            maiaModuleUnload(module) != maiaSuccess)
          ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

// ------------------------------------------------------------ files

TEST_F(ModuleTest, MissingFileIsFileNotFound) {
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(loadFile("/nonexistent/dir/kernels.maiabin", &module), maiaErrorFileNotFound,
                    "'/nonexistent/dir/kernels.maiabin': No such file or directory");
  EXPECT_EQ(module, nullptr);
}

TEST_F(ModuleTest, DirectoryIsFileNotFound) {
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(loadFile(MAIA_KERNEL_DIR, &module), maiaErrorFileNotFound,
                    "Is a directory");
}

TEST_F(ModuleTest, EmptyFileIsInvalidImage) {
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(loadFile(writeTemp("empty.maiabin", ""), &module), maiaErrorInvalidImage,
                    "empty (0 bytes)");
  MAIA_EXPECT_ERROR(maiaModuleLoadData(&module, basic_.data(), 0), maiaErrorInvalidImage,
                    "<memory>: the file is empty");
  EXPECT_EQ(module, nullptr);
}

TEST_F(ModuleTest, NonElfFileIsInvalidImage) {
  std::string path = writeTemp("text.maiabin", "this is not a kernel binary\n");
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(loadFile(path, &module), maiaErrorInvalidImage,
                    path + ": not an ELF file: it starts with bytes 74 68 69 73");
}

TEST_F(ModuleTest, ElfWithoutMetadataIsInvalidImage) {
  // This test program is itself a valid x86-64 ET_DYN (PIE) ELF file; it is
  // refused as a program (it names an interpreter) before its sections are
  // searched for metadata.
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(loadFile("/proc/self/exe", &module), maiaErrorInvalidImage,
                    "names a program interpreter: it is a program, not a kernel binary");
}

// ------------------------------------------------------------ corrupt ELF

TEST_F(ModuleTest, TruncatedBinaryIsInvalidImage) {
  ElfLayout layout = layoutOf(basic_);
  const size_t cuts[] = {1,
                         3,
                         sizeof(Elf64_Ehdr) - 1,
                         sizeof(Elf64_Ehdr),
                         layout.metadata_offset + 10,
                         basic_.size() / 2,
                         layout.header.e_shoff + 100,
                         basic_.size() - 1};
  for (size_t cut : cuts) {
    SCOPED_TRACE("truncated to " + std::to_string(cut) + " bytes");
    maiaModule_t module = nullptr;
    MAIA_EXPECT_ERROR(loadData(basic_.substr(0, cut), &module), maiaErrorInvalidImage,
                      "<memory>: truncated: ");
    EXPECT_NE(std::string(maiaGetLastErrorMessage()).find(std::to_string(cut) + " bytes"),
              std::string::npos)
        << maiaGetLastErrorMessage();
  }
}

TEST_F(ModuleTest, CorruptElfMagicIsInvalidImage) {
  std::string bytes = basic_;
  bytes[1] = 'X';
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(loadData(bytes, &module), maiaErrorInvalidImage,
                    "not an ELF file: it starts with bytes 7f 58 4c 46");
}

TEST_F(ModuleTest, CorruptElfHeaderFieldsAreInvalidImage) {
  struct Case {
    size_t offset;
    unsigned char value;
    const char* needle;
  };
  const Case cases[] = {
      {EI_CLASS, ELFCLASS32, "not a 64-bit ELF file"},
      {EI_DATA, ELFDATA2MSB, "not a little-endian ELF file"},
      {offsetof(Elf64_Ehdr, e_machine), EM_AARCH64, "not x86-64"},
      {offsetof(Elf64_Ehdr, e_type), ET_EXEC, "is not a shared object"},
      {offsetof(Elf64_Ehdr, e_shentsize), 40, "section header size is 40 bytes"},
      {offsetof(Elf64_Ehdr, e_phentsize), 32, "program header size is 32 bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.needle);
    std::string bytes = basic_;
    bytes[c.offset] = static_cast<char>(c.value);
    maiaModule_t module = nullptr;
    MAIA_EXPECT_ERROR(loadData(bytes, &module), maiaErrorInvalidImage, c.needle);
  }
}

TEST_F(ModuleTest, CorruptSectionTableIsInvalidImage) {
  ElfLayout layout = layoutOf(basic_);
  maiaModule_t module = nullptr;
  {
    std::string bytes = basic_;
    writeAt<Elf64_Off>(bytes, offsetof(Elf64_Ehdr, e_shoff), 0xffffffffffffff00);
    MAIA_EXPECT_ERROR(loadData(bytes, &module), maiaErrorInvalidImage,
                      "section header table at offset 0xffffffffffffff00 with size ");
  }
  {
    std::string bytes = basic_;
    writeAt<Elf64_Off>(bytes, offsetof(Elf64_Ehdr, e_shoff), bytes.size() - 64);
    MAIA_EXPECT_ERROR(loadData(bytes, &module), maiaErrorInvalidImage,
                      "truncated: section header table ends at byte");
  }
  {
    std::string bytes = basic_;
    writeAt<Elf64_Half>(bytes, offsetof(Elf64_Ehdr, e_shstrndx), 9999);
    MAIA_EXPECT_ERROR(loadData(bytes, &module), maiaErrorInvalidImage,
                      "section name table index 9999 is out of range");
  }
  size_t text = layout.sectionHeaderOffset(layout.text_section);
  {
    std::string bytes = basic_;
    writeAt<Elf64_Off>(bytes, text + offsetof(Elf64_Shdr, sh_offset), 0x7fff0000);
    MAIA_EXPECT_ERROR(loadData(bytes, &module), maiaErrorInvalidImage,
                      "truncated: section " + std::to_string(layout.text_section) +
                          " (type 1) ends at byte");
  }
  {
    std::string bytes = basic_;
    writeAt<Elf64_Xword>(bytes, text + offsetof(Elf64_Shdr, sh_size), bytes.size());
    MAIA_EXPECT_ERROR(loadData(bytes, &module), maiaErrorInvalidImage, "truncated: section ");
  }
  {
    std::string bytes = basic_;
    writeAt<Elf64_Word>(bytes, text + offsetof(Elf64_Shdr, sh_name), 0x100000);
    MAIA_EXPECT_ERROR(loadData(bytes, &module), maiaErrorInvalidImage,
                      "name offset 1048576 lies outside the section name table");
  }
  {
    // In range, but no longer where the program headers map .text.
    std::string bytes = basic_;
    Elf64_Off offset = readAt<Elf64_Off>(bytes, text + offsetof(Elf64_Shdr, sh_offset));
    writeAt<Elf64_Off>(bytes, text + offsetof(Elf64_Shdr, sh_offset), offset + 8);
    MAIA_EXPECT_ERROR(loadData(bytes, &module), maiaErrorInvalidImage,
                      "('.text') at offset");
  }
}

TEST_F(ModuleTest, CorruptProgramHeadersAreInvalidImage) {
  ElfLayout layout = layoutOf(basic_);
  maiaModule_t module = nullptr;
  {
    std::string bytes = basic_;
    writeAt<Elf64_Off>(bytes, offsetof(Elf64_Ehdr, e_phoff), bytes.size() - 8);
    MAIA_EXPECT_ERROR(loadData(bytes, &module), maiaErrorInvalidImage,
                      "truncated: program header table ends at byte");
  }
  {
    // Program headers read from the wrong place (the metadata text).
    std::string bytes = basic_;
    writeAt<Elf64_Off>(bytes, offsetof(Elf64_Ehdr, e_phoff), layout.metadata_offset);
    MAIA_EXPECT_ERROR(loadData(bytes, &module), maiaErrorInvalidImage, "<memory>: ");
  }
  {
    // Every PT_LOAD gone but the first: .text is no longer mapped.
    std::string bytes = basic_;
    writeAt<Elf64_Half>(bytes, offsetof(Elf64_Ehdr, e_phnum), 1);
    MAIA_EXPECT_ERROR(loadData(bytes, &module), maiaErrorInvalidImage,
                      "PT_LOAD segment");
  }
}

// ------------------------------------------------------------ corrupt metadata

TEST_F(ModuleTest, InvalidMetadataJsonIsInvalidImage) {
  std::string path = writeTemp("bad_json.maiabin",
                               patched(basic_, R"("format_version")", R"(#format_version")"));
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(loadFile(path, &module), maiaErrorInvalidImage,
                    path + ": metadata is not valid JSON: ");
  EXPECT_NE(std::string(maiaGetLastErrorMessage()).find("line 3"), std::string::npos)
      << maiaGetLastErrorMessage();
}

TEST_F(ModuleTest, MalformedMetadataNamesTheProblem) {
  struct Case {
    const char* from;
    const char* to;
    const char* needle;
  };
  const Case cases[] = {
      {R"("maia-kernel-binary")", R"("maia-kernel-binarx")",
       "format is 'maia-kernel-binarx', expected 'maia-kernel-binary'"},
      {R"("compiler")", R"("compilex")", "missing key 'compiler'"},
      {R"("features": [])", R"("features": {})",
       "target: key 'features' must be an array, not object"},
      {R"("format_version": 1)", R"("format_version":[])",
       "key 'format_version' must be an integer, not array"},
      {R"("symbol": "empty")", R"("symbxl": "empty")", "kernel 0 ('empty'): missing key 'symbol'"},
      {R"("name": "empty")", R"("name": 123456 )", "kernel 0: key 'name' must be a string"},
      {R"("args": []})", R"("args": {}})", "kernel 0 ('empty'): key 'args' must be an array"},
      {R"("name": "triad_f32")", R"("name": "add_f32"  )",
       "kernel 2 ('add_f32'): duplicate kernel name (kernel 1 has it too)"},
      {R"("grid_rank": 3)", R"("grid_rank": 4)", "kernel 4 ('record_program_ids'): grid_rank 4"},
      {R"("grid_rank": 1, "args": [])", R"("grid_rank":1.5,"args": [])",
       "key 'grid_rank' must be an integer, not number"},
      {R"("dtype": "f32", "rank": 1, "strides": [null]},)",
       R"("dtype": "f33", "rank": 1, "strides": [null]},)",
       "kernel 1 ('add_f32'), arg 0: unknown dtype 'f33'"},
      {R"({"kind": "scalar", "dtype": "f32"})", R"({"kind": "scalxr", "dtype": "f32"})",
       "kernel 2 ('triad_f32'), arg 3: unknown kind 'scalxr'"},
      {R"("rank": 2, "strides": [3, 1])", R"("rank": 9, "strides": [3, 1])",
       "arg 0: rank 9 is outside 0..8"},
      {R"("rank": 2, "strides": [3, 1])", R"("rank": 2, "strides": [3]   )",
       "arg 0: has 1 strides for rank 2"},
      {R"("strides": [3, 1])", R"("strides":[3,"1"])",
       "strides[1] (an integer, or null for dynamic) must be an integer, not string"},
      {R"("kind": "memref", "dtype": "i32")", R"("kind": "memref", "dtypx": "i32")",
       "kernel 5 ('trap_at'), arg 0: missing key 'dtype'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.to);
    maiaModule_t module = nullptr;
    MAIA_EXPECT_ERROR(loadData(patched(basic_, c.from, c.to), &module), maiaErrorInvalidImage,
                      c.needle);
  }
}

TEST_F(ModuleTest, NewerFormatVersionIsUnsupportedImage) {
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(loadFile(kernelPath("bad_version_kernels"), &module),
                    maiaErrorUnsupportedImage,
                    "metadata format_version 99 is not supported: this driver reads "
                    "format_version 1");
}

TEST_F(ModuleTest, MissingSymbolIsInvalidImage) {
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(loadFile(kernelPath("missing_symbol_kernels"), &module),
                    maiaErrorInvalidImage,
                    "kernel 'hidden' names entry symbol 'hidden_entry', which the binary does "
                    "not export");
}

TEST_F(ModuleTest, SymbolOfADependencyIsNotAKernel) {
  // abort() is found through the binary's libc dependency, not in the binary.
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(
      loadData(patched(basic_, R"("symbol": "empty")", R"("symbol": "abort")"), &module),
      maiaErrorInvalidImage, "names entry symbol 'abort', which the binary does not define");
}

TEST_F(ModuleTest, UnknownTargetFeatureIsUnsupportedImage) {
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(loadFile(kernelPath("unsupported_feature_kernels"), &module),
                    maiaErrorUnsupportedImage,
                    "requires target feature 'amx-fp8-imaginary' but the host CPU lacks it");
}

TEST_F(ModuleTest, RealTargetFeatureTheHostLacksIsUnsupportedImage) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512fp16"))
    GTEST_SKIP() << "this host has avx512fp16, the feature the test needs to be missing";
  std::string bytes = readBytes(kernelPath("unsupported_feature_kernels"));
  maiaModule_t module = nullptr;
  MAIA_EXPECT_ERROR(
      loadData(patched(bytes, R"("amx-fp8-imaginary")", R"("avx512fp16"       )"), &module),
      maiaErrorUnsupportedImage, "requires target feature 'avx512fp16' but the host CPU lacks it");
}

TEST_F(ModuleTest, KnowsTheFeaturesOfCpuidLeafSevenSubleafOne) {
  // LLVM reports these from CPUID 7.1 on hosts that have them (amx-fp16 on
  // a Sapphire Rapids class host); GCC 12's __builtin_cpu_supports does not
  // know them. Each is either present or clearly missing, never unknown.
  std::string bytes = readBytes(kernelPath("unsupported_feature_kernels"));
  const std::string placeholder = R"("amx-fp8-imaginary")";
  for (std::string name : {"amx-fp16", "amx-complex", "avxifma", "avxvnniint8", "avxneconvert",
                           "avxvnniint16", "cmpccxadd", "raoint", "sha512", "sm3", "sm4"}) {
    std::string quoted = "\"" + name + "\"";
    quoted.resize(placeholder.size(), ' ');
    maiaModule_t module = nullptr;
    const maiaError_t error = loadData(patched(bytes, placeholder, quoted), &module);
    if (error == maiaSuccess) continue;
    const std::string message = maiaGetLastErrorMessage();
    EXPECT_EQ(error, maiaErrorUnsupportedImage) << name;
    EXPECT_NE(message.find("the host CPU lacks it"), std::string::npos) << message;
    EXPECT_EQ(message.find("not an x86 feature name"), std::string::npos) << message;
  }
}

TEST_F(ModuleTest, LoadsWhenTheHostHasEveryTargetFeature) {
  std::string bytes = readBytes(kernelPath("unsupported_feature_kernels"));
  maiaModule_t module = nullptr;
  MAIA_ASSERT_OK(loadData(patched(bytes, R"(["avx512f", "amx-fp8-imaginary"])",
                                  R"(["+sse2",  "-amx-fp8-imaginary"])"),
                          &module));
}

// ------------------------------------------------------------ fuzzing

TEST_F(ModuleTest, SurvivesRandomlyCorruptedBinaries) {
  // Mutations stay in what the driver validates completely before the
  // dynamic loader sees the binary: the ELF header, the section header table
  // and the metadata. Code, relocations and the dynamic section are trusted
  // by the loader as on any dlopen; corrupting them could crash this very
  // process, which no in-process check can prevent.
  ElfLayout layout = layoutOf(basic_);
  const std::pair<size_t, size_t> regions[] = {
      {0, sizeof(Elf64_Ehdr)},
      {layout.header.e_shoff, layout.header.e_shnum * sizeof(Elf64_Shdr)},
      {layout.metadata_offset, layout.metadata_size},
  };
  std::mt19937 random(20240601);
  int loaded = 0;
  for (int i = 0; i < 300; ++i) {
    std::string bytes = basic_;
    for (int flips = 1 + static_cast<int>(random() % 4); flips > 0; --flips) {
      auto [begin, size] = regions[random() % 3];
      bytes[begin + random() % size] ^= static_cast<char>(1 + random() % 255);
    }
    maiaModule_t module = nullptr;
    maiaError_t error = maiaModuleLoadData(&module, bytes.data(), bytes.size());
    if (error != maiaSuccess) {
      EXPECT_TRUE(error == maiaErrorInvalidImage || error == maiaErrorUnsupportedImage)
          << "copy " << i << ": " << maiaGetErrorName(error) << ": " << maiaGetLastErrorMessage();
      EXPECT_STRNE(maiaGetLastErrorMessage(), "");
      continue;
    }
    // A mutation the checks accept (padding, unused fields) still gives a
    // fully usable module.
    ++loaded;
    int count = 0;
    EXPECT_EQ(maiaModuleGetKernelCount(module, &count), maiaSuccess);
    for (int k = 0; k < count; ++k) {
      maiaKernel_t kernel = nullptr;
      const char* name = nullptr;
      int args = 0;
      EXPECT_EQ(maiaModuleGetKernelByIndex(module, k, &kernel), maiaSuccess);
      EXPECT_EQ(maiaKernelGetName(kernel, &name), maiaSuccess);
      EXPECT_EQ(maiaKernelGetArgCount(kernel, &args), maiaSuccess);
    }
    EXPECT_EQ(maiaModuleUnload(module), maiaSuccess);
  }
  EXPECT_LT(loaded, 300) << "the mutations should hit checked fields";
  RecordProperty("loaded", loaded);
}

}  // namespace
