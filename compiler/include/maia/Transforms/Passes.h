//===- Passes.h - maia passes -----------------------------------*- C++ -*-===//

#ifndef MAIA_TRANSFORMS_PASSES_H
#define MAIA_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class ModuleOp;
namespace LLVM {
class LLVMDialect;
} // namespace LLVM
namespace arith {
class ArithDialect;
} // namespace arith
namespace func {
class FuncDialect;
} // namespace func
namespace math {
class MathDialect;
} // namespace math
namespace scf {
class SCFDialect;
} // namespace scf
namespace vector {
class VectorDialect;
} // namespace vector
} // namespace mlir

namespace mlir::maia {

#define GEN_PASS_DECL
#include "maia/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "maia/Transforms/Passes.h.inc"

} // namespace mlir::maia

#endif // MAIA_TRANSFORMS_PASSES_H
