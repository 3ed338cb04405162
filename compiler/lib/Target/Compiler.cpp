//===- Compiler.cpp - MLIR text to MAIA kernel binaries -------------------===//
//
// The compile driver: parse -> lower (maia pipeline) -> translate to LLVM IR
// -> optimize -> codegen for the target CPU -> link. The metadata JSON is
// written from the parsed kernels and embedded before codegen, so the linked
// shared object carries it. Each step that is more than a call into MLIR or
// LLVM lives in its own file: HostTarget.cpp (target machines),
// ParseSandbox.cpp (the forked first parse), KernelMetadata.cpp (the JSON),
// Linker.cpp (lld in a forked child).
//
//===----------------------------------------------------------------------===//

#include "maia/Compiler/Compiler.h"

#include "HostTarget.h"
#include "KernelMetadata.h"
#include "Linker.h"
#include "Ukernels.h"
#include "ParseSandbox.h"

#include "maia/Pipeline/Pipeline.h"
#include "BuildId.h"  // generated: MAIA_COMPILER_BUILD_ID

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <chrono>

using namespace mlir;
namespace mc = ::maia::compiler;

namespace {

/// Records the wall time of each phase into a result.
class PhaseTimer {
public:
  explicit PhaseTimer(std::vector<mc::PhaseTime> &phases) : phases(phases) {}
  void finish(const char *name) {
    auto now = std::chrono::steady_clock::now();
    phases.push_back(
        {name, std::chrono::duration<double, std::milli>(now - start).count()});
    start = now;
  }

private:
  std::vector<mc::PhaseTime> &phases;
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
};

} // namespace

//===----------------------------------------------------------------------===//
// Compiler::Impl
//===----------------------------------------------------------------------===//

struct mc::Compiler::Impl {
  Impl() {
    initializeLLVMOnce();
    resetContext();
  }

  void resetContext() {
    DialectRegistry registry;
    mlir::maia::registerMaiaKernelDialects(registry);
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    // Kernels are small: threads would only add hand-offs on 2 vCPUs.
    context = std::make_unique<MLIRContext>(registry,
                                            MLIRContext::Threading::DISABLED);
    context->loadAllAvailableDialects();
    // Diagnostics quote the source line; a dump of the op adds only noise.
    context->printOpOnDiagnostic(false);
    compilationsInContext = 0;
  }

  CompileResult compile(std::string_view source, const CompileOptions &options);

  std::unique_ptr<MLIRContext> context;
  unsigned compilationsInContext = 0;
  TargetCache targets;
  ParseSandbox sandbox;
  Linker linker;
};

//===----------------------------------------------------------------------===//
// Lowering checks and the LLVM pipeline
//===----------------------------------------------------------------------===//

namespace {

/// Fails, naming the first operation the pipeline left outside the LLVM
/// dialect (an op or type the MAIA pipeline cannot lower).
LogicalResult checkFullyLowered(ModuleOp module) {
  Operation *leftover = nullptr;
  module.walk([&](Operation *op) {
    if (op == module.getOperation() ||
        isa<LLVM::LLVMDialect>(op->getDialect()))
      return WalkResult::advance();
    leftover = op;
    return WalkResult::interrupt();
  });
  if (!leftover)
    return success();
  auto kernel = leftover->getParentOfType<LLVM::LLVMFuncOp>();
  InFlightDiagnostic diag = leftover->emitError("operation '")
                            << leftover->getName()
                            << "' was not lowered to the LLVM dialect";
  if (kernel)
    diag << " (in function '" << kernel.getName() << "')";
  diag << ": the kernel uses an operation or type the MAIA pipeline cannot "
          "lower";
  return failure();
}

bool runLLVMPipeline(llvm::Module &module, llvm::TargetMachine &machine,
                     int optLevel) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  static const llvm::OptimizationLevel levels[] = {
      llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1,
      llvm::OptimizationLevel::O2, llvm::OptimizationLevel::O3};
  llvm::ModulePassManager passes =
      optLevel == 0 ? builder.buildO0DefaultPipeline(levels[0])
                    : builder.buildPerModuleDefaultPipeline(levels[optLevel]);
  passes.run(module, mam);
  return true;
}

} // namespace

//===----------------------------------------------------------------------===//
// compile
//===----------------------------------------------------------------------===//

mc::CompileResult mc::Compiler::Impl::compile(std::string_view source,
                                              const CompileOptions &options) {
  CompileResult result;
  PhaseTimer timer(result.phases);
  llvm::raw_string_ostream diagnostics(result.diagnostics);
  auto fail = [&](llvm::StringRef message) {
    if (!message.empty())
      diagnostics << "error: " << message << "\n";
    return std::move(result);
  };

  std::string targetError;
  const Target *target = targets.getTarget(options, targetError);
  if (!target)
    return fail(targetError);

  // A long-lived worker must not grow forever: the context keeps every
  // attribute and type it ever saw.
  if (++compilationsInContext > 256)
    resetContext();

  if (llvm::StringRef(source.data(), source.size()).trim().empty())
    return fail("the input is empty: expected MLIR with a 'maia.kernel' "
                "function");

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(source.data(), source.size()), options.sourceName),
      llvm::SMLoc());
  // Invalid input can crash MLIR 19's parser (ParseSandbox.cpp says how):
  // only input a child process parsed cleanly is parsed here.
  if (!sandbox.preparse(sourceMgr, *context, diagnostics))
    return fail("");
  SourceMgrDiagnosticHandler handler(sourceMgr, context.get(), diagnostics);

  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(context.get()));
  if (!module)
    return fail("");
  std::string metadata;
  if (failed(buildMetadata(*module, *target, metadata)))
    return fail("");
  result.metadata = metadata;
  timer.finish("parse");

  PassManager pm(context.get());
  mlir::maia::buildLowerToLLVMPipeline(pm);
  if (failed(pm.run(*module)))
    return fail("lowering to the LLVM dialect failed");
  if (failed(checkFullyLowered(*module)))
    return fail("lowering to the LLVM dialect failed");
  timer.finish("lower");
  if (options.emit == EmitKind::LoweredMLIR) {
    llvm::raw_string_ostream os(result.output);
    module->print(os);
    result.succeeded = true;
    return result;
  }

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, options.sourceName);
  if (!llvmModule)
    return fail("translation to LLVM IR failed");
  llvmModule->setTargetTriple(targets.getTriple());
  llvmModule->setDataLayout(target->machine->createDataLayout());
  addMetadataGlobal(*llvmModule, metadata);
  timer.finish("translate");

  runLLVMPipeline(*llvmModule, *target->machine, options.optLevel);
  timer.finish("optimize");
  if (options.emit == EmitKind::LLVMIR) {
    llvm::raw_string_ostream os(result.output);
    llvmModule->print(os, nullptr);
    result.succeeded = true;
    return result;
  }

  llvm::SmallString<0> code;
  {
    llvm::raw_svector_ostream os(code);
    llvm::legacy::PassManager codegen;
    auto fileType = options.emit == EmitKind::Assembly
                        ? llvm::CodeGenFileType::AssemblyFile
                        : llvm::CodeGenFileType::ObjectFile;
    if (target->machine->addPassesToEmitFile(codegen, os, nullptr, fileType))
      return fail("the target cannot emit this file type");
    codegen.run(*llvmModule);
  }
  timer.finish("codegen");
  if (options.emit != EmitKind::Binary) {
    result.output = code.str().str();
    result.succeeded = true;
    return result;
  }

  std::string linkError;
  if (!linker.link(code.str(), findUkernelLibrary(target->features),
                   result.output, linkError))
    return fail(linkError);
  timer.finish("link");
  result.succeeded = true;
  return result;
}

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

mc::Compiler::Compiler() : impl(std::make_unique<Impl>()) {}
mc::Compiler::~Compiler() = default;

mc::CompileResult mc::Compiler::compile(std::string_view source,
                                        const CompileOptions &options) {
  CompileResult result;
  llvm::CrashRecoveryContext recovery;
  bool completed =
      recovery.RunSafely([&] { result = impl->compile(source, options); });
  if (completed)
    return result;
  // The crash may have left the context inconsistent: abandon it (leak
  // rather than run destructors over broken state) and start afresh.
  (void)impl->context.release();
  impl->targets.clear();
  impl->resetContext();
  result = CompileResult();
  result.diagnostics = "error: internal compiler error: the compiler crashed "
                       "while compiling " +
                       options.sourceName +
                       " (please report it with the input)\n";
  return result;
}

const char *mc::getVersion() {
  return MAIA_COMPILER_VERSION " build " MAIA_COMPILER_BUILD_ID;
}

bool mc::parseEmitKind(std::string_view name, EmitKind &out) {
  static const std::pair<std::string_view, EmitKind> kinds[] = {
      {"binary", EmitKind::Binary}, {"mlir-lowered", EmitKind::LoweredMLIR},
      {"llvm", EmitKind::LLVMIR},   {"asm", EmitKind::Assembly},
      {"obj", EmitKind::Object}};
  for (const auto &[spelling, kind] : kinds) {
    if (spelling == name) {
      out = kind;
      return true;
    }
  }
  return false;
}
