//===- Compiler.cpp - MLIR text to MAIA kernel binaries -------------------===//
//
// Parse -> lower (maia pipeline) -> translate to LLVM IR -> optimize ->
// codegen for the target CPU -> link in process with lld. The metadata JSON
// is embedded as the global `maia_metadata` in section `.maia.meta` before
// codegen, so the linked shared object exports it and carries the section.
//
//===----------------------------------------------------------------------===//

#include "maia/Compiler/Compiler.h"

#include "maia/Dialect/Maia/MaiaDialect.h"
#include "maia/Pipeline/Pipeline.h"
#include "BuildId.h"  // generated: MAIA_COMPILER_BUILD_ID

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "lld/Common/Driver.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <map>
#include <mutex>
#include <set>

LLD_HAS_DRIVER(elf)

using namespace mlir;
namespace mc = ::maia::compiler;

namespace {

constexpr llvm::StringLiteral kMetadataSymbol = "maia_metadata";
constexpr llvm::StringLiteral kMetadataSection = ".maia.meta";
/// Last byte a preparse child sends after its diagnostics.
constexpr char kPreparseSucceeded = '\x01';
constexpr char kPreparseFailed = '\x02';

void initializeLLVMOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::CrashRecoveryContext::Enable();
  });
}

/// The ISA feature names LLVM knows for this architecture (what host
/// detection reports, enabled or not); tuning flags are not among them.
const std::set<std::string> &getISAFeatureNames() {
  static const std::set<std::string> names = [] {
    std::set<std::string> result;
    for (const auto &entry : llvm::sys::getHostCPUFeatures())
      result.insert(entry.first().str());
    return result;
  }();
  return names;
}

std::string getHostFeatureString() {
  std::string features;
  for (const auto &entry : llvm::sys::getHostCPUFeatures()) {
    features += features.empty() ? "" : ",";
    features += (entry.second ? "+" : "-") + entry.first().str();
  }
  return features;
}

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

/// A target machine and what gets recorded about it in binaries.
struct Target {
  std::unique_ptr<llvm::TargetMachine> machine;
  std::string cpu;
  std::vector<std::string> features;
};

} // namespace

//===----------------------------------------------------------------------===//
// Compiler::Impl
//===----------------------------------------------------------------------===//

struct mc::Compiler::Impl {
  Impl() {
    initializeLLVMOnce();
    triple = llvm::sys::getProcessTriple();
    resetContext();
  }

  ~Impl() {
    reapChildren(/*wait=*/true);
    if (!tempDir.empty())
      llvm::sys::fs::remove_directories(tempDir);
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

  /// The (cached) target machine for the options; null with `error` set.
  const Target *getTarget(const CompileOptions &options, std::string &error);

  /// Parses in a forked child; false (with the diagnostics) if that fails.
  bool preparse(llvm::SourceMgr &sourceMgr, llvm::raw_ostream &diagnostics);
  /// Collects exited preparse children (all of them if `wait`).
  void reapChildren(bool wait);

  /// Links `object` into a shared object; returns false with `error` set.
  bool link(llvm::StringRef object, std::string &binary, std::string &error);

  std::unique_ptr<MLIRContext> context;
  unsigned compilationsInContext = 0;
  std::string triple;
  std::map<std::string, Target> targets;
  std::string tempDir;
  unsigned linkCounter = 0;
  bool lldUsable = true;
  std::vector<pid_t> children;
};

const Target *mc::Compiler::Impl::getTarget(const CompileOptions &options,
                                            std::string &error) {
  if (options.optLevel < 0 || options.optLevel > 3) {
    error = "optimization level " + std::to_string(options.optLevel) +
            " is not in 0..3";
    return nullptr;
  }
  std::string key = options.targetCPU + "|" + options.targetFeatures + "|" +
                    std::to_string(options.optLevel);
  if (auto it = targets.find(key); it != targets.end())
    return &it->second;

  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target) {
    error = "no LLVM target for " + triple + ": " + lookupError;
    return nullptr;
  }
  bool host = options.targetCPU.empty() || options.targetCPU == "host";
  std::string cpu = host ? llvm::sys::getHostCPUName().str() : options.targetCPU;

  // Validate names up front: LLVM only warns on stderr and ignores them.
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!info->isCPUStringValid(cpu)) {
    error = "unknown target CPU '" + cpu + "' for " + triple;
    return nullptr;
  }
  std::set<std::string> known;
  for (const llvm::SubtargetFeatureKV &feature :
       info->getAllProcessorFeatures())
    known.insert(feature.Key);
  llvm::SmallVector<llvm::StringRef> requested;
  llvm::StringRef(options.targetFeatures)
      .split(requested, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  std::string extraFeatures;
  for (llvm::StringRef feature : requested) {
    feature = feature.trim();
    if (feature.size() < 2 || (feature[0] != '+' && feature[0] != '-')) {
      error = "target feature '" + feature.str() +
              "' must be written +name or -name";
      return nullptr;
    }
    if (!known.count(feature.drop_front().str())) {
      error = "unknown target feature '" + feature.drop_front().str() + "'";
      return nullptr;
    }
    extraFeatures += (extraFeatures.empty() ? "" : ",") + feature.str();
  }
  std::string features = host ? getHostFeatureString() : std::string();
  if (!extraFeatures.empty())
    features += (features.empty() ? "" : ",") + extraFeatures;

  static const llvm::CodeGenOptLevel levels[] = {
      llvm::CodeGenOptLevel::None, llvm::CodeGenOptLevel::Less,
      llvm::CodeGenOptLevel::Default, llvm::CodeGenOptLevel::Aggressive};
  llvm::TargetOptions targetOptions;
  Target result;
  result.machine.reset(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      levels[options.optLevel]));
  if (!result.machine) {
    error = "cannot create an LLVM target machine for " + cpu;
    return nullptr;
  }
  result.cpu = cpu;
  // Record every ISA feature the generated code may use, implied ones
  // included: the driver refuses binaries whose features the host lacks.
  const llvm::MCSubtargetInfo *subtarget = result.machine->getMCSubtargetInfo();
  const std::set<std::string> &isa = getISAFeatureNames();
  for (const llvm::SubtargetFeatureKV &feature :
       subtarget->getAllProcessorFeatures())
    if (subtarget->getFeatureBits().test(feature.Value) &&
        isa.count(feature.Key))
      result.features.push_back(feature.Key);
  // A worker may see many option combinations: keep the cache small.
  if (targets.size() >= 16)
    targets.clear();
  return &targets.emplace(key, std::move(result)).first->second;
}

bool mc::Compiler::Impl::link(llvm::StringRef object, std::string &binary,
                              std::string &error) {
  if (!lldUsable) {
    error = "the in-process linker cannot run again after an earlier failure; "
            "restart the compiler";
    return false;
  }
  if (tempDir.empty()) {
    llvm::SmallString<128> dir;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("maia-compile", dir)) {
      error = "cannot create a temporary directory: " + ec.message();
      return false;
    }
    tempDir = dir.str().str();
  }
  std::string stem = tempDir + "/k" + std::to_string(linkCounter++);
  std::string objectPath = stem + ".o", outputPath = stem + ".maiabin";
  auto cleanup = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(objectPath);
    llvm::sys::fs::remove(outputPath);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec);
    if (ec) {
      error = "cannot write " + objectPath + ": " + ec.message();
      return false;
    }
    os << object;
    os.close();
    if (os.has_error()) {
      error = "cannot write " + objectPath + ": " + os.error().message();
      os.clear_error();
      return false;
    }
  }
  std::vector<const char *> args = {
      "ld.lld", "-shared",     "--hash-style=gnu", "-z",  "noexecstack",
      "-z",     "relro",       "-z",               "now", "--build-id=none",
      "-o",     outputPath.c_str(), objectPath.c_str()};
  // Kernels may call the C and math libraries (memref.alloc -> malloc, math
  // ops without an approximation -> libm); any other undefined symbol (a
  // runtime helper such as printF32 or memrefCopy) is a link error here
  // rather than a load failure in the driver.
  static const char *const systemLibraries[] = {
      "/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libc.so.6"};
  bool haveSystemLibraries = true;
  for (const char *library : systemLibraries)
    haveSystemLibraries &= llvm::sys::fs::exists(library);
  if (haveSystemLibraries) {
    args.push_back("--no-undefined");
    args.push_back("--as-needed");
    for (const char *library : systemLibraries)
      args.push_back(library);
  }
  std::string messages;
  llvm::raw_string_ostream messageStream(messages);
  lld::Result result = lld::lldMain(args, messageStream, messageStream,
                                    {{lld::Gnu, &lld::elf::link}});
  lldUsable = result.canRunAgain;
  if (result.retCode != 0) {
    error = "linking with lld failed: " + messages;
    return false;
  }
  auto buffer = llvm::MemoryBuffer::getFile(outputPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read the linked binary: " + buffer.getError().message();
    return false;
  }
  binary = (*buffer)->getBuffer().str();
  return true;
}

bool mc::Compiler::Impl::preparse(llvm::SourceMgr &sourceMgr,
                                  llvm::raw_ostream &diagnostics) {
  reapChildren(/*wait=*/false);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return true; // No isolation available: parse in process.
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return true;
  }
  if (pid == 0) {
    ::close(fds[0]);
    bool parsed;
    {
      // Unbuffered: each diagnostic reaches the parent even if the parser's
      // error recovery then crashes this child.
      llvm::raw_fd_ostream os(fds[1], /*shouldClose=*/false,
                              /*unbuffered=*/true);
      SourceMgrDiagnosticHandler handler(sourceMgr, context.get(), os);
      parsed = static_cast<bool>(
          parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(context.get())));
      // The verdict trails the diagnostics; closing before _exit lets the
      // parent go on without waiting for this process to be torn down.
      os << (parsed ? kPreparseSucceeded : kPreparseFailed);
    }
    ::close(fds[1]);
    ::_exit(parsed ? 0 : 1);
  }
  ::close(fds[1]);
  children.push_back(pid);
  std::string output;
  char buffer[4096];
  while (true) {
    ssize_t count = ::read(fds[0], buffer, sizeof(buffer));
    if (count < 0 && errno == EINTR)
      continue;
    if (count <= 0)
      break;
    output.append(buffer, size_t(count));
  }
  ::close(fds[0]);
  if (!output.empty() && output.back() == kPreparseSucceeded)
    return true;
  // Without a verdict the child died, possibly in the parser's error
  // recovery after it reported the error: the diagnostics still say why.
  if (!output.empty() && output.back() == kPreparseFailed)
    output.pop_back();
  diagnostics << output;
  if (output.empty())
    diagnostics << "error: internal compiler error: the MLIR parser crashed "
                   "on this input\n";
  return false;
}

void mc::Compiler::Impl::reapChildren(bool wait) {
  llvm::erase_if(children, [&](pid_t pid) {
    int status;
    pid_t done;
    while ((done = ::waitpid(pid, &status, wait ? 0 : WNOHANG)) < 0 &&
           errno == EINTR) {
    }
    return done != 0;
  });
}

//===----------------------------------------------------------------------===//
// Metadata
//===----------------------------------------------------------------------===//

namespace {

/// Checks the module's shape and writes the metadata JSON of its kernels.
LogicalResult buildMetadata(ModuleOp module, const Target &target,
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
    j.attribute("compiler", mc::getVersion());
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

void addMetadataGlobal(llvm::Module &module, llvm::StringRef json) {
  llvm::Constant *text = llvm::ConstantDataArray::getString(
      module.getContext(), json, /*AddNull=*/true);
  auto *global = new llvm::GlobalVariable(
      module, text->getType(), /*isConstant=*/true,
      llvm::GlobalValue::ExternalLinkage, text, kMetadataSymbol);
  global->setSection(kMetadataSection);
  global->setAlignment(llvm::Align(1));
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
  const Target *target = getTarget(options, targetError);
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
  // MLIR 19's parser can free memory it later writes to when it recovers
  // from some syntax errors (llvm-project #127778, #128011, fixed in 20).
  // Invalid input is therefore parsed in a child process first; only input
  // that parses cleanly there is parsed here.
  if (!preparse(sourceMgr, diagnostics))
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
  llvmModule->setTargetTriple(triple);
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
  if (!link(code.str(), result.output, linkError))
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

std::string mc::getHostCPU() { return llvm::sys::getHostCPUName().str(); }

std::vector<std::string> mc::getHostCPUFeatures() {
  std::vector<std::string> features;
  for (const auto &entry : llvm::sys::getHostCPUFeatures())
    if (entry.second)
      features.push_back(entry.first().str());
  std::sort(features.begin(), features.end());
  return features;
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
