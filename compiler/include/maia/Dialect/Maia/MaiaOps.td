//===- MaiaOps.td - maia dialect operations ----------------*- tablegen -*-===//

#ifndef MAIA_DIALECT_MAIA_MAIAOPS_TD
#define MAIA_DIALECT_MAIA_MAIAOPS_TD

include "maia/Dialect/Maia/MaiaDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

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

#endif // MAIA_DIALECT_MAIA_MAIAOPS_TD
