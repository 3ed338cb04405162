// Routes calls of native maia operators whose tensors have a dtype the eager
// kernels do not compute (complex, uint16/32/64; MaiaDtypes.h) to the host
// fallback, so such tensors reach every operator the CPU has instead of a
// TypeError from a kernel lookup.
//
// A file registers its kernels through MAIA_NATIVE_KERNELS(m) instead of
// TORCH_LIBRARY_IMPL(aten, PrivateUse1, m); each captureless lambda it
// registers, and each TORCH_FN(function), is wrapped in an unboxed function
// that checks the dtypes of its tensor (and dtype) arguments, a few loads
// per call, and calls the boxed host fallback for this very operator when
// one of them has no kernels. Plain function pointers (&function) and boxed
// kernels are registered unwrapped: they handle every dtype themselves.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/core/boxing/impl/boxing.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/TypeTraits.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <type_traits>

#include "MaiaDtypes.h"
#include "ops/Fallback.h"

namespace torch_maia::ops {
namespace routing {

// complex_ok: the operator computes complex64/complex128 natively.
inline bool needsHost(c10::ScalarType dtype, bool complex_ok) {
  return !hasNativeKernels(dtype) && !(complex_ok && hasComplexKernels(dtype));
}
inline bool needsHost(const at::Tensor& t, bool complex_ok) {
  return t.defined() && needsHost(t.scalar_type(), complex_ok);
}
inline bool needsHost(const std::optional<at::Tensor>& t, bool complex_ok) {
  return t && needsHost(*t, complex_ok);
}
inline bool needsHost(at::TensorList list, bool complex_ok) {
  for (const at::Tensor& t : list)
    if (needsHost(t, complex_ok)) return true;
  return false;
}
inline bool needsHost(const at::ITensorListRef& list, bool complex_ok) {
  for (const at::Tensor& t : list)
    if (needsHost(t, complex_ok)) return true;
  return false;
}
inline bool needsHost(const c10::List<std::optional<at::Tensor>>& list, bool complex_ok) {
  for (const std::optional<at::Tensor>& t : list)
    if (needsHost(t, complex_ok)) return true;
  return false;
}
inline bool needsHost(const std::optional<c10::ScalarType>& dtype, bool complex_ok) {
  return dtype && needsHost(*dtype, complex_ok);
}
/// Any other argument (scalars, sizes, flags) does not decide.
template <class T>
bool needsHost(const T&, bool) {
  return false;
}

/// Whether the operator (e.g. "mul.Tensor") has complex64/complex128 kernels.
bool computesComplex(const char* name);

/// "add.Tensor" -> the dispatcher's aten::add.Tensor.
c10::OperatorHandle findOperator(const char* name);

template <class Fn, class Signature>
struct Routed;

template <class Fn, class Return, class... Args>
struct Routed<Fn, Return(Args...)> {
  static inline const char* name = nullptr;  // set once at registration
  static inline bool complex_ok = false;      // set once at registration

  static Return call(Args... args) {
    if ((needsHost(args, complex_ok) || ...)) {
      static const c10::OperatorHandle op = findOperator(name);
      return c10::impl::BoxedKernelWrapper<Return(Args...)>::call(
          c10::BoxedKernel::makeFromFunction<&hostFallback>(), op, c10::DispatchKeySet(),
          std::forward<Args>(args)...);
    }
    if constexpr (c10::is_compile_time_function_pointer<Fn>::value) {
      return Fn::func_ptr()(std::forward<Args>(args)...);
    } else {
      return Fn{}(std::forward<Args>(args)...);
    }
  }
};

/// The function type of a registered kernel: a lambda or a TORCH_FN.
template <class Kernel, bool = c10::is_compile_time_function_pointer<Kernel>::value>
struct KernelSignature {
  using type = typename c10::guts::infer_function_traits_t<Kernel>::func_type;
};
template <class Kernel>
struct KernelSignature<Kernel, true> {
  using type = typename Kernel::FuncType;
};

/// The torch::Library of a MAIA_NATIVE_KERNELS block.
class NativeKernels {
 public:
  explicit NativeKernels(torch::Library& library) : library_(library) {}

  template <class Fn>
  NativeKernels& impl(const char* name, Fn&& fn) {
    using Kernel = std::decay_t<Fn>;
    constexpr bool kFunction = c10::is_compile_time_function_pointer<Kernel>::value;
    if constexpr (kFunction || (std::is_class_v<Kernel> && std::is_empty_v<Kernel> &&
                                std::is_default_constructible_v<Kernel>)) {
      using Signature = typename KernelSignature<Kernel>::type;
      using Wrapper = Routed<Kernel, Signature>;
      // One lambda type per registration: a lambda registered under two
      // names would route one of them to the wrong operator.
      TORCH_INTERNAL_ASSERT(Wrapper::name == nullptr || std::string(Wrapper::name) == name,
                            "maia: one kernel lambda registered as ", Wrapper::name, " and ",
                            name);
      Wrapper::name = name;
      Wrapper::complex_ok = computesComplex(name);
      library_.impl(name, c10::CompileTimeFunctionPointer<Signature, &Wrapper::call>());
    } else {
      library_.impl(name, std::forward<Fn>(fn));
    }
    return *this;
  }

 private:
  torch::Library& library_;
};

}  // namespace routing
}  // namespace torch_maia::ops

#define MAIA_NATIVE_KERNELS_IMPL(m, uid)                                          \
  static void C10_CONCATENATE(maia_native_kernels_, uid)(                         \
      ::torch_maia::ops::routing::NativeKernels & m);                             \
  TORCH_LIBRARY_IMPL(aten, PrivateUse1, library) {                                \
    ::torch_maia::ops::routing::NativeKernels kernels(library);                   \
    C10_CONCATENATE(maia_native_kernels_, uid)(kernels);                          \
  }                                                                               \
  static void C10_CONCATENATE(maia_native_kernels_, uid)(                         \
      ::torch_maia::ops::routing::NativeKernels & m)

/// TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) with dtype routing (see above).
#define MAIA_NATIVE_KERNELS(m) MAIA_NATIVE_KERNELS_IMPL(m, C10_UID)
