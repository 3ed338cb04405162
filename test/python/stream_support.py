"""Helpers for tests of ordering between streams."""

import torch


def keep_busy(device, rounds=6):
    """Queues a few milliseconds of work on device's current stream (and
    returns the tensor it works on, to be kept alive until the test is done):
    work queued after it, or racing with it, then loses any unordered race."""
    busy = torch.ones(1 << 23, device=device)
    for _ in range(rounds):
        busy.mul_(1.0001)
    return busy
