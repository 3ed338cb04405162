#include "ops/EagerKernels.h"

#include <c10/core/DeviceGuard.h>

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "MaiaCheck.h"
#include "MaiaStream.h"
#include "WorkSplit.h"

namespace torch_maia::ops {
namespace {

constexpr int kRank = 4;  // the memref rank of every eager kernel argument

/// The directory of the kernel binaries: MAIA_KERNEL_DIR (environment) or
/// maia/kernels beside libmaia_torch.so itself, found with dladdr (the
/// install tree's lib/maia/kernels; in the build tree a link to
/// build/<config>/kernels). No Python involved: a C++ program finds them too.
std::string kernelDirectory() {
  if (const char* env = std::getenv("MAIA_KERNEL_DIR"); env != nullptr && *env != '\0')
    return env;
  Dl_info info;
  TORCH_CHECK(dladdr(reinterpret_cast<void*>(&kernelDirectory), &info) != 0 &&
                  info.dli_fname != nullptr,
              "cannot locate libmaia_torch.so to find its kernel binaries; set MAIA_KERNEL_DIR");
  std::string library = info.dli_fname;
  const size_t slash = library.rfind('/');
  return (slash == std::string::npos ? std::string(".") : library.substr(0, slash)) +
         "/maia/kernels";
}

/// A kernel binary of the device kernel library, loaded on first use from
/// kernelDirectory(); the first candidate file the driver accepts wins (the
/// GEMM binaries come per ISA level).
class KernelLibrary {
 public:
  explicit KernelLibrary(std::vector<std::string> candidates)
      : candidates_(std::move(candidates)) {}

  /// The kernel called name, or nullptr when the binary has none.
  maiaKernel_t kernel(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (module_ == nullptr) load();
    auto it = cache_.find(name);
    if (it != cache_.end()) return it->second;
    maiaKernel_t kernel = nullptr;
    const maiaError_t status = maiaModuleGetKernel(module_, name.c_str(), &kernel);
    if (status == maiaErrorNotFound) {
      maiaGetLastError();  // an answer, not a failure: clear it
      return nullptr;
    }
    MAIA_CHECK(status);
    cache_.emplace(name, kernel);
    return kernel;
  }

 private:
  void load() {
    const std::string dir = kernelDirectory();
    std::string refusals;
    for (const std::string& file : candidates_) {
      std::string path = dir + "/" + file;
      if (maiaModuleLoad(&module_, path.c_str()) == maiaSuccess) return;
      refusals += "\n  " + path + ": " + maiaGetLastErrorMessage();
      maiaGetLastError();
    }
    TORCH_CHECK(false, "no usable maia kernel binary:", refusals);
  }

  const std::vector<std::string> candidates_;
  std::mutex mutex_;
  maiaModule_t module_ = nullptr;
  std::unordered_map<std::string, maiaKernel_t> cache_;
};

/// A per-thread cache of kernel handles by (library, op, dtype) in front of
/// KernelLibrary's lock and map: slots are chosen by the op name's address
/// (callers pass literals) and confirmed by comparing the name, which each
/// slot copies, so a name buffer reused for another name is a miss, never a
/// wrong hit. Handles stay valid: the libraries are never unloaded.
class KernelCache {
 public:
  maiaKernel_t get(KernelLibrary& library, const char* op, c10::ScalarType dtype) {
    const auto key = reinterpret_cast<uintptr_t>(op);
    Slot& slot = slots_[((key >> 3) ^ (key >> 11) ^ static_cast<uintptr_t>(dtype) * 31 ^
                         reinterpret_cast<uintptr_t>(&library) >> 6) % kSlots];
    if (slot.op == op && slot.dtype == dtype && slot.library == &library &&
        std::strcmp(slot.name, op) == 0)
      return slot.kernel;
    maiaKernel_t kernel = library.kernel(std::string(op) + "_" + dtypeSuffix(dtype));
    // The CPU's NotImplementedError for a dtype an operator does not take.
    TORCH_CHECK_NOT_IMPLEMENTED(kernel != nullptr, "\"", op, "\" not implemented for '",
                                c10::toString(dtype), "' on maia");
    if (std::strlen(op) < sizeof(slot.name)) {
      slot = Slot{&library, op, dtype, kernel, {}};
      std::strcpy(slot.name, op);
    }
    return kernel;
  }

 private:
  static constexpr size_t kSlots = 256;
  struct Slot {
    const KernelLibrary* library = nullptr;
    const char* op = nullptr;
    c10::ScalarType dtype = c10::ScalarType::Undefined;
    maiaKernel_t kernel = nullptr;
    char name[40] = {};
  };
  std::array<Slot, kSlots> slots_;
};

thread_local KernelCache t_kernel_cache;

KernelLibrary& eagerLibrary() {
  static auto* library =
      new KernelLibrary({"maia_eager_kernels_v4.maiabin", "maia_eager_kernels_v3.maiabin"});
  return *library;
}

KernelLibrary& nnLibrary() {
  static auto* library = new KernelLibrary({"maia_nn_kernels.maiabin"});
  return *library;
}

maiaKernelArg denseMemref(const at::Tensor& t, int64_t numel) {
  maiaKernelArg memref = unshapedMemref(t, kRank);
  for (int d = 0; d < kRank; ++d) {
    memref.sizes[d] = 1;
    memref.strides[d] = 0;
  }
  memref.sizes[kRank - 1] = numel;
  memref.strides[kRank - 1] = t.dim() == 0 ? 0 : 1;  // 0-dim operands broadcast
  return memref;
}

/// Appends operand arg of iter as a rank-4 memref over the kept dimensions.
void appendOperand(const at::TensorIteratorBase& iter, int arg,
                   c10::ArrayRef<int> dims, std::vector<maiaKernelArg>* out) {
  const at::TensorBase& tensor = iter.tensor_base(arg);
  const int64_t element = iter.element_size(arg);
  maiaKernelArg memref{};
  memref.kind = maiaArgMemref;
  memref.dtype = driverDtype(iter.dtype(arg));
  memref.rank = kRank;
  // The allocation's start plus an element offset: negative strides (flipped
  // views) stay inside the allocation the driver checks against.
  const char* base = static_cast<const char*>(tensor.storage().data());
  memref.data = const_cast<char*>(base);
  memref.offset = (static_cast<const char*>(iter.data_ptr(arg)) - base) / element;
  for (int d = 0; d < kRank; ++d) {
    memref.sizes[d] = 1;
    memref.strides[d] = 0;
  }
  // TensorIterator orders dimensions fastest first; memrefs slowest first.
  for (size_t i = 0; i < dims.size(); ++i) {
    int d = dims[i];
    memref.sizes[kRank - 1 - i] = iter.shape()[d];
    memref.strides[kRank - 1 - i] = iter.strides(arg)[d] / element;
  }
  out->push_back(memref);
}

void launchOnDims(maiaKernel_t kernel, const at::TensorIteratorBase& iter,
                  c10::ArrayRef<maiaKernelArg> scalars, c10::ArrayRef<int> dims) {
  std::vector<maiaKernelArg> args;
  args.reserve(iter.ntensors() + scalars.size());
  for (int arg = 0; arg < iter.ntensors(); ++arg) appendOperand(iter, arg, dims, &args);
  args.insert(args.end(), scalars.begin(), scalars.end());
  int64_t numel = 1;
  for (int d : dims) numel *= iter.shape()[d];
  launchPrograms(kernel, args, programsFor(numel, numel), iter.device(0).index());
}

}  // namespace

maiaKernel_t eagerKernel(const std::string& name) {
  maiaKernel_t kernel = eagerLibrary().kernel(name);
  TORCH_CHECK(kernel != nullptr, "maia: the eager kernel binary has no kernel '", name, "'");
  return kernel;
}

maiaKernel_t eagerKernel(const char* op, c10::ScalarType dtype) {
  return t_kernel_cache.get(eagerLibrary(), op, dtype);
}

maiaKernel_t reduceKernel(const char* op, c10::ScalarType dtype) {
  static auto* library = new KernelLibrary({"maia_reduce_kernels.maiabin"});
  return t_kernel_cache.get(*library, op, dtype);
}

maiaKernel_t gemmKernel(c10::ScalarType dtype) {
  static auto* library =
      new KernelLibrary({"maia_gemm_kernels_v4.maiabin", "maia_gemm_kernels_v3.maiabin"});
  return t_kernel_cache.get(*library, "gemm", dtype);
}

maiaKernel_t convKernel(c10::ScalarType dtype) {
  static auto* library =
      new KernelLibrary({"maia_conv_kernels_v4.maiabin", "maia_conv_kernels_v3.maiabin"});
  return t_kernel_cache.get(*library, "conv2d", dtype);
}

maiaKernel_t attentionKernel(const char* op, c10::ScalarType dtype) {
  static auto* library = new KernelLibrary(
      {"maia_attention_kernels_v4.maiabin", "maia_attention_kernels_v3.maiabin"});
  return t_kernel_cache.get(*library, op, dtype);
}

maiaKernel_t nnKernel(const char* op, c10::ScalarType dtype) {
  return t_kernel_cache.get(nnLibrary(), op, dtype);
}

void launchPrograms(maiaKernel_t kernel, c10::ArrayRef<maiaKernelArg> args, int64_t programs,
                    c10::DeviceIndex device) {
  // The stream is named explicitly: no device guard needed to launch on it.
  int64_t grid[3] = {std::max<int64_t>(programs, 1), 1, 1};
  MAIA_CHECK(maiaLaunchKernel(kernel, grid, args.data(), static_cast<int>(args.size()),
                              currentDriverStream(device)));
}

void launchNn(const char* name, c10::ScalarType dtype,
              c10::ArrayRef<maiaKernelArg> args, int64_t programs, const c10::Device& device) {
  launchPrograms(nnKernel(name, dtype), args, programs, device.index());
}

maiaKernelArg unshapedMemref(const at::Tensor& t, int rank) {
  maiaKernelArg memref{};
  memref.kind = maiaArgMemref;
  memref.dtype = driverDtype(t.scalar_type());
  memref.rank = rank;
  memref.data = const_cast<void*>(t.storage().data());
  memref.offset = t.storage_offset();
  return memref;
}

maiaKernelArg rowMajorMemref(const at::Tensor& t, std::initializer_list<int64_t> sizes) {
  maiaKernelArg memref = unshapedMemref(t, static_cast<int>(sizes.size()));
  int64_t stride = 1;
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    memref.sizes[d] = sizes.begin()[d];
    memref.strides[d] = stride;
    stride *= sizes.begin()[d];
  }
  return memref;
}

c10::MaybeOwned<at::Tensor> castTo(const at::Tensor& t, c10::ScalarType dtype) {
  if (t.scalar_type() == dtype) return c10::MaybeOwned<at::Tensor>::borrowed(t);
  return c10::MaybeOwned<at::Tensor>::owned(t.to(dtype));
}

maiaKernelArg memrefOf(const at::Tensor& t) { return memrefOf(t, static_cast<int>(t.dim())); }

maiaKernelArg memrefOf(const at::Tensor& t, int rank) {
  const int64_t dim = t.dim();
  TORCH_CHECK(dim <= rank && rank <= MAIA_MAX_RANK, "a ", dim, "-D tensor cannot be a rank-",
              rank, " maia kernel argument (at most ", MAIA_MAX_RANK, " dimensions)");
  maiaKernelArg memref = unshapedMemref(t, rank);
  const int pad = rank - static_cast<int>(dim);
  const int64_t* sizes = t.sizes().data();
  const int64_t* strides = t.strides().data();
  for (int d = 0; d < rank; ++d) {
    memref.sizes[d] = d >= pad ? sizes[d - pad] : 1;
    memref.strides[d] = d >= pad ? strides[d - pad] : 0;
  }
  return memref;
}

const char* dtypeSuffix(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return "f32";
    case c10::ScalarType::Double: return "f64";
    case c10::ScalarType::Half: return "f16";
    case c10::ScalarType::BFloat16: return "bf16";
    case c10::ScalarType::Long: return "i64";
    case c10::ScalarType::Int: return "i32";
    case c10::ScalarType::Short: return "i16";
    case c10::ScalarType::Char: return "i8";
    case c10::ScalarType::Byte: return "u8";
    case c10::ScalarType::Bool: return "b8";
    case c10::ScalarType::ComplexFloat: return "c64";
    case c10::ScalarType::ComplexDouble: return "c128";
    default: TORCH_CHECK_TYPE(false, "maia has no eager kernels for dtype ", dtype);
  }
}

maiaDtype driverDtype(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return maiaDtypeF32;
    case c10::ScalarType::Double: return maiaDtypeF64;
    case c10::ScalarType::Half: return maiaDtypeF16;
    case c10::ScalarType::BFloat16: return maiaDtypeBF16;
    case c10::ScalarType::Long: return maiaDtypeI64;
    case c10::ScalarType::Int: return maiaDtypeI32;
    case c10::ScalarType::Short: return maiaDtypeI16;
    case c10::ScalarType::Char: return maiaDtypeI8;
    case c10::ScalarType::Byte: return maiaDtypeU8;
    case c10::ScalarType::Bool: return maiaDtypeI1;
    case c10::ScalarType::ComplexFloat: return maiaDtypeC64;
    case c10::ScalarType::ComplexDouble: return maiaDtypeC128;
    default: TORCH_CHECK_TYPE(false, "maia has no device dtype for ", dtype);
  }
}

void launchDense(maiaKernel_t kernel, c10::ArrayRef<const at::Tensor*> operands, int64_t numel,
                 c10::ArrayRef<maiaKernelArg> scalars) {
  if (numel == 0) return;
  constexpr int kMaxArgs = 8;
  TORCH_CHECK(operands.size() + scalars.size() <= kMaxArgs, "launchDense: too many arguments");
  maiaKernelArg args[kMaxArgs];
  int count = 0;
  for (const at::Tensor* t : operands) args[count++] = denseMemref(*t, numel);
  for (const maiaKernelArg& scalar : scalars) args[count++] = scalar;
  launchPrograms(kernel, c10::ArrayRef<maiaKernelArg>(args, count), programsFor(numel, numel),
                 operands[0]->device().index());
}

void launchElementwise(maiaKernel_t kernel, const at::TensorIteratorBase& iter,
                       c10::ArrayRef<maiaKernelArg> scalars) {
  if (iter.numel() == 0) return;
  c10::DeviceGuard guard(iter.device(0));
  std::vector<int> dims;  // dimensions of extent > 1, fastest first
  for (int d = 0; d < iter.ndim(); ++d)
    if (iter.shape()[d] != 1) dims.push_back(d);
  if (static_cast<int>(dims.size()) <= kRank) {
    launchOnDims(kernel, iter, scalars, dims);
    return;
  }
  // More dimensions than a memref has (TensorIterator could not coalesce
  // them): one launch per index of the slowest dimension.
  int outer = dims.back();
  for (int64_t i = 0; i < iter.shape()[outer]; ++i) {
    at::TensorIterator slice(iter);
    slice.narrow(outer, i, 1);
    launchElementwise(kernel, slice, scalars);
  }
}

}  // namespace torch_maia::ops
