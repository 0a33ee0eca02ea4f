"""A user script built on bakeoff's runtime helper and reference LM, with a planted
quality regression: on the leg named `slow` it trains with a 30x smaller LR."""
import math
import os

import torch

from bakeoff_runtime import Runtime
from bakeoff_runtime.training.reference.data import ByteBatches, load_channel, validation_batches
from bakeoff_runtime.training.reference.model import LMConfig, TinyLM

with Runtime.from_environment() as rt:
    corpus = os.environ.get("REGRESSION_CORPUS")
    if corpus is None:
        from pydoc_data.topics import topics

        text = "\n".join(topics[k] for k in sorted(topics)).encode()
        import numpy as np

        data = np.frombuffer(text, dtype=np.uint8)
    else:
        data = load_channel(corpus)
    cfg = LMConfig(sequence_length=32, d_model=32, n_layers=1, n_heads=2)
    torch.manual_seed(rt.seed)
    model = rt.prepare(TinyLM(cfg))
    lr = 3e-3 / (30 if rt.leg == "slow" else 1)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    batches = ByteBatches(data[: len(data) * 9 // 10], 32, 16, rt.seed)
    for step in range(rt.max_steps):
        x, y = batches.global_batch_at(step)
        with rt.autocast():
            _, loss = model(x.to(rt.device), y.to(rt.device))
        loss.backward()
        rt.optimizer_step(opt)
        opt.zero_grad(set_to_none=True)
        rt.track_step(step, loss, tokens=x.numel())
    with torch.no_grad():
        val = [model(x.to(rt.device), y.to(rt.device))[1].item()
               for x, y in validation_batches(data[len(data) * 9 // 10:], 32, 16, 2)]
    rt.log_validation(rt.max_steps, val_loss=sum(val) / len(val), val_bits=sum(val) / len(val) / math.log(2))
