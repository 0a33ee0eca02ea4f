"""Shared loop of the planted preflight models: `step_loss(rt, model, step)` varies."""
import torch

from bakeoff_runtime import Runtime
from bakeoff_runtime.training.reference.model import LMConfig, TinyLM


def train(step_loss, sequence_length=32):
    with Runtime.from_environment() as rt:
        torch.manual_seed(rt.seed)
        model = rt.prepare(TinyLM(LMConfig(sequence_length=sequence_length, d_model=32, n_layers=1, n_heads=2)))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        gen = torch.Generator().manual_seed(0)
        for step in range(rt.max_steps):
            with rt.autocast():
                loss = step_loss(rt, model, step, gen)
            loss.backward()
            rt.optimizer_step(opt)
            opt.zero_grad(set_to_none=True)
            rt.track_step(step, loss, samples=8)
        rt.log_validation(rt.max_steps, val_loss=float(loss.item()))


def batch(rt, gen, length):
    x = torch.randint(0, 256, (8, length), generator=gen)
    return x.to(rt.device), x.to(rt.device)
