"""Bring your own model: a training script that is a bake-off leg in a few lines.

bakeoff ships its runtime helper `bakeoff_runtime` beside this file in the code
bundle; the helper picks the leg's backend, seeds everything, times steps and
writes the metrics the evaluation reads.
"""
import torch
import torch.nn as nn

from bakeoff_runtime import Runtime


def batches(seed: int, batch: int, dim: int):
    gen = torch.Generator().manual_seed(seed)
    true_w = torch.randn(dim, 1, generator=torch.Generator().manual_seed(1234))
    while True:
        x = torch.randn(batch, dim, generator=gen)
        yield x, x @ true_w + 0.1 * torch.randn(batch, 1, generator=gen)


with Runtime.from_environment() as rt:
    dim, batch = int(rt.hp("dim", 32)), int(rt.hp("global_batch_size", 64))
    torch.manual_seed(rt.seed)
    model = rt.prepare(nn.Sequential(nn.Linear(dim, 64), nn.GELU(), nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=float(rt.hp("lr", 0.05)))
    data = batches(rt.seed, batch, dim)
    steps = int(rt.hp("max_steps", 100))
    for step in range(steps):
        x, y = next(data)
        with rt.autocast():
            loss = nn.functional.mse_loss(model(x.to(rt.device)).float(), y.to(rt.device))
        loss.backward()
        rt.optimizer_step(opt)
        opt.zero_grad(set_to_none=True)
        rt.track_step(step, loss, samples=batch)
    with torch.no_grad():
        x, y = next(batches(10_000, 1024, dim))
        val = nn.functional.mse_loss(model(x.to(rt.device)).float(), y.to(rt.device))
    rt.log_validation(steps, val_mse=float(val.item()))
