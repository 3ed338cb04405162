//===- Pipeline.cpp - The maia lowering pipeline --------------------------===//
//
// The one place where the passes from maia kernels to the LLVM dialect are
// put in order.
//
//===----------------------------------------------------------------------===//

#include "maia/Pipeline/Pipeline.h"

#include "maia/Dialect/Maia/MaiaDialect.h"
#include "maia/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::maia::buildLowerToLLVMPipeline(OpPassManager &pm,
                                          const LowerToLLVMOptions &options) {
  // Clean up what the front end wrote.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // MAIA specifics first, while kernels are still recognizable.
  pm.addPass(createMaiaLowerKernelABI());
  pm.addPass(createMaiaApproximateMath());
  // float64 math has no approximation: libm calls (LLVM has no intrinsic
  // for most of these functions).
  pm.addPass(createMaiaMathToLibm());
  // Structured control flow and n-D vector transfers to loops and branches.
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Strided views become plain address arithmetic (it emits affine.apply).
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // bf16 conversions in integer arithmetic (PyTorch's rounding, bit for
  // bit): the x86 conversion instruction (AVX512-BF16) flushes subnormals.
  arith::ArithExpandOpsPassOptions expandOptions;
  expandOptions.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expandOptions));
  // Everything to the LLVM dialect.
  ConvertVectorToLLVMPassOptions vectorOptions;
  vectorOptions.reassociateFPReductions = options.reassociateFPReductions;
  pm.addPass(createConvertVectorToLLVMPass(vectorOptions));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // Streaming stores need aligned addresses: test them (vector.store
  // {nontemporal} lowers with the element's alignment only).
  pm.addPass(createMaiaAlignNontemporalStores());
  pm.addPass(createCanonicalizerPass());
}

void mlir::maia::registerMaiaPassesAndPipelines() {
  registerMaiaPasses();
  PassPipelineRegistration<>(
      "maia-lower-to-llvm",
      "Lower maia kernels to the LLVM dialect (the whole maia pipeline)",
      [](OpPassManager &pm) { buildLowerToLLVMPipeline(pm); });
}

void mlir::maia::registerMaiaKernelDialects(DialectRegistry &registry) {
  registry.insert<maia::MaiaDialect, affine::AffineDialect,
                  arith::ArithDialect, cf::ControlFlowDialect,
                  func::FuncDialect, index::IndexDialect, LLVM::LLVMDialect,
                  math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
                  vector::VectorDialect>();
}
