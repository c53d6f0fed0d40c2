/**
 * The DDP smoke test of the PyTorchJob sample: a 0.5B-parameter MLP trained on synthetic data on
 * every GPU of the job, so each step all-reduces 2 GiB of gradients across the nodes.
 */
export const DDP_SMOKE_TEST = `"""DDP smoke test: trains an MLP on synthetic data on every GPU of the job and reports steps/s."""
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    steps = int(os.environ.get("STEPS", "200"))
    warmup = min(10, steps // 2)
    width = 8192
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU()) for _ in range(8)]).cuda()
    ddp = DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    batch = torch.randn(64, width, device="cuda")
    start = time.time()
    for step in range(steps):
        if step == warmup:
            torch.cuda.synchronize()
            start = time.time()
        loss = ddp(batch).pow(2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    torch.cuda.synchronize()
    rate = (steps - warmup) / (time.time() - start)
    if dist.get_rank() == 0:
        print(f"world size {dist.get_world_size()}: {rate:.2f} steps/s, final loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
`;
