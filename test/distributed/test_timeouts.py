"""Per-call timeouts: a collective whose call gives a timeout (its options'
`timeout`, `barrier(timeout=)`, `Work.wait(timeout)`) fails within that
timeout when a peer never joins, however long the group's timeout is, on
every path (IPC within a host, Gloo between emulated hosts, Gloo for
everything); the error names the collective, its sequence number and the
rank. Every failing case runs on a fresh group of the same world, since a
failure breaks its group; the Work.wait case runs last in each world (on the
Gloo paths its exchange keeps the device's communication stream until
Gloo's own timeout)."""

import datetime
import time

import pytest
import torch
import torch.distributed as dist
from torch._C._distributed_c10d import AllgatherOptions  # not re-exported by torch.distributed

from dist_support import World

GROUP_TIMEOUT_S = 60
CALL_TIMEOUT = datetime.timedelta(seconds=1.5)
# Far under the group's timeout: the call's timeout decided, not the group's.
FAST_S = GROUP_TIMEOUT_S / 2

PATHS = {
    "ipc": {},
    "between_hosts": {"MAIA_DIST_EMULATE_HOSTS": "1"},
    "gloo": {"MAIA_DIST_TRANSPORT": "gloo"},
}


def labelled(op):
    # Between hosts, the leaders' Gloo step fails "... of 2 (between hosts)".
    return (rf"{op} \(sequence number \d+\) of process group '.*' on rank 0 of 2"
            r"( \(between hosts\))?")


def expect_failure(fn, pattern):
    """Runs fn, which must raise DistBackendError matching pattern; returns
    (message, seconds it took)."""
    start = time.monotonic()
    with pytest.raises(dist.DistBackendError, match=pattern) as error:
        fn()
    return str(error.value), time.monotonic() - start


def fresh_group():
    return dist.new_group([0, 1], timeout=datetime.timedelta(seconds=GROUP_TIMEOUT_S))


def allreduce_options(timeout):
    opts = dist.AllreduceOptions()
    opts.timeout = timeout
    return opts


def collectives_with_call_timeouts_complete(rank, world):
    """Both ranks join: calls with their own timeouts and Work.wait(timeout)
    return with the right results."""
    group = fresh_group()
    t = torch.full((8,), float(rank + 1), device=torch.device("maia", rank))
    group.allreduce([t], allreduce_options(CALL_TIMEOUT)).wait()
    work = dist.all_reduce(t, group=group, async_op=True)
    assert work.wait(timeout=CALL_TIMEOUT)
    dist.barrier(group=group, timeout=CALL_TIMEOUT)
    return t.cpu().tolist()


def allreduce_with_call_timeout_fails_fast(rank, world):
    group = fresh_group()
    if rank != 0:
        return None  # alive, never joins
    t = torch.ones(8, device=torch.device("maia", 0))
    work = group.allreduce([t], allreduce_options(CALL_TIMEOUT))
    message, seconds = expect_failure(lambda: (torch.maia.synchronize(), work.wait()),
                                      labelled("ALLREDUCE") + " failed: ")
    # The group is broken now: its next collective says why.
    with pytest.raises(dist.DistBackendError, match="an earlier collective of this process "
                       "group failed: " + labelled("ALLREDUCE")):
        dist.all_reduce(t, group=group)
    return message, seconds


def barrier_with_call_timeout_fails_fast(rank, world):
    group = fresh_group()
    if rank != 0:
        return None
    return expect_failure(lambda: dist.barrier(group=group, timeout=CALL_TIMEOUT),
                          labelled("BARRIER") + " failed: ")


def options_of(kind, timeout):
    opts = kind()
    opts.timeout = timeout
    return opts


# Each collective's options, as a caller of the ProcessGroup methods passes
# them (through the dispatcher to the backend).
OPTION_CALLS = {
    "BROADCAST": lambda g, t: g.broadcast([t], options_of(dist.BroadcastOptions, CALL_TIMEOUT)),
    "REDUCE": lambda g, t: g.reduce([t], options_of(dist.ReduceOptions, CALL_TIMEOUT)),
    "_ALLGATHER_BASE": lambda g, t: g._allgather_base(
        torch.empty(2 * t.numel(), device=t.device), t,
        options_of(AllgatherOptions, CALL_TIMEOUT)),
    "_REDUCE_SCATTER_BASE": lambda g, t: g._reduce_scatter_base(
        t[: t.numel() // 2], t.clone(), options_of(dist.ReduceScatterOptions, CALL_TIMEOUT)),
    "ALLTOALL_BASE": lambda g, t: g.alltoall_base(
        torch.empty_like(t), t, [], [], options_of(dist.AllToAllOptions, CALL_TIMEOUT)),
}


def every_options_timeout_fails_fast(rank, world):
    """One fresh group per collective; returns (name, message, seconds)."""
    results = []
    for name, call in OPTION_CALLS.items():
        group = fresh_group()
        if rank != 0:
            continue
        t = torch.ones(8, device=torch.device("maia", 0))
        work = call(group, t)
        message, seconds = expect_failure(lambda: (torch.maia.synchronize(), work.wait()),
                                          labelled(name) + " failed: ")
        results.append((name, message, seconds))
    return results


def set_timeout_applies_to_later_collectives(rank, world):
    """Backend.set_timeout (setTimeout) changes the group's timeout."""
    group = fresh_group()
    group._get_backend(torch.device("maia")).set_timeout(CALL_TIMEOUT)
    if rank != 0:
        return None
    t = torch.ones(8, device=torch.device("maia", 0))
    return expect_failure(lambda: (dist.all_reduce(t, group=group), torch.maia.synchronize(),
                                   dist.all_reduce(t, group=group)),
                          labelled("ALLREDUCE") + " failed: ")


def wait_with_timeout_fails_fast(rank, world):
    group = fresh_group()
    if rank != 0:
        return None
    t = torch.ones(8, device=torch.device("maia", 0))
    work = dist.all_reduce(t, group=group, async_op=True)
    message, seconds = expect_failure(lambda: work.wait(timeout=CALL_TIMEOUT),
                                      labelled("ALLREDUCE") + r" failed: not completed within "
                                      r"1500 ms \(Work.wait\(timeout\)\)")
    assert work.is_completed() and not work.is_success()
    return message, seconds


def bad_timeouts_are_refused(rank, world):
    group = fresh_group()
    d = torch.device("maia", rank)
    with pytest.raises(RuntimeError, match="BARRIER got a timeout of 0 ms; give a positive one"):
        dist.barrier(group=group, timeout=datetime.timedelta(0))
    with pytest.raises(RuntimeError, match="Work.wait got a timeout of -5 ms"):
        dist.all_reduce(torch.ones(2, device=d), group=group,
                        async_op=True).wait(datetime.timedelta(milliseconds=-5))
    # Nothing was left half-issued: the group still works.
    t = torch.ones(2, device=d)
    dist.all_reduce(t, group=group)
    return t.cpu().tolist()


@pytest.fixture(scope="module", params=list(PATHS), ids=list(PATHS))
def world(request):
    world = World(2, env={"MAIA_DIST_ASYNC_ERROR_HANDLING": "0", **PATHS[request.param]},
                  timeout_s=GROUP_TIMEOUT_S)
    world.path = request.param
    yield world
    world.close()


class TestCallTimeouts:
    def test_calls_with_timeouts_complete_when_every_rank_joins(self, world):
        assert world.run(collectives_with_call_timeouts_complete) == [[6.0] * 8] * 2
        assert world.run(bad_timeouts_are_refused) == [[2.0] * 2] * 2

    def test_allreduce_options_timeout_fails_within_it(self, world):
        message, seconds = world.run(allreduce_with_call_timeout_fails_fast)[0]
        assert seconds < FAST_S, (seconds, message)
        if world.path == "ipc":
            assert "timed out after 1500 ms waiting for rank(s) 1 to reach the same step" \
                in message, message
        else:  # Gloo says how long it waited; the store's progress record, for whom
            assert "1500ms" in message, message
            assert "rank(s) 1 never reached this collective" in message, message

    def test_barrier_timeout_fails_within_it(self, world):
        message, seconds = world.run(barrier_with_call_timeout_fails_fast)[0]
        assert seconds < FAST_S, (seconds, message)

    def test_every_options_timeout_reaches_the_backend(self, world):
        if world.path != "ipc":
            pytest.skip("the options reach the backend alike on every path; the Gloo steps' "
                        "use of them is covered by the all_reduce test")
        results = world.run(every_options_timeout_fails_fast)[0]
        assert [name for name, _, _ in results] == list(OPTION_CALLS)
        for name, message, seconds in results:
            assert seconds < FAST_S, (name, seconds, message)
            assert "timed out after 1500 ms waiting for rank(s) 1" in message, message

    def test_set_timeout_changes_the_group_timeout(self, world):
        message, seconds = world.run(set_timeout_applies_to_later_collectives)[0]
        assert seconds < FAST_S, (seconds, message)

    def test_work_wait_timeout_fails_within_it(self, world):
        message, seconds = world.run(wait_with_timeout_fails_fast)[0]
        assert seconds < FAST_S, (seconds, message)
        if world.path == "ipc":
            assert "it was waiting for rank(s) 1 to reach the same step" in message, message
        else:
            assert ("it was waiting for the other ranks to reach the same collective (through "
                    "Gloo); rank(s) 1 never reached this collective") in message, message


def wait_with_timeout_in_abort_mode(rank, world):
    group = fresh_group()
    if rank == 0:
        work = dist.all_reduce(torch.ones(8, device=torch.device("maia", 0)), group=group,
                               async_op=True)
        work.wait(timeout=CALL_TIMEOUT)  # the process is torn down in here


def test_work_wait_timeout_tears_the_process_down_by_default(tmp_path):
    """Without MAIA_DIST_ASYNC_ERROR_HANDLING=0 an expired Work.wait(timeout)
    is handled as any failed collective: the message on stderr, then abort
    (as NCCL's watchdog takes the process down after a timed-out wait)."""
    stderr = str(tmp_path / "stderr")
    world = World(2, timeout_s=GROUP_TIMEOUT_S, stderr_path=stderr)
    try:
        with pytest.raises(AssertionError, match=r"rank\(s\) \[.*0.*\] exited"):
            world.run(wait_with_timeout_in_abort_mode)
    finally:
        world.close()
    text = open(f"{stderr}.0").read()
    assert "not completed within 1500 ms (Work.wait(timeout))" in text, text
    assert "tearing the process down" in text, text
