/* The C API of the compiler, from C: compile a kernel to a binary and to
 * LLVM IR, and report a bad input as diagnostics. Exits non-zero on failure. */
#include <maia-c/Compiler.h>

#include <stdio.h>
#include <string.h>

static const char kKernel[] =
    "func.func @scale(%x: memref<?xf32>, %s: f32) attributes {maia.kernel} {\n"
    "  %c0 = arith.constant 0 : index\n"
    "  %v = memref.load %x[%c0] : memref<?xf32>\n"
    "  %r = arith.mulf %v, %s : f32\n"
    "  memref.store %r, %x[%c0] : memref<?xf32>\n"
    "  return\n"
    "}\n";

#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: expectation failed: %s\n", __FILE__,     \
              __LINE__, #cond);                                        \
      return 1;                                                        \
    }                                                                  \
  } while (0)

int main(void) {
  maiaCompiler_t compiler = NULL;
  EXPECT(maiaCompilerCreate(&compiler) == 0 && compiler);
  EXPECT(strstr(maiaCompilerGetVersion(), "maia-compile") != NULL);

  maiaCompilerOptions options;
  maiaCompilerOptionsInit(&options);
  EXPECT(options.opt_level == 2 && options.emit == maiaCompilerEmitBinary);

  /* A binary: an ELF shared object with metadata. */
  maiaCompilerResult_t result = NULL;
  EXPECT(maiaCompilerCompile(compiler, kKernel, strlen(kKernel), &options, &result) == 0);
  EXPECT(maiaCompilerResultSucceeded(result));
  const void* data = NULL;
  size_t size = 0;
  maiaCompilerResultGetOutput(result, &data, &size);
  EXPECT(size > 64 && memcmp(data, "\x7f" "ELF", 4) == 0);
  EXPECT(strstr(maiaCompilerResultGetMetadata(result), "\"name\":\"scale\"") != NULL);
  maiaCompilerResultDestroy(result);

  /* LLVM IR from the same compiler instance. */
  options.emit = maiaCompilerEmitLLVMIR;
  options.opt_level = 0;
  EXPECT(maiaCompilerCompile(compiler, kKernel, strlen(kKernel), &options, &result) == 0);
  EXPECT(maiaCompilerResultSucceeded(result));
  maiaCompilerResultGetOutput(result, &data, &size);
  EXPECT(size > 0 && memmem(data, size, "define void @scale(ptr", 22) != NULL);
  maiaCompilerResultDestroy(result);

  /* Bad input: a result that failed, with diagnostics. */
  options.emit = maiaCompilerEmitBinary;
  options.source_name = "bad.mlir";
  EXPECT(maiaCompilerCompile(compiler, "func.func @k(", 13, &options, &result) == 0);
  EXPECT(!maiaCompilerResultSucceeded(result));
  EXPECT(strstr(maiaCompilerResultGetDiagnostics(result), "bad.mlir:1:") != NULL);
  EXPECT(strcmp(maiaCompilerResultGetMetadata(result), "") == 0);
  maiaCompilerResultDestroy(result);

  /* Misuse is refused, not a crash. */
  EXPECT(maiaCompilerCompile(NULL, kKernel, 1, &options, &result) != 0);
  EXPECT(maiaCompilerCompile(compiler, NULL, 5, &options, &result) != 0);
  options.emit = 42;
  EXPECT(maiaCompilerCompile(compiler, kKernel, strlen(kKernel), &options, &result) != 0);

  maiaCompilerDestroy(compiler);
  puts("capi_test: ok");
  return 0;
}
