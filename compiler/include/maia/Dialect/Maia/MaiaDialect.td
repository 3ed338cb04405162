//===- MaiaDialect.td - The maia dialect -------------------*- tablegen -*-===//
//
// The MAIA-specific part of kernel IR: the grid a kernel runs over and the
// marker that makes a function a kernel entry point.
//
//===----------------------------------------------------------------------===//

#ifndef MAIA_DIALECT_MAIA_MAIADIALECT_TD
#define MAIA_DIALECT_MAIA_MAIADIALECT_TD

include "mlir/IR/OpBase.td"

def Maia_Dialect : Dialect {
  let name = "maia";
  let cppNamespace = "::mlir::maia";
  let summary = "MAIA kernels: program ids, the grid, kernel entry points";
  let description = [{
    A MAIA kernel is a `func.func` marked with the `maia.kernel` unit
    attribute. It returns nothing and takes memrefs (strided views of device
    memory) and scalars. The driver runs it once per program id of a grid of
    up to three dimensions; `maia.program_id` and `maia.num_programs` read the
    position of the running program and the grid's extent.

    ```mlir
    func.func @scale(%x: memref<?xf32>, %s: f32) attributes {maia.kernel} {
      %pid = maia.program_id 0
      %v = memref.load %x[%pid] : memref<?xf32>
      %r = arith.mulf %v, %s : f32
      memref.store %r, %x[%pid] : memref<?xf32>
      return
    }
    ```

    Discardable attributes on `func.func`:
    - `maia.kernel` (unit): the function is a kernel entry point.
    - `maia.grid_rank` (integer 1..3, optional): the number of grid
      dimensions the kernel expects. Without it, the rank is one more than
      the highest dimension the kernel's `maia.program_id` and
      `maia.num_programs` ops read (at least 1).

    Discardable attribute on `math` ops:
    - `maia.libm` (unit): computed by a libm call, not approximated; set by
      `maia-approximate-math` on the exact slow path of an approximation,
      consumed by `maia-math-to-libm`.
  }];
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The unit attribute that makes a func.func a kernel entry point.
    static constexpr ::llvm::StringLiteral getKernelAttrName() {
      return ::llvm::StringLiteral("maia.kernel");
    }
    /// The optional number of grid dimensions of a kernel.
    static constexpr ::llvm::StringLiteral getGridRankAttrName() {
      return ::llvm::StringLiteral("maia.grid_rank");
    }
    /// Marks a math op left to libm on purpose (the exact slow path of an
    /// approximation).
    static constexpr ::llvm::StringLiteral getLibmCallAttrName() {
      return ::llvm::StringLiteral("maia.libm");
    }
  }];
}

class Maia_Op<string mnemonic, list<Trait> traits = []>
    : Op<Maia_Dialect, mnemonic, traits>;

#endif // MAIA_DIALECT_MAIA_MAIADIALECT_TD
