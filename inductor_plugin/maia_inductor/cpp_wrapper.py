"""MaiaCppWrapper: the C++ wrapper of a compiled graph on maia
(`torch._inductor.config.cpp_wrapper = True`, and AOTInductor, which always
uses the C++ wrapper).

It is CppWrapperCpu plus: maia buffers allocated through the C shim's
aoti_torch_empty_strided on PrivateUse1 (the maia caching allocator), and
kernels compiled while the wrapper is generated, then loaded and launched
through libmaia_torch's C shim (runtime/torch/include/maia/aoti.h) on the
current maia stream. The generated code carries the shim's declarations; the
definitions resolve against libmaia_torch, which torch_maia loads
RTLD_GLOBAL. Extern GEMM, convolution and fused-attention calls go through
the shim's aoti_torch_maia_<op> functions, which dispatch to maia's eager
kernels.
"""

from __future__ import annotations

from pathlib import Path

import torch

from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.virtualized import V


def header_dir() -> Path:
    """maia's C++ headers: installed with the library (torch_maia/include in
    the wheel), else in the source tree beside the plugin (editable set-up)."""
    import torch_maia

    installed = Path(torch_maia.__file__).resolve().parent / "include" / "maia"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parents[2] / "runtime/torch/include/maia"


def header_text(name: str) -> str:
    text = (header_dir() / name).read_text()
    return "\n".join(line for line in text.splitlines() if not line.startswith("#pragma once"))


def shim_declarations() -> str:
    return header_text("aoti.h")


class MaiaCppWrapper(CppWrapperCpu):
    def __init__(self) -> None:
        # AOTInductor: the model's device (its constants live there). The
        # JIT wrapper keeps "cpu": its precompiled header names the device.
        self.device = "maia" if V.graph.aot_mode else "cpu"
        super().__init__()
        # kernel name -> .maiabin path (AOTInductor packs these files)
        self.maia_kernel_files: dict[str, str] = {}
        # AOTInductor: while the model constructor is written, maia
        # constants are described as host constants (the container runs as
        # "cpu"; see maia/aoti_device_constants.h).
        self._constants_on_host = False

    @staticmethod
    def create(is_subgraph: bool, subgraph_name, parent_wrapper, partition_signatures=None):
        return MaiaCppWrapper()

    def write_header(self) -> None:
        from torch._inductor import config

        if V.graph.aot_mode and config.aot_inductor.precompile_headers:
            # The precompiled header includes aoti_include/<device>.h, which
            # torch ships for in-tree devices only.
            raise RuntimeError(
                "AOTInductor on maia needs "
                "torch._inductor.config.aot_inductor.precompile_headers = False "
                "(pass inductor_configs={'aot_inductor.precompile_headers': False})")
        super().write_header()

    def add_device_include(self, device: str) -> None:
        if device != "maia":
            return super().add_device_include(device)
        # torch ships wrapper headers for in-tree devices only: the CPU ones
        # (the generic aoti shim) plus maia's C shim.
        super().add_device_include("cpu")
        if "maia" not in self.included_devices:
            self.included_devices.add("maia")
            self.header.splice(shim_declarations())
            if V.graph.aot_mode:
                self.header.writeline("static int maia_aoti_anchor;")
                self.header.splice(header_text("aoti_device_constants.h"))

    def codegen_device(self, device):
        if device.type != "maia":
            return super().codegen_device(device)
        if self._constants_on_host:
            return super().codegen_device(torch.device("cpu"))
        self.used_cached_devices.add("privateuse1")
        return f"cached_torch_device_type_privateuse1, {device.index if device.index else 0}"

    def codegen_model_constructor(self) -> None:
        self._constants_on_host = True
        try:
            super().codegen_model_constructor()
        finally:
            self._constants_on_host = False

    def codegen_model_kernels(self) -> None:
        super().codegen_model_kernels()
        # Each model (the container may hold several) keeps its own device
        # copies of the constants, beside its kernel handles.
        lines = self.prefix._lines
        start = next(i for i, line in enumerate(lines)
                     if "class AOTInductorModelKernels" in str(line))
        lines.insert(start + 2, "    MaiaDeviceConstants maia_constants;")

    def _write_constants_unpacking(self) -> None:
        if not V.graph.aot_mode:
            return super()._write_constants_unpacking()
        kernels = "static_cast<AOTInductorModelKernels&>(*this->kernels_.get())"
        for idx, name in enumerate(V.graph.constants.keys()):
            if V.graph.get_original_value_of_constant(name).device.type == "maia":
                self.prefix.writeline(
                    f"[[maybe_unused]] auto {name} = "
                    f"{kernels}.maia_constants.get({idx}, constants_->at({idx}));")
            else:
                self.prefix.writeline(
                    f"[[maybe_unused]] auto& {name} = constants_->at({idx});")

    def define_maia_kernel(self, name: str, mlir: str) -> None:
        """Compiles the kernel now (the C++ wrapper names its binary)."""
        from .compiler import compile_settings, compile_to_binary

        path = str(compile_to_binary(name, mlir, compile_settings()))
        self.maia_kernel_files[name] = path
        if V.graph.aot_mode:
            # packed beside the wrapper library; the model class holds the
            # handle (a member of cpp_kernel_type)
            self.additional_files.append(path)
        else:
            self.header.writeline(f"static MaiaAotiKernelHandle {name} = nullptr;")

    def kernel_load_call(self, name: str) -> str:
        path = self.maia_kernel_files[name]
        if V.graph.aot_mode:
            # The package is unpacked anywhere: the shim finds the file in
            # the directory of this library (located by an address in it).
            return (f'maia_aoti_kernel_load_beside(&maia_aoti_anchor, "{Path(path).name}", '
                    f'"{name}", &{self.kernel_handle(name)})')
        return f'maia_aoti_kernel_load("{path}", "{name}", &{name})'

    def kernel_handle(self, name: str) -> str:
        # AOTInductor: a member of the model's kernels object
        return f"kernels.{name}" if V.graph.aot_mode else name

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
        if V.graph.aot_mode:
            index = -1  # the current device: the runner sets the one loaded on
        else:
            device = V.graph.get_current_device_or_throw()
            index = device.index if device.index is not None else 0
        self.writeline("{")
        self.writeline(
            f'    maia_aoti_check({self.kernel_load_call(name)}, "{name}");'
        )
        self.writeline(f"    const int64_t {name}_sizes[] = {{{size_list}}};")
        self.writeline(f"    const MaiaAotiArg {name}_args[] = {{{', '.join(entries)}}};")
        self.writeline(
            f"    maia_aoti_check(maia_aoti_kernel_launch({self.kernel_handle(name)}, {grid_kind}, {name}_sizes, "
            f'{name}_args, {len(entries)}, {index}), "{name}");'
        )
        self.writeline("}")
