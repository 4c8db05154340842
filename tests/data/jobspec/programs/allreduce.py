"""A real torch.distributed all-reduce over gloo: every rank adds rank + 1."""

import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
value = torch.tensor([float(rank + 1)])
dist.all_reduce(value)
node = os.environ.get("SLURMD_NODENAME", "?")
print(f"ALLREDUCE rank={rank} world={world} sum={value.item():g} node={node}", flush=True)
dist.destroy_process_group()
