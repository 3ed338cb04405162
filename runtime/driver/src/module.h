// Module and Kernel: a validated, loaded MAIA kernel binary (.maiabin) and
// the kernels it exports. See DESIGN section 5 and docs/runtime.md.
#pragma once

#include <maia/runtime.h>

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "elf_image.h"
#include "error.h"

namespace maia::driver {

/// Metadata stride value meaning "not static: any stride is accepted".
inline constexpr int64_t kDynamicStride = INT64_MIN;

/// What the metadata declares about one argument of a kernel.
struct ArgSpec {
  maiaArgKind kind = maiaArgMemref;
  maiaDtype dtype = maiaDtypeF32;
  int32_t rank = 0;  // memref only
  std::array<int64_t, MAIA_MAX_RANK> strides{};  // kDynamicStride where dynamic
};

/// Size in bytes of one element (memref) or value (scalar) of dtype.
size_t dtypeSize(maiaDtype dtype);
/// Metadata spelling of dtype ("f32", "i64", ...).
const char* dtypeName(maiaDtype dtype);

class Module;

}  // namespace maia::driver

/// A kernel exported by a module; the C API's maiaKernel_t. Owned by its
/// Module and valid until the module is unloaded.
struct maiaKernel {
  std::string name;
  std::string symbol;
  int grid_rank = 1;  // how many grid dimensions the kernel reads (1..3)
  std::vector<maia::driver::ArgSpec> args;
  maia_kernel_fn entry = nullptr;
  maia::driver::Module* module = nullptr;
};

namespace maia::driver {

/// A loaded kernel binary. Held by shared_ptr: the C handle owns one
/// reference and every queued launch owns another, so unloading a module
/// with launches in flight is safe.
class Module : public std::enable_shared_from_this<Module> {
 public:
  /// Validates bytes as a MAIA kernel binary (ELF, .maia.meta metadata,
  /// format version, CPU features) before mapping any of its code, then
  /// maps it and resolves every kernel's entry symbol. origin names the
  /// binary in messages (a path, or "<memory>").
  static Status load(std::span<const std::byte> bytes, const std::string& origin,
                     std::shared_ptr<Module>* out);
  ~Module();

  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& origin() const { return origin_; }
  const std::string& metadataJson() const { return metadata_json_; }
  std::vector<maiaKernel>& kernels() { return kernels_; }
  /// nullptr if the module has no kernel of that name.
  maiaKernel* findKernel(const std::string& name);

 private:
  Module() = default;
  /// Copies the validated bytes into a memfd and dlopens that, so the code
  /// mapped is exactly what was validated, and each load a fresh mapping.
  /// The copy's dynamic array is the validated one without load-time hooks.
  Status map(std::span<const std::byte> bytes, const ValidatedElf& elf);
  /// Sets every kernel's entry from its symbol, which the binary itself
  /// (not a library it depends on) must define.
  Status resolveSymbols();

  std::string origin_;
  std::string metadata_json_;
  std::vector<maiaKernel> kernels_;
  void* dl_handle_ = nullptr;
  int memfd_ = -1;
};

/// Validates a kernel handle: it must be a kernel of a loaded module (one
/// neither unloaded nor never loaded). On success *out_owner keeps that
/// module alive, e.g. while a launch of the kernel is queued. Implemented
/// with the module handle registry in api_module.cpp.
Status lookupKernel(maiaKernel_t kernel, std::shared_ptr<Module>* out_owner);

}  // namespace maia::driver
