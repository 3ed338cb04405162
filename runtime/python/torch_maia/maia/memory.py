"""torch.maia memory statistics: the maia caching allocator through the
device-generic torch.accelerator API (exact numbers, never rounded)."""

import torch


def _device(device):
    from . import _index

    return torch.device("maia", _index(device))


def memory_stats(device=None) -> dict:
    return torch.accelerator.memory_stats(_device(device))


def memory_allocated(device=None) -> int:
    return torch.accelerator.memory_allocated(_device(device))


def max_memory_allocated(device=None) -> int:
    return torch.accelerator.max_memory_allocated(_device(device))


def memory_reserved(device=None) -> int:
    return torch.accelerator.memory_reserved(_device(device))


def max_memory_reserved(device=None) -> int:
    return torch.accelerator.max_memory_reserved(_device(device))


def reset_peak_memory_stats(device=None) -> None:
    torch.accelerator.reset_peak_memory_stats(_device(device))


def reset_accumulated_memory_stats(device=None) -> None:
    torch.accelerator.reset_accumulated_memory_stats(_device(device))


def empty_cache() -> None:
    """Returns the cached, unused device memory of every maia device."""
    torch.accelerator.empty_cache()


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes of the device."""
    return torch.accelerator.get_memory_info(_device(device))
