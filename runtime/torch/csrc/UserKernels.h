// User kernel binaries: a .maiabin compiled ahead of time (maia-compile)
// loaded into torch and launched on maia tensors on the current stream.
#pragma once

#include <maia/runtime.h>

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace torch_maia {

/// A loaded kernel binary; unloaded when the last reference goes (queued
/// launches keep the code mapped on their own).
class UserModule {
 public:
  explicit UserModule(const std::string& path);
  ~UserModule();
  UserModule(const UserModule&) = delete;
  UserModule& operator=(const UserModule&) = delete;

  const std::string& path() const { return path_; }
  std::string metadata() const;
  std::vector<std::string> kernelNames() const;
  /// The driver handle of kernel name (valid while this module lives).
  maiaKernel_t kernel(const std::string& name) const;

  /// An argument: a maia tensor (a memref), or an int/float scalar that is
  /// converted to the scalar type the kernel declares.
  using Arg = std::variant<at::Tensor, int64_t, double>;

  /// Launches kernel name over grid on the current stream of the tensors'
  /// device. The driver checks everything against the binary's metadata.
  void launch(const std::string& name, const std::vector<int64_t>& grid,
              const std::vector<Arg>& args) const;

 private:
  std::string path_;
  maiaModule_t module_ = nullptr;
};

}  // namespace torch_maia
