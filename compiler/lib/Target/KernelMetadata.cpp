//===- KernelMetadata.cpp - The metadata of a MAIA kernel binary ----------===//
//
// The driver launches a kernel knowing only what this JSON says: its symbol,
// grid rank and argument kinds, dtypes, ranks and static strides, and the
// CPU features the code needs. It is written from the kernel functions as
// parsed, where those facts are still in the types.
//
//===----------------------------------------------------------------------===//

#include "KernelMetadata.h"

#include "HostTarget.h"

#include "maia/Dialect/Maia/MaiaDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace mc = ::maia::compiler;

namespace {

constexpr llvm::StringLiteral kMetadataSymbol = "maia_metadata";
constexpr llvm::StringLiteral kMetadataSection = ".maia.meta";

} // namespace

LogicalResult mc::buildMetadata(ModuleOp module, const Target &target,
                                std::string &json) {
  SmallVector<func::FuncOp> kernels;
  for (Operation &op : module.getBody()->getOperations()) {
    auto func = dyn_cast<func::FuncOp>(op);
    if (!func)
      continue;
    if (mlir::maia::isKernel(func)) {
      kernels.push_back(func);
      continue;
    }
    if (func.isPublic() && !func.isExternal())
      return func.emitError("function '")
             << func.getSymName()
             << "' is public but not a kernel: mark it with the 'maia.kernel' "
                "attribute, or make it private if it is a helper";
  }
  if (kernels.empty())
    return module.emitError(
        "the input has no kernel: mark an entry function with the "
        "'maia.kernel' attribute (func.func @name(...) attributes "
        "{maia.kernel})");
  if (module.lookupSymbol(kMetadataSymbol))
    return module.lookupSymbol(kMetadataSymbol)->emitError("the symbol name '")
           << kMetadataSymbol << "' is reserved for the binary's metadata";

  llvm::raw_string_ostream os(json);
  llvm::json::OStream j(os);
  j.object([&] {
    j.attribute("format", "maia-kernel-binary");
    j.attribute("format_version", 1);
    j.attribute("compiler", getVersion());
    j.attributeObject("target", [&] {
      j.attribute("cpu", target.cpu);
      j.attributeArray("features", [&] {
        for (const std::string &feature : target.features)
          j.value(feature);
      });
    });
    j.attributeArray("kernels", [&] {
      for (func::FuncOp kernel : kernels) {
        j.object([&] {
          j.attribute("name", kernel.getSymName());
          j.attribute("symbol", kernel.getSymName());
          j.attribute("grid_rank", mlir::maia::getGridRank(kernel));
          j.attributeArray("args", [&] {
            for (Type type : kernel.getArgumentTypes()) {
              auto memref = dyn_cast<MemRefType>(type);
              if (!memref) {
                j.object([&] {
                  j.attribute("kind", "scalar");
                  j.attribute("dtype", mlir::maia::getDtypeName(type));
                });
                continue;
              }
              SmallVector<int64_t> strides;
              int64_t offset;
              // The verifier guarantees a strided layout.
              (void)getStridesAndOffset(memref, strides, offset);
              j.object([&] {
                j.attribute("kind", "memref");
                j.attribute("dtype",
                            mlir::maia::getDtypeName(memref.getElementType()));
                j.attribute("rank", memref.getRank());
                j.attributeArray("strides", [&] {
                  for (int64_t stride : strides) {
                    if (ShapedType::isDynamic(stride))
                      j.value(nullptr);
                    else
                      j.value(stride);
                  }
                });
              });
            }
          });
        });
      }
    });
  });
  return success();
}

void mc::addMetadataGlobal(llvm::Module &module, llvm::StringRef json) {
  llvm::Constant *text = llvm::ConstantDataArray::getString(
      module.getContext(), json, /*AddNull=*/true);
  auto *global = new llvm::GlobalVariable(
      module, text->getType(), /*isConstant=*/true,
      llvm::GlobalValue::ExternalLinkage, text, kMetadataSymbol);
  global->setSection(kMetadataSection);
  global->setAlignment(llvm::Align(1));
}
