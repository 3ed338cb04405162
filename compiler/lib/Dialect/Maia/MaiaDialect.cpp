//===- MaiaDialect.cpp - The maia dialect ---------------------------------===//

#include "maia/Dialect/Maia/MaiaDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::maia;

#include "maia/Dialect/Maia/MaiaDialect.cpp.inc"

void MaiaDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "maia/Dialect/Maia/MaiaOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

bool mlir::maia::isKernel(Operation *op) {
  return op && isa<FunctionOpInterface>(op) &&
         op->hasAttr(MaiaDialect::getKernelAttrName());
}

StringRef mlir::maia::getDtypeName(Type type) {
  if (type.isIndex())
    return "index";
  if (auto intType = dyn_cast<IntegerType>(type)) {
    if (intType.isUnsigned())
      return intType.getWidth() == 8 ? "ui8" : "";
    if (intType.isSigned())
      return "";
    switch (intType.getWidth()) {
    case 1:
      return "i1";
    case 8:
      return "i8";
    case 16:
      return "i16";
    case 32:
      return "i32";
    case 64:
      return "i64";
    default:
      return "";
    }
  }
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (type.isF32())
    return "f32";
  if (type.isF64())
    return "f64";
  return "";
}

namespace {
template <typename OpTy>
void updateMaxDim(FunctionOpInterface kernel, int64_t &maxDim) {
  kernel->walk([&](OpTy op) {
    maxDim = std::max<int64_t>(maxDim, op.getDim());
  });
}
} // namespace

int64_t mlir::maia::getGridRank(FunctionOpInterface kernel) {
  if (auto rank = kernel->getAttrOfType<IntegerAttr>(
          MaiaDialect::getGridRankAttrName()))
    return rank.getInt();
  int64_t maxDim = 0;
  updateMaxDim<ProgramIdOp>(kernel, maxDim);
  updateMaxDim<NumProgramsOp>(kernel, maxDim);
  return std::clamp<int64_t>(maxDim + 1, 1, kMaxGridRank);
}

//===----------------------------------------------------------------------===//
// Kernel attribute verification
//===----------------------------------------------------------------------===//

/// Checks one kernel argument type; emits the error on `kernel`.
static LogicalResult verifyKernelArgument(FunctionOpInterface kernel,
                                          unsigned index, Type type) {
  auto fail = [&]() {
    return kernel->emitOpError("kernel argument #")
           << index << " of type " << type << " ";
  };
  if (auto memref = dyn_cast<MemRefType>(type)) {
    if (getDtypeName(memref.getElementType()).empty())
      return fail() << "has an unsupported element type (supported: i1, i8, "
                       "i16, i32, i64, ui8, f16, bf16, f32, f64, index)";
    if (memref.getRank() > kMaxMemRefRank)
      return fail() << "has rank " << memref.getRank() << "; at most "
                    << kMaxMemRefRank << " is supported";
    SmallVector<int64_t> strides;
    int64_t offset = 0;
    if (failed(getStridesAndOffset(memref, strides, offset)))
      return fail() << "does not have a strided layout";
    // The driver passes every view with its offset folded into the aligned
    // pointer (descriptor offset 0): a static offset other than 0 would
    // silently address other elements.
    if (!ShapedType::isDynamic(offset) && offset != 0)
      return fail() << "has the static offset " << offset
                    << "; kernel arguments take offset 0 or a dynamic offset";
    if (memref.getMemorySpace())
      return fail() << "is in memory space " << memref.getMemorySpace()
                    << "; kernels take device memory (no memory space)";
    return success();
  }
  if (isa<BaseMemRefType>(type))
    return fail() << "is unranked; kernels take ranked memrefs";
  StringRef dtype = getDtypeName(type);
  if (dtype.empty() || dtype == "ui8")
    return fail() << "is not a supported kernel argument (a memref, or a "
                     "scalar i1, i8, i16, i32, i64, f16, bf16, f32, f64 or "
                     "index)";
  return success();
}

static LogicalResult verifyKernel(Operation *op) {
  auto kernel = dyn_cast<FunctionOpInterface>(op);
  if (!kernel)
    return op->emitError("'maia.kernel' is only valid on functions");
  if (kernel.isExternal())
    return op->emitOpError("kernel must have a body");
  if (auto symbol = dyn_cast<SymbolOpInterface>(op); symbol && !symbol.isPublic())
    return op->emitOpError("kernel must be public: it is an entry point");
  if (!kernel.getResultTypes().empty())
    return op->emitOpError("kernel must not return values (it returns ")
           << kernel.getResultTypes().size() << ")";
  for (auto [index, type] : llvm::enumerate(kernel.getArgumentTypes()))
    if (failed(verifyKernelArgument(kernel, index, type)))
      return failure();
  return success();
}

LogicalResult MaiaDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  if (name == getKernelAttrName()) {
    if (!isa<UnitAttr>(attribute.getValue()))
      return op->emitError("'maia.kernel' must be a unit attribute");
    return verifyKernel(op);
  }
  if (name == getGridRankAttrName()) {
    auto rank = dyn_cast<IntegerAttr>(attribute.getValue());
    if (!rank || rank.getInt() < 1 || rank.getInt() > kMaxGridRank)
      return op->emitError("'maia.grid_rank' must be an integer in 1..")
             << kMaxGridRank;
    if (!op->hasAttr(getKernelAttrName()))
      return op->emitError(
          "'maia.grid_rank' is only valid on a 'maia.kernel' function");
    return success();
  }
  if (name == getLibmCallAttrName()) {
    if (!isa<UnitAttr>(attribute.getValue()))
      return op->emitError("'maia.libm' must be a unit attribute");
    if (op->getDialect() == nullptr ||
        op->getDialect()->getNamespace() != "math")
      return op->emitError("'maia.libm' is only valid on math operations");
    return success();
  }
  return op->emitError("unknown maia attribute '") << name << "'";
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

/// Grid queries read the grid of the kernel they run in.
static LogicalResult verifyGridQuery(Operation *op, int64_t dim) {
  if (dim < 0 || dim >= kMaxGridRank)
    return op->emitOpError("dimension ")
           << dim << " is out of range: the grid has dimensions 0, 1 and 2";
  auto kernel = op->getParentOfType<FunctionOpInterface>();
  if (!isKernel(kernel))
    return op->emitOpError("must be inside a 'maia.kernel' function");
  if (auto rank = kernel->getAttrOfType<IntegerAttr>(
          MaiaDialect::getGridRankAttrName());
      rank && dim >= rank.getInt())
    return op->emitOpError("dimension ")
           << dim << " is not below the kernel's maia.grid_rank "
           << rank.getInt();
  return success();
}

LogicalResult ProgramIdOp::verify() { return verifyGridQuery(*this, getDim()); }

LogicalResult NumProgramsOp::verify() {
  return verifyGridQuery(*this, getDim());
}

#define GET_OP_CLASSES
#include "maia/Dialect/Maia/MaiaOps.cpp.inc"
