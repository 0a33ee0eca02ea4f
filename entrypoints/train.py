"""bakeoff's built-in reference trainer: the one training script for every leg.

A small decoder-only transformer LM on bytes. The only thing that differs between
legs is the backend (and precision) setting; model, data order, global batch,
optimizer and schedule come from hyperparameters held equal across legs.
"""
from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bakeoff_runtime.contract import PROCESS_START_ENV  # noqa: E402  (torch-free)

STARTED = float(os.environ.get(PROCESS_START_ENV, time.time()))

import torch  # noqa: E402

from bakeoff_runtime import Runtime  # noqa: E402
from bakeoff_runtime.training.reference.data import BatchSplit, ByteBatches, load_channel, validation_batches  # noqa: E402
from bakeoff_runtime.training.reference.model import LMConfig, TinyLM, parameter_count  # noqa: E402


def lr_at(step: int, base: float, warmup: int, total: int, schedule: str, min_ratio: float) -> float:
    if warmup and step < warmup:
        return base * (step + 1) / warmup
    if schedule == "constant":
        return base
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return base * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def build_optimizer(model: torch.nn.Module, hp) -> torch.optim.Optimizer:
    name = hp("optimizer", "adamw")
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for _n, p in model.named_parameters():
        (decay if p.dim() >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": float(hp("weight_decay", 0.1))},
              {"params": no_decay, "weight_decay": 0.0}]
    lr = float(hp("lr", 3e-3))
    if name == "adamw":
        betas = (float(hp("beta1", 0.9)), float(hp("beta2", 0.95)))
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=float(hp("eps", 1e-8)), foreach=False)
    if name == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=float(hp("momentum", 0.9)))
    raise ValueError(f"unknown optimizer {name!r} (adamw, sgd)")


@torch.no_grad()
def evaluate(rt: Runtime, model, batches) -> float:
    model.eval()
    total: torch.Tensor | None = None
    for x, y in batches:
        with rt.autocast():
            _, loss = model(x.to(rt.device), y.to(rt.device))
        total = loss if total is None else total + loss
    model.train()
    if total is None:
        raise ValueError("no validation batches")
    return float((total / len(batches)).item())


def main() -> None:
    with Runtime.from_environment(started_at=STARTED) as rt:
        hp = rt.hp
        cfg = LMConfig(sequence_length=int(hp("sequence_length", 128)), d_model=int(hp("d_model", 128)),
                       n_layers=int(hp("n_layers", 2)), n_heads=int(hp("n_heads", 4)),
                       mlp_ratio=int(hp("mlp_ratio", 4)), dropout=float(hp("dropout", 0.0)))
        split = BatchSplit.from_hyperparameters(hp, rt.world_size)
        global_batch, accumulation = split.global_batch_size, split.gradient_accumulation_steps
        rt.extra["fairness"] = split.fairness()
        max_steps = int(hp("max_steps", 200))

        if "train" not in rt.env.channels:
            raise FileNotFoundError("no 'train' data channel (SM_CHANNEL_TRAIN)")
        train = ByteBatches(load_channel(rt.env.channels["train"]), cfg.sequence_length, global_batch, rt.seed)
        val_data = load_channel(rt.env.channels.get("validation", rt.env.channels["train"]))
        val = validation_batches(val_data, cfg.sequence_length, int(hp("eval_batch_size", 16)),
                                 int(hp("eval_batches", 8)))

        # Initialise on the host with the seed, then move: every backend starts
        # from bit-identical weights for the same seed.
        torch.manual_seed(rt.seed)
        model = TinyLM(cfg)
        rt.extra["parameters"] = parameter_count(model)
        model = rt.prepare(model)
        opt = build_optimizer(model, hp)
        start = 0
        resumed = rt.load_checkpoint()
        if resumed is not None:
            start, state = resumed
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
            rt.extra["resumed_from_step"] = start

        base_lr, warmup = float(hp("lr", 3e-3)), int(hp("warmup_steps", 20))
        schedule, min_ratio = hp("schedule", "cosine"), float(hp("min_lr_ratio", 0.1))
        clip = float(hp("grad_clip", 1.0))
        eval_interval = int(hp("eval_interval", 50))
        ckpt_interval = int(hp("checkpoint_interval", 0))
        tokens_per_step = global_batch * cfg.sequence_length

        model.train()
        for step in range(start, max_steps):
            lr = lr_at(step, base_lr, warmup, max_steps, schedule, min_ratio)
            for group in opt.param_groups:
                group["lr"] = lr
            micro = train.micro_batches(step, rt.rank, rt.world_size, accumulation)
            loss_sum: torch.Tensor | None = None
            for x, y in micro:
                with rt.autocast():
                    _, loss = model(x.to(rt.device), y.to(rt.device))
                (loss / accumulation).backward()
                loss_sum = loss.detach() if loss_sum is None else loss_sum + loss.detach()
            rt.optimizer_step(opt, clip_grad_norm=clip)  # average across ranks, clip, step
            opt.zero_grad(set_to_none=True)
            assert loss_sum is not None  # accumulation >= 1: at least one micro-batch ran
            rt.track_step(step, loss_sum / accumulation, tokens=tokens_per_step, lr=lr)
            if eval_interval and (step + 1) % eval_interval == 0 and step + 1 < max_steps:
                with rt.validating():
                    val_loss = evaluate(rt, model, val)
                rt.log_validation(step + 1, val_loss=val_loss)
            if ckpt_interval and (step + 1) % ckpt_interval == 0:
                rt.save_checkpoint({"model": model.state_dict(), "optimizer": opt.state_dict()}, step + 1)
        with rt.validating():
            val_loss = evaluate(rt, model, val)
        rt.log_validation(max_steps, val_loss=val_loss, val_bits_per_byte=val_loss / math.log(2))
        if ckpt_interval:
            rt.save_checkpoint({"model": model.state_dict(), "optimizer": opt.state_dict()}, max_steps, final=True)
        if rt.rank == 0:
            state = model.module.state_dict() if hasattr(model, "module") else model.state_dict()
            torch.save({k: v.detach().cpu() for k, v in state.items()}, rt.env.model_dir / "model.pt")


if __name__ == "__main__":
    main()
