//===- LowerKernelABI.cpp - maia.kernel functions to entry points ---------===//
//
// Implements maia-lower-kernel-abi: see Passes.td for the contract.
//
//===----------------------------------------------------------------------===//

#include "maia/Dialect/Maia/MaiaDialect.h"
#include "maia/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::maia {
#define GEN_PASS_DEF_MAIALOWERKERNELABI
#include "maia/Transforms/Passes.h.inc"
} // namespace mlir::maia

using namespace mlir;
using namespace mlir::maia;

namespace {

/// The LLVM struct of an MLIR memref descriptor with 64-bit indices:
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
Type getDescriptorType(MLIRContext *ctx, int64_t rank) {
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  SmallVector<Type, 5> fields = {ptr, ptr, i64};
  if (rank > 0) {
    auto array = LLVM::LLVMArrayType::get(i64, rank);
    fields.append({array, array});
  }
  return LLVM::LLVMStructType::getLiteral(ctx, fields);
}

/// Loads the value of kernel argument `index` of type `type` from the
/// `void* const* args` array, as a value of `type`.
Value loadArgument(OpBuilder &b, Location loc, Value args, unsigned index,
                   Type type) {
  MLIRContext *ctx = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Value slot = b.create<LLVM::GEPOp>(loc, ptr, ptr, args,
                                     ArrayRef<LLVM::GEPArg>{int32_t(index)});
  Value address = b.create<LLVM::LoadOp>(loc, ptr, slot);
  if (auto memref = dyn_cast<MemRefType>(type)) {
    Type descriptorType = getDescriptorType(ctx, memref.getRank());
    Value descriptor = b.create<LLVM::LoadOp>(loc, descriptorType, address);
    return b.create<UnrealizedConversionCastOp>(loc, type, descriptor)
        .getResult(0);
  }
  if (type.isIndex()) {
    Value value = b.create<LLVM::LoadOp>(loc, b.getI64Type(), address);
    return b.create<arith::IndexCastOp>(loc, type, value);
  }
  if (type.isInteger(1)) {
    // A bool is one byte in memory; any non-zero byte is true.
    Value byte = b.create<LLVM::LoadOp>(loc, b.getI8Type(), address);
    Value zero = b.create<arith::ConstantIntOp>(loc, 0, 8);
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, byte, zero);
  }
  return b.create<LLVM::LoadOp>(loc, type, address);
}

/// Loads grid->program_id[dim] (or num_programs) as an index.
Value loadGridField(OpBuilder &b, Location loc, Value grid, bool numPrograms,
                    int64_t dim) {
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  // maia_grid_t is int64_t program_id[3], num_programs[3]: six i64 in a row.
  int32_t field = int32_t(dim + (numPrograms ? kMaxGridRank : 0));
  Value address = b.create<LLVM::GEPOp>(loc, ptr, b.getI64Type(), grid,
                                        ArrayRef<LLVM::GEPArg>{field});
  Value value = b.create<LLVM::LoadOp>(loc, b.getI64Type(), address);
  return b.create<arith::IndexCastOp>(loc, b.getIndexType(), value);
}

LogicalResult lowerKernel(func::FuncOp kernel) {
  MLIRContext *ctx = kernel.getContext();
  Location loc = kernel.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Block &entry = kernel.front();
  unsigned numArgs = entry.getNumArguments();

  Value args = entry.addArgument(ptr, loc);
  Value grid = entry.addArgument(ptr, loc);
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  for (unsigned i = 0; i < numArgs; ++i) {
    BlockArgument old = entry.getArgument(i);
    // Unused arguments are not loaded: the driver still passes them.
    if (old.use_empty())
      continue;
    old.replaceAllUsesWith(
        loadArgument(b, old.getLoc(), args, i, old.getType()));
  }

  // One load per grid field the kernel reads, at entry: program_id[0..2]
  // then num_programs[0..2]. The queries are erased only after all loads
  // exist: the builder's insertion point may be the first of them.
  SmallVector<Operation *> queries;
  kernel.walk([&](Operation *op) {
    if (isa<ProgramIdOp, NumProgramsOp>(op))
      queries.push_back(op);
  });
  Value fields[2 * kMaxGridRank];
  for (Operation *op : queries) {
    bool numPrograms = isa<NumProgramsOp>(op);
    int64_t dim = numPrograms ? int64_t(cast<NumProgramsOp>(op).getDim())
                              : int64_t(cast<ProgramIdOp>(op).getDim());
    Value &value = fields[dim + (numPrograms ? kMaxGridRank : 0)];
    if (!value)
      value = loadGridField(b, op->getLoc(), grid, numPrograms, dim);
    op->getResult(0).replaceAllUsesWith(value);
  }
  for (Operation *op : queries)
    op->erase();

  BitVector oldArgs(entry.getNumArguments());
  oldArgs.set(0, numArgs);
  entry.eraseArguments(oldArgs);
  kernel.setFunctionType(FunctionType::get(ctx, {ptr, ptr}, {}));
  kernel.removeArgAttrsAttr();
  kernel.removeResAttrsAttr();
  kernel->removeAttr(MaiaDialect::getKernelAttrName());
  kernel->removeAttr(MaiaDialect::getGridRankAttrName());
  return success();
}

struct LowerKernelABIPass
    : public maia::impl::MaiaLowerKernelABIBase<LowerKernelABIPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    for (auto func : module.getOps<func::FuncOp>())
      if (isKernel(func))
        kernels.push_back(func);
    for (func::FuncOp kernel : kernels) {
      if (!SymbolTable::symbolKnownUseEmpty(kernel, module)) {
        kernel.emitOpError("kernel is referenced in the module; kernels are "
                           "entry points that only the driver calls");
        return signalPassFailure();
      }
      if (failed(lowerKernel(kernel)))
        return signalPassFailure();
    }
    // Grid queries outside kernels have no grid to read.
    WalkResult stray = module.walk([](Operation *op) {
      if (!isa<ProgramIdOp, NumProgramsOp>(op))
        return WalkResult::advance();
      op->emitOpError("is not inside a 'maia.kernel' function");
      return WalkResult::interrupt();
    });
    if (stray.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
