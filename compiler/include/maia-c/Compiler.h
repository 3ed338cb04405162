/*
 * maia-c/Compiler.h - the C API of the maia kernel compiler.
 *
 * Compiles MLIR text into a MAIA kernel binary (.maiabin) or an intermediate
 * stage. Conventions: every symbol starts with maiaCompiler; handles are
 * opaque; each Create has one Destroy; outputs go through out_ parameters;
 * strings and bytes returned by a result stay valid until the result is
 * destroyed. A compiler handle is not thread-safe: use one per thread.
 */
#ifndef MAIA_C_COMPILER_H
#define MAIA_C_COMPILER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MAIA_COMPILER_API __attribute__((visibility("default")))

typedef struct maiaCompiler* maiaCompiler_t;
typedef struct maiaCompilerResult* maiaCompilerResult_t;

typedef enum maiaCompilerEmit {
  maiaCompilerEmitBinary = 0,      /* a linked .maiabin */
  maiaCompilerEmitLoweredMLIR = 1, /* MLIR after the lowering pipeline */
  maiaCompilerEmitLLVMIR = 2,      /* optimized LLVM IR */
  maiaCompilerEmitAssembly = 3,    /* target assembly */
  maiaCompilerEmitObject = 4,      /* relocatable object */
} maiaCompilerEmit;

typedef struct maiaCompilerOptions {
  int opt_level;               /* 0..3; default 2 */
  const char* target_cpu;      /* NULL or "host": the host CPU */
  const char* target_features; /* NULL or e.g. "+avx512f" */
  int emit;                    /* a maiaCompilerEmit; default Binary */
  const char* source_name;     /* NULL: "<input>" */
} maiaCompilerOptions;

/** Fills options with the defaults. */
MAIA_COMPILER_API void maiaCompilerOptionsInit(maiaCompilerOptions* options);

/** Version string of the compiler. */
MAIA_COMPILER_API const char* maiaCompilerGetVersion(void);

/** Returns 0 on success, non-zero if out_compiler is NULL. */
MAIA_COMPILER_API int maiaCompilerCreate(maiaCompiler_t* out_compiler);
MAIA_COMPILER_API void maiaCompilerDestroy(maiaCompiler_t compiler);

/** Compiles size bytes of MLIR text. Always produces a result (unless an
 *  argument is NULL: returns non-zero); check maiaCompilerResultSucceeded. */
MAIA_COMPILER_API int maiaCompilerCompile(maiaCompiler_t compiler, const char* source,
                                          size_t size, const maiaCompilerOptions* options,
                                          maiaCompilerResult_t* out_result);

MAIA_COMPILER_API int maiaCompilerResultSucceeded(maiaCompilerResult_t result);
/** The output bytes (a binary, or text without a terminating NUL). */
MAIA_COMPILER_API void maiaCompilerResultGetOutput(maiaCompilerResult_t result,
                                                   const void** out_data, size_t* out_size);
/** Diagnostics ("" if none), NUL-terminated. */
MAIA_COMPILER_API const char* maiaCompilerResultGetDiagnostics(maiaCompilerResult_t result);
/** The binary's metadata JSON, NUL-terminated ("" on failure). */
MAIA_COMPILER_API const char* maiaCompilerResultGetMetadata(maiaCompilerResult_t result);
MAIA_COMPILER_API void maiaCompilerResultDestroy(maiaCompilerResult_t result);

#ifdef __cplusplus
}
#endif

#endif /* MAIA_C_COMPILER_H */
