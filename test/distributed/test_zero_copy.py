"""The IPC transport's zero-copy allreduce, all_gather and reduce_scatter:
the ranks read each other's buffers in place, opened through their
allocations' IPC handles, and the communication stream waits for the data
movement on a device word.

MAIA_DIST_IPC_ZERO_COPY_BYTES=1 sends every non-empty one through it (by
default only messages of 1 MiB and more), so that every op and dtype,
sizes that do not split evenly over the ranks (and fewer elements than
ranks: empty chunks), transposed and zero-size tensors, repeated calls on
reused and on fresh buffers, and a peer that dies, run in seconds."""

import os

import pytest
import torch
import torch.distributed as dist

from collective_support import DTYPES, Failures, check_all_reduce_every_op
from dist_support import World
from test_collectives import (check_all_reduce, check_coalesced, check_movement,
                              check_reduce_scatter)

ZERO_COPY = {"MAIA_DIST_IPC_ZERO_COPY_BYTES": "1"}


def dev(rank):
    return torch.device("maia", rank)


def check_every_op_and_dtype(rank, world):
    failures = Failures()
    for salt, dtype in enumerate(DTYPES):
        check_all_reduce_every_op(rank, world, dtype, salt, (world - 1, 4001, 100003), failures)
    failures.raise_any()


def counts(rank):
    return dist.group.WORLD._get_backend(dev(rank))._launch_counts()


def check_reused_and_fresh_buffers(rank, world):
    """The same tensor many times (its segment opened once by each peer),
    then new ones, back to back without synchronizing; every rank ends
    with the same bits."""
    d = dev(rank)
    t = torch.full((300001,), float(rank + 1), device=d)
    dist.all_reduce(t)
    torch.maia.synchronize()
    before = counts(rank)
    for _ in range(4):
        dist.all_reduce(t)
    torch.maia.synchronize()
    after = counts(rank)
    assert after["ipc_zero_copy"] == before["ipc_zero_copy"] + 4, (before, after)
    assert after["ipc_peer_buffers_opened"] == before["ipc_peer_buffers_opened"], (before, after)
    expected = float(sum(range(1, world + 1))) * world ** 4
    assert torch.equal(t.cpu(), torch.full((300001,), expected)), t[:4]
    outs = []
    for i in range(4):
        u = torch.full((70001 + i,), float(rank * 10 + i), device=d)
        dist.all_reduce(u, op=dist.ReduceOp.MAX)
        outs.append(u)
    for i, u in enumerate(outs):
        assert torch.equal(u.cpu(), torch.full((70001 + i,), float((world - 1) * 10 + i)))
    g = torch.Generator().manual_seed(rank)
    r = torch.randn(50000, generator=g).to(d)
    dist.all_reduce(r)
    gathered = torch.empty(world * 50000, device=d)
    dist.all_gather_into_tensor(gathered, r)
    for p in range(world):
        assert torch.equal(gathered[p * 50000:(p + 1) * 50000].cpu(), r.cpu()), p


def check_freed_segments_are_released(rank, world):
    """A segment a rank frees (empty_cache) after its peers opened it stays
    reserved in the rank only until their next collective closes it:
    repeated allocate, all_reduce, empty_cache cycles keep nothing."""
    d = dev(rank)
    segment = 16 << 20
    small = torch.ones(1024, device=d)  # the closing collective's buffer, cached first
    torch.maia.synchronize()
    torch.maia.empty_cache()
    free_before, _ = torch.maia.mem_get_info(d)
    opened_before = counts(rank)["ipc_peer_buffers_opened"]
    for i in range(12):
        t = torch.full((segment // 4,), float(rank + i), device=d)
        dist.all_reduce(t)
        torch.maia.synchronize()
        del t
        torch.maia.empty_cache()
    dist.all_reduce(small)  # the peers close the last cycle's segment first
    torch.maia.synchronize()
    free_after, _ = torch.maia.mem_get_info(d)
    assert free_after >= free_before - segment, (
        f"{(free_before - free_after) >> 20} MiB still reserved after 12 cycles of "
        f"{segment >> 20} MiB")
    # Each cycle's segments were opened and closed again: the peers' small
    # buffers stay open.
    assert counts(rank)["ipc_peer_buffers_opened"] <= opened_before + world - 1, counts(rank)


def check_import_window_makes_room(rank, world):
    """Every peer's segments together need more than the device's import
    window (512 MiB here, like its memory): 6 buffers of 64 MiB per rank on
    4 ranks open 18 x 64 MiB. Segments of earlier collectives are closed to
    make room, and reopened when a later collective needs them."""
    d = dev(rank)
    tensors = [torch.full((16 << 20,), float(rank + i), device=d) for i in range(6)]
    base = float(sum(range(world)))
    for _ in range(2):
        for t in tensors:
            dist.all_reduce(t)
    # The first round gives base + world * i, the second world times that.
    for i, t in enumerate(tensors):
        expected = world * (base + world * i)
        assert torch.equal(t[:4].cpu(), torch.full((4,), expected)), (i, t[:4])
        assert torch.equal(t[-4:].cpu(), torch.full((4,), expected)), (i, t[-4:])
    assert counts(rank)["ipc_peer_buffers_opened"] <= 8, counts(rank)


def check_buffers_too_large_for_the_window_are_staged(rank, world):
    """A collective whose peers' buffers would fill more than half the
    import window (512 MiB here) takes the staged path on every rank: on 4
    ranks, three peers' 200 MiB would not even fit the whole window."""
    d = dev(rank)
    n = 50 << 20  # 200 MiB of float32
    t = torch.full((n,), float(rank + 1), device=d)
    before = counts(rank)["ipc_zero_copy"]
    dist.all_reduce(t)
    zero_copy = counts(rank)["ipc_zero_copy"] - before
    assert zero_copy == (1 if (world - 1) * 200 <= 256 else 0), (world, zero_copy)
    expected = float(sum(range(1, world + 1)))
    assert torch.equal(t[::1 << 20].cpu(), torch.full((50,), expected)), t[::1 << 20]


def check_freed_memory_comes_back_without_a_collective(rank, world):
    """Memory a rank frees right after its peers read it in place is held
    open by them; an allocation needing it waits (bounded) until their
    background closer has closed it, instead of failing out of memory.
    Then a small slice of the 400 MiB allocation is all-reduced: the peers
    map that slice, not the whole segment (three peers' 400 MiB would not
    fit the import window)."""
    d = dev(rank)
    tensors = [torch.full((16 << 20,), 1.0, device=d) for _ in range(6)]  # 6 x 64 MiB
    for t in tensors:
        dist.all_reduce(t)
    torch.maia.synchronize()
    del tensors, t
    torch.maia.empty_cache()
    big = torch.ones(100 << 20, dtype=torch.float32, device=d)  # 400 MiB of 512
    dist.all_reduce(big[1 << 20:(1 << 20) + 1024])
    assert torch.equal(big[1 << 20:(1 << 20) + 1024].cpu(), torch.full((1024,), float(world)))
    assert torch.equal(big[-4:].cpu(), torch.ones(4))
    del big
    torch.maia.empty_cache()


def check_zero_size_and_views(rank, world):
    d = dev(rank)
    empty = torch.empty(0, device=d)
    dist.all_reduce(empty)
    base = torch.arange(20, dtype=torch.float32, device=d) + rank
    view = base[5:15]  # inside a larger allocation: exposed with its offset
    dist.all_reduce(view)
    expected = torch.arange(5, 15, dtype=torch.float32) * world + sum(range(world))
    assert torch.equal(view.cpu(), expected), view
    assert torch.equal(base[:5].cpu(), torch.arange(5, dtype=torch.float32) + rank)


def check_no_host_fallback(rank, world):
    assert torch.maia.fallback_counts() == {}, torch.maia.fallback_counts()


def check_in_place_forms(rank, world):
    """Inputs and outputs that share memory: all_gather from this rank's own
    block of the output (FSDP2) and from another rank's block (read from a
    copy: the peers write there), reduce_scatter into its own block of the
    input (written before the later ranks' blocks are read)."""
    d = dev(rank)
    n = 1001
    before = counts(rank)
    out = torch.zeros(world * n, device=d)
    out[rank * n:(rank + 1) * n] = torch.arange(n, dtype=torch.float32) + 1000 * rank
    dist.all_gather_into_tensor(out, out[rank * n:(rank + 1) * n])
    expected = torch.cat([torch.arange(n, dtype=torch.float32) + 1000 * r for r in range(world)])
    assert torch.equal(out.cpu(), expected), "all_gather from its own block"
    other = (rank + 1) % world
    out = torch.arange(world * n, dtype=torch.float32, device=d) + 100000 * rank
    dist.all_gather_into_tensor(out, out[other * n:(other + 1) * n])
    expected = torch.cat([torch.arange(world * n, dtype=torch.float32)[
        ((r + 1) % world) * n:((r + 1) % world + 1) * n] + 100000 * r for r in range(world)])
    assert torch.equal(out.cpu(), expected), "all_gather from another rank's block"
    inputs = [torch.arange(world * n, dtype=torch.float32) * (r + 1) for r in range(world)]
    mine = inputs[rank].to(d)
    dist.reduce_scatter_tensor(mine[rank * n:(rank + 1) * n], mine)
    expected = sum(inputs)[rank * n:(rank + 1) * n]
    assert torch.equal(mine[rank * n:(rank + 1) * n].cpu(), expected), "reduce_scatter in place"
    after = counts(rank)
    assert after["ipc_zero_copy"] == before["ipc_zero_copy"] + 3, (before, after)


def die_in_zero_copy_allreduce(rank, world):
    t = torch.ones(1 << 16, device=dev(rank))
    if rank == 1:
        os._exit(3)
    dist.all_reduce(t)
    torch.maia.synchronize()


@pytest.fixture(scope="module", params=[2, 4])
def zero_copy_world(request):
    world = World(request.param, env=ZERO_COPY)
    yield world
    world.close()


class TestZeroCopyAllreduce:
    def test_every_op_and_dtype(self, zero_copy_world):
        zero_copy_world.run(check_every_op_and_dtype)

    def test_small_and_transposed_tensors(self, zero_copy_world):
        zero_copy_world.run(check_all_reduce)

    def test_reused_and_fresh_buffers_agree_on_every_rank(self, zero_copy_world):
        zero_copy_world.run(check_reused_and_fresh_buffers)

    def test_freed_segments_are_released(self, zero_copy_world):
        zero_copy_world.run(check_freed_segments_are_released)

    def test_segments_beyond_the_import_window(self, zero_copy_world):
        if zero_copy_world.size < 3:
            pytest.skip("one peer's segments always fit: they are in its memory")
        zero_copy_world.run(check_import_window_makes_room)

    def test_buffers_too_large_for_the_window_are_staged(self, zero_copy_world):
        zero_copy_world.run(check_buffers_too_large_for_the_window_are_staged)

    def test_freed_memory_comes_back_without_a_collective(self, zero_copy_world):
        zero_copy_world.run(check_freed_memory_comes_back_without_a_collective)

    def test_zero_size_and_views_into_larger_allocations(self, zero_copy_world):
        zero_copy_world.run(check_zero_size_and_views)
        zero_copy_world.run(check_no_host_fallback)

    def test_a_peer_that_dies_fails_the_others(self):
        world = World(2, env={**ZERO_COPY, "MAIA_DIST_ASYNC_ERROR_HANDLING": "0"},
                      timeout_s=30)
        try:
            with pytest.raises(Exception, match="rank 1 .*exited|exited"):
                world.run(die_in_zero_copy_allreduce)
        finally:
            world.close()


class TestZeroCopyAllgatherAndReduceScatter:
    def test_reduce_scatter_every_op_and_dtype(self, zero_copy_world):
        zero_copy_world.run(check_reduce_scatter)

    def test_data_movement_every_dtype(self, zero_copy_world):
        zero_copy_world.run(check_movement)

    def test_coalesced_forms(self, zero_copy_world):
        zero_copy_world.run(check_coalesced)

    def test_inputs_and_outputs_sharing_memory(self, zero_copy_world):
        zero_copy_world.run(check_in_place_forms)
        zero_copy_world.run(check_no_host_fallback)
