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


def _gloo(store, rank, size, timeout, global_ranks):
    from torch._C._distributed_c10d import ProcessGroupGloo

    options = ProcessGroupGloo._Options()
    options._timeout = timeout
    options._devices = [ProcessGroupGloo.create_default_device()]
    # One worker thread: the communication stream hands Gloo one launch at a time.
    options._threads = 1
    # Gloo's split indexes these (empty, it would read out of bounds).
    options.global_ranks_in_group = list(global_ranks)
    return ProcessGroupGloo(store, rank, size, options)


def _create_backend(dist_options, backend_options):
    """The creator torch.distributed calls (extended API) for each process
    group that has maia tensors."""
    from torch._C._distributed_c10d import PrefixStore

    from . import _C

    store, rank, size = dist_options.store, dist_options.group_rank, dist_options.group_size
    global_ranks = list(dist_options.global_ranks_in_group or range(size))
    gloo = _gloo(PrefixStore("gloo/", store), rank, size, dist_options.timeout, global_ranks)
    hosts = _hosts(store, rank, size, _host(dist_options))
    leaders = None
    block = _host_block(hosts)
    if block and rank % block == 0:
        # Gloo between the hosts' first ranks (the hierarchical transport).
        leaders = _gloo(PrefixStore("maia_leaders/", store), rank // block, size // block,
                        dist_options.timeout, global_ranks[::block])
    return _C._distributed.create_backend(
        gloo,
        store,
        dist_options.timeout,
        dist_options.group_id,
        hosts,
        leaders,
        torch.maia.current_device(),
    )


def _hosts(store, rank: int, size: int, host: str) -> list[str]:
    """Every rank's host, exchanged through the group's store."""
    if os.environ.get("MAIA_DIST_TRANSPORT", "auto") == "gloo":
        return [host] * size  # unused: everything goes through Gloo
    store.set(f"maia_host/{rank}", host)
    return [store.get(f"maia_host/{r}").decode() for r in range(size)]


def _host_block(hosts: list[str]) -> int:
    """Ranks per host if the group spans hosts holding contiguous blocks of
    equal size (as torchrun numbers ranks), else 0 (one host, or a layout
    the hierarchical transport does not take: Gloo for all)."""
    size = len(hosts)
    block = hosts.count(hosts[0])
    if block == size or size % block:
        return 0
    if len(set(hosts)) != size // block:
        return 0
    return 0 if any(hosts[r] != hosts[r - r % block] for r in range(size)) else block


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


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False) -> None:
    """``torch.distributed.monitored_barrier`` for a process group with
    maia's backend: blocks the host until every rank of ``group`` (default:
    the world) has called it; rank 0 raises ``DistBackendError`` naming the
    first rank that did not within ``timeout`` (a ``timedelta``; default: the
    group's timeout), or every such rank with ``wait_all_ranks``, and the
    other ranks raise with rank 0's report. It synchronizes hosts, not
    devices (``barrier()`` orders the devices' streams too).

    torch 2.13's ``dist.monitored_barrier`` refuses every group whose backend
    is not exactly ``gloo`` (a check in Python, before any backend is asked),
    so this calls the maia backend's ``monitoredBarrier`` directly."""
    import torch.distributed as dist

    group = group or dist.distributed_c10d._get_default_group()
    if dist.distributed_c10d._rank_not_in_group(group):
        return
    backend = group._get_backend(torch.device(BACKEND_NAME))
    if timeout is None:
        backend.monitored_barrier(wait_all_ranks=wait_all_ranks)
    else:
        backend.monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)


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
