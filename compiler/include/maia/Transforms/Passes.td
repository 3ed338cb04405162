//===- Passes.td - maia passes -----------------------------*- tablegen -*-===//

#ifndef MAIA_TRANSFORMS_PASSES_TD
#define MAIA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MaiaLowerKernelABI : Pass<"maia-lower-kernel-abi", "::mlir::ModuleOp"> {
  let summary = "Rewrite maia.kernel functions into MAIA entry points";
  let description = [{
    Rewrites every `maia.kernel` function into the entry point the driver
    calls once per program id (docs/compiler.md, "ABI"):

    ```c
    void name(void* const* args, const maia_grid_t* grid);
    ```

    The function keeps its name and body. It takes two `!llvm.ptr`
    arguments instead of its own: at entry it loads `args[i]`, then the
    memref descriptor `{allocated, aligned, offset, sizes[R], strides[R]}`
    or the scalar it points to, and casts each descriptor back to the
    original memref type with `builtin.unrealized_conversion_cast` (the casts
    cancel against the memref lowering). `maia.program_id d` and
    `maia.num_programs d` become loads of `grid->program_id[d]` and
    `grid->num_programs[d]`, done once at entry. The `maia.kernel` and
    `maia.grid_rank` attributes are dropped.

    Before:
    ```mlir
    func.func @k(%x: memref<?xf32>) attributes {maia.kernel} {
      %pid = maia.program_id 0
      ...
    }
    ```
    After:
    ```mlir
    func.func @k(%args: !llvm.ptr, %grid: !llvm.ptr) {
      %0 = llvm.getelementptr %args[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
      %1 = llvm.load %0 : !llvm.ptr -> !llvm.ptr
      %2 = llvm.load %1 : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
      %x = builtin.unrealized_conversion_cast %2 : ... to memref<?xf32>
      ...
    }
    ```

    A kernel that is referenced as a symbol (called) is an error: entry
    points are only called by the driver.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect",
    "::mlir::arith::ArithDialect",
  ];
}

def MaiaApproximateMath : Pass<"maia-approximate-math"> {
  let summary = "Replace math functions by vectorizable polynomial approximations";
  let description = [{
    Rewrites `math` ops (exp, expm1, log, log1p, log2, tanh, erf, atan,
    atan2, sin, cos, asin, acos, cbrt, ...) on f32 (and f16/bf16 through f32)
    scalars and vectors into polynomial approximations made of `arith` and
    `vector` ops, so that vector code never calls scalar libm functions (LLVM
    would scalarize those calls). Wraps upstream
    `populateMathPolynomialApproximationPatterns` together with the algebraic
    simplifications (`powf` by small constants into multiplications); MLIR 19
    has no pass of its own for it.

    ```mlir
    %y = math.exp %x : vector<16xf32>
    ```
    becomes a sequence of `arith.mulf`/`math.fma`/`arith.select`/bit
    manipulations on `vector<16xf32>` with no call.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def MaiaMathToLibm : Pass<"maia-math-to-libm", "::mlir::ModuleOp"> {
  let summary = "Lower float64 math (and marked f32 slow paths) to libm calls";
  let description = [{
    float64 `math` ops (sinh, atan2, erf, ...) have no polynomial
    approximation and most have no LLVM intrinsic: this pass turns them into
    calls of libm's routines (vectors lane by lane), declaring the functions
    it calls. f64 ops that are one vector instruction (fma, sqrt, floor,
    roundeven, ...) stay LLVM intrinsics. It touches only ops whose element
    type is f64; f32 math is
    `maia-approximate-math`'s, and ops such as `math.copysign` or integer
    `math.absi` lower to LLVM directly, except the f32 ops that
    `maia-approximate-math` marked `maia.libm` (the exact slow path of an
    approximation, e.g. sin/cos of arguments beyond 2^17). Run it after
    `maia-approximate-math`.

    ```mlir
    %y = math.sinh %x : f64
    ```
    becomes
    ```mlir
    %y = func.call @sinh(%x) : (f64) -> f64
    ```
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def MaiaAlignNontemporalStores
    : Pass<"maia-align-nontemporal-stores", "::mlir::ModuleOp"> {
  let summary = "Make nontemporal vector stores aligned streaming stores";
  let description = [{
    A `vector.store {nontemporal = true}` lowers to an `llvm.store` with the
    `nontemporal` flag and the element's alignment (4 for f32), and LLVM
    emits an under-aligned nontemporal vector store as one scalar `movnti`
    per 8 bytes: a 64-byte vector becomes 8 stores and 8 extracts instead of
    one `vmovntps`. The streaming store instructions need an address aligned
    to the register they write.

    This pass runs on the LLVM dialect. Each nontemporal `llvm.store` of a
    1-D vector of 16 to 64 bytes, or of a larger power of two (the backend
    splits it into 64-byte registers), whose `alignment` is below that
    size (capped at 64) is guarded by a test of the address: an aligned
    address takes the store with the full alignment (one streaming store per
    register), any other an ordinary store (an unaligned streaming store
    would be the scalarized form above, or a fault). Stores of scalars or of
    other vector sizes, temporal stores and stores already aligned are left
    as they are. The branch is taken the same way for every vector of a
    kernel whose output starts aligned, so it predicts perfectly.

    Every return of a function with a nontemporal store is preceded by a
    store fence (`llvm.x86.sse.sfence`): streaming stores are weakly
    ordered, and the device reports a program complete to other cores, so
    its lines must leave the write-combining buffers first (the eager
    kernels and the driver's streaming copies fence the same way).

    ```mlir
    llvm.store %v, %p {alignment = 4 : i64, nontemporal} : vector<16xf32>, !llvm.ptr
    ```
    becomes
    ```mlir
    %a = llvm.ptrtoint %p : !llvm.ptr to i64
    %low = llvm.and %a, %c63 : i64
    %ok = llvm.icmp "eq" %low, %c0 : i64
    llvm.cond_br %ok, ^stream, ^plain
  ^stream:
    llvm.store %v, %p {alignment = 64 : i64, nontemporal} : vector<16xf32>, !llvm.ptr
    llvm.br ^next
  ^plain:
    llvm.store %v, %p {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
    llvm.br ^next
  ^next:
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // MAIA_TRANSFORMS_PASSES_TD
