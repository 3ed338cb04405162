"""Run by test_launch.py under torchrun: a group with gloo for CPU tensors
and maia for maia tensors, from the environment torchrun sets."""

import os

import torch
import torch.distributed as dist

rank = int(os.environ["LOCAL_RANK"])
world = int(os.environ["WORLD_SIZE"])
torch.maia.set_device(rank)
device = torch.device("maia", rank)
dist.init_process_group(backend="cpu:gloo,maia:maia", device_id=device)
group = dist.group.WORLD
assert group._get_backend(device).name() == "maia"
assert group._get_backend(torch.device("cpu")).name() == "gloo"

on_maia = torch.full((3,), float(rank + 1), device=device)
on_cpu = torch.full((3,), float(rank + 1))
dist.all_reduce(on_maia)
dist.all_reduce(on_cpu)
expected = [world * (world + 1) / 2] * 3
assert on_maia.cpu().tolist() == expected, on_maia
assert on_cpu.tolist() == expected, on_cpu
dist.barrier()
# No reference to the group may outlive destroy_process_group: a group kept
# alive until interpreter exit lets upstream Gloo's worker thread release the
# CPU all_reduce's tensors during finalization, which aborts the process
# ("terminate called without an active exception"; 2 of 12 runs with
# backend="gloo" alone, no maia). docs/distributed.md, Launching.
del group
dist.destroy_process_group()
print(f"rank {rank}: ok", flush=True)
