"""torch.compile for maia: the Inductor device plugin.

`register()` plugs maia into Dynamo and Inductor through their upstream
registries (device interface, device op overrides, backend for device with
our scheduling, wrapper and config). torch_maia calls it lazily the first
time Inductor looks for maia's code generators, so `import torch` stays fast
and `torch.compile(model)` on maia tensors needs no extra step.
"""

from __future__ import annotations

_registered = False


def register() -> None:
    global _registered
    if _registered:
        return
    import torch
    from torch._dynamo.device_interface import register_interface_for_device
    from torch._inductor.codegen.common import (
        register_backend_for_device,
        register_device_op_overrides,
    )

    from . import config
    from .compiler import compiler_identity
    from .device import MaiaDeviceOpOverrides, MaiaInterface
    from .graph_passes import FlattenFullArgReductions
    from .scheduling import MaiaScheduling
    from .wrapper import MaiaWrapperCodegen

    identity = compiler_identity()
    config.compiler_version = identity["version"]
    config.target_cpu = identity["host_cpu"]
    config.plugin_hash = _source_hash()

    register_interface_for_device("maia", MaiaInterface)
    for index in range(torch.maia.device_count()):
        register_interface_for_device(f"maia:{index}", MaiaInterface)
    register_device_op_overrides("maia", MaiaDeviceOpOverrides())
    register_backend_for_device("maia", MaiaScheduling, MaiaWrapperCodegen,
                                device_custom_pass=FlattenFullArgReductions(),
                                device_custom_config=config)
    _registered = True


def _source_hash() -> str:
    import hashlib
    from pathlib import Path

    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
