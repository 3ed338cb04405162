"""The "maia" c10d backend: torch.distributed collectives on maia tensors.

Registered when torch_maia loads (`register()`, cheap: torch.distributed is
already imported by `import torch`), for the device type "maia", so
``init_process_group(device_id=torch.device("maia", rank))`` with no backend
uses it for maia tensors and gloo for CPU tensors ("cpu:gloo,maia:maia").
The backend itself is C++ (runtime/torch/distributed); it moves data through
a ProcessGroupGloo of the same ranks. See docs/distributed.md.
"""

from __future__ import annotations

import torch

BACKEND_NAME = "maia"


def _create_backend(dist_options, backend_options):
    """The creator torch.distributed calls (extended API) for each process
    group that has maia tensors."""
    from torch._C._distributed_c10d import PrefixStore, ProcessGroupGloo

    from . import _C

    gloo_options = ProcessGroupGloo._Options()
    gloo_options._timeout = dist_options.timeout
    gloo_options._devices = [ProcessGroupGloo.create_default_device()]
    # One worker thread: the communication stream hands Gloo one launch at a time.
    gloo_options._threads = 1
    gloo = ProcessGroupGloo(
        PrefixStore("gloo/", dist_options.store),
        dist_options.group_rank,
        dist_options.group_size,
        gloo_options,
    )
    return _C._distributed.create_backend(gloo, dist_options.timeout, dist_options.group_id)


def register() -> None:
    """Registers the backend with torch.distributed (once; nothing if torch
    was built without distributed support)."""
    if not torch.distributed.is_available():
        return
    from torch.distributed import Backend

    if BACKEND_NAME.upper() in Backend._plugins:
        return
    Backend.register_backend(
        BACKEND_NAME, _create_backend, extended_api=True, devices=[BACKEND_NAME]
    )
