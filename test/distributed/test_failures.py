"""A peer that dies, never joins a collective, or calls a different one makes
the others fail within the process group's timeout, with an error naming the
collective and its sequence number: never a hang, never a wrong result. Each
case has its own world (the group is broken afterwards)."""

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


def mismatched_all_reduce(rank, world):
    """Rank 0 reduces 100 floats, rank 1 200: both fail, neither reads the
    other's data."""
    d = torch.device("maia", rank)
    t = torch.full((100 * (rank + 1),), float(rank + 1), device=d)
    work = dist.all_reduce(t, async_op=True)
    torch.maia.synchronize()
    assert work.is_completed() and not work.is_success()
    pattern = (r"ALLREDUCE \(sequence number \d+\) of process group '.*' on rank "
               rf"{rank} of 2( \(between hosts\))? failed: .*another step")
    with pytest.raises(dist.DistBackendError, match=pattern):
        work.wait()
    return str(work.exception())


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

    # Gloo moves mismatched sizes and tears the process down from its own
    # thread; every path (IPC, Gloo, the leaders of emulated hosts) agrees first.
    @pytest.mark.parametrize("transport", [{}, {"MAIA_DIST_TRANSPORT": "gloo"},
                                           {"MAIA_DIST_EMULATE_HOSTS": "1"}],
                             ids=["ipc", "gloo", "between_hosts"])
    def test_a_peer_at_another_collective_fails_both(self, transport):
        world = World(2, env={"MAIA_DIST_ASYNC_ERROR_HANDLING": "0", **transport},
                      timeout_s=TIMEOUT_S)
        try:
            messages = world.run(mismatched_all_reduce)
        finally:
            world.close()
        assert "it runs allreduce (SUM) of 200 Float" in messages[0], messages
        assert "it runs allreduce (SUM) of 100 Float" in messages[1], messages

    def test_mismatched_send_and_recv_fail_both(self):
        world = World(2, env={"MAIA_DIST_ASYNC_ERROR_HANDLING": "0"}, timeout_s=TIMEOUT_S)
        try:
            messages = world.run(mismatched_send_recv)
        finally:
            world.close()
        assert "rank 0 sent 400 bytes with tag 0 (send/recv), this rank receives 800 bytes" \
            in messages[1], messages
        assert "RECV (sequence number" in messages[1], messages
        assert "rank 1 failed an earlier IPC step" in messages[0], messages


def mismatched_send_recv(rank, world):
    """Rank 0 sends 100 floats, rank 1 receives 200: the receive fails naming
    both sizes. The send completed (its data was handed over, as with NCCL or
    Gloo), so the sender learns it at its next operation of the group."""
    d = torch.device("maia", rank)
    if rank == 0:
        dist.isend(torch.ones(100, device=d), dst=1).wait()
        work = dist.all_reduce(torch.ones(8, device=d), async_op=True)
    else:
        work = dist.irecv(torch.zeros(200, device=d), src=0)
    torch.maia.synchronize()
    assert work.is_completed() and not work.is_success()
    with pytest.raises(dist.DistBackendError, match="failed"):
        work.wait()
    return str(work.exception())
