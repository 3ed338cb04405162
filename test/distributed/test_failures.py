"""A peer that dies or never joins a collective makes the others fail within
the process group's timeout, with an error naming the collective and its
sequence number: never a hang. Each case has its own world (the group is
broken afterwards)."""

import os
import threading

import pytest
import torch
import torch.distributed as dist

from dist_support import World

TIMEOUT_S = 5
PATTERN = r"ALLREDUCE \(sequence number \d+\) of process group '.*' on rank 0 of 2 failed"


def leave_soon(rank, world):
    """Rank 1 answers, then its process exits without a word to its peers."""
    if rank == 1:
        threading.Timer(0.5, os._exit, (0,)).start()


def all_reduce_and_expect_failure(rank, world):
    if rank != 0:
        return None  # alive, never joins the collective
    d = torch.device("maia", 0)
    t = torch.ones(8, device=d)
    work = dist.all_reduce(t, async_op=True)  # returns at once: the host never blocks
    torch.maia.synchronize()  # returns once the exchange has failed
    assert work.is_completed() and not work.is_success()
    with pytest.raises(dist.DistBackendError, match=PATTERN):
        work.wait()
    with pytest.raises(dist.DistBackendError, match="an earlier collective of this process "
                       "group failed: " + PATTERN):
        dist.all_reduce(t)
    return str(work.exception())


def all_reduce_in_abort_mode(rank, world):
    if rank == 0:
        t = torch.ones(8, device=torch.device("maia", 0))
        dist.all_reduce(t)
        torch.maia.synchronize()  # the process is torn down before this returns


@pytest.fixture
def kept_alive_world():
    world = World(2, env={"MAIA_DIST_ASYNC_ERROR_HANDLING": "0"}, timeout_s=TIMEOUT_S)
    yield world
    world.close()


class TestFailures:
    def test_peer_that_never_joins_fails_the_collective_after_the_timeout(self,
                                                                         kept_alive_world):
        message = kept_alive_world.run(all_reduce_and_expect_failure)[0]
        assert "ALLREDUCE (sequence number" in message

    def test_peer_that_dies_fails_the_collective(self, kept_alive_world):
        kept_alive_world.run(leave_soon)
        message = kept_alive_world.run_on(0, all_reduce_and_expect_failure)
        assert "ALLREDUCE (sequence number" in message

    def test_default_tears_the_process_down_with_the_error(self, tmp_path):
        stderr = str(tmp_path / "stderr")
        world = World(2, timeout_s=TIMEOUT_S, stderr_path=stderr)
        try:
            world.run(leave_soon)
            with pytest.raises(AssertionError, match=r"rank\(s\) \[.*0.*\] exited"):
                world.run_on(0, all_reduce_in_abort_mode)
        finally:
            world.close()
        text = open(f"{stderr}.0").read()
        assert "[maia c10d] ALLREDUCE (sequence number" in text, text
        assert "tearing the process down" in text, text
