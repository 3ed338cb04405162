"""maia as Dynamo sees a device: the DeviceInterface (streams, events,
properties; Worker answers in compile workers without touching the device).

Imported only once torch._dynamo.device_interface is (see _on_import.py):
importing Dynamo costs about two seconds, which `import torch` must not pay.
"""

from __future__ import annotations

from collections import namedtuple
from functools import lru_cache

import torch
from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device

MaiaProperties = namedtuple("MaiaProperties", ["name", "total_memory", "multi_processor_count"])


@lru_cache(None)
def _properties(index: int) -> MaiaProperties:
    props = torch.maia.get_device_properties(index)
    return MaiaProperties(props["name"], props["total_memory"], props["core_count"])


def _index(device) -> int:
    if device is None:
        return torch.maia.current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    return torch.maia.current_device() if device.index is None else device.index


class MaiaInterface(DeviceInterface):
    device = torch.maia.device  # type: ignore[assignment]
    Event = torch.maia.Event  # type: ignore[assignment]
    Stream = torch.maia.Stream  # type: ignore[assignment]

    class Worker:
        # Properties are read once in the parent process and cached.
        @staticmethod
        def set_device(device: int) -> None:
            MaiaInterface.Worker._current = device

        @staticmethod
        def current_device() -> int:
            return getattr(MaiaInterface.Worker, "_current", 0)

        @staticmethod
        def get_device_properties(device=None):
            return _properties(_index(device) if device is not None else
                               MaiaInterface.Worker.current_device())

    @staticmethod
    def current_device() -> int:
        return torch.maia.current_device()

    @staticmethod
    def set_device(device) -> None:
        torch.maia.set_device(device)

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        previous = torch.maia.current_device()
        if device != previous:
            torch.maia.set_device(device)
        return previous

    @staticmethod
    def exchange_device(device: int) -> int:
        return MaiaInterface.maybe_exchange_device(device)

    @staticmethod
    def device_count() -> int:
        return torch.maia.device_count()

    @staticmethod
    def is_available() -> bool:
        return torch.maia.is_available()

    @staticmethod
    def stream(stream: torch.Stream):
        return torch.maia.stream(stream)

    @staticmethod
    def current_stream() -> torch.Stream:
        return torch.maia.current_stream()

    @staticmethod
    def set_stream(stream: torch.Stream) -> None:
        torch.maia.set_stream(stream)

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        torch.maia.set_stream(torch.maia.Stream(stream_id=stream_id, device_index=device_index,
                                                device_type=device_type))

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return torch.maia.current_stream(device_idx).stream_id

    @staticmethod
    def synchronize(device=None) -> None:
        torch.maia.synchronize(device)

    @classmethod
    def get_device_properties(cls, device=None):
        return _properties(_index(device))

    @staticmethod
    def get_compute_capability(device=None) -> str:
        return ""

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @classmethod
    def is_dtype_supported(cls, dtype: torch.dtype, including_emulation: bool = False) -> bool:
        return not (dtype.is_complex or dtype in (torch.float8_e4m3fn, torch.float8_e5m2))

    @staticmethod
    def memory_allocated(device=None) -> int:
        return torch.maia.memory_allocated(device)

    @staticmethod
    def is_triton_capable(device=None) -> bool:
        return False


def register() -> None:
    register_interface_for_device("maia", MaiaInterface)
    for index in range(torch.maia.device_count()):
        register_interface_for_device(f"maia:{index}", MaiaInterface)
