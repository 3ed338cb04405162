// The C shim that C++ wrappers of compiled graphs call (Inductor's
// cpp_wrapper and AOTInductor packages): load a compiled .maiabin kernel and
// launch it on the current maia stream. Plain C so that the generated code,
// compiled by Inductor without maia's include paths, can carry these
// declarations itself; libmaia_torch exports the definitions
// (runtime/torch/csrc/AotiShim.cpp).
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct MaiaAotiKernelOpaque* MaiaAotiKernelHandle;
// As torch's aoti_torch/c/shim.h declares it.
struct AtenTensorOpaque;
typedef struct AtenTensorOpaque* AtenTensorHandle;

/// A kernel argument: a maia tensor (an AtenTensorHandle), or a scalar.
enum { MAIA_AOTI_TENSOR = 0, MAIA_AOTI_INT = 1, MAIA_AOTI_FLOAT = 2 };
typedef struct {
  int32_t kind;
  void* tensor;
  int64_t int_value;
  double float_value;
} MaiaAotiArg;

/// How the launch grid follows from sizes (the runtime's WorkSplit decides):
/// POINTWISE takes (numel, inner, reduction_numel), REDUCTION (xnumel, rnumel).
enum { MAIA_AOTI_GRID_POINTWISE = 0, MAIA_AOTI_GRID_REDUCTION = 1 };

/// Loads kernel `name` of the binary at `path` (once; later calls with the
/// same *out return at once). Returns 0, or nonzero with the reason in
/// maia_aoti_last_error() (naming the file).
int32_t maia_aoti_kernel_load(const char* path, const char* name, MaiaAotiKernelHandle* out);

/// As maia_aoti_kernel_load, for `file` in the directory of the library
/// that holds the address `anchor` (an AOTInductor package, unpacked
/// anywhere, keeps its kernel files beside its wrapper library).
int32_t maia_aoti_kernel_load_beside(const void* anchor, const char* file, const char* name,
                                     MaiaAotiKernelHandle* out);

/// Launches kernel over the grid of `grid_kind` on the current stream of
/// `device` (-1: the current maia device). Returns 0 or nonzero (see
/// maia_aoti_last_error()).
int32_t maia_aoti_kernel_launch(MaiaAotiKernelHandle kernel, int32_t grid_kind,
                                const int64_t* sizes, const MaiaAotiArg* args, int32_t num_args,
                                int32_t device);

/// A new tensor on the current maia device with the sizes, strides, dtype and
/// values of `host` (a constant an AOTInductor container loaded into host
/// memory). Returns 0 or nonzero (see maia_aoti_last_error()).
int32_t maia_aoti_constant_to_device(AtenTensorHandle host, AtenTensorHandle* out);

/// The message of this thread's last failed call.
const char* maia_aoti_last_error(void);

// The extern kernels the C++ wrapper calls by device name
// (aoti_torch_<device>_<op>, signatures of torch's c_shim_cpu.h); they
// dispatch to maia's eager GEMM, convolution and fused attention. Return 0
// on success.
int32_t aoti_torch_maia_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
int32_t aoti_torch_maia_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                AtenTensorHandle mat2);
int32_t aoti_torch_maia_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                  AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
                                  double alpha);
int32_t aoti_torch_maia_convolution(AtenTensorHandle input, AtenTensorHandle weight,
                                    AtenTensorHandle* bias, const int64_t* stride,
                                    int64_t stride_len_, const int64_t* padding,
                                    int64_t padding_len_, const int64_t* dilation,
                                    int64_t dilation_len_, int32_t transposed,
                                    const int64_t* output_padding, int64_t output_padding_len_,
                                    int64_t groups, AtenTensorHandle* ret0);
/// Fused attention (runtime/torch/csrc/ops/Attention.cpp), what compiled
/// graphs call for F.scaled_dot_product_attention. Null result pointers are
/// skipped; an undefined result tensor is returned as a null handle.
int32_t aoti_torch_maia__scaled_dot_product_fused_attention_overrideable(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
    AtenTensorHandle* attn_bias, double dropout_p, int32_t is_causal, int32_t return_debug_mask,
    double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6,
    AtenTensorHandle* ret7, AtenTensorHandle* ret8);
int32_t aoti_torch_maia__scaled_dot_product_fused_attention_overrideable_backward(
    AtenTensorHandle grad_out, AtenTensorHandle query, AtenTensorHandle key,
    AtenTensorHandle value, AtenTensorHandle attn_bias, const int32_t* grad_input_mask,
    int64_t grad_input_mask_len_, AtenTensorHandle out, AtenTensorHandle logsumexp,
    AtenTensorHandle cum_seq_q, AtenTensorHandle cum_seq_k, int64_t max_q, int64_t max_k,
    double dropout_p, int32_t is_causal, AtenTensorHandle philox_seed,
    AtenTensorHandle philox_offset, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3);

#ifdef __cplusplus
}  // extern "C"

#include <stdexcept>
#include <string>

/// The generated code's check: a failure throws with the shim's message.
inline void maia_aoti_check(int32_t status, const char* what) {
  if (status != 0) {
    throw std::runtime_error(std::string(what) + ": " + maia_aoti_last_error());
  }
}
#endif
