"""Bring your own model: a training script that is a bake-off leg in a few lines.

bakeoff ships its runtime helper `bakeoff_runtime` beside this file in the code
bundle; the helper picks the leg's backend, seeds everything, times steps and
writes the metrics the evaluation reads.

The global batch is the bake-off's (the same on every leg); each rank trains on its
slice of it, so a leg with 32 devices and a leg with 8 see the same examples per step.
"""
import torch
import torch.nn as nn

from bakeoff_runtime import Runtime


def global_batches(seed: int, batch: int, dim: int):
    """The same sequence of global batches for a seed on every leg and every rank."""
    gen = torch.Generator().manual_seed(seed)
    true_w = torch.randn(dim, 1, generator=torch.Generator().manual_seed(1234))
    while True:
        x = torch.randn(batch, dim, generator=gen)
        yield x, x @ true_w + 0.1 * torch.randn(batch, 1, generator=gen)


with Runtime.from_environment() as rt:
    dim, batch = int(rt.hp("dim")), int(rt.hp("global_batch_size"))
    per_rank = batch // rt.world_size
    mine = slice(rt.rank * per_rank, (rt.rank + 1) * per_rank)
    torch.manual_seed(rt.seed)  # the same initial weights on every leg
    model = rt.prepare(nn.Sequential(nn.Linear(dim, 64), nn.GELU(), nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=float(rt.hp("lr")))
    data = global_batches(rt.seed, batch, dim)
    for step in range(rt.max_steps):
        x, y = next(data)
        x, y = x[mine], y[mine]
        with rt.autocast():
            loss = nn.functional.mse_loss(model(x.to(rt.device)).float(), y.to(rt.device))
        loss.backward()
        rt.optimizer_step(opt)
        opt.zero_grad(set_to_none=True)
        rt.track_step(step, loss, samples=batch)
    with rt.validating(), torch.no_grad():
        x, y = next(global_batches(10_000, 1024, dim))
        val = nn.functional.mse_loss(model(x.to(rt.device)).float(), y.to(rt.device))
    rt.log_validation(rt.max_steps, val_mse=float(val.item()))
