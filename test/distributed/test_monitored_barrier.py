"""monitored_barrier on maia process groups (4 ranks): every rank arrives ->
every rank passes; ranks that do not arrive within the timeout -> rank 0
names the first of them (every one with wait_all_ranks), the ranks that did
arrive report rank 0's verdict, and so do the late ranks when they arrive.
The barrier synchronizes hosts through the group's store, so a failed one
leaves the group usable. Also what torch 2.13's own entry points do with a
maia group."""

import datetime
import re

import pytest
import torch
import torch.distributed as dist
import torch_maia.distributed as maia_dist

from dist_support import World

TIMEOUT = datetime.timedelta(seconds=2)
LATE = (2, 3)


def every_rank_passes(rank, world):
    maia_dist.monitored_barrier()  # the group's timeout
    maia_dist.monitored_barrier(timeout=TIMEOUT)
    return True


def late_ranks_stay_away(rank, world, wait_all_ranks):
    """Ranks 2 and 3 do not call it; returns each caller's error."""
    if rank in LATE:
        return None
    with pytest.raises(dist.DistBackendError) as error:
        maia_dist.monitored_barrier(timeout=TIMEOUT, wait_all_ranks=wait_all_ranks)
    return str(error.value)


def late_ranks_arrive(rank, world):
    """The late ranks call it now: rank 0's verdict is already there."""
    if rank not in LATE:
        return None
    with pytest.raises(dist.DistBackendError) as error:
        maia_dist.monitored_barrier(timeout=TIMEOUT)
    return str(error.value)


def group_still_works(rank, world):
    t = torch.ones(4, device=torch.device("maia", rank))
    dist.all_reduce(t)
    maia_dist.monitored_barrier()
    return t.cpu().tolist()


def torch_entry_points(rank, world):
    """torch 2.13: dist.monitored_barrier takes only groups whose backend is
    "gloo"; ProcessGroup.monitored_barrier runs on the group's CPU backend,
    which a maia-only group has not; a "cpu:gloo,maia:maia" group runs it on
    gloo, and torch_maia's on maia."""
    world_group = dist.group.WORLD
    with pytest.raises(ValueError, match="only implemented for GLOO"):
        dist.monitored_barrier(world_group, timeout=TIMEOUT)
    with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
        world_group.monitored_barrier(TIMEOUT)
    mixed = dist.new_group(backend="cpu:gloo,maia:maia")
    with pytest.raises(ValueError, match="only implemented for GLOO"):
        dist.monitored_barrier(mixed, timeout=TIMEOUT)
    mixed.monitored_barrier(TIMEOUT)  # gloo's
    maia_dist.monitored_barrier(mixed, timeout=TIMEOUT)
    return True


def bad_timeout_is_refused(rank, world):
    with pytest.raises(RuntimeError, match="monitored_barrier got a timeout of 0 ms"):
        maia_dist.monitored_barrier(timeout=datetime.timedelta(0))
    return True


@pytest.fixture(scope="module")
def world():
    world = World(4)
    yield world
    world.close()


class TestMonitoredBarrier:
    def test_every_rank_arrives(self, world):
        assert world.run(every_rank_passes) == [True] * 4

    def test_late_ranks_fail_it_naming_the_first(self, world):
        errors = world.run(late_ranks_stay_away, False)
        assert re.search(r"monitored_barrier \(number \d+\) of process group '0' failed on "
                         r"rank 0 of 4: rank 2 did not reach it within 2000 ms", errors[0]), errors
        assert "failed on rank 1 of 4: rank 0 reports: rank 2 did not reach it" in errors[1], \
            errors
        late = world.run(late_ranks_arrive)
        for r in LATE:
            assert f"failed on rank {r} of 4: rank 0 reports: rank 2 did not reach it" \
                in late[r], late
        assert world.run(group_still_works) == [[4.0] * 4] * 4

    def test_wait_all_ranks_names_every_late_rank(self, world):
        errors = world.run(late_ranks_stay_away, True)
        assert "failed on rank 0 of 4: ranks 2, 3 did not reach it within 2000 ms" \
            in errors[0], errors
        assert "rank 0 reports: ranks 2, 3 did not reach it" in errors[1], errors
        late = world.run(late_ranks_arrive)
        assert all("rank 0 reports: ranks 2, 3" in late[r] for r in LATE), late
        assert world.run(group_still_works) == [[4.0] * 4] * 4

    def test_torch_entry_points(self, world):
        assert world.run(torch_entry_points) == [True] * 4

    def test_bad_timeout_is_refused(self, world):
        assert world.run(bad_timeout_is_refused) == [True] * 4
