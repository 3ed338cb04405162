// The C API of modules and kernels (except maiaLaunchKernel, in launch.cpp),
// and the registry that validates their handles.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <new>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "error.h"
#include "module.h"

namespace maia::driver {
namespace {

/// Live modules by handle, and their kernels. A module handle is a token
/// that is never reused, so a handle kept past maiaModuleUnload is always
/// recognized as stale; struct maiaModule is never defined. Kernel handles
/// are the addresses of the maiaKernel objects the launch code reads.
class ModuleRegistry {
 public:
  maiaModule_t add(std::shared_ptr<Module> module) {
    std::lock_guard lock(mutex_);
    auto handle = reinterpret_cast<maiaModule_t>(next_token_);
    next_token_ += kTokenStride;
    try {
      for (maiaKernel& kernel : module->kernels()) kernels_.insert(&kernel);
      modules_.emplace(handle, module);
    } catch (...) {
      // No kernel of a module that failed to register may stay valid.
      for (maiaKernel& kernel : module->kernels()) kernels_.erase(&kernel);
      throw;
    }
    return handle;
  }

  std::shared_ptr<Module> find(maiaModule_t handle) {
    std::lock_guard lock(mutex_);
    auto it = modules_.find(handle);
    return it == modules_.end() ? nullptr : it->second;
  }

  /// The caller drops the returned reference outside the lock: the last
  /// one unmaps the binary, which runs its destructors.
  std::shared_ptr<Module> remove(maiaModule_t handle) {
    std::lock_guard lock(mutex_);
    auto it = modules_.find(handle);
    if (it == modules_.end()) return nullptr;
    std::shared_ptr<Module> module = std::move(it->second);
    modules_.erase(it);
    for (maiaKernel& kernel : module->kernels()) kernels_.erase(&kernel);
    unloads_.fetch_add(1, std::memory_order_acq_rel);
    return module;
  }

  /// Bumped by every unload: a kernel handle found valid stays valid while
  /// this is unchanged.
  uint64_t unloads() const { return unloads_.load(std::memory_order_acquire); }

  std::shared_ptr<Module> ownerOf(const maiaKernel* kernel) {
    std::lock_guard lock(mutex_);
    if (!kernels_.contains(kernel)) return nullptr;
    return kernel->module->shared_from_this();
  }

 private:
  // Tokens are counters shaped like aligned pointers; nothing dereferences
  // them, and 64 bits never wrap.
  static constexpr uintptr_t kTokenStride = 16;

  std::mutex mutex_;
  std::atomic<uint64_t> unloads_{0};
  uintptr_t next_token_ = kTokenStride;
  std::unordered_map<maiaModule_t, std::shared_ptr<Module>> modules_;
  std::unordered_set<const maiaKernel*> kernels_;
};

ModuleRegistry& registry() {
  // Leaked: modules still loaded at exit are never unmapped, so no binary
  // code runs during static destruction while driver threads may be live.
  static auto* instance = new ModuleRegistry;
  return *instance;
}

Status findModule(const char* function, maiaModule_t handle, std::shared_ptr<Module>* out) {
  *out = registry().find(handle);
  if (*out) return {};
  return makeError(maiaErrorInvalidHandle, function, ": module handle ",
                   static_cast<const void*>(handle),
                   " is not a loaded module (never loaded, or already unloaded)");
}

Status findKernel(const char* function, maiaKernel_t kernel, std::shared_ptr<Module>* owner) {
  Status status = lookupKernel(kernel, owner);
  if (status.ok()) return status;
  return Status(status.code(), std::string(function) + ": " + status.message());
}

/// Runs the body of a C API function: no exception may cross the C ABI.
template <typename Body>
maiaError_t guarded(const char* function, Body&& body) noexcept {
  try {
    return report(body());
  } catch (const std::bad_alloc&) {
    return report(makeError(maiaErrorOutOfMemory, function, ": out of host memory"));
  } catch (const std::exception& e) {
    return report(makeError(maiaErrorInvalidValue, function, ": internal error: ", e.what()));
  }
}

Status readFile(const char* path, std::vector<std::byte>* out) {
  auto fail = [&](const char* what) {
    return makeError(maiaErrorFileNotFound, "maiaModuleLoad: cannot ", what, " '", path,
                     "': ", std::generic_category().message(errno));
  };
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("open");
  struct stat info;
  if (fstat(fd, &info) != 0) {
    Status status = fail("stat");
    close(fd);
    return status;
  }
  std::vector<std::byte> bytes;
  bytes.reserve(static_cast<size_t>(std::max<off_t>(info.st_size, 0)));
  std::byte buffer[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status status = fail("read");
      close(fd);
      return status;
    }
    bytes.insert(bytes.end(), buffer, buffer + n);
  }
  close(fd);
  *out = std::move(bytes);
  return {};
}

Status loadModule(std::span<const std::byte> bytes, const std::string& origin,
                  maiaModule_t* out_module) {
  std::shared_ptr<Module> module;
  MAIA_RETURN_IF_ERROR(Module::load(bytes, origin, &module));
  *out_module = registry().add(std::move(module));
  return {};
}

}  // namespace

Status lookupKernel(maiaKernel_t kernel, std::shared_ptr<Module>* out_owner) {
  // Every launch looks its kernel up: a per-thread cache of kernels found
  // valid spares the registry's mutex and hash lookup while no module was
  // unloaded since. The cache holds weak references: it never keeps an
  // unloaded module mapped.
  struct Entry {
    const maiaKernel* kernel = nullptr;
    uint64_t unloads = 0;
    std::weak_ptr<Module> owner;
  };
  constexpr size_t kEntries = 16;
  thread_local Entry t_owners[kEntries];
  Entry& entry = t_owners[(reinterpret_cast<uintptr_t>(kernel) >> 4) % kEntries];
  const uint64_t unloads = registry().unloads();
  if (entry.kernel == kernel && entry.unloads == unloads) {
    if (std::shared_ptr<Module> owner = entry.owner.lock()) {
      *out_owner = std::move(owner);
      return {};
    }
  }
  std::shared_ptr<Module> owner = registry().ownerOf(kernel);
  if (owner) entry = Entry{kernel, unloads, owner};
  if (!owner)
    return makeError(maiaErrorInvalidHandle, "kernel handle ", static_cast<const void*>(kernel),
                     " is not a kernel of a loaded module (never obtained, or its module was "
                     "unloaded)");
  *out_owner = std::move(owner);
  return {};
}

}  // namespace maia::driver

using namespace maia::driver;

/// Rejects every call in a forked child of an initialized driver. Loading
/// a module needs no device, so this does not initialize the driver.
#define MAIA_MODULE_API_ENTRY()                                          \
  do {                                                                   \
    if (Status maia_fork_status_ = checkNotForked(); !maia_fork_status_.ok()) \
      return report(maia_fork_status_);                                  \
  } while (0)

extern "C" {

maiaError_t maiaModuleLoad(maiaModule_t* out_module, const char* path) {
  MAIA_MODULE_API_ENTRY();
  MAIA_CHECK_OUT(out_module);
  return guarded(__func__, [&]() -> Status {
    if (path == nullptr) return makeError(maiaErrorInvalidValue, "maiaModuleLoad: path is NULL");
    std::vector<std::byte> bytes;
    MAIA_RETURN_IF_ERROR(readFile(path, &bytes));
    return loadModule(bytes, path, out_module);
  });
}

maiaError_t maiaModuleLoadData(maiaModule_t* out_module, const void* data, size_t size) {
  MAIA_MODULE_API_ENTRY();
  MAIA_CHECK_OUT(out_module);
  return guarded(__func__, [&]() -> Status {
    if (data == nullptr && size != 0)
      return makeError(maiaErrorInvalidValue, "maiaModuleLoadData: data is NULL but size is ",
                       size);
    return loadModule({static_cast<const std::byte*>(data), size}, "<memory>", out_module);
  });
}

maiaError_t maiaModuleUnload(maiaModule_t module) {
  MAIA_MODULE_API_ENTRY();
  return guarded(__func__, [&]() -> Status {
    std::shared_ptr<Module> removed = registry().remove(module);
    if (!removed)
      return makeError(maiaErrorInvalidHandle, "maiaModuleUnload: module handle ",
                       static_cast<const void*>(module),
                       " is not a loaded module (never loaded, or already unloaded)");
    return {};
  });
}

maiaError_t maiaModuleGetMetadata(maiaModule_t module, const char** out_json) {
  MAIA_MODULE_API_ENTRY();
  MAIA_CHECK_OUT(out_json);
  return guarded(__func__, [&]() -> Status {
    std::shared_ptr<Module> found;
    MAIA_RETURN_IF_ERROR(findModule("maiaModuleGetMetadata", module, &found));
    *out_json = found->metadataJson().c_str();
    return {};
  });
}

maiaError_t maiaModuleGetKernelCount(maiaModule_t module, int* out_count) {
  MAIA_MODULE_API_ENTRY();
  MAIA_CHECK_OUT(out_count);
  return guarded(__func__, [&]() -> Status {
    std::shared_ptr<Module> found;
    MAIA_RETURN_IF_ERROR(findModule("maiaModuleGetKernelCount", module, &found));
    *out_count = static_cast<int>(found->kernels().size());
    return {};
  });
}

maiaError_t maiaModuleGetKernelByIndex(maiaModule_t module, int index, maiaKernel_t* out_kernel) {
  MAIA_MODULE_API_ENTRY();
  MAIA_CHECK_OUT(out_kernel);
  return guarded(__func__, [&]() -> Status {
    std::shared_ptr<Module> found;
    MAIA_RETURN_IF_ERROR(findModule("maiaModuleGetKernelByIndex", module, &found));
    auto& kernels = found->kernels();
    if (index < 0 || static_cast<size_t>(index) >= kernels.size())
      return makeError(maiaErrorInvalidValue, "maiaModuleGetKernelByIndex: index ", index,
                       " is out of range: the module has ", kernels.size(), " kernels");
    *out_kernel = &kernels[static_cast<size_t>(index)];
    return {};
  });
}

maiaError_t maiaModuleGetKernel(maiaModule_t module, const char* name, maiaKernel_t* out_kernel) {
  MAIA_MODULE_API_ENTRY();
  MAIA_CHECK_OUT(out_kernel);
  return guarded(__func__, [&]() -> Status {
    std::shared_ptr<Module> found;
    MAIA_RETURN_IF_ERROR(findModule("maiaModuleGetKernel", module, &found));
    if (name == nullptr)
      return makeError(maiaErrorInvalidValue, "maiaModuleGetKernel: name is NULL");
    if (maiaKernel* kernel = found->findKernel(name)) {
      *out_kernel = kernel;
      return {};
    }
    std::string available;
    for (const maiaKernel& kernel : found->kernels())
      available += (available.empty() ? "" : ", ") + kernel.name;
    return makeError(maiaErrorNotFound, "maiaModuleGetKernel: module '", found->origin(),
                     "' has no kernel named '", name, "'; its kernels are: ",
                     available.empty() ? "(none)" : available);
  });
}

maiaError_t maiaKernelGetName(maiaKernel_t kernel, const char** out_name) {
  MAIA_MODULE_API_ENTRY();
  MAIA_CHECK_OUT(out_name);
  return guarded(__func__, [&]() -> Status {
    std::shared_ptr<Module> owner;
    MAIA_RETURN_IF_ERROR(findKernel("maiaKernelGetName", kernel, &owner));
    *out_name = kernel->name.c_str();
    return {};
  });
}

maiaError_t maiaKernelGetArgCount(maiaKernel_t kernel, int* out_count) {
  MAIA_MODULE_API_ENTRY();
  MAIA_CHECK_OUT(out_count);
  return guarded(__func__, [&]() -> Status {
    std::shared_ptr<Module> owner;
    MAIA_RETURN_IF_ERROR(findKernel("maiaKernelGetArgCount", kernel, &owner));
    *out_count = static_cast<int>(kernel->args.size());
    return {};
  });
}

maiaError_t maiaKernelGetArgInfo(maiaKernel_t kernel, int index, maiaKernelArgInfo* out_info) {
  MAIA_MODULE_API_ENTRY();
  MAIA_CHECK_OUT(out_info);
  return guarded(__func__, [&]() -> Status {
    std::shared_ptr<Module> owner;
    MAIA_RETURN_IF_ERROR(findKernel("maiaKernelGetArgInfo", kernel, &owner));
    if (index < 0 || static_cast<size_t>(index) >= kernel->args.size())
      return makeError(maiaErrorInvalidValue, "maiaKernelGetArgInfo: index ", index,
                       " is out of range: kernel '", kernel->name, "' has ", kernel->args.size(),
                       " arguments");
    const ArgSpec& spec = kernel->args[static_cast<size_t>(index)];
    maiaKernelArgInfo info{};
    info.kind = spec.kind;
    info.dtype = spec.dtype;
    info.rank = spec.rank;
    for (int32_t d = 0; d < spec.rank; ++d) info.strides[d] = spec.strides[d];
    *out_info = info;
    return {};
  });
}

}  // extern "C"
