"""DDP (and FSDP2) on 2 ranks train an MLP exactly like one process training
on the whole batch: same parameters after a few SGD steps."""

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 3
BATCH = 8


class MLP(nn.Module):
    def __init__(self, unused_branch=False):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
                                 nn.Linear(32, 4))
        # Parameters no forward uses: DDP needs find_unused_parameters.
        self.unused = nn.Linear(4, 4) if unused_branch else None

    def forward(self, x):
        return self.net(x)


class Block(nn.Module):
    """A transformer encoder block (attention, layer norms, feed-forward)."""

    def __init__(self):
        super().__init__()
        self.block = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16,
                                                dropout=0.0, batch_first=True)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.block(x.view(x.shape[0], 2, 4).repeat(1, 1, 2))).sum(1)


def make_model(unused_branch=False, kind="mlp"):
    torch.manual_seed(0)
    return Block() if kind == "transformer" else MLP(unused_branch)


def batch(step, micro=0):
    g = torch.Generator().manual_seed(100 * step + micro)
    return torch.randn(BATCH, 8, generator=g), torch.randn(BATCH, 4, generator=g)


def train_reference(unused_branch, micro_batches, kind="mlp"):
    """One process, whole batches, on the CPU."""
    model = make_model(unused_branch, kind)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        for micro in range(micro_batches):
            x, y = batch(step, micro)
            nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        opt.zero_grad()
    return [p.detach() for p in model.parameters()]


def train_ddp(rank, world, ddp_kwargs, micro_batches=1, kind="mlp"):
    d = torch.device("maia", rank)
    unused = ddp_kwargs.get("find_unused_parameters", False)
    model = make_model(unused, kind).to(d)
    if rank != 0:
        # DDP starts every rank from rank 0's parameters (a broadcast).
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)
    ddp = DDP(model, **ddp_kwargs)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(STEPS):
        for micro in range(micro_batches):
            x, y = batch(step, micro)
            shard = slice(rank * BATCH // world, (rank + 1) * BATCH // world)
            loss = nn.functional.mse_loss(ddp(x[shard].to(d)), y[shard].to(d))
            if micro < micro_batches - 1:
                with ddp.no_sync():
                    # Accumulates locally; the last micro-batch's backward syncs.
                    loss.backward()
            else:
                loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
    expected = train_reference(unused, micro_batches, kind)
    for p, e in zip(model.parameters(), expected):
        torch.testing.assert_close(p.detach().cpu(), e, rtol=1e-4, atol=1e-5)


def train_ddp_compiled(rank, world):
    """DDP under torch.compile: Dynamo's DDPOptimizer splits the graph at
    the buckets; Inductor compiles the pieces for maia."""
    d = torch.device("maia", rank)
    model = make_model().to(d)
    ddp = DDP(model)
    compiled = torch.compile(ddp)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(STEPS):
        x, y = batch(step)
        shard = slice(rank * BATCH // world, (rank + 1) * BATCH // world)
        nn.functional.mse_loss(compiled(x[shard].to(d)), y[shard].to(d)).backward()
        opt.step()
        opt.zero_grad()
    for p, e in zip(model.parameters(), train_reference(False, 1)):
        torch.testing.assert_close(p.detach().cpu(), e, rtol=1e-4, atol=1e-5)


def check_ddp_no_sync(rank, world):
    d = torch.device("maia", rank)
    model = make_model().to(d)
    ddp = DDP(model)
    x, y = batch(0)
    with ddp.no_sync():
        nn.functional.mse_loss(ddp(x[rank::world].to(d)), y[rank::world].to(d)).backward()
    # Without a sync, the ranks' gradients differ (their data differs).
    grads = [torch.zeros_like(model.net[0].weight) for _ in range(world)]
    dist.all_gather(grads, model.net[0].weight.grad)
    assert not torch.equal(grads[0].cpu(), grads[1].cpu())


def train_fsdp2(rank, world):
    from torch.distributed.fsdp import fully_shard

    d = torch.device("maia", rank)
    model = make_model().to(d)
    for layer in model.net:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        x, y = batch(step)
        shard = slice(rank * BATCH // world, (rank + 1) * BATCH // world)
        nn.functional.mse_loss(model(x[shard].to(d)), y[shard].to(d)).backward()
        opt.step()
        opt.zero_grad()
    expected = train_reference(False, 1)
    for p, e in zip(model.parameters(), expected):
        torch.testing.assert_close(p.full_tensor().detach().cpu(), e, rtol=1e-4, atol=1e-5)


def train_fsdp2_mixed_precision(rank, world):
    """bfloat16 compute, float32 gradient reduction and master weights: the
    policy FSDP2 users pick with autocast-era hardware."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    d = torch.device("maia", rank)
    model = make_model().to(d)
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.net:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        x, y = batch(step)
        shard = slice(rank * BATCH // world, (rank + 1) * BATCH // world)
        out = model(x[shard].to(d))
        assert out.dtype == torch.bfloat16  # the forward ran in the policy's dtype
        nn.functional.mse_loss(out.float(), y[shard].to(d)).backward()
        for p in model.parameters():
            assert p.dtype == torch.float32 and p.grad.dtype == torch.float32
        opt.step()
        opt.zero_grad()
    expected = train_reference(False, 1)
    for p, e in zip(model.parameters(), expected):
        # bfloat16 forward and backward: 8 bits of mantissa per step.
        torch.testing.assert_close(p.full_tensor().detach().cpu(), e, rtol=2e-2, atol=2e-2)


class TestDDP:
    def test_matches_single_process_training(self, world2):
        world2.run(train_ddp, {})

    def test_small_buckets(self, world2):
        # Several gradient buckets, each all-reduced while backward goes on.
        world2.run(train_ddp, {"bucket_cap_mb": 0.002})

    def test_gradient_as_bucket_view(self, world2):
        world2.run(train_ddp, {"gradient_as_bucket_view": True, "bucket_cap_mb": 0.002})

    def test_no_sync_accumulates_then_syncs(self, world2):
        world2.run(train_ddp, {}, 2)
        world2.run(check_ddp_no_sync)

    def test_find_unused_parameters(self, world2):
        world2.run(train_ddp, {"find_unused_parameters": True})


    def test_transformer_block(self, world2):
        world2.run(train_ddp, {"bucket_cap_mb": 0.002}, 1, "transformer")

    def test_under_torch_compile(self, world2):
        world2.run(train_ddp_compiled)

    def test_four_ranks(self, world4):
        world4.run(train_ddp, {"bucket_cap_mb": 0.002})
        world4.run(train_ddp, {}, 1, "transformer")


class TestFSDP2:
    def test_fully_shard_matches_single_process_training(self, world2):
        world2.run(train_fsdp2)

    def test_mixed_precision_policy_bfloat16_compute(self, world2):
        world2.run(train_fsdp2_mixed_precision)
