//===- CAPI.cpp - The C API of the maia compiler --------------------------===//

#include "maia-c/Compiler.h"

#include "maia/Compiler/Compiler.h"

namespace mc = maia::compiler;

struct maiaCompiler {
  mc::Compiler compiler;
};

struct maiaCompilerResult {
  mc::CompileResult result;
};

void maiaCompilerOptionsInit(maiaCompilerOptions *options) {
  if (!options)
    return;
  *options = maiaCompilerOptions{};
  options->opt_level = 2;
  options->emit = maiaCompilerEmitBinary;
}

const char *maiaCompilerGetVersion(void) { return mc::getVersion(); }

int maiaCompilerCreate(maiaCompiler_t *out_compiler) {
  if (!out_compiler)
    return 1;
  *out_compiler = new maiaCompiler();
  return 0;
}

void maiaCompilerDestroy(maiaCompiler_t compiler) { delete compiler; }

int maiaCompilerCompile(maiaCompiler_t compiler, const char *source,
                        size_t size, const maiaCompilerOptions *options,
                        maiaCompilerResult_t *out_result) {
  if (!compiler || (!source && size) || !out_result)
    return 1;
  maiaCompilerOptions defaults;
  maiaCompilerOptionsInit(&defaults);
  if (!options)
    options = &defaults;
  mc::CompileOptions cxxOptions;
  cxxOptions.optLevel = options->opt_level;
  if (options->target_cpu)
    cxxOptions.targetCPU = options->target_cpu;
  if (options->target_features)
    cxxOptions.targetFeatures = options->target_features;
  if (options->source_name)
    cxxOptions.sourceName = options->source_name;
  switch (options->emit) {
  case maiaCompilerEmitBinary:
    cxxOptions.emit = mc::EmitKind::Binary;
    break;
  case maiaCompilerEmitLoweredMLIR:
    cxxOptions.emit = mc::EmitKind::LoweredMLIR;
    break;
  case maiaCompilerEmitLLVMIR:
    cxxOptions.emit = mc::EmitKind::LLVMIR;
    break;
  case maiaCompilerEmitAssembly:
    cxxOptions.emit = mc::EmitKind::Assembly;
    break;
  case maiaCompilerEmitObject:
    cxxOptions.emit = mc::EmitKind::Object;
    break;
  default:
    return 1;
  }
  auto *result = new maiaCompilerResult();
  result->result = compiler->compiler.compile(
      std::string_view(source ? source : "", size), cxxOptions);
  *out_result = result;
  return 0;
}

int maiaCompilerResultSucceeded(maiaCompilerResult_t result) {
  return result && result->result.succeeded;
}

void maiaCompilerResultGetOutput(maiaCompilerResult_t result,
                                 const void **out_data, size_t *out_size) {
  if (out_data)
    *out_data = result ? result->result.output.data() : nullptr;
  if (out_size)
    *out_size = result ? result->result.output.size() : 0;
}

const char *maiaCompilerResultGetDiagnostics(maiaCompilerResult_t result) {
  return result ? result->result.diagnostics.c_str() : "";
}

const char *maiaCompilerResultGetMetadata(maiaCompilerResult_t result) {
  return result && result->result.succeeded ? result->result.metadata.c_str()
                                            : "";
}

void maiaCompilerResultDestroy(maiaCompilerResult_t result) { delete result; }
