#include "module.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include "elf_image.h"
#include "fault.h"
#include "metadata.h"

namespace maia::driver {
namespace {

std::string errnoText(int error) { return std::generic_category().message(error); }

bool hasFsgsbase() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ebx & bit_FSGSBASE);
}

bool hasInvpcid() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ebx & (1u << 10));
}

/// A feature bit of CPUID leaf 7 subleaf 1 (the features newer than
/// GCC 12's __builtin_cpu_supports), in EAX or EDX.
enum class Leaf71 { Eax, Edx };
bool hasLeaf71(Leaf71 reg, int bit) {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  return ((reg == Leaf71::Eax ? eax : edx) >> bit) & 1u;
}

bool hasPrefetchi() { return hasLeaf71(Leaf71::Edx, 14); }

/// The AMX extensions need the tile state amx-tile's check covers.
bool hasAmx(Leaf71 reg, int bit) {
  return __builtin_cpu_supports("amx-tile") && hasLeaf71(reg, bit);
}

/// The VEX-encoded AVX extensions need the AVX state avx's check covers.
bool hasAvxExtension(Leaf71 reg, int bit) {
  return __builtin_cpu_supports("avx2") && hasLeaf71(reg, bit);
}

/// AVX10.1 at a vector width: CPUID 7.1 EDX[19] announces AVX10, leaf 0x24
/// gives its version (EBX[7:0]) and widths (EBX[17] 256 bits, EBX[18] 512
/// bits). It uses the AVX-512 register state, which avx512f's check covers.
bool hasAvx10_1(int width) {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 19))) return false;
  if (!__get_cpuid_count(0x24, 0, &eax, &ebx, &ecx, &edx) || (ebx & 0xffu) < 1) return false;
  unsigned width_bit = width == 512 ? (1u << 18) : (1u << 17);
  return (ebx & width_bit) && __builtin_cpu_supports("avx512f");
}

/// Host support of the x86 target features, by the names LLVM gives them
/// (what maia-compile writes into "target.features"). __builtin_cpu_supports
/// also checks that the OS saves the register state (AVX, AVX-512), which
/// is what matters for running code, not just the CPUID bit.
const std::unordered_map<std::string_view, bool>& hostFeatures() {
#define MAIA_FEATURE(llvm_name, gcc_name) {llvm_name, __builtin_cpu_supports(gcc_name) != 0}
  static const std::unordered_map<std::string_view, bool> table = [] {
    __builtin_cpu_init();
    return std::unordered_map<std::string_view, bool>{
        // Baseline of x86-64: always present.
        {"64bit", true}, {"x87", true}, {"cx8", true}, {"fxsr", true},
        MAIA_FEATURE("cmov", "cmov"), MAIA_FEATURE("mmx", "mmx"),
        MAIA_FEATURE("sse", "sse"), MAIA_FEATURE("sse2", "sse2"),
        MAIA_FEATURE("sse3", "sse3"), MAIA_FEATURE("ssse3", "ssse3"),
        MAIA_FEATURE("sse4.1", "sse4.1"), MAIA_FEATURE("sse4.2", "sse4.2"),
        MAIA_FEATURE("crc32", "sse4.2"), MAIA_FEATURE("sse4a", "sse4a"),
        MAIA_FEATURE("popcnt", "popcnt"), MAIA_FEATURE("cx16", "cmpxchg16b"),
        MAIA_FEATURE("sahf", "lahf_lm"), MAIA_FEATURE("lzcnt", "lzcnt"),
        MAIA_FEATURE("movbe", "movbe"), MAIA_FEATURE("prfchw", "prfchw"),
        MAIA_FEATURE("avx", "avx"), MAIA_FEATURE("avx2", "avx2"),
        MAIA_FEATURE("fma", "fma"), MAIA_FEATURE("fma4", "fma4"),
        MAIA_FEATURE("xop", "xop"), MAIA_FEATURE("f16c", "f16c"),
        MAIA_FEATURE("bmi", "bmi"), MAIA_FEATURE("bmi2", "bmi2"),
        MAIA_FEATURE("tbm", "tbm"), MAIA_FEATURE("lwp", "lwp"),
        MAIA_FEATURE("aes", "aes"), MAIA_FEATURE("pclmul", "pclmul"),
        MAIA_FEATURE("sha", "sha"), MAIA_FEATURE("adx", "adx"),
        MAIA_FEATURE("rdrnd", "rdrnd"), MAIA_FEATURE("rdseed", "rdseed"),
        MAIA_FEATURE("rdpid", "rdpid"), MAIA_FEATURE("xsave", "xsave"),
        MAIA_FEATURE("xsavec", "xsavec"), MAIA_FEATURE("xsaveopt", "xsaveopt"),
        MAIA_FEATURE("xsaves", "xsaves"), MAIA_FEATURE("clflushopt", "clflushopt"),
        MAIA_FEATURE("clwb", "clwb"), MAIA_FEATURE("clzero", "clzero"),
        MAIA_FEATURE("mwaitx", "mwaitx"), MAIA_FEATURE("wbnoinvd", "wbnoinvd"),
        MAIA_FEATURE("gfni", "gfni"), MAIA_FEATURE("vaes", "vaes"),
        MAIA_FEATURE("vpclmulqdq", "vpclmulqdq"), MAIA_FEATURE("pku", "pku"),
        MAIA_FEATURE("rtm", "rtm"), MAIA_FEATURE("sgx", "sgx"),
        MAIA_FEATURE("avx512f", "avx512f"), MAIA_FEATURE("evex512", "avx512f"),
        MAIA_FEATURE("avx512bw", "avx512bw"), MAIA_FEATURE("avx512vl", "avx512vl"),
        MAIA_FEATURE("avx512dq", "avx512dq"), MAIA_FEATURE("avx512cd", "avx512cd"),
        MAIA_FEATURE("avx512er", "avx512er"), MAIA_FEATURE("avx512pf", "avx512pf"),
        MAIA_FEATURE("avx512vbmi", "avx512vbmi"), MAIA_FEATURE("avx512vbmi2", "avx512vbmi2"),
        MAIA_FEATURE("avx512ifma", "avx512ifma"), MAIA_FEATURE("avx512vnni", "avx512vnni"),
        MAIA_FEATURE("avx512bitalg", "avx512bitalg"),
        MAIA_FEATURE("avx512vpopcntdq", "avx512vpopcntdq"),
        MAIA_FEATURE("avx512bf16", "avx512bf16"), MAIA_FEATURE("avx512fp16", "avx512fp16"),
        MAIA_FEATURE("avx512vp2intersect", "avx512vp2intersect"),
        MAIA_FEATURE("avxvnni", "avxvnni"), MAIA_FEATURE("amx-tile", "amx-tile"),
        MAIA_FEATURE("amx-int8", "amx-int8"), MAIA_FEATURE("amx-bf16", "amx-bf16"),
        MAIA_FEATURE("movdiri", "movdiri"), MAIA_FEATURE("movdir64b", "movdir64b"),
        MAIA_FEATURE("waitpkg", "waitpkg"), MAIA_FEATURE("serialize", "serialize"),
        MAIA_FEATURE("tsxldtrk", "tsxldtrk"), MAIA_FEATURE("cldemote", "cldemote"),
        MAIA_FEATURE("ptwrite", "ptwrite"), MAIA_FEATURE("enqcmd", "enqcmd"),
        MAIA_FEATURE("shstk", "shstk"), MAIA_FEATURE("uintr", "uintr"),
        MAIA_FEATURE("hreset", "hreset"), MAIA_FEATURE("kl", "kl"),
        MAIA_FEATURE("widekl", "widekl"), MAIA_FEATURE("pconfig", "pconfig"),
        MAIA_FEATURE("prefetchwt1", "prefetchwt1"),
        // Not known to this compiler's __builtin_cpu_supports.
        {"fsgsbase", hasFsgsbase()}, {"invpcid", hasInvpcid()},
        {"prefetchi", hasPrefetchi()}, {"avx10.1-256", hasAvx10_1(256)},
        {"avx10.1-512", hasAvx10_1(512)},
        {"sha512", hasAvxExtension(Leaf71::Eax, 0)}, {"sm3", hasAvxExtension(Leaf71::Eax, 1)},
        {"sm4", hasAvxExtension(Leaf71::Eax, 2)}, {"raoint", hasLeaf71(Leaf71::Eax, 3)},
        {"cmpccxadd", hasLeaf71(Leaf71::Eax, 7)}, {"amx-fp16", hasAmx(Leaf71::Eax, 21)},
        {"avxifma", hasAvxExtension(Leaf71::Eax, 23)},
        {"avxvnniint8", hasAvxExtension(Leaf71::Edx, 4)},
        {"avxneconvert", hasAvxExtension(Leaf71::Edx, 5)},
        {"amx-complex", hasAmx(Leaf71::Edx, 8)},
        {"avxvnniint16", hasAvxExtension(Leaf71::Edx, 10)},
    };
  }();
#undef MAIA_FEATURE
  return table;
}

/// Refuses a binary compiled for features the host lacks: its code would die
/// with SIGILL at some launch, far from the cause.
Status checkTargetFeatures(const std::vector<std::string>& features, const std::string& origin) {
  const auto& host = hostFeatures();
  std::string missing;
  for (const std::string& spelled : features) {
    // LLVM feature strings may carry a sign: "-x" says x was turned off,
    // which the host need not support.
    if (spelled[0] == '-') continue;
    std::string_view name = spelled;
    if (name[0] == '+') name.remove_prefix(1);
    auto it = host.find(name);
    if (it != host.end() && it->second) continue;
    missing += missing.empty() ? "" : "; ";
    missing += "the binary requires target feature '" + std::string(name) +
               "' but the host CPU lacks it";
    if (it == host.end()) missing += " (not an x86 feature name this driver knows)";
  }
  if (missing.empty()) return {};
  return makeError(maiaErrorUnsupportedImage, origin, ": ", missing);
}

std::string fdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

/// Shown in /proc/self/maps and by debuggers as the mapped file.
std::string memfdName(const std::string& origin) {
  std::string name = "maia-module:" + origin.substr(origin.find_last_of('/') + 1);
  return name.substr(0, 200);
}

}  // namespace

Status Module::load(std::span<const std::byte> bytes, const std::string& origin,
                    std::shared_ptr<Module>* out) {
  ValidatedElf elf;
  MAIA_RETURN_IF_ERROR(validateElfImage(bytes, origin, &elf));
  Metadata metadata;
  MAIA_RETURN_IF_ERROR(parseMetadata(elf.metadata, origin, &metadata));
  MAIA_RETURN_IF_ERROR(checkTargetFeatures(metadata.target_features, origin));

  std::shared_ptr<Module> module(new Module());
  module->origin_ = origin;
  module->metadata_json_ = std::move(metadata.json);
  module->kernels_ = std::move(metadata.kernels);
  MAIA_RETURN_IF_ERROR(module->map(bytes, elf));
  MAIA_RETURN_IF_ERROR(module->resolveSymbols());
  *out = std::move(module);
  return {};
}

Status Module::map(std::span<const std::byte> bytes, const ValidatedElf& elf) {
  // Loading from a copy rather than from the caller's path closes the
  // window between validating a file and the loader reading it again, and
  // since every memfd is a new file the loader never hands back an older
  // mapping of a path that was recompiled since.
  memfd_ = memfd_create(memfdName(origin_).c_str(), MFD_CLOEXEC);
  if (memfd_ < 0)
    return makeError(maiaErrorOutOfMemory, origin_,
                     ": cannot create an in-memory file to map the binary: ", errnoText(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = write(memfd_, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return makeError(maiaErrorOutOfMemory, origin_,
                       ": cannot copy the binary into an in-memory file: ", errnoText(errno));
    written += static_cast<size_t>(n);
  }
  // Kernel binaries run no code at load or unload: the toolchain's hooks
  // are left out of the dynamic array the loader reads.
  const std::vector<std::byte>& dynamic = elf.mapped_dynamic;
  if (pwrite(memfd_, dynamic.data(), dynamic.size(), static_cast<off_t>(elf.dynamic_offset)) !=
      static_cast<ssize_t>(dynamic.size()))
    return makeError(maiaErrorOutOfMemory, origin_,
                     ": cannot copy the binary into an in-memory file: ", errnoText(errno));
  dl_handle_ = dlopen(fdPath(memfd_).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl_handle_ == nullptr) {
    const char* reason = dlerror();
    return makeError(maiaErrorInvalidImage, origin_, ": the dynamic loader refused the binary: ",
                     reason ? reason : "unknown reason");
  }
  return {};
}

Status Module::resolveSymbols() {
  link_map* self = nullptr;
  if (dlinfo(dl_handle_, RTLD_DI_LINKMAP, &self) != 0 || self == nullptr)
    return makeError(maiaErrorInvalidImage, origin_, ": cannot inspect the mapped binary: ",
                     dlerror());
  // dlsym also searches the binary's dependencies (libc, ...): a symbol
  // found there is not one of the binary's kernels.
  auto resolve = [&](const std::string& symbol, std::string* problem) -> void* {
    dlerror();
    void* address = dlsym(dl_handle_, symbol.c_str());
    if (address == nullptr) {
      *problem = "which the binary does not export";
      return nullptr;
    }
    Dl_info info{};
    link_map* owner = nullptr;
    if (dladdr1(address, &info, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) == 0 ||
        owner != self) {
      *problem = std::string("which the binary does not define (it resolves to ") +
                 (owner && owner->l_name && *owner->l_name ? owner->l_name : "another object") +
                 ")";
      return nullptr;
    }
    return address;
  };

  std::string problem;
  if (resolve("maia_metadata", &problem) == nullptr)
    return makeError(maiaErrorInvalidImage, origin_, ": symbol 'maia_metadata', ", problem,
                     ": every MAIA kernel binary exports its metadata under that name");
  for (maiaKernel& kernel : kernels_) {
    void* entry = resolve(kernel.symbol, &problem);
    if (entry == nullptr)
      return makeError(maiaErrorInvalidImage, origin_, ": kernel '", kernel.name,
                       "' names entry symbol '", kernel.symbol, "', ", problem);
    kernel.entry = reinterpret_cast<maia_kernel_fn>(entry);
    kernel.module = this;
  }
  return {};
}

Module::~Module() {
  if (dl_handle_ != nullptr) {
    dlclose(dl_handle_);
    // A binary the loader refuses to unload (e.g. one with STB_GNU_UNIQUE
    // symbols) stays mapped under the name /proc/self/fd/N and the memfd's
    // inode; reusing either for a later load would make dlopen return this
    // stale binary. Keeping the descriptor open reserves both for good.
    if (void* lingering = dlopen(fdPath(memfd_).c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
      dlclose(lingering);
      return;
    }
    dlerror();
  }
  if (memfd_ >= 0) close(memfd_);
}

maiaKernel* Module::findKernel(const std::string& name) {
  for (maiaKernel& kernel : kernels_)
    if (kernel.name == name) return &kernel;
  return nullptr;
}

}  // namespace maia::driver
