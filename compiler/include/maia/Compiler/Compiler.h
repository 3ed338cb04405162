//===- Compiler.h - Compile MLIR kernels to MAIA binaries -------*- C++ -*-===//
//
// The MLIR-free C++ API of the maia compiler: MLIR text in, a MAIA kernel
// binary (.maiabin) or an intermediate stage out. Only standard headers, so
// that any tool can use it without MLIR or LLVM on its include path.
//
//===----------------------------------------------------------------------===//

#ifndef MAIA_COMPILER_COMPILER_H
#define MAIA_COMPILER_COMPILER_H

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace maia::compiler {

/// What a compilation produces.
enum class EmitKind {
  Binary,      ///< a linked .maiabin (ELF shared object)
  LoweredMLIR, ///< the module after the lowering pipeline (LLVM dialect)
  LLVMIR,      ///< LLVM IR after the LLVM optimization pipeline
  Assembly,    ///< target assembly
  Object,      ///< a relocatable object file
};

/// Parses "binary", "mlir-lowered", "llvm", "asm" or "obj".
bool parseEmitKind(std::string_view name, EmitKind &out);

struct CompileOptions {
  /// LLVM optimization level, 0..3.
  int optLevel = 2;
  /// CPU to generate code for; empty or "host": the CPU this runs on.
  std::string targetCPU;
  /// Extra LLVM target features, e.g. "+avx512f,-fma" (added to the host's
  /// features when targetCPU is the host).
  std::string targetFeatures;
  EmitKind emit = EmitKind::Binary;
  /// Name of the source in diagnostics.
  std::string sourceName = "<input>";
};

/// Wall time of one phase of a compilation.
struct PhaseTime {
  std::string name;
  double milliseconds = 0;
};

struct CompileResult {
  bool succeeded = false;
  /// The requested output (binary bytes or text).
  std::string output;
  /// Errors and warnings, formatted with source locations.
  std::string diagnostics;
  /// The metadata JSON embedded in the binary (also set for other kinds).
  std::string metadata;
  /// In order: parse, lower, translate, optimize, codegen, link.
  std::vector<PhaseTime> phases;
};

/// A compiler instance keeps its MLIR context and LLVM target state warm
/// between compilations. Not thread-safe: use one instance per thread.
class Compiler {
public:
  Compiler();
  ~Compiler();
  Compiler(const Compiler &) = delete;
  Compiler &operator=(const Compiler &) = delete;

  /// Compiles `source` (MLIR text). Never aborts on bad input: failures are
  /// reported in the result. An internal crash is caught, reported as an
  /// internal compiler error, and the instance resets itself.
  CompileResult compile(std::string_view source, const CompileOptions &options);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The compiler's version string (recorded in every binary's metadata).
const char *getVersion();

/// The name and ISA features ("+avx2", ...) of the host CPU, as recorded in
/// binaries compiled for the host.
std::string getHostCPU();
std::vector<std::string> getHostCPUFeatures();

/// Validates a .maiabin the way the driver will (ELF shape, exported
/// symbols, metadata schema, target features vs the host). On success sets
/// `metadata` to its JSON and returns true; otherwise sets `error`.
bool inspectBinary(std::string_view bytes, std::string &metadata,
                   std::string &error);

} // namespace maia::compiler

#endif // MAIA_COMPILER_COMPILER_H
