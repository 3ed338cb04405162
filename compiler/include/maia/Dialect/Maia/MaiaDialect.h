//===- MaiaDialect.h - The maia dialect -------------------------*- C++ -*-===//

#ifndef MAIA_DIALECT_MAIA_MAIADIALECT_H
#define MAIA_DIALECT_MAIA_MAIADIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "maia/Dialect/Maia/MaiaDialect.h.inc"

#define GET_OP_CLASSES
#include "maia/Dialect/Maia/MaiaOps.h.inc"

namespace mlir::maia {

/// Grid dimensions a kernel may use.
constexpr int64_t kMaxGridRank = 3;
/// Ranks of memref arguments the driver accepts (MAIA_MAX_RANK).
constexpr int64_t kMaxMemRefRank = 8;

/// True if `op` is a function marked `maia.kernel`.
bool isKernel(Operation *op);

/// The metadata name of a kernel argument's element type ("f32", "i64",
/// "index", ...), or an empty string if kernels do not support the type.
llvm::StringRef getDtypeName(Type elementType);

/// The number of grid dimensions `kernel` uses: its `maia.grid_rank`, or one
/// more than the highest dimension its grid queries read (at least 1).
int64_t getGridRank(FunctionOpInterface kernel);

} // namespace mlir::maia

#endif // MAIA_DIALECT_MAIA_MAIADIALECT_H
