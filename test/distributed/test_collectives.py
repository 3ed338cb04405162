"""Every collective of the maia c10d backend, every op and dtype, against CPU
references computed in each rank (2 ranks; a few cases on 4)."""

import pytest
import torch
import torch.distributed as dist

from collective_support import DTYPES, FLOATS, INTS, Failures, ops_for, reference, value


def dev(rank):
    return torch.device("maia", rank)


# ---------------------------------------------------------------- reductions

def check_all_reduce(rank, world, dtypes=None):
    failures = Failures()
    for salt, dtype in enumerate(dtypes or DTYPES):
        for name, op in ops_for(dtype):
            inputs = [value(r, (3, 5), dtype, salt) for r in range(world)]
            expected = reference(name, inputs)
            t = inputs[rank].to(dev(rank))
            dist.all_reduce(t, op=op)
            failures.check(t, expected, f"all_reduce {name} {dtype}")
            # Non-contiguous: a transposed view, reduced in place.
            base = inputs[rank].t().contiguous().to(dev(rank))
            view = base.t()
            dist.all_reduce(view, op=op)
            failures.check(view, expected, f"all_reduce {name} {dtype} transposed")
    failures.raise_any()


def check_reduce(rank, world):
    failures = Failures()
    root = world - 1
    for salt, dtype in enumerate(DTYPES):
        for name, op in ops_for(dtype):
            inputs = [value(r, (4, 3), dtype, salt) for r in range(world)]
            t = inputs[rank].to(dev(rank))
            dist.reduce(t, dst=root, op=op)
            expected = reference(name, inputs) if rank == root else inputs[rank]
            failures.check(t, expected, f"reduce {name} {dtype} (rank {rank})")
    failures.raise_any()


def check_reduce_scatter(rank, world):
    failures = Failures()
    for salt, dtype in enumerate(DTYPES):
        for name, op in ops_for(dtype):
            inputs = [value(r, (world * 3, 2), dtype, salt) for r in range(world)]
            expected = reference(name, inputs).chunk(world)[rank]
            out = torch.empty(3, 2, dtype=dtype, device=dev(rank))
            dist.reduce_scatter_tensor(out, inputs[rank].to(dev(rank)), op=op)
            failures.check(out, expected, f"reduce_scatter_tensor {name} {dtype}")
            single = torch.empty(3, 2, dtype=dtype, device=dev(rank))
            dist.reduce_scatter_single(single, inputs[rank].to(dev(rank)), op=op)
            failures.check(single, expected, f"reduce_scatter_single {name} {dtype}")
            out_list = torch.zeros(3, 2, dtype=dtype, device=dev(rank))
            dist.reduce_scatter(out_list, list(inputs[rank].to(dev(rank)).chunk(world)), op=op)
            failures.check(out_list, expected, f"reduce_scatter {name} {dtype}")
    failures.raise_any()


# ---------------------------------------------------------------- data movement

def check_movement(rank, world):
    failures = Failures()
    d = dev(rank)
    for salt, dtype in enumerate(DTYPES):
        mine = [value(r, (2, 3), dtype, salt) for r in range(world)]
        # broadcast from the last rank, into a non-contiguous view elsewhere
        root = world - 1
        target = torch.zeros(3, 2, dtype=dtype, device=d).t() if rank != root \
            else mine[root].to(d)
        dist.broadcast(target, src=root)
        failures.check(target, mine[root], f"broadcast {dtype}")
        # all_gather (list), all_gather_into_tensor
        outs = [torch.zeros(2, 3, dtype=dtype, device=d) for _ in range(world)]
        dist.all_gather(outs, mine[rank].to(d))
        for r in range(world):
            failures.check(outs[r], mine[r], f"all_gather {dtype} from {r}")
        flat = torch.zeros(world * 2, 3, dtype=dtype, device=d)
        dist.all_gather_into_tensor(flat, mine[rank].to(d))
        failures.check(flat, torch.cat(mine), f"all_gather_into_tensor {dtype}")
        single = torch.zeros(world * 2, 3, dtype=dtype, device=d)
        dist.all_gather_single(single, mine[rank].to(d))
        failures.check(single, torch.cat(mine), f"all_gather_single {dtype}")
        # gather to rank 0, scatter from the last rank
        gathered = [torch.zeros(2, 3, dtype=dtype, device=d) for _ in range(world)] \
            if rank == 0 else None
        dist.gather(mine[rank].to(d), gathered, dst=0)
        if rank == 0:
            for r in range(world):
                failures.check(gathered[r], mine[r], f"gather {dtype} from {r}")
        pieces = [value(r, (4,), dtype, salt + 100) for r in range(world)]
        out = torch.zeros(4, dtype=dtype, device=d)
        dist.scatter(out, [p.to(d) for p in pieces] if rank == root else None, src=root)
        failures.check(out, pieces[rank], f"scatter {dtype}")
        # all_to_all (list) and all_to_all_single with even splits
        send = [value(rank * world + r, (r + 1, 2), dtype, salt) for r in range(world)]
        recv = [torch.zeros(rank + 1, 2, dtype=dtype, device=d) for _ in range(world)]
        dist.all_to_all(recv, [s.to(d) for s in send])
        for r in range(world):
            failures.check(recv[r], value(r * world + rank, (rank + 1, 2), dtype, salt),
                           f"all_to_all {dtype} from {r}")
        src = value(rank, (world * 2, 3), dtype, salt)
        dst = torch.zeros(world * 2, 3, dtype=dtype, device=d)
        dist.all_to_all_single(dst, src.to(d))
        expected = torch.cat([value(r, (world * 2, 3), dtype, salt).chunk(world)[rank]
                              for r in range(world)])
        failures.check(dst, expected, f"all_to_all_single {dtype}")
        # send/recv around a ring
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        if rank % 2 == 0:
            dist.send(mine[rank].to(d), dst=nxt)
            got = torch.zeros(2, 3, dtype=dtype, device=d)
            dist.recv(got, src=prv)
        else:
            got = torch.zeros(2, 3, dtype=dtype, device=d)
            dist.recv(got, src=prv)
            dist.send(mine[rank].to(d), dst=nxt)
        failures.check(got, mine[prv], f"send/recv {dtype}")
    failures.raise_any()


def check_uneven_all_to_all(rank, world):
    """Rank r sends (r + p) % 3 rows to peer p, zero rows included."""
    failures = Failures()
    d = dev(rank)
    for salt, dtype in enumerate([torch.float32, torch.bfloat16, torch.int64, torch.bool]):
        in_splits = [(rank + p) % 3 for p in range(world)]
        out_splits = [(p + rank) % 3 for p in range(world)]
        src = value(rank, (sum(in_splits), 2), dtype, salt)
        dst = torch.zeros(sum(out_splits), 2, dtype=dtype, device=d)
        dist.all_to_all_single(dst, src.to(d), out_splits, in_splits)
        expected = []
        for p in range(world):
            their_splits = [(p + q) % 3 for q in range(world)]
            their = value(p, (sum(their_splits), 2), dtype, salt)
            expected.append(their[sum(their_splits[:rank]):sum(their_splits[:rank + 1])])
        failures.check(dst, torch.cat(expected), f"uneven all_to_all_single {dtype}")
    failures.raise_any()


def check_batch_isend_irecv(rank, world):
    d = dev(rank)
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    send = value(rank, (5,), torch.float32).to(d)
    got_next = torch.zeros(5, device=d)
    got_prev = torch.zeros(5, device=d)
    ops = [dist.P2POp(dist.isend, send, nxt), dist.P2POp(dist.irecv, got_prev, prv),
           dist.P2POp(dist.isend, send * 2, prv), dist.P2POp(dist.irecv, got_next, nxt)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    torch.testing.assert_close(got_prev.cpu(), value(prv, (5,), torch.float32))
    torch.testing.assert_close(got_next.cpu(), value(nxt, (5,), torch.float32) * 2)


def check_recv_any_source(rank, world):
    """Rank 0 receives one tensor from every other rank, in whatever order
    they arrive, and learns each sender."""
    d = dev(rank)
    if rank == 0:
        senders = []
        for _ in range(world - 1):
            t = torch.zeros(3, device=d)
            src = dist.recv(t)  # no src: from any rank
            torch.testing.assert_close(t.cpu(), value(src, (3,), torch.float32))
            senders.append(src)
        assert sorted(senders) == list(range(1, world)), senders
    else:
        dist.send(value(rank, (3,), torch.float32).to(d), dst=0)


def check_coalesced(rank, world):
    """What DDP and FSDP2 use: allreduce_coalesced, and coalescing groups of
    all_reduce, all_gather_into_tensor and reduce_scatter_tensor."""
    d = dev(rank)
    failures = Failures()
    inputs = [[value(r, (i + 2,), torch.float32, i) for r in range(world)] for i in range(3)]
    ts = [inputs[i][rank].to(d) for i in range(3)]
    dist.all_reduce_coalesced(ts, op=dist.ReduceOp.SUM)
    for i in range(3):
        failures.check(ts[i], reference("SUM", inputs[i]), f"all_reduce_coalesced {i}")
    ts = [inputs[i][rank].to(d) for i in range(3)]
    with dist._coalescing_manager(device=d, async_ops=True) as cm:
        for t in ts:
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
    cm.wait()
    for i in range(3):
        failures.check(ts[i], reference("AVG", inputs[i]), f"coalesced all_reduce {i}")
    lists = [[torch.zeros(i + 2, device=d) for i in range(3)] for _ in range(world)]
    dist.all_gather_coalesced(lists, [inputs[i][rank].to(d) for i in range(3)])
    for r in range(world):
        for i in range(3):
            failures.check(lists[r][i], inputs[i][r], f"all_gather_coalesced {i} from {r}")
    outs = [torch.zeros(world * (i + 2), device=d) for i in range(3)]
    with dist._coalescing_manager(device=d):
        for i in range(3):
            dist.all_gather_into_tensor(outs[i], inputs[i][rank].to(d))
    for i in range(3):
        failures.check(outs[i], torch.cat(inputs[i]), f"coalesced all_gather_into_tensor {i}")
    big = [[value(r, (world * (i + 1),), torch.bfloat16, i) for r in range(world)]
           for i in range(2)]
    outs = [torch.zeros(i + 1, dtype=torch.bfloat16, device=d) for i in range(2)]
    with dist._coalescing_manager(device=d):
        for i in range(2):
            dist.reduce_scatter_tensor(outs[i], big[i][rank].to(d), op=dist.ReduceOp.SUM)
    for i in range(2):
        failures.check(outs[i], reference("SUM", big[i]).chunk(world)[rank],
                       f"coalesced reduce_scatter_tensor {i}")
    failures.raise_any()


def check_zero_size(rank, world):
    d = dev(rank)
    empty = torch.zeros(0, 3, device=d)
    dist.all_reduce(empty)
    out = torch.zeros(0, 3, device=d)
    dist.all_gather_into_tensor(out, empty)
    dist.broadcast(torch.zeros(0, device=d), src=0)
    outs = [torch.zeros(0, device=d) for _ in range(world)]
    dist.all_gather(outs, torch.zeros(0, device=d))
    # Zero rows to every peer but rank 0's, which gets rank's id.
    in_splits = [1 if p == 0 else 0 for p in range(world)]
    out_splits = [1 if rank == 0 else 0 for _ in range(world)]
    dst = torch.zeros(sum(out_splits), device=d)
    dist.all_to_all_single(dst, torch.tensor([float(rank)], device=d), out_splits, in_splits)
    if rank == 0:
        torch.testing.assert_close(dst.cpu(), torch.arange(world, dtype=torch.float32))
    dist.barrier()


def check_no_host_fallback(rank, world):
    """The backend's device steps (casts, AVG, PREMUL_SUM, strided copies) are
    device kernels on the communication stream: a host fallback there would
    read device memory before the exchange wrote it."""
    assert torch.maia.fallback_counts() == {}, torch.maia.fallback_counts()


def check_errors(rank, world):
    d = dev(rank)
    backend = dist.group.WORLD._get_backend(d)
    assert backend.name() == "maia"
    with pytest.raises(TypeError, match="BAND needs integer or bool tensors, got Float"):
        dist.all_reduce(torch.ones(2, device=d), op=dist.ReduceOp.BAND)
    with pytest.raises(RuntimeError, match="got a tensor on cpu"):
        backend.allreduce([torch.ones(2)])
    other = torch.device("maia", (rank + 1) % world)
    with pytest.raises(RuntimeError, match=r"got tensors on maia:\d and maia:\d"):
        dist.all_gather([torch.zeros(2, device=other) for _ in range(world)],
                        torch.ones(2, device=d))
    with pytest.raises(RuntimeError, match="all_gather_into_tensor needs an output of"):
        dist.all_gather_into_tensor(torch.zeros(3, device=d), torch.ones(2, device=d))
    # The group still works after refused calls.
    t = torch.ones(2, device=d)
    dist.all_reduce(t)
    assert t.cpu().tolist() == [world, world]


# ---------------------------------------------------------------- semantics

def _store():
    return dist.distributed_c10d._get_default_store()


def check_host_does_not_block(rank, world, key):
    """Rank 0's async all_reduce returns, and is not completed, while rank 1
    has not issued its own yet (it waits for a store key rank 0 sets after)."""
    d = dev(rank)
    t = torch.full((4,), float(rank + 1), device=d)
    if rank == 0:
        work = dist.all_reduce(t, async_op=True)
        assert not work.is_completed()
        _store().set(key, "go")
        work.wait()
        # wait() ordered the current stream after the collective.
        assert t.cpu().tolist() == [world * (world + 1) / 2] * 4
        torch.maia.synchronize()
        assert work.is_completed() and work.is_success()
        assert work.result()[0] is t
    else:
        _store().wait([key])
        dist.all_reduce(t)
        assert t.cpu().tolist() == [world * (world + 1) / 2] * 4


def _busy_input(rank):
    """A value made by a few GEMMs still queued on the current stream when
    the collective is issued (small integers: exact)."""
    g = torch.Generator().manual_seed(rank)
    a = torch.randint(-3, 4, (384, 384), generator=g).float()
    b = torch.randint(-3, 4, (384, 384), generator=g).float()
    d = dev(rank)
    ad, bd = a.to(d), b.to(d)
    torch.maia.synchronize()
    x = ad @ bd
    for _ in range(3):
        x = (x @ bd) * 0 + x  # more queued work; same values
    return x.sum(0)


def check_collective_sees_busy_stream(rank, world):
    device_value = _busy_input(rank)
    dist.all_reduce(device_value)
    expected = sum(_busy_input_cpu(r) for r in range(world))
    torch.testing.assert_close(device_value.cpu(), expected)


def _busy_input_cpu(rank):
    g = torch.Generator().manual_seed(rank)
    a = torch.randint(-3, 4, (384, 384), generator=g).float()
    b = torch.randint(-3, 4, (384, 384), generator=g).float()
    return (a @ b).sum(0)


def check_side_stream_and_future(rank, world):
    """A collective issued from a side stream waits for that stream; wait()
    makes it wait in turn; the future completes with the outputs."""
    d = dev(rank)
    side = torch.maia.Stream(device=d)
    with torch.maia.stream(side):
        t = torch.ones(1 << 18, device=d)
        for _ in range(4):
            t.mul_(2.0)
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        t.add_(1.0)
    doubled = work.get_future().then(lambda f: f.value()[0] * 0 + 7.0)
    side.synchronize()
    assert t[:3].cpu().tolist() == [16.0 * world + 1] * 3
    assert doubled.wait()[:2].cpu().tolist() == [7.0, 7.0]


def check_buffers_kept_alive(rank, world, key):
    """The input of an async collective is freed at once and its memory
    handed out again and overwritten while the collective still waits for
    rank 1: recordStream keeps the block from reuse until the stream is past it."""
    d = dev(rank)
    gate = torch.ones(4, device=d)
    out = torch.zeros(world * (1 << 16), device=d)
    if rank == 0:
        w1 = dist.all_reduce(gate, async_op=True)  # holds the stream until rank 1 joins
        inp = torch.full((1 << 16,), 5.0, device=d)
        w2 = dist.all_gather_into_tensor(out, inp, async_op=True)
        del inp
        garbage = [torch.full((1 << 16,), -1.0, device=d) for _ in range(4)]
        _store().set(key, "go")
        w1.wait()
        w2.wait()
        del garbage
    else:
        _store().wait([key])
        dist.all_reduce(gate)
        dist.all_gather_into_tensor(out, torch.full((1 << 16,), 5.0, device=d))
    assert out.cpu().eq(5.0).all(), out.cpu().unique()


class TestStreamSemantics:
    def test_async_op_does_not_block_the_host(self, world2):
        world2.run(check_host_does_not_block, "nonblocking")

    def test_collective_sees_the_callers_queued_work(self, world2):
        world2.run(check_collective_sees_busy_stream)

    def test_side_stream_wait_and_future(self, world2):
        world2.run(check_side_stream_and_future)

    def test_buffers_kept_alive_until_the_collective_is_done(self, world2):
        world2.run(check_buffers_kept_alive, "alive")


# ---------------------------------------------------------------- groups

def check_groups(rank, world):
    """new_group and split_group make maia groups of their own; barrier on
    maia. (The world was made with no backend: maia, as for CUDA's nccl.)"""
    d = dev(rank)
    assert dist.group.WORLD._get_backend(d).name() == "maia"
    # Split into halves (before new_group: torch names split groups by the count of
    # groups a rank is in, and new_group leaves non-members out of that count).
    halves = [list(range(world // 2)), list(range(world // 2, world))]
    split = dist.split_group(split_ranks=halves)
    mine = halves[0] if rank in halves[0] else halves[1]
    t = torch.full((3,), float(rank), device=d)
    dist.all_reduce(t, group=split)
    assert t.cpu().tolist() == [float(sum(mine))] * 3
    outs = [torch.zeros(2, device=d) for _ in mine]
    dist.all_gather(outs, torch.full((2,), float(rank), device=d), group=split)
    assert [o.cpu()[0].item() for o in outs] == [float(r) for r in mine]
    # A split of the split: split_ranks are group ranks in the parent (torch
    # sorts each list), which the child maps to global ranks.
    nested = dist.split_group(parent_pg=split, split_ranks=[list(range(len(mine)))[::-1]])
    assert dist.get_process_group_ranks(nested) == mine
    assert dist.get_rank(nested) == mine.index(rank)
    outs = [torch.zeros(1, device=d) for _ in mine]
    dist.all_gather(outs, torch.full((1,), float(rank), device=d), group=nested)
    assert [o.item() for o in outs] == [float(r) for r in mine]
    t = torch.full((2,), float(rank + 1), device=d)
    dist.all_reduce(t, op=dist.ReduceOp.PRODUCT, group=nested)
    assert t.cpu().tolist() == [float(torch.tensor(mine).add(1).prod())] * 2
    # A subgroup of the odd ranks.
    odd = [r for r in range(world) if r % 2 == 1]
    group = dist.new_group(odd)
    if rank in odd:
        t = torch.full((3,), float(rank), device=d)
        dist.all_reduce(t, group=group)
        assert t.cpu().tolist() == [float(sum(odd))] * 3
        assert group._get_backend(d).name() == "maia"
    # The default group still works after the others, with a barrier.
    dist.barrier(device_ids=[rank])
    t = torch.ones(1, device=d)
    dist.all_reduce(t)
    assert t.item() == world


# ---------------------------------------------------------------- functional

def check_functional_collectives(rank, world):
    """torch.distributed._functional_collectives (the _c10d_functional ops and
    wait_tensor) run through the backend, eagerly and inside a graph compiled
    for maia with no graph break."""
    import torch.distributed._functional_collectives as funcol

    d = dev(rank)
    group = dist.group.WORLD
    t = torch.full((4,), float(rank + 1), device=d)
    total = float(world * (world + 1) / 2)
    assert funcol.all_reduce(t, "sum", group).cpu().tolist() == [total] * 4
    gathered = funcol.all_gather_single(t, 0, group)
    assert gathered.cpu().tolist() == [float(r + 1) for r in range(world) for _ in range(4)]

    def step(x):
        y = funcol.all_reduce(x * 2, "sum", group)
        return funcol.reduce_scatter_single(y + 1, "sum", 0, group)

    x = torch.full((world * 2,), float(rank + 1), device=d)
    compiled = torch.compile(step, fullgraph=True)
    expected = step(x).cpu()
    torch.testing.assert_close(compiled(x).cpu(), expected)
    assert expected.tolist() == [world * (2 * total + 1)] * 2


class TestCollectives:
    def test_all_reduce_every_op_and_dtype(self, world2):
        world2.run(check_all_reduce)

    def test_reduce_every_op_and_dtype(self, world2):
        world2.run(check_reduce)

    def test_reduce_scatter_every_op_and_dtype(self, world2):
        world2.run(check_reduce_scatter)

    def test_data_movement_every_dtype(self, world2):
        world2.run(check_movement)

    def test_uneven_all_to_all_single(self, world2):
        world2.run(check_uneven_all_to_all)

    def test_batch_isend_irecv(self, world2):
        world2.run(check_batch_isend_irecv)

    def test_recv_from_any_source(self, world2):
        world2.run(check_recv_any_source)

    def test_coalesced_forms(self, world2):
        world2.run(check_coalesced)

    def test_zero_size_tensors(self, world2):
        world2.run(check_zero_size)

    def test_wrong_device_dtype_and_size_are_clear_errors(self, world2):
        world2.run(check_errors)

    def test_new_group_and_split_group(self, world2):
        world2.run(check_groups)

    def test_functional_collectives_eager_and_compiled(self, world2):
        world2.run(check_functional_collectives)

    def test_no_host_fallback_ran(self, world2):
        world2.run(check_no_host_fallback)


class TestFourRanks:
    def test_all_reduce(self, world4):
        world4.run(check_all_reduce, [torch.float32, torch.bfloat16, torch.int32, torch.bool])

    def test_data_movement_and_uneven_all_to_all(self, world4):
        world4.run(check_uneven_all_to_all)
        world4.run(check_batch_isend_irecv)

    def test_coalesced_forms(self, world4):
        world4.run(check_coalesced)

    def test_recv_from_any_source(self, world4):
        world4.run(check_recv_any_source)

    def test_new_group_and_split_group(self, world4):
        world4.run(check_groups)
