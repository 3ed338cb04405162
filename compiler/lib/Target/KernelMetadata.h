//===- KernelMetadata.h - The metadata of a MAIA kernel binary --*- C++ -*-===//
//
// Private to libMaiaCompiler: the JSON that describes a binary's kernels to
// the driver, and its embedding in the LLVM module (docs/compiler.md, "ABI
// and binary format").
//
//===----------------------------------------------------------------------===//

#ifndef MAIA_LIB_TARGET_KERNELMETADATA_H
#define MAIA_LIB_TARGET_KERNELMETADATA_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace maia::compiler {

struct Target;

/// Checks the module's shape (at least one kernel, no public non-kernel
/// function, the metadata symbol free) and writes the metadata JSON of its
/// kernels for `target`. Must run before lowering, which replaces the
/// kernels' argument types, the metadata's source, with the launch ABI's.
mlir::LogicalResult buildMetadata(mlir::ModuleOp module, const Target &target,
                                  std::string &json);

/// Embeds `json` as a global of its own section, which the driver reads from
/// the linked binary; it is exported too, as the binary format requires.
void addMetadataGlobal(llvm::Module &module, llvm::StringRef json);

} // namespace maia::compiler

#endif // MAIA_LIB_TARGET_KERNELMETADATA_H
