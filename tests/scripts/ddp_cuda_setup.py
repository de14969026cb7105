"""The first lines of the DDP tutorial's setup, unmodified: on a CPU build of torch, set_device fails on each rank."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
print(f"rank {rank} of {dist.get_world_size()} started")
torch.cuda.set_device(rank)
