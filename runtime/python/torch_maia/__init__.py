"""PyTorch backend for the MAIA accelerator (simulated), through PrivateUse1.

`import torch` is enough: torch loads this package through its
``torch.backends`` entry point. After that, ``torch.device("maia")`` is a
PrivateUse1 device and ``torch.maia`` is the device module.
"""


def _autoload():
    """The torch.backends entry point: importing this package does the work.

    Defined before `import torch` because `import torch_maia` as a program's
    first import makes torch's auto-loading call this while the package is
    still being imported."""


import torch  # noqa: E402

# Loads libmaia_torch.so: its static initializers register the guard,
# allocators, hooks, generator and operators for PrivateUse1.
from . import _C  # noqa: F401


def _export_runtime_symbols() -> None:
    # C++ wrappers of compiled graphs (cpp_wrapper, AOTInductor packages)
    # call libmaia_torch's C shim (maia/aoti.h) without linking it: promote
    # the library _C loaded to global symbol resolution.
    import ctypes
    import os

    ctypes.CDLL("libmaia_torch.so", mode=os.RTLD_GLOBAL | os.RTLD_NOLOAD)


_export_runtime_symbols()

_BACKEND = "maia"

# libmaia_torch.so registered the name with c10 already; this renames the
# Python side (torch.utils' backend name, ProfilerActivity.MAIA, ...).
if torch.utils.backend_registration._privateuse1_backend_name != _BACKEND:
    torch.utils.rename_privateuse1_backend(_BACKEND)

from . import _on_import, _tensor_methods, maia  # noqa: E402  (need the renamed backend)

if not hasattr(torch, _BACKEND):
    torch._register_device_module(_BACKEND, maia)
    _tensor_methods.install()
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=False, for_module=True, for_packed_sequence=True, for_storage=True
    )


def _register_dynamo_interface() -> None:
    from . import _dynamo_interface

    _dynamo_interface.register()


_on_import.after_import("torch._dynamo.device_interface", _register_dynamo_interface)


def _register_distributed_backend() -> None:
    from . import distributed

    distributed.register()


# The "maia" c10d backend (torch_maia/distributed.py), once torch.distributed is imported.
_on_import.after_import("torch.distributed", _register_distributed_backend)


__all__ = ["maia"]
