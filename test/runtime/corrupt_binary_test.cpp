// Corpus-based fuzzing of module loading: deterministic corruptions of real
// kernel binaries built in the tree (bit flips, truncations, overwrites of
// the ELF header, program headers, dynamic entries, hash tables, symbols,
// relocations, version tables, metadata), each loaded in a forked child so
// that a crash in the dynamic loader fails the test instead of the suite.
// Every corruption must either load (some are harmless) or be refused with
// a maia error whose message is printable ASCII and names the file.
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

using namespace maia_test;

namespace {

using Bytes = std::vector<unsigned char>;

struct Corruption {
  std::string description;
  Bytes bytes;
};

Bytes readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string hex(uint64_t value) {
  std::ostringstream os;
  os << "0x" << std::hex << value;
  return os.str();
}

/// Builds the corruptions of one pristine binary. The pristine headers are
/// trusted (we built the file), so they locate the interesting structures.
class CorruptionSet {
 public:
  explicit CorruptionSet(Bytes pristine) : pristine_(std::move(pristine)) {
    std::memcpy(&header_, pristine_.data(), sizeof header_);
    for (size_t i = 0; i < header_.e_shnum; ++i) {
      Elf64_Shdr s;
      std::memcpy(&s, pristine_.data() + header_.e_shoff + i * sizeof s, sizeof s);
      sections_.push_back(s);
    }
    const Elf64_Shdr& names = sections_[header_.e_shstrndx];
    for (const Elf64_Shdr& s : sections_)
      section_names_.emplace_back(
          reinterpret_cast<const char*>(pristine_.data() + names.sh_offset + s.sh_name));
  }

  std::vector<Corruption> build() {
    truncations();
    elfHeader();
    programHeaders();
    dynamicEntries();
    for (const char* name : {".gnu.hash", ".hash", ".dynsym", ".dynstr", ".gnu.version",
                             ".gnu.version_r", ".gnu.version_d", ".init_array", ".fini_array",
                             ".note.gnu.build-id", ".note.gnu.property", ".tbss", ".tdata"})
      sectionBytes(name, 12);
    symbols();
    relocations(".rela.dyn");
    relocations(".rela.plt");
    metadata();
    sectionBytes(".text", 4);
    randomBitFlips(48);
    return std::move(out_);
  }

 private:
  const Elf64_Shdr* section(const std::string& name) const {
    for (size_t i = 0; i < sections_.size(); ++i)
      if (section_names_[i] == name && sections_[i].sh_type != SHT_NOBITS) return &sections_[i];
    return nullptr;
  }

  void add(std::string description, const std::function<void(Bytes&)>& mutate) {
    Bytes bytes = pristine_;
    mutate(bytes);
    out_.push_back({std::move(description), std::move(bytes)});
  }

  void put64(Bytes& b, uint64_t offset, uint64_t value) {
    if (offset + 8 <= b.size()) std::memcpy(b.data() + offset, &value, 8);
  }
  uint64_t get64(uint64_t offset) const {
    uint64_t value = 0;
    if (offset + 8 <= pristine_.size()) std::memcpy(&value, pristine_.data() + offset, 8);
    return value;
  }

  void truncations() {
    std::vector<uint64_t> sizes = {0, 1, 4, 16, 63, 64, 65,
                                   header_.e_phoff + header_.e_phnum * sizeof(Elf64_Phdr) - 1,
                                   pristine_.size() - 1, pristine_.size() / 2};
    for (const Elf64_Shdr& s : sections_)
      if ((s.sh_flags & SHF_ALLOC) && s.sh_type != SHT_NOBITS && s.sh_size > 1)
        sizes.push_back(s.sh_offset + s.sh_size / 2);
    for (uint64_t size : sizes)
      if (size < pristine_.size())
        add("truncated to " + std::to_string(size) + " bytes",
            [size](Bytes& b) { b.resize(size); });
  }

  void elfHeader() {
    for (uint64_t i = 0; i < sizeof(Elf64_Ehdr); ++i) {
      add("ELF header byte " + std::to_string(i) + " set to 0xff", [i](Bytes& b) { b[i] = 0xff; });
      unsigned bit = rng_() % 8;
      add("ELF header byte " + std::to_string(i) + " bit " + std::to_string(bit) + " flipped",
          [i, bit](Bytes& b) { b[i] ^= 1u << bit; });
    }
  }

  void programHeaders() {
    for (uint64_t i = 0; i < header_.e_phnum; ++i) {
      uint64_t base = header_.e_phoff + i * sizeof(Elf64_Phdr);
      Elf64_Phdr p;
      std::memcpy(&p, pristine_.data() + base, sizeof p);
      std::string label = "program header " + std::to_string(i) + " (type " + hex(p.p_type) + ")";
      // p_type, p_flags: whole-word values.
      for (uint32_t type : {uint32_t{PT_INTERP}, uint32_t{PT_TLS}, uint32_t{PT_DYNAMIC},
                            uint32_t{PT_LOAD}, uint32_t{PT_GNU_PROPERTY}, uint32_t{PT_NOTE}})
        add(label + " type set to " + hex(type),
            [base, type](Bytes& b) { std::memcpy(b.data() + base, &type, 4); });
      add(label + " flags set to RWX", [base](Bytes& b) {
        uint32_t flags = PF_R | PF_W | PF_X;
        std::memcpy(b.data() + base + 4, &flags, 4);
      });
      const char* fields[] = {"offset", "vaddr", "paddr", "filesz", "memsz", "align"};
      for (int f = 0; f < 6; ++f) {
        uint64_t at = base + 8 + 8 * f, value = get64(at);
        std::string field = label + " " + fields[f];
        add(field + " + 0x1000", [=, this](Bytes& b) { put64(b, at, value + 0x1000); });
        add(field + " - 0x10", [=, this](Bytes& b) { put64(b, at, value - 0x10); });
        add(field + " set to 2^40", [=, this](Bytes& b) { put64(b, at, uint64_t{1} << 40); });
        uint64_t bit = rng_() % 24;
        add(field + " bit " + std::to_string(bit) + " flipped",
            [=, this](Bytes& b) { put64(b, at, value ^ (uint64_t{1} << bit)); });
      }
    }
  }

  void dynamicEntries() {
    const Elf64_Shdr* dynamic = section(".dynamic");
    if (!dynamic) return;
    const int64_t tags[] = {DT_INIT, DT_INIT_ARRAY, DT_FINI, DT_PREINIT_ARRAY, DT_NEEDED,
                            DT_TEXTREL, DT_RPATH, DT_NULL, DT_HASH, DT_SYMTAB, DT_STRTAB,
                            DT_RELA, DT_JMPREL, DT_VERSYM, DT_VERNEED, DT_GNU_HASH,
                            DT_DEBUG, DT_AUDIT, DT_FILTER, DT_RELAENT, DT_PLTREL,
                            DT_INIT_ARRAYSZ, DT_RELACOUNT, DT_TLSDESC_PLT, 0x7fffffff};
    for (uint64_t at = dynamic->sh_offset; at + 16 <= dynamic->sh_offset + dynamic->sh_size;
         at += 16) {
      int64_t tag = static_cast<int64_t>(get64(at));
      uint64_t value = get64(at + 8);
      std::string label = "dynamic entry at " + hex(at) + " (tag " + hex(tag) + ")";
      for (int k = 0; k < 2; ++k) {
        int64_t to = tags[rng_() % std::size(tags)];
        add(label + " tag set to " + hex(to),
            [=, this](Bytes& b) { put64(b, at, static_cast<uint64_t>(to)); });
      }
      add(label + " value + 8", [=, this](Bytes& b) { put64(b, at + 8, value + 8); });
      add(label + " value + 0x100000", [=, this](Bytes& b) { put64(b, at + 8, value + 0x100000); });
      add(label + " value - 0x40", [=, this](Bytes& b) { put64(b, at + 8, value - 0x40); });
      add(label + " value set to ~0", [=, this](Bytes& b) { put64(b, at + 8, ~uint64_t{0}); });
      if (tag == DT_NULL) break;
    }
  }

  /// count mutations of random bytes of a section: overwrites and bit flips.
  void sectionBytes(const std::string& name, int count) {
    const Elf64_Shdr* s = section(name);
    if (!s || s->sh_size == 0) return;
    for (int k = 0; k < count; ++k) {
      uint64_t at = s->sh_offset + rng_() % s->sh_size;
      unsigned choice = rng_() % 4;
      if (choice == 0) {
        unsigned bit = rng_() % 8;
        add(name + " byte at " + hex(at) + " bit " + std::to_string(bit) + " flipped",
            [=](Bytes& b) { b[at] ^= 1u << bit; });
      } else {
        unsigned char value = choice == 1 ? 0xff : choice == 2 ? 0x00 : 0x80 | (rng_() & 0x7f);
        add(name + " byte at " + hex(at) + " set to " + hex(value),
            [=](Bytes& b) { b[at] = value; });
      }
    }
  }

  void symbols() {
    const Elf64_Shdr* s = section(".dynsym");
    if (!s) return;
    for (uint64_t at = s->sh_offset + sizeof(Elf64_Sym); at + sizeof(Elf64_Sym) <=
                                                         s->sh_offset + s->sh_size;
         at += sizeof(Elf64_Sym)) {
      std::string label = ".dynsym entry at " + hex(at);
      add(label + " type set to STT_GNU_IFUNC", [at](Bytes& b) {
        b[at + 4] = static_cast<unsigned char>((b[at + 4] & 0xf0) | STT_GNU_IFUNC);
      });
      add(label + " type set to STT_TLS",
          [at](Bytes& b) { b[at + 4] = static_cast<unsigned char>((b[at + 4] & 0xf0) | STT_TLS); });
      add(label + " name offset + 0x10000", [at](Bytes& b) { b[at + 2] ^= 1; });
      uint64_t value = get64(at + 8);
      add(label + " value + 0x100000",
          [=, this](Bytes& b) { put64(b, at + 8, value + 0x100000); });
      add(label + " section index set to 0xfff1 (absolute)",
          [at](Bytes& b) { b[at + 6] = 0xf1; b[at + 7] = 0xff; });
    }
  }

  void relocations(const std::string& name) {
    const Elf64_Shdr* s = section(name);
    if (!s) return;
    int emitted = 0;
    for (uint64_t at = s->sh_offset;
         at + sizeof(Elf64_Rela) <= s->sh_offset + s->sh_size && emitted < 12;
         at += sizeof(Elf64_Rela), ++emitted) {
      std::string label = name + " entry at " + hex(at);
      uint64_t offset = get64(at), info = get64(at + 8), addend = get64(at + 16);
      add(label + " offset + 0x100000", [=, this](Bytes& b) { put64(b, at, offset + 0x100000); });
      add(label + " offset set to 0 (the read-only ELF header)",
          [=, this](Bytes& b) { put64(b, at, 0); });
      for (uint32_t type : {uint32_t{R_X86_64_IRELATIVE}, uint32_t{R_X86_64_COPY},
                            uint32_t{R_X86_64_TPOFF64}, uint32_t{R_X86_64_PC32},
                            static_cast<uint32_t>(rng_() % 48)})
        add(label + " type set to " + std::to_string(type), [=, this](Bytes& b) {
          put64(b, at + 8, ELF64_R_INFO(ELF64_R_SYM(info), type));
        });
      add(label + " symbol + 1000", [=, this](Bytes& b) {
        put64(b, at + 8, ELF64_R_INFO(ELF64_R_SYM(info) + 1000, ELF64_R_TYPE(info)));
      });
      add(label + " addend + 0x40", [=, this](Bytes& b) { put64(b, at + 16, addend + 0x40); });
    }
  }

  void metadata() {
    const Elf64_Shdr* s = section(".maia.meta");
    if (!s) return;
    for (int k = 0; k < 16; ++k) {
      uint64_t at = s->sh_offset + rng_() % s->sh_size;
      unsigned char value = 0x80 | (rng_() & 0x7f);  // never valid UTF-8 alone
      add(".maia.meta byte at " + hex(at) + " set to non-UTF-8 " + hex(value),
          [=](Bytes& b) { b[at] = value; });
    }
    sectionBytes(".maia.meta", 8);
  }

  void randomBitFlips(int count) {
    for (int k = 0; k < count; ++k) {
      uint64_t at = rng_() % pristine_.size();
      unsigned bit = rng_() % 8;
      add("byte at " + hex(at) + " bit " + std::to_string(bit) + " flipped",
          [=](Bytes& b) { b[at] ^= 1u << bit; });
    }
  }

  Bytes pristine_;
  Elf64_Ehdr header_{};
  std::vector<Elf64_Shdr> sections_;
  std::vector<std::string> section_names_;
  std::vector<Corruption> out_;
  std::mt19937_64 rng_{20261213};  // the engine's sequence is fixed by the standard
};

struct Outcome {
  bool crashed = false;
  std::string crash;  // how the child died
  int code = 0;       // maiaError_t of the load
  std::string message;
};

/// Loads path with maiaModuleLoad in a forked child (and unloads it on
/// success, which runs the loader's unmapping path too). Module loading
/// does not initialize the driver, so the child may use it.
Outcome loadInChild(const std::string& path) {
  int fds[2];
  if (pipe(fds) != 0) {
    Outcome failed;
    failed.crashed = true;
    failed.crash = "could not be run: pipe() failed";
    return failed;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(30);  // a loader stuck in a loop is a failure too
    maiaModule_t module = nullptr;
    maiaError_t error = maiaModuleLoad(&module, path.c_str());
    std::string report = std::to_string(static_cast<int>(error)) + "\n" +
                         (error == maiaSuccess ? "" : maiaGetLastErrorMessage());
    if (error == maiaSuccess) {
      int count = 0;
      maiaModuleGetKernelCount(module, &count);
      maiaModuleUnload(module);
    }
    size_t written = 0;
    while (written < report.size()) {
      ssize_t n = write(fds[1], report.data() + written, report.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string report;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0) break;
    report.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Outcome outcome;
  if (WIFSIGNALED(status)) {
    outcome.crashed = true;
    outcome.crash = std::string("killed by signal ") + strsignal(WTERMSIG(status));
    return outcome;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || report.empty()) {
    outcome.crashed = true;
    outcome.crash = "exited with status " + std::to_string(WEXITSTATUS(status));
    return outcome;
  }
  size_t newline = report.find('\n');
  outcome.code = std::stoi(report.substr(0, newline));
  outcome.message = report.substr(newline + 1);
  return outcome;
}

bool printableAscii(const std::string& text) {
  for (unsigned char c : text)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

void fuzz(const std::string& binary) {
  Bytes pristine = readBytes(binary);
  ASSERT_GT(pristine.size(), sizeof(Elf64_Ehdr)) << binary;
  char dir_template[] = "/tmp/maia-corrupt-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  std::string dir = dir_template;
  std::string stem = binary.substr(binary.find_last_of('/') + 1);

  // The pristine binary itself loads: the validation refuses no real binary.
  Outcome pristine_outcome = loadInChild(binary);
  ASSERT_FALSE(pristine_outcome.crashed) << binary << ": " << pristine_outcome.crash;
  if (pristine_outcome.code == maiaErrorUnsupportedImage)
    GTEST_SKIP() << "this host cannot run " << binary << ": " << pristine_outcome.message;
  ASSERT_EQ(pristine_outcome.code, maiaSuccess) << pristine_outcome.message;

  std::vector<Corruption> corruptions = CorruptionSet(pristine).build();
  int crashed = 0, unreadable = 0, loaded = 0, refused = 0;
  for (size_t i = 0; i < corruptions.size(); ++i) {
    const Corruption& c = corruptions[i];
    std::string path = dir + "/" + std::to_string(i) + "-" + stem;
    {
      std::ofstream out(path, std::ios::binary);
      out.write(reinterpret_cast<const char*>(c.bytes.data()),
                static_cast<std::streamsize>(c.bytes.size()));
    }
    Outcome outcome = loadInChild(path);
    unlink(path.c_str());
    if (outcome.crashed) {
      ++crashed;
      ADD_FAILURE() << stem << " corruption " << i << " (" << c.description
                    << "): the load " << outcome.crash;
      continue;
    }
    if (outcome.code == maiaSuccess) {
      ++loaded;
      continue;
    }
    ++refused;
    bool clean = printableAscii(outcome.message) &&
                 outcome.message.find(path) != std::string::npos;
    if (!clean) ++unreadable;
    EXPECT_TRUE(clean) << stem << " corruption " << i << " (" << c.description
                       << "): the message must be printable ASCII naming the file; it was: "
                       << outcome.message;
    EXPECT_TRUE(outcome.code == maiaErrorInvalidImage || outcome.code == maiaErrorUnsupportedImage)
        << stem << " corruption " << i << " (" << c.description << "): "
        << maiaGetErrorName(static_cast<maiaError_t>(outcome.code)) << ": " << outcome.message;
  }
  rmdir(dir.c_str());
  std::cout << stem << ": " << corruptions.size() << " corruptions: " << crashed
            << " crashed the loading process, " << refused << " refused (" << unreadable
            << " with a message that is not printable ASCII naming the file), " << loaded
            << " loaded\n";
}

TEST(CorruptBinaryTest, HostBuiltKernelBinary) { fuzz(kernelPath("basic_kernels")); }

// A binary with TLS, libc/ld.so dependencies and symbol versions (the GEMM
// kernels keep a thread_local packing buffer).
TEST(CorruptBinaryTest, GemmKernelBinaryWithTls) {
#ifdef MAIA_GEMM_KERNELS
  fuzz(MAIA_GEMM_KERNELS);
#else
  GTEST_SKIP() << "maia_gemm_kernels_v3 is not built in this configuration";
#endif
}

TEST(CorruptBinaryTest, MaiaCompileOutput) {
#ifdef MAIA_COMPILED_KERNEL
  fuzz(MAIA_COMPILED_KERNEL);
#else
  GTEST_SKIP() << "maia-compile is not built in this configuration";
#endif
}

}  // namespace
