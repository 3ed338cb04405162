//===- AlignNontemporalStores.cpp - aligned streaming stores --------------===//
//
// Implements maia-align-nontemporal-stores: see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "maia/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::maia {
#define GEN_PASS_DEF_MAIAALIGNNONTEMPORALSTORES
#include "maia/Transforms/Passes.h.inc"
} // namespace mlir::maia

using namespace mlir;

namespace {

/// The widest streaming store writes a cache line.
constexpr uint64_t kMaxStreamingAlignment = 64;

/// The alignment that makes a nontemporal store of `type` streaming store
/// instructions, or 0 when it cannot be (not a fixed 1-D vector of a
/// power-of-two size of at least 16 bytes, the narrowest vector register).
uint64_t streamingAlignment(Type type) {
  auto vector = dyn_cast<VectorType>(type);
  if (!vector || vector.isScalable() || vector.getRank() != 1 ||
      !vector.getElementType().isIntOrFloat())
    return 0;
  uint64_t bits =
      vector.getNumElements() * vector.getElementType().getIntOrFloatBitWidth();
  if (bits % 8 != 0 || bits / 8 < 16 || !llvm::isPowerOf2_64(bits / 8))
    return 0;
  return std::min(bits / 8, kMaxStreamingAlignment);
}

/// Replaces `store` by a test of its address, an aligned streaming store
/// and an ordinary store.
void guardStore(LLVM::StoreOp store, uint64_t alignment) {
  Location loc = store.getLoc();
  Block *before = store->getBlock();
  Block *next = before->splitBlock(store->getNextNode());
  OpBuilder builder(store);
  auto i64 = builder.getI64Type();
  Value address =
      builder.create<LLVM::PtrToIntOp>(loc, i64, store.getAddr());
  Value mask = builder.create<LLVM::ConstantOp>(
      loc, i64, builder.getI64IntegerAttr(alignment - 1));
  Value zero =
      builder.create<LLVM::ConstantOp>(loc, i64, builder.getI64IntegerAttr(0));
  Value low = builder.create<LLVM::AndOp>(loc, address, mask);
  Value aligned =
      builder.create<LLVM::ICmpOp>(loc, LLVM::ICmpPredicate::eq, low, zero);

  Block *plain = builder.createBlock(next);
  auto ordinary = cast<LLVM::StoreOp>(builder.clone(*store));
  ordinary.setNontemporal(false);
  builder.create<LLVM::BrOp>(loc, next);

  Block *streaming = builder.createBlock(plain);
  store->moveBefore(streaming, streaming->end());
  store.setAlignment(alignment);
  builder.setInsertionPointToEnd(streaming);
  builder.create<LLVM::BrOp>(loc, next);

  builder.setInsertionPointToEnd(before);
  builder.create<LLVM::CondBrOp>(loc, aligned, streaming, plain);
}

/// Ends every return path of `func` with a store fence. Streaming stores
/// are weakly ordered: without the fence, a program could be reported
/// complete (and its output read by another core) while some of its lines
/// still sit in write-combining buffers. The eager kernels and the driver's
/// streaming copies fence the same way.
void fenceReturns(LLVM::LLVMFuncOp func) {
  func.walk([](LLVM::ReturnOp ret) {
    OpBuilder builder(ret);
    builder.create<LLVM::CallIntrinsicOp>(ret.getLoc(), TypeRange{},
                                          "llvm.x86.sse.sfence", ValueRange{});
  });
}

struct AlignNontemporalStoresPass
    : public maia::impl::MaiaAlignNontemporalStoresBase<
          AlignNontemporalStoresPass> {
  void runOnOperation() override {
    SmallVector<std::pair<LLVM::StoreOp, uint64_t>> stores;
    llvm::SetVector<LLVM::LLVMFuncOp> streamingFuncs;
    getOperation()->walk([&](LLVM::StoreOp store) {
      if (!store.getNontemporal())
        return;
      if (auto func = store->getParentOfType<LLVM::LLVMFuncOp>())
        streamingFuncs.insert(func);
      uint64_t alignment = streamingAlignment(store.getValue().getType());
      if (alignment != 0 && store.getAlignment().value_or(0) < alignment)
        stores.emplace_back(store, alignment);
    });
    for (auto [store, alignment] : stores)
      guardStore(store, alignment);
    for (LLVM::LLVMFuncOp func : streamingFuncs)
      fenceReturns(func);
  }
};

} // namespace
