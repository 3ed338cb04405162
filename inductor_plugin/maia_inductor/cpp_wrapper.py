"""MaiaCppWrapper: the C++ wrapper of a compiled graph on maia
(`torch._inductor.config.cpp_wrapper = True`, and AOTInductor, which always
uses the C++ wrapper).

It is CppWrapperCpu plus: maia buffers allocated through the C shim's
aoti_torch_empty_strided on PrivateUse1 (the maia caching allocator), and
kernels compiled while the wrapper is generated, then loaded and launched
through libmaia_torch's C shim (runtime/torch/include/maia/aoti.h) on the
current maia stream. The generated code carries the shim's declarations; the
definitions resolve against libmaia_torch, which torch_maia loads
RTLD_GLOBAL. Extern GEMM/convolution calls go through the generic aoti shim
(aoti_torch_mm_out, ...), which dispatches to maia's eager kernels.
"""

from __future__ import annotations

from pathlib import Path

from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.virtualized import V

# The shim header, in the source tree beside the plugin (editable install) or
# installed in include/ next to the library.
_HEADER = Path(__file__).resolve().parents[2] / "runtime/torch/include/maia/aoti.h"


def shim_declarations() -> str:
    text = _HEADER.read_text()
    return "\n".join(line for line in text.splitlines() if not line.startswith("#pragma once"))


class MaiaCppWrapper(CppWrapperCpu):
    def __init__(self) -> None:
        super().__init__()
        # kernel name -> .maiabin path (AOTInductor packs these files)
        self.maia_kernel_files: dict[str, str] = {}

    @staticmethod
    def create(is_subgraph: bool, subgraph_name, parent_wrapper, partition_signatures=None):
        return MaiaCppWrapper()

    def add_device_include(self, device: str) -> None:
        if device != "maia":
            return super().add_device_include(device)
        # torch ships wrapper headers for in-tree devices only: the CPU ones
        # (the generic aoti shim) plus maia's C shim.
        super().add_device_include("cpu")
        if "maia" not in self.included_devices:
            self.included_devices.add("maia")
            self.header.splice(shim_declarations())

    def codegen_device(self, device):
        if device.type != "maia":
            return super().codegen_device(device)
        self.used_cached_devices.add("privateuse1")
        return f"cached_torch_device_type_privateuse1, {device.index if device.index else 0}"

    def define_maia_kernel(self, name: str, mlir: str) -> None:
        """Compiles the kernel now (the C++ wrapper names its binary)."""
        from .compiler import compile_settings, compile_to_binary

        path = str(compile_to_binary(name, mlir, compile_settings()))
        self.maia_kernel_files[name] = path
        self.header.writeline(f"static MaiaAotiKernelHandle {name} = nullptr;")

    def kernel_path_expr(self, name: str) -> str:
        path = self.maia_kernel_files[name]
        if V.graph.aot_mode:
            # packaged beside the wrapper library: found at load time
            return f'(this->cubin_dir_ + "/{Path(path).name}").c_str()'
        return f'"{path}"'

    def write_maia_kernel_call(self, name: str, grid_kind: int, sizes, args) -> None:
        """args: [(kind, C++ expression)], kind one of tensor/int/float."""
        kinds = {"tensor": "MAIA_AOTI_TENSOR", "int": "MAIA_AOTI_INT", "float": "MAIA_AOTI_FLOAT"}
        entries = []
        for kind, expr in args:
            if kind == "tensor":
                entries.append(f"MaiaAotiArg{{MAIA_AOTI_TENSOR, {expr}, 0, 0.0}}")
            elif kind == "int":
                entries.append(f"MaiaAotiArg{{{kinds[kind]}, nullptr, {expr}, 0.0}}")
            else:
                entries.append(f"MaiaAotiArg{{{kinds[kind]}, nullptr, 0, {expr}}}")
        size_list = ", ".join(f"static_cast<int64_t>({s})" for s in sizes)
        device = V.graph.get_current_device_or_throw()
        index = device.index if device.index is not None else 0
        self.writeline("{")
        self.writeline(
            f'    maia_aoti_check(maia_aoti_kernel_load({self.kernel_path_expr(name)}, '
            f'"{name}", &{name}), "{name}");'
        )
        self.writeline(f"    const int64_t {name}_sizes[] = {{{size_list}}};")
        self.writeline(f"    const MaiaAotiArg {name}_args[] = {{{', '.join(entries)}}};")
        self.writeline(
            f"    maia_aoti_check(maia_aoti_kernel_launch({name}, {grid_kind}, {name}_sizes, "
            f'{name}_args, {len(entries)}, {index}), "{name}");'
        )
        self.writeline("}")
