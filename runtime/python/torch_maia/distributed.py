"""The "maia" c10d backend: torch.distributed collectives on maia tensors.

Registered when torch_maia loads (`register()`, cheap: torch.distributed is
already imported by `import torch`), for the device type "maia", so
``init_process_group(device_id=torch.device("maia", rank))`` with no backend
uses it for maia tensors and gloo for CPU tensors ("cpu:gloo,maia:maia").
The backend itself is C++ (runtime/torch/distributed); it moves data between
the ranks of a host through IPC-mapped device memory, and through a
ProcessGroupGloo of the same ranks between hosts. See docs/distributed.md.
"""

from __future__ import annotations

import os
import socket

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
    return _C._distributed.create_backend(
        gloo,
        dist_options.store,
        dist_options.timeout,
        dist_options.group_id,
        _host(dist_options),
        torch.maia.current_device(),
    )


def _host(dist_options) -> str:
    """The host this rank runs on, as the backend groups ranks for IPC:
    the hostname, or with MAIA_DIST_EMULATE_HOSTS=k the emulated host of k
    consecutive global ranks (k=1: every rank is its own host), so the
    cross-host path runs on one machine."""
    emulate = os.environ.get("MAIA_DIST_EMULATE_HOSTS")
    if not emulate:
        return socket.gethostname()
    if not emulate.isdigit() or int(emulate) < 1:
        raise ValueError(
            f"MAIA_DIST_EMULATE_HOSTS={emulate!r} is not a number of ranks per host (>= 1)"
        )
    ranks = list(dist_options.global_ranks_in_group or [])
    rank = ranks[dist_options.group_rank] if ranks else dist_options.group_rank
    return f"emulated-host-{rank // int(emulate)}"


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
