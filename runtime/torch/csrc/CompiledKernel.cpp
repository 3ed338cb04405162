#include "CompiledKernel.h"

#include <c10/core/DeviceGuard.h>

#include "MaiaCheck.h"
#include "MaiaStream.h"
#include "ops/EagerKernels.h"

namespace torch_maia {
namespace {

bool isFloat(maiaDtype dtype) {
  return dtype == maiaDtypeF16 || dtype == maiaDtypeBF16 || dtype == maiaDtypeF32 ||
         dtype == maiaDtypeF64;
}

// Compiled kernels compute on bytes for bool and uint8 (vectors of i1 are
// bit-packed in LLVM, and arith has no unsigned types).
maiaDtype compiledDtype(c10::ScalarType type) {
  if (type == c10::ScalarType::Bool || type == c10::ScalarType::Byte) return maiaDtypeI8;
  return ops::driverDtype(type);
}

}  // namespace

CompiledKernel::CompiledKernel(std::shared_ptr<UserModule> module, const std::string& name)
    : module_(std::move(module)), name_(name) {
  kernel_ = module_->kernel(name);
  int count = 0;
  MAIA_CHECK(maiaKernelGetArgCount(kernel_, &count));
  arg_info_.resize(count);
  for (int i = 0; i < count; ++i) MAIA_CHECK(maiaKernelGetArgInfo(kernel_, i, &arg_info_[i]));
}

maiaKernelArg CompiledKernel::tensorArg(int index, const at::Tensor& tensor) const {
  TORCH_CHECK(index < numArgs(), "kernel '", name_, "' takes ", numArgs(), " arguments");
  TORCH_CHECK(tensor.device().is_privateuseone(), "argument ", index, " of kernel '", name_,
              "' is on ", tensor.device(), "; compiled maia kernels take maia tensors");
  const at::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  int64_t itemsize = static_cast<int64_t>(tensor.dtype().itemsize());
  maiaKernelArg memref{};
  memref.kind = maiaArgMemref;
  memref.dtype = compiledDtype(tensor.scalar_type());
  memref.rank = 1;
  memref.data = const_cast<void*>(storage->data());
  memref.offset = tensor.storage_offset();
  memref.sizes[0] = std::max<int64_t>(
      0, static_cast<int64_t>(storage->nbytes()) / itemsize - tensor.storage_offset());
  memref.strides[0] = 1;
  return memref;
}

maiaKernelArg CompiledKernel::intArg(int index, int64_t value) const {
  const maiaKernelArgInfo& info = argInfo(index);
  TORCH_CHECK(info.kind == maiaArgScalar, "argument ", index, " of kernel '", name_,
              "' is a buffer; got the integer ", value);
  return isFloat(info.dtype) ? maiaKernelArgFloat(info.dtype, static_cast<double>(value))
                             : maiaKernelArgInt(info.dtype, value);
}

maiaKernelArg CompiledKernel::floatArg(int index, double value) const {
  const maiaKernelArgInfo& info = argInfo(index);
  TORCH_CHECK(info.kind == maiaArgScalar && isFloat(info.dtype), "argument ", index,
              " of kernel '", name_, "' is not a float scalar; got ", value);
  return maiaKernelArgFloat(info.dtype, value);
}

void CompiledKernel::launch(const std::array<int64_t, 3>& grid,
                            const std::vector<maiaKernelArg>& args,
                            c10::DeviceIndex device) const {
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device));
  MAIA_CHECK(maiaLaunchKernel(kernel_, grid.data(), args.data(), static_cast<int>(args.size()),
                              currentDriverStream(device)));
}

}  // namespace torch_maia
