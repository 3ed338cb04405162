//===- MaiaOps.td - maia dialect operations ----------------*- tablegen -*-===//

#ifndef MAIA_DIALECT_MAIA_MAIAOPS_TD
#define MAIA_DIALECT_MAIA_MAIAOPS_TD

include "maia/Dialect/Maia/MaiaDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

class Maia_GridQueryOp<string mnemonic> : Maia_Op<mnemonic, [Pure]> {
  let arguments = (ins I64Attr:$dim);
  let results = (outs Index:$result);
  let assemblyFormat = "$dim attr-dict";
  let hasVerifier = 1;
}

def Maia_ProgramIdOp : Maia_GridQueryOp<"program_id"> {
  let summary = "the id of the running program along one grid dimension";
  let description = [{
    Returns the position, in `[0, num_programs(dim))`, of the program that
    runs this instance of the kernel along grid dimension `dim` (0, 1 or 2).
    Only valid inside a `maia.kernel` function, and `dim` must be below the
    kernel's `maia.grid_rank` when that is given.

    ```mlir
    %row = maia.program_id 0
    ```
  }];
}

def Maia_NumProgramsOp : Maia_GridQueryOp<"num_programs"> {
  let summary = "the extent of the grid along one dimension";
  let description = [{
    Returns the number of programs the kernel was launched with along grid
    dimension `dim` (0, 1 or 2); 1 for dimensions the launch did not use.
    Same placement rules as `maia.program_id`.

    ```mlir
    %rows = maia.num_programs 0
    ```
  }];
}

def Maia_ErfcOp : Maia_Op<"erfc", [Pure, SameOperandsAndResultType]> {
  let summary = "the complementary error function, 1 - erf(x)";
  let description = [{
    `erfc(x)` elementwise, accurate where `1 - erf(x)` keeps no digit (large
    x, down to the float32 subnormals), which MLIR 19's `math` dialect has
    no op for. `maia-approximate-math` computes it (float32 in float64,
    float16 and bfloat16 through float32); float64 callers use libm's erfc.

    ```mlir
    %y = maia.erfc %x : vector<16xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[F16, BF16, F32,
                                  VectorOfAnyRankOf<[F16, BF16, F32]>]>:$operand);
  let results = (outs AnyTypeOf<[F16, BF16, F32,
                                 VectorOfAnyRankOf<[F16, BF16, F32]>]>:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

#endif // MAIA_DIALECT_MAIA_MAIAOPS_TD
