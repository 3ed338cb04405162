#include "ops/EagerKernels.h"

#include <c10/core/DeviceGuard.h>

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "MaiaCheck.h"
#include "MaiaStream.h"

namespace torch_maia::ops {
namespace {

constexpr int kRank = 4;  // the memref rank of every eager kernel argument
// Below this many elements one program (one core) is faster than a split.
constexpr int64_t kElementsPerProgram = 1 << 15;

/// A kernel binary of the device kernel library, loaded on first use from
/// MAIA_KERNEL_DIR (environment) or the build tree; the first candidate
/// file the driver accepts wins (the GEMM binaries come per ISA level).
class KernelLibrary {
 public:
  explicit KernelLibrary(std::vector<std::string> candidates)
      : candidates_(std::move(candidates)) {}

  maiaKernel_t kernel(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (module_ == nullptr) load();
    auto it = cache_.find(name);
    if (it != cache_.end()) return it->second;
    maiaKernel_t kernel = nullptr;
    MAIA_CHECK(maiaModuleGetKernel(module_, name.c_str(), &kernel));
    cache_.emplace(name, kernel);
    return kernel;
  }

 private:
  void load() {
    const char* env = std::getenv("MAIA_KERNEL_DIR");
    std::string dir = env != nullptr ? env : MAIA_KERNEL_DIR_PATH;
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
  int64_t programs = numel < 2 * kElementsPerProgram ? 1 : deviceCores();
  int64_t grid[3] = {programs, 1, 1};
  c10::DeviceIndex device = iter.device(0).index();
  MAIA_CHECK(maiaLaunchKernel(kernel, grid, args.data(), static_cast<int>(args.size()),
                              driverStream(currentStream(device))));
}

}  // namespace

maiaKernel_t eagerKernel(const std::string& name) {
  static auto* library = new KernelLibrary({"maia_eager_kernels.maiabin"});
  return library->kernel(name);
}

maiaKernel_t reduceKernel(const std::string& name) {
  static auto* library = new KernelLibrary({"maia_reduce_kernels.maiabin"});
  return library->kernel(name);
}

maiaKernel_t gemmKernel(const std::string& name) {
  static auto* library =
      new KernelLibrary({"maia_gemm_kernels_v4.maiabin", "maia_gemm_kernels_v3.maiabin"});
  return library->kernel(name);
}

maiaKernel_t nnKernel(const std::string& name) {
  static auto* library = new KernelLibrary({"maia_nn_kernels.maiabin"});
  return library->kernel(name);
}

int deviceCores() {
  static const int cores = [] {
    maiaDeviceProp prop;
    MAIA_CHECK(maiaGetDeviceProperties(&prop, 0));
    return prop.core_count;
  }();
  return cores;
}

int64_t programsFor(int64_t units, int64_t work) {
  if (units <= 1 || work < 2 * kElementsPerProgram) return 1;
  return std::min<int64_t>(units, deviceCores());
}

void launchNn(const std::string& name, c10::ScalarType dtype,
              c10::ArrayRef<maiaKernelArg> args, int64_t programs, const c10::Device& device) {
  c10::DeviceGuard guard(device);
  maiaKernel_t kernel = nnKernel(name + "_" + dtypeSuffix(dtype));
  int64_t grid[3] = {std::max<int64_t>(programs, 1), 1, 1};
  MAIA_CHECK(maiaLaunchKernel(kernel, grid, args.data(), static_cast<int>(args.size()),
                              driverStream(currentStream(device.index()))));
}

maiaKernelArg memrefOf(const at::Tensor& t) {
  TORCH_CHECK(t.dim() <= MAIA_MAX_RANK, "maia kernels take at most ", MAIA_MAX_RANK,
              " dimensions, got ", t.dim());
  maiaKernelArg memref{};
  memref.kind = maiaArgMemref;
  memref.dtype = driverDtype(t.scalar_type());
  memref.rank = static_cast<int32_t>(t.dim());
  const char* base = static_cast<const char*>(t.storage().data());
  memref.data = const_cast<char*>(base);
  memref.offset = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    memref.sizes[d] = t.size(d);
    memref.strides[d] = t.stride(d);
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
    default: TORCH_CHECK_TYPE(false, "maia has no device dtype for ", dtype);
  }
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
