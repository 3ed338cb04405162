"""The transports of the maia c10d backend: IPC between the ranks of a host,
hierarchical (IPC within hosts, Gloo between one leader per host) across
hosts, emulated on this machine with MAIA_DIST_EMULATE_HOSTS.

test_collectives.py runs every collective x op x dtype on small tensors,
which take the IPC transport's direct path. Here: a world whose slots are
tiny (MAIA_DIST_IPC_SLOT_BYTES) so that messages go in many pieces, through
both allreduce algorithms (direct, and reduce-scatter + all-gather above
64 KiB), at sizes that do not split evenly over the ranks; the emulated
cross-host path on 2 and 4 ranks; a peer that dies during an IPC
collective."""

import os

import pytest
import torch
import torch.distributed as dist

from collective_support import (DTYPES, Failures, check_all_reduce_every_op, ops_for,
                                reference, value)
from dist_support import World
from test_collectives import (check_all_reduce, check_groups, check_movement, check_reduce,
                              check_reduce_scatter)

SLOT_BYTES = 4096


def dev(rank):
    return torch.device("maia", rank)


def backend(rank):
    return dist.group.WORLD._get_backend(dev(rank))


def transport_and_counts(rank, world):
    b = backend(rank)
    return b.transport, b._launch_counts()


def check_pieces(rank, world):
    """Every IPC collective, op and dtype on messages of many slots."""
    failures = Failures()
    d = dev(rank)
    for salt, dtype in enumerate(DTYPES):
        # elements: 4 KiB slots hold 1024 float32; 4001 is several pieces in
        # every dtype, direct path; 20011 x 4-8 bytes is above 64 KiB on the
        # wire: reduce-scatter + all-gather (int8/uint8 widen to nothing,
        # they stay direct at 20 KiB). Neither splits evenly over the ranks.
        check_all_reduce_every_op(rank, world, dtype, salt, (4001, 20011), failures)
        numel = 4001
        ops = ops_for(dtype)
        name, op = ops[salt % len(ops)]
        inputs = [value(r, (numel,), dtype, salt) for r in range(world)]
        t = inputs[rank].to(d)
        root = world - 1
        dist.reduce(t, dst=root, op=op)
        failures.check(t, reference(name, inputs) if rank == root else inputs[rank],
                       f"reduce {name} {dtype}")
        t = inputs[rank].to(d)
        dist.broadcast(t, src=1)
        failures.check(t, inputs[1], f"broadcast {dtype}")
        out = torch.empty(world * numel, dtype=dtype, device=d)
        dist.all_gather_into_tensor(out, inputs[rank].to(d))
        failures.check(out, torch.cat(inputs), f"all_gather_into_tensor {dtype}")
        big = [value(r, (world * numel,), dtype, salt) for r in range(world)]
        out = torch.empty(numel, dtype=dtype, device=d)
        dist.reduce_scatter_tensor(out, big[rank].to(d), op=op)
        failures.check(out, reference(name, big).chunk(world)[rank],
                       f"reduce_scatter_tensor {name} {dtype}")
    # In place, as FSDP2 calls them: the input is the rank's slice of the output.
    flat = torch.zeros(world * 3000, device=d)
    flat[rank * 3000:(rank + 1) * 3000] = rank + 1
    dist.all_gather_into_tensor(flat, flat[rank * 3000:(rank + 1) * 3000])
    failures.check(flat, torch.arange(1, world + 1).float().repeat_interleave(3000),
                   "in-place all_gather_into_tensor")
    src = torch.arange(world * 3000, dtype=torch.float32, device=d) + rank
    dist.reduce_scatter_tensor(src[rank * 3000:(rank + 1) * 3000], src)
    expected = sum(torch.arange(world * 3000, dtype=torch.float32) + r for r in range(world))
    failures.check(src[rank * 3000:(rank + 1) * 3000].clone(),
                   expected[rank * 3000:(rank + 1) * 3000], "in-place reduce_scatter_tensor")
    failures.raise_any()


def check_movement_without_gloo(rank, world):
    """gather, scatter, all_to_all_single, point-to-point and barrier in many
    pieces, moved over IPC: the group issues no Gloo operation for them."""
    failures = Failures()
    d = dev(rank)
    before = backend(rank)._launch_counts().get("gloo_operations", 0)
    for salt, dtype in enumerate([torch.float32, torch.bfloat16, torch.int64, torch.bool]):
        numel = 4001  # several 4 KiB slots in every dtype; not a multiple of the ranks
        inputs = [value(r, (numel,), dtype, salt) for r in range(world)]
        root = world - 1
        outs = [torch.empty(numel, dtype=dtype, device=d) for _ in range(world)]
        dist.gather(inputs[rank].to(d), outs if rank == root else None, dst=root)
        if rank == root:
            for r in range(world):
                failures.check(outs[r], inputs[r], f"gather {dtype} from {r}")
        out = torch.empty(numel, dtype=dtype, device=d)
        dist.scatter(out, [t.to(d) for t in inputs] if rank == 0 else None, src=0)
        failures.check(out, inputs[rank], f"scatter {dtype}")
        # all_to_all_single, no splits: rank r's block q goes to rank q's block r.
        blocks = [value(r, (world, numel), dtype, salt + 1) for r in range(world)]
        out = torch.empty(world, numel, dtype=dtype, device=d)
        dist.all_to_all_single(out, blocks[rank].to(d))
        failures.check(out, torch.stack([blocks[r][rank] for r in range(world)]),
                       f"all_to_all_single {dtype}")
        check_point_to_point(rank, world, dtype, salt, failures)
    dist.barrier(device_ids=[rank])
    failures.raise_any()
    after = backend(rank)._launch_counts()["gloo_operations"]
    assert after == before, (before, after)


def check_point_to_point(rank, world, dtype, salt, failures):
    """send/recv, batch_isend_irecv both ways, recv from any rank and uneven
    all_to_all_single, in many 1 KiB channel pieces (empty messages too)."""
    d = dev(rank)
    numel = 4001
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    mine = value(rank, (numel,), dtype, salt)
    got = torch.empty(numel, dtype=dtype, device=d)
    if rank % 2 == 0:
        dist.send(mine.to(d), dst=nxt)
        dist.recv(got, src=prv)
    else:
        dist.recv(got, src=prv)
        dist.send(mine.to(d), dst=nxt)
    failures.check(got, value(prv, (numel,), dtype, salt), f"send/recv {dtype}")
    # Both ways at once, large: the pieces of the batch interleave.
    from_prev = torch.empty(numel, dtype=dtype, device=d)
    from_next = torch.empty(numel + rank, dtype=dtype, device=d)
    ops = [dist.P2POp(dist.isend, mine.to(d), nxt),
           dist.P2POp(dist.isend, value(rank, (numel + prv,), dtype, salt + 2).to(d), prv),
           dist.P2POp(dist.irecv, from_prev, prv), dist.P2POp(dist.irecv, from_next, nxt)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    failures.check(from_prev, value(prv, (numel,), dtype, salt), f"batch from prev {dtype}")
    failures.check(from_next, value(nxt, (numel + rank,), dtype, salt + 2),
                   f"batch from next {dtype}")
    # recv from any rank: rank 0 learns each sender.
    if rank == 0:
        senders = []
        for _ in range(world - 1):
            t = torch.empty(numel, dtype=dtype, device=d)
            src = dist.recv(t)
            failures.check(t, value(src, (numel,), dtype, salt), f"recv any {dtype} from {src}")
            senders.append(src)
        assert sorted(senders) == list(range(1, world)), senders
    else:
        dist.send(mine.to(d), dst=0)
    # Uneven all_to_all: rank r sends (r + p) % 3 * 700 rows to rank p (zero included).
    in_splits = [(rank + p) % 3 * 700 for p in range(world)]
    out_splits = [(p + rank) % 3 * 700 for p in range(world)]
    src = value(rank, (sum(in_splits), 2), dtype, salt + 3)
    dst = torch.empty(sum(out_splits), 2, dtype=dtype, device=d)
    dist.all_to_all_single(dst, src.to(d), out_splits, in_splits)
    expected = []
    for p in range(world):
        theirs = [(p + q) % 3 * 700 for q in range(world)]
        block = value(p, (sum(theirs), 2), dtype, salt + 3)
        expected.append(block[sum(theirs[:rank]):sum(theirs[:rank + 1])])
    failures.check(dst, torch.cat(expected), f"uneven all_to_all_single {dtype}")


def check_all_ranks_agree(rank, world):
    """Float sums in one order on every rank: bit-identical results (DDP's
    replicas must not drift apart)."""
    g = torch.Generator().manual_seed(rank)
    t = torch.randn(50000, generator=g).to(dev(rank))
    dist.all_reduce(t)
    gathered = torch.empty(world * 50000, device=dev(rank))
    dist.all_gather_into_tensor(gathered, t)
    for r in range(world):
        assert torch.equal(gathered[r * 50000:(r + 1) * 50000].cpu(), t.cpu()), r


def check_no_host_fallback(rank, world):
    assert torch.maia.fallback_counts() == {}, torch.maia.fallback_counts()


@pytest.fixture(scope="module")
def pieces_world():
    world = World(2, env={"MAIA_DIST_IPC_SLOT_BYTES": str(SLOT_BYTES)})
    yield world
    world.close()


@pytest.fixture(scope="module")
def pieces_world4():
    world = World(4, env={"MAIA_DIST_IPC_SLOT_BYTES": str(SLOT_BYTES)})
    yield world
    world.close()


class TestIpcTransport:
    def test_the_ranks_of_one_host_use_ipc(self, pieces_world):
        before = pieces_world.run(transport_and_counts)
        pieces_world.run(check_all_ranks_agree)
        after = pieces_world.run(transport_and_counts)
        for (name, b), (_, a) in zip(before, after):
            assert name == "ipc"
            assert a["ipc"] >= b.get("ipc", 0) + 2, (b, a)

    def test_every_collective_op_and_dtype_in_many_pieces(self, pieces_world):
        pieces_world.run(check_pieces)
        pieces_world.run(check_no_host_fallback)

    def test_gather_scatter_all_to_all_and_barrier_without_gloo(self, pieces_world):
        pieces_world.run(check_movement_without_gloo)

    def test_four_ranks_in_many_pieces(self, pieces_world4):
        assert pieces_world4.run(transport_and_counts)[0][0] == "ipc"
        pieces_world4.run(check_pieces)
        pieces_world4.run(check_movement_without_gloo)
        pieces_world4.run(check_all_ranks_agree)

    def test_gloo_only_when_asked(self):
        world = World(2, env={"MAIA_DIST_TRANSPORT": "gloo"})
        try:
            world.run(check_all_ranks_agree)
            for name, counts in world.run(transport_and_counts):
                assert name == "gloo" and "ipc" not in counts, counts
        finally:
            world.close()


class TestCrossHost:
    """MAIA_DIST_EMULATE_HOSTS=k: every k consecutive ranks are one host."""

    def test_two_hosts_of_two_ranks(self):
        world = World(4, env={"MAIA_DIST_EMULATE_HOSTS": "2",
                              "MAIA_DIST_IPC_SLOT_BYTES": str(SLOT_BYTES)})
        try:
            assert {t for t, _ in world.run(transport_and_counts)} == {"hierarchical"}
            world.run(check_all_reduce)
            world.run(check_reduce)
            world.run(check_reduce_scatter)
            world.run(check_movement)
            world.run(check_pieces)
            # split_group halves (one host each: IPC), new_group of ranks 1
            # and 3 (one per host: hierarchical, made from Python).
            world.run(check_groups)
        finally:
            world.close()

    def test_every_rank_its_own_host(self):
        world = World(2, env={"MAIA_DIST_EMULATE_HOSTS": "1"})
        try:
            assert {t for t, _ in world.run(transport_and_counts)} == {"hierarchical"}
            world.run(check_all_reduce)
            world.run(check_reduce_scatter)
            world.run(check_movement)
        finally:
            world.close()


# ---------------------------------------------------------------- failure

PATTERN = (r"ALLREDUCE \(sequence number \d+\) of process group '.*' on rank 0 of 2 failed: "
           r"rank 1 \(pid \d+\) exited during the collective")


def die_inside_all_reduce(rank, world):
    """Rank 1 issues a long IPC all_reduce (many pieces, each a step both
    ranks' streams must reach) and its process exits while the stream runs it."""
    t = torch.ones(1 << 20, device=dev(rank))
    work = dist.all_reduce(t, async_op=True)
    if rank == 1:
        os._exit(0)
    torch.maia.synchronize()  # returns once the exchange has failed
    assert work.is_completed() and not work.is_success()
    with pytest.raises(dist.DistBackendError, match=PATTERN):
        work.wait()
    return str(work.exception())


class TestPeerDeath:
    def test_peer_that_dies_during_an_ipc_collective(self):
        world = World(2, env={"MAIA_DIST_ASYNC_ERROR_HANDLING": "0",
                              "MAIA_DIST_IPC_SLOT_BYTES": str(SLOT_BYTES)}, timeout_s=30)
        try:
            assert world.run(transport_and_counts)[0][0] == "ipc"
            for q in world._tasks:
                q.put((die_inside_all_reduce, ()))
            message = world._collect("die_inside_all_reduce", ranks=1)[0]
            assert "exited during the collective" in message, message
        finally:
            world.close()


def mismatched_all_reduce(rank, world):
    """The ranks call all_reduce with different sizes: both fail at the first
    step, naming what the other runs, instead of mixing data."""
    t = torch.ones(100 * (rank + 1), device=dev(rank))
    work = dist.all_reduce(t, async_op=True)
    torch.maia.synchronize()
    assert work.is_completed() and not work.is_success()
    return str(work.exception())


class TestMismatch:
    def test_different_sizes_fail_on_every_rank(self):
        world = World(2, env={"MAIA_DIST_ASYNC_ERROR_HANDLING": "0"}, timeout_s=30)
        try:
            messages = world.run(mismatched_all_reduce)
            for rank, message in enumerate(messages):
                assert f"on rank {rank} of 2 failed" in message, message
                assert "ALLREDUCE (sequence number" in message, message
            assert "rank 1 is at another step: it runs allreduce (SUM) of 200 Float, this " \
                   "rank allreduce (SUM) of 100 Float" in messages[0] or \
                   "rank 0 failed an earlier IPC step" in messages[0], messages
            assert any("is at another step" in m for m in messages), messages
        finally:
            world.close()
