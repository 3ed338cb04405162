"""The source snippets wrapper code uses for device operations on maia (the
DeviceInterface is torch_maia's: torch_maia/_dynamo_interface.py)."""

from __future__ import annotations

from torch._inductor.codegen.common import DeviceOpOverrides


class MaiaDeviceOpOverrides(DeviceOpOverrides):
    def import_get_raw_stream_as(self, name: str) -> str:
        return f"from maia_inductor.runtime import get_raw_stream as {name}"

    def set_device(self, device_idx: int) -> str:
        return f"torch.maia.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.maia.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.maia.device({device_idx})"

    def cpp_kernel_type(self) -> str:
        # the C++ wrapper's kernel handles (maia/aoti.h)
        return "MaiaAotiKernelHandle"
