//===- maia-compile.cpp - The MAIA kernel compiler CLI --------------------===//
//
//   maia-compile kernel.mlir -o kernel.maiabin      (AOT compile)
//   maia-compile - -o kernel.maiabin < kernel.mlir  (stdin)
//   maia-compile --emit=llvm kernel.mlir            (intermediate stages)
//   maia-compile --inspect kernel.maiabin           (validate, print metadata)
//   maia-compile --server                           (compile worker)
//
// Uses only the MLIR-free compiler API; see docs/compiler.md.
//
//===----------------------------------------------------------------------===//

#include "Server.h"

#include "maia/Compiler/Compiler.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <unistd.h>

namespace cl = llvm::cl;
namespace mc = maia::compiler;

namespace {

cl::OptionCategory category("maia-compile options");

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<input.mlir | ->"),
                               cl::cat(category));
cl::opt<std::string> outputPath(
    "o", cl::desc("Output file ('-' for stdout). Default: <input>.maiabin for "
                  "binaries, stdout for text stages"),
    cl::value_desc("file"), cl::cat(category));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimization level (0-3)"),
                           cl::Prefix, cl::init(2), cl::cat(category));
cl::opt<std::string> targetCPU("target-cpu",
                               cl::desc("Target CPU (default: the host CPU)"),
                               cl::init("host"), cl::cat(category));
cl::opt<std::string> targetFeatures(
    "target-features",
    cl::desc("Extra LLVM target features, e.g. +avx512f,-fma"),
    cl::cat(category));
cl::opt<std::string> emit(
    "emit",
    cl::desc("What to produce: binary (default), mlir-lowered, llvm, asm, obj"),
    cl::init("binary"), cl::cat(category));
cl::opt<bool> timePhases("time", cl::desc("Print the time of each phase"),
                         cl::cat(category));
cl::opt<std::string> inspectPath(
    "inspect", cl::desc("Validate a .maiabin and print its metadata"),
    cl::value_desc("file.maiabin"), cl::cat(category));
cl::opt<bool> server("server",
                     cl::desc("Run as a compile worker: JSON requests on "
                              "stdin, replies on stdout, one per line"),
                     cl::cat(category));
cl::opt<unsigned> maxRequestMiB(
    "max-request-mib", cl::desc("Largest worker request in MiB (default 64)"),
    cl::init(64), cl::cat(category));

int usageError(const llvm::Twine &message) {
  llvm::errs() << "maia-compile: error: " << message << "\n";
  return 2;
}

int inspect() {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(
      inspectPath, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return usageError("cannot read '" + inspectPath +
                      "': " + buffer.getError().message());
  std::string metadata, error;
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (!mc::inspectBinary(std::string_view(bytes.data(), bytes.size()),
                         metadata, error)) {
    llvm::errs() << "maia-compile: error: " << inspectPath << ": " << error
                 << "\n";
    return 1;
  }
  llvm::outs() << metadata << "\n";
  return 0;
}

int compile() {
  if (inputPath.empty())
    return usageError("no input file (use '-' for stdin); see --help");
  mc::CompileOptions options;
  if (optLevel > 3)
    return usageError("-O" + llvm::Twine(optLevel) + " is not in -O0..-O3");
  options.optLevel = int(optLevel);
  options.targetCPU = targetCPU;
  options.targetFeatures = targetFeatures;
  if (!mc::parseEmitKind(emit, options.emit))
    return usageError("unknown --emit kind '" + emit +
                      "' (binary, mlir-lowered, llvm, asm, obj)");
  options.sourceName = inputPath == "-" ? "<stdin>" : inputPath.getValue();

  auto start = std::chrono::steady_clock::now();
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputPath, /*IsText=*/true);
  if (!buffer)
    return usageError("cannot read '" + inputPath +
                      "': " + buffer.getError().message());

  std::string output = outputPath;
  bool binary = options.emit == mc::EmitKind::Binary ||
                options.emit == mc::EmitKind::Object;
  if (output.empty()) {
    if (binary && inputPath == "-")
      return usageError("reading stdin: name the output with -o");
    if (binary) {
      llvm::SmallString<128> path(inputPath.getValue());
      llvm::sys::path::replace_extension(
          path, options.emit == mc::EmitKind::Binary ? "maiabin" : "o");
      output = path.str().str();
    } else {
      output = "-";
    }
  }
  if (binary && output == "-" && ::isatty(STDOUT_FILENO))
    return usageError("refusing to write a binary to a terminal; use -o");

  // lld resets every llvm::cl option while it links in process
  // (cl::ResetAllOptionOccurrences): read what is still needed first.
  bool printTimes = timePhases;
  llvm::StringRef source = (*buffer)->getBuffer();
  mc::Compiler compiler;
  mc::CompileResult result = compiler.compile(
      std::string_view(source.data(), source.size()), options);
  llvm::errs() << result.diagnostics;
  if (!result.succeeded)
    return 1;

  std::error_code ec;
  llvm::raw_fd_ostream os(output, ec,
                          binary ? llvm::sys::fs::OF_None
                                 : llvm::sys::fs::OF_Text);
  if (ec)
    return usageError("cannot write '" + output + "': " + ec.message());
  os << result.output;
  os.close();
  if (os.has_error()) {
    std::string message = os.error().message();
    os.clear_error();
    return usageError("cannot write '" + output + "': " + message);
  }
  if (printTimes) {
    for (const mc::PhaseTime &phase : result.phases)
      llvm::errs() << llvm::format("maia-compile: time: %-9s %8.2f ms\n",
                                   phase.name.c_str(), phase.milliseconds);
    double total = std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count();
    llvm::errs() << llvm::format("maia-compile: time: %-9s %8.2f ms "
                                 "(in main, after process start-up)\n",
                                 static_cast<const char *>("total"), total);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << mc::getVersion() << "\nhost CPU: " << mc::getHostCPU() << "\n";
  });
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "maia-compile: compile MAIA kernels written in MLIR to .maiabin\n",
          &llvm::errs()))
    return 2;
  if (server) {
    if (!inputPath.empty() || !inspectPath.empty())
      return usageError("--server takes no input file and no --inspect");
    if (maxRequestMiB == 0)
      return usageError("--max-request-mib must be at least 1");
    return mc::runServer(STDIN_FILENO, STDOUT_FILENO,
                         size_t(maxRequestMiB) << 20);
  }
  if (!inspectPath.empty()) {
    if (!inputPath.empty())
      return usageError("--inspect takes no input file");
    return inspect();
  }
  return compile();
}
