"""torch.maia: the maia device module, shaped like torch.cuda."""

import functools
import os
import threading

import torch

from .. import _C
from .graphs import MaiaGraph, graph, graph_pool_handle, is_current_stream_capturing
from .kernels import Kernel, Module, load_module
from .memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)
from .random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from .streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

_initialized = False
_init_lock = threading.Lock()
_in_bad_fork = False


def _after_fork_in_child():
    global _in_bad_fork
    if _initialized:
        _in_bad_fork = True


os.register_at_fork(after_in_child=_after_fork_in_child)


def _is_in_bad_fork() -> bool:
    """True in a child forked after maia was initialized: maia is unusable there."""
    return _in_bad_fork


def is_available() -> bool:
    return device_count() > 0


def device_count() -> int:
    return _C._device_count()


def is_initialized() -> bool:
    return _initialized and not _in_bad_fork


def _lazy_init():
    global _initialized
    if _initialized and not _in_bad_fork:
        return
    if _in_bad_fork:
        raise RuntimeError(
            "Cannot use maia in a forked subprocess after it was initialized in the "
            "parent. To use maia with multiprocessing, use the 'spawn' start method."
        )
    with _init_lock:
        if not _initialized:
            _C._lazy_init()
            _initialized = True


def init():
    _lazy_init()


def _index(device) -> int:
    """The device index of an int, str, torch.device or None (current)."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "maia":
        raise ValueError(f"expected a maia device, got {device}")
    return current_device() if device.index is None else device.index


def current_device() -> int:
    return _C._current_device()


def set_device(device) -> None:
    index = _index(device)
    if index >= 0:
        _C._set_device(index)


class device:
    """Context manager that makes ``device`` the current maia device."""

    def __init__(self, device):
        self.index = -1 if device is None else _index(device)
        self.previous = -1

    def __enter__(self):
        if self.index >= 0:
            self.previous = _C._exchange_device(self.index)

    def __exit__(self, *exc):
        if self.index >= 0:
            _C._set_device(self.previous)
        return False


class device_of(device):
    """Context manager that makes the device of tensor ``obj`` current."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_maia else None)


def synchronize(device=None) -> None:
    """Waits for all work on all streams of a maia device."""
    _lazy_init()
    _C._synchronize(_index(device))


def get_device_properties(device=None) -> dict:
    return _C._device_properties(_index(device))


def get_device_name(device=None) -> str:
    return get_device_properties(device)["name"]


def get_device_capability(device=None) -> dict:
    return torch.accelerator.get_device_capability(torch.device("maia", _index(device)))


def get_amp_supported_dtype():
    return [torch.float16, torch.bfloat16]


def fallback_counts() -> dict:
    """How often each ATen operator without a maia kernel ran on the host."""
    return dict(_C._fallback_counts())


def reset_fallback_counts() -> None:
    _C._reset_fallback_counts()


def set_fallback_warnings(enabled: bool) -> None:
    """Whether the first host fallback of each operator warns (default True)."""
    _C._set_fallback_warnings(bool(enabled))


# The entry point group through which a compiler for maia (the maia_inductor
# package) offers Inductor its code generators; torch_maia does not import it.
COMPILER_ENTRY_POINTS = "torch_maia.inductor_backends"


def __getattr__(name):
    # Inductor asks the device module for its code generators the first time
    # it compiles for maia (init_backend_registration); that is when the
    # compiler package loads and registers maia through the upstream
    # registries, so that `import torch` does not pay for importing Inductor.
    if name in ("Scheduling", "PythonWrapperCodegen"):
        codegen = _compiler_codegen()
        if codegen is None:
            raise AttributeError(f"torch.maia.{name}: no compiler for maia is installed "
                                 f"(no '{COMPILER_ENTRY_POINTS}' entry point; "
                                 "maia_inductor provides one)")
        return codegen[name]
    raise AttributeError(f"module 'torch.maia' has no attribute '{name}'")


@functools.lru_cache(None)
def _compiler_codegen():
    """The code generators of the installed compiler (None without one):
    Inductor asks for each by name, the entry points are scanned once."""
    from importlib.metadata import entry_points

    backends = entry_points(group=COMPILER_ENTRY_POINTS)
    return next(iter(backends)).load()() if backends else None


__all__ = [
    "Event", "Stream", "StreamContext", "current_device", "current_stream",
    "default_stream", "device", "device_count", "device_of", "empty_cache",
    "fallback_counts", "get_device_capability", "get_device_name",
    "get_device_properties", "get_rng_state", "get_rng_state_all", "graph",
    "graph_pool_handle", "init", "is_current_stream_capturing", "MaiaGraph",
    "initial_seed", "is_available", "Kernel", "load_module", "Module", "is_initialized", "manual_seed",
    "manual_seed_all", "max_memory_allocated", "max_memory_reserved",
    "mem_get_info", "memory_allocated", "memory_reserved", "memory_stats",
    "reset_accumulated_memory_stats", "reset_fallback_counts",
    "reset_peak_memory_stats", "seed", "seed_all", "set_device",
    "set_fallback_warnings", "set_rng_state", "set_rng_state_all", "set_stream",
    "stream", "synchronize",
]
