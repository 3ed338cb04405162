"""torch.compile for maia: the Inductor device plugin.

`register()` plugs maia into Inductor through its upstream registries
(device op overrides, backend for device with our scheduling, wrapper, post-
grad pass and config). It runs the first time Inductor asks torch.maia for
maia's code generators: torch.maia finds `inductor_codegen` through this
package's "torch_maia.inductor_backends" entry point, so `import torch`
stays fast, `torch.compile(model)` on maia tensors needs no extra step, and
torch_maia never imports this package (the dependency is one way).
"""

from __future__ import annotations

_registered = False


def register() -> None:
    global _registered
    if _registered:
        return
    from torch._inductor.codegen.common import (
        register_backend_for_device,
        register_device_op_overrides,
    )

    from . import cat_lowering, config
    from .compiler import compiler_identity
    from .cpp_wrapper import MaiaCppWrapper
    from .device import MaiaDeviceOpOverrides
    from .gemm_autotune import register_benchmarker
    from .graph_passes import MaiaPostGradPasses
    from .scheduling import MaiaScheduling
    from .wrapper import MaiaWrapperCodegen

    identity = compiler_identity()
    config.compiler_version = identity["version"]
    config.target_cpu = identity["host_cpu"]
    config.plugin_hash = _source_hash()

    cat_lowering.register()
    register_device_op_overrides("maia", MaiaDeviceOpOverrides())
    register_backend_for_device("maia", MaiaScheduling, MaiaWrapperCodegen,
                                device_cpp_wrapper_codegen=MaiaCppWrapper,
                                device_custom_pass=MaiaPostGradPasses(),
                                device_custom_config=config)
    register_benchmarker()  # max-autotune times GEMM templates on the device
    _registered = True


def inductor_codegen() -> dict:
    """The code generators Inductor asks torch.maia for (the entry point)."""
    register()
    from .scheduling import MaiaScheduling
    from .wrapper import MaiaWrapperCodegen

    return {"Scheduling": MaiaScheduling, "PythonWrapperCodegen": MaiaWrapperCodegen}


def _source_hash() -> str:
    import hashlib
    from pathlib import Path

    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
