// The C shim of maia/aoti.h: C++ wrappers of compiled graphs load and launch
// .maiabin kernels through the same CompiledKernel the Python wrapper uses.
#include <maia/aoti.h>

#include <ATen/Functions.h>
#include <ATen/core/Tensor.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>

#include <dlfcn.h>

#include <array>
#include <filesystem>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "CompiledKernel.h"
#include "MaiaFunctions.h"
#include "WorkSplit.h"

namespace {

thread_local std::string last_error;

// Compiled kernels' vector width (maia_inductor/mlir_types.py VL).
constexpr int64_t kLanes = 16;

template <typename F>
int32_t guarded(F&& body) {
  try {
    body();
    return 0;
  } catch (const c10::Error& error) {
    last_error = error.what_without_backtrace();
  } catch (const std::exception& error) {
    last_error = error.what();
  }
  return 1;
}

/// The tensor of a handle that may be null (an undefined tensor).
at::Tensor tensorOrUndefined(AtenTensorHandle handle) {
  return handle == nullptr ? at::Tensor()
                           : *torch::aot_inductor::tensor_handle_to_tensor_pointer(handle);
}

/// The tensor behind an optional handle argument (absent: null pointer or
/// null handle).
std::optional<at::Tensor> optionalTensor(const AtenTensorHandle* handle) {
  if (handle == nullptr || *handle == nullptr) return std::nullopt;
  return *torch::aot_inductor::tensor_handle_to_tensor_pointer(*handle);
}

/// Stores t in *ret when the caller asked for it (null handle if undefined).
void storeResult(AtenTensorHandle* ret, at::Tensor t) {
  if (ret != nullptr)
    *ret = t.defined() ? torch::aot_inductor::new_tensor_handle(std::move(t)) : nullptr;
}

}  // namespace

struct MaiaAotiKernelOpaque {
  torch_maia::CompiledKernel kernel;
};

extern "C" {

__attribute__((visibility("default"))) int32_t maia_aoti_kernel_load(
    const char* path, const char* name, MaiaAotiKernelHandle* out) {
  return guarded([&] {
    if (*out != nullptr) return;
    TORCH_CHECK(std::filesystem::is_regular_file(path), "compiled maia kernel file '", path,
                "' (kernel ", name, ") does not exist");
    std::shared_ptr<torch_maia::UserModule> module;
    try {
      module = std::make_shared<torch_maia::UserModule>(path);
    } catch (const std::exception& error) {
      TORCH_CHECK(false, "cannot load compiled maia kernel file '", path, "' (kernel ", name,
                  "): ", error.what());
    }
    // Leaked on purpose: the generated code holds it in a static for the
    // life of the process (as CUDA modules of AOTI wrappers are).
    *out = new MaiaAotiKernelOpaque{torch_maia::CompiledKernel(module, name)};
  });
}

__attribute__((visibility("default"))) int32_t maia_aoti_kernel_load_beside(
    const void* anchor, const char* file, const char* name, MaiaAotiKernelHandle* out) {
  if (*out != nullptr) return 0;
  Dl_info info{};
  if (dladdr(anchor, &info) == 0 || info.dli_fname == nullptr) {
    last_error = std::string("cannot find the library that loads maia kernel ") + name;
    return 1;
  }
  const auto path = std::filesystem::path(info.dli_fname).parent_path() / file;
  return maia_aoti_kernel_load(path.c_str(), name, out);
}

__attribute__((visibility("default"))) int32_t maia_aoti_kernel_launch(
    MaiaAotiKernelHandle kernel, int32_t grid_kind, const int64_t* sizes,
    const MaiaAotiArg* args, int32_t num_args, int32_t device) {
  return guarded([&] {
    TORCH_CHECK(kernel != nullptr, "launch of a maia kernel that was not loaded");
    const torch_maia::CompiledKernel& compiled = kernel->kernel;
    std::array<int64_t, 3> grid{1, 1, 1};
    if (grid_kind == MAIA_AOTI_GRID_POINTWISE) {
      const auto split = torch_maia::pointwiseGrid(sizes[0], sizes[1], sizes[2], kLanes);
      grid[0] = split[0];
      grid[1] = split[1];
    } else {
      grid[0] = torch_maia::reductionGrid(sizes[0], sizes[1]);
    }
    if (grid[0] <= 0) return;
    std::vector<maiaKernelArg> driver_args;
    driver_args.reserve(num_args);
    for (int i = 0; i < num_args; ++i) {
      const MaiaAotiArg& arg = args[i];
      if (arg.kind == MAIA_AOTI_TENSOR) {
        at::Tensor* tensor = torch::aot_inductor::tensor_handle_to_tensor_pointer(
            static_cast<AtenTensorHandle>(arg.tensor));
        driver_args.push_back(compiled.tensorArg(i, *tensor));
      } else if (arg.kind == MAIA_AOTI_INT) {
        driver_args.push_back(compiled.intArg(i, arg.int_value));
      } else {
        driver_args.push_back(compiled.floatArg(i, arg.float_value));
      }
    }
    compiled.launch(grid, driver_args,
                    torch_maia::resolveDevice(static_cast<c10::DeviceIndex>(device)));
  });
}

__attribute__((visibility("default"))) int32_t maia_aoti_constant_to_device(
    AtenTensorHandle host, AtenTensorHandle* out) {
  return guarded([&] {
    const at::Tensor& source = *torch::aot_inductor::tensor_handle_to_tensor_pointer(host);
    at::Tensor copy = at::empty_strided(
        source.sizes(), source.strides(),
        source.options().device(c10::Device(c10::DeviceType::PrivateUse1, torch_maia::currentDevice())));
    copy.copy_(source);
    *out = torch::aot_inductor::new_tensor_handle(std::move(copy));
  });
}

__attribute__((visibility("default"))) const char* maia_aoti_last_error(void) {
  return last_error.c_str();
}

#define MAIA_SHIM_EXPORT __attribute__((visibility("default")))
using torch::aot_inductor::new_tensor_handle;
using torch::aot_inductor::tensor_handle_to_tensor_pointer;

MAIA_SHIM_EXPORT int32_t aoti_torch_maia_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                AtenTensorHandle mat2) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    at::mm_out(*tensor_handle_to_tensor_pointer(out), *tensor_handle_to_tensor_pointer(self),
               *tensor_handle_to_tensor_pointer(mat2));
  });
}

MAIA_SHIM_EXPORT int32_t aoti_torch_maia_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                 AtenTensorHandle mat2) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    at::bmm_out(*tensor_handle_to_tensor_pointer(out), *tensor_handle_to_tensor_pointer(self),
                *tensor_handle_to_tensor_pointer(mat2));
  });
}

MAIA_SHIM_EXPORT int32_t aoti_torch_maia_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                   AtenTensorHandle mat1, AtenTensorHandle mat2,
                                                   double beta, double alpha) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    at::addmm_out(*tensor_handle_to_tensor_pointer(out), *tensor_handle_to_tensor_pointer(self),
                  *tensor_handle_to_tensor_pointer(mat1), *tensor_handle_to_tensor_pointer(mat2),
                  beta, alpha);
  });
}

MAIA_SHIM_EXPORT int32_t aoti_torch_maia_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,
    const int64_t* stride, int64_t stride_len_, const int64_t* padding, int64_t padding_len_,
    const int64_t* dilation, int64_t dilation_len_, int32_t transposed,
    const int64_t* output_padding, int64_t output_padding_len_, int64_t groups,
    AtenTensorHandle* ret0) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    at::Tensor result = at::convolution(
        *tensor_handle_to_tensor_pointer(input), *tensor_handle_to_tensor_pointer(weight),
        optionalTensor(bias), c10::IntArrayRef(stride, stride_len_),
        c10::IntArrayRef(padding, padding_len_), c10::IntArrayRef(dilation, dilation_len_),
        transposed != 0, c10::IntArrayRef(output_padding, output_padding_len_), groups);
    *ret0 = new_tensor_handle(std::move(result));
  });
}


MAIA_SHIM_EXPORT int32_t aoti_torch_maia__scaled_dot_product_fused_attention_overrideable(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
    AtenTensorHandle* attn_bias, double dropout_p, int32_t is_causal, int32_t return_debug_mask,
    double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6,
    AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    auto [out, lse, cum_q, cum_k, max_q, max_k, seed, offset, debug] =
        at::_scaled_dot_product_fused_attention_overrideable(
            *tensor_handle_to_tensor_pointer(query), *tensor_handle_to_tensor_pointer(key),
            *tensor_handle_to_tensor_pointer(value), optionalTensor(attn_bias), dropout_p, is_causal != 0,
            return_debug_mask != 0,
            torch::aot_inductor::pointer_to_optional(scale));
    storeResult(ret0, std::move(out));
    storeResult(ret1, std::move(lse));
    storeResult(ret2, std::move(cum_q));
    storeResult(ret3, std::move(cum_k));
    if (ret4 != nullptr) *ret4 = max_q.expect_int();
    if (ret5 != nullptr) *ret5 = max_k.expect_int();
    storeResult(ret6, std::move(seed));
    storeResult(ret7, std::move(offset));
    storeResult(ret8, std::move(debug));
  });
}

MAIA_SHIM_EXPORT int32_t aoti_torch_maia__scaled_dot_product_fused_attention_overrideable_backward(
    AtenTensorHandle grad_out, AtenTensorHandle query, AtenTensorHandle key,
    AtenTensorHandle value, AtenTensorHandle attn_bias, const int32_t* grad_input_mask,
    int64_t grad_input_mask_len_, AtenTensorHandle out, AtenTensorHandle logsumexp,
    AtenTensorHandle cum_seq_q, AtenTensorHandle cum_seq_k, int64_t max_q, int64_t max_k,
    double dropout_p, int32_t is_causal, AtenTensorHandle philox_seed,
    AtenTensorHandle philox_offset, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    TORCH_CHECK(grad_input_mask_len_ == 4, "grad_input_mask must have 4 entries");
    std::array<bool, 4> mask{};
    for (int i = 0; i < 4; ++i) mask[i] = grad_input_mask[i] != 0;
    auto [grad_q, grad_k, grad_v, grad_bias] =
        at::_scaled_dot_product_fused_attention_overrideable_backward(
            *tensor_handle_to_tensor_pointer(grad_out), *tensor_handle_to_tensor_pointer(query),
            *tensor_handle_to_tensor_pointer(key), *tensor_handle_to_tensor_pointer(value),
            tensorOrUndefined(attn_bias), mask, *tensor_handle_to_tensor_pointer(out),
            *tensor_handle_to_tensor_pointer(logsumexp), tensorOrUndefined(cum_seq_q),
            tensorOrUndefined(cum_seq_k), max_q, max_k, dropout_p, is_causal != 0,
            tensorOrUndefined(philox_seed), tensorOrUndefined(philox_offset),
            torch::aot_inductor::pointer_to_optional(scale));
    storeResult(ret0, std::move(grad_q));
    storeResult(ret1, std::move(grad_k));
    storeResult(ret2, std::move(grad_v));
    storeResult(ret3, std::move(grad_bias));
  });
}

}  // extern "C"
