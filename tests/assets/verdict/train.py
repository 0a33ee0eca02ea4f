"""A tiny regression on the Runtime contract, with faults planted by hyperparameter,
for the end-to-end verdict tests (each job trains in well under a second).

    plant: none                 the same computation on every leg
    plant: lr_on_neuron         3x the learning rate on the neuron backend only
    plant: blowup_on_neuron     40x the learning rate on the neuron backend only (the loss explodes)
    plant: reshuffle_leg=NAME   leg NAME draws its data in another order (equal in expectation, unpaired)
    plant: sigkill=LEG/SEED     that job kills itself with SIGKILL (an infrastructure loss)
    plant: sigkill_once=LEG/SEED     the same, on the job's first attempt only (its checkpoint dir remembers)
    plant: hang=LEG/SEED        that job stops making progress after 5 steps (until it is stopped)
    plant: slow                 every step takes 0.25 s more (time to stop a run in the middle)
    plant: raise=LEG/SEED       that job raises RuntimeError(hyperparameter `message`) (a script failure)
    plant: blowup=LEG/SEED      that job alone trains at 40x the learning rate (the loss explodes)
    plant: quantised_offset=NAME    val_mse is rounded to 0.01 (a metric that moves in steps) and leg
                                NAME's is 0.01 higher: equal per-seed differences, a sample SD of 0
"""
import os
import signal
import time

import torch
import torch.nn as nn

from bakeoff_runtime import Runtime

with Runtime.from_environment() as rt:
    plant = str(rt.hp("plant", "none"))
    if plant == f"sigkill={rt.leg}/{rt.seed}":
        os.kill(os.getpid(), signal.SIGKILL)
    if plant == f"raise={rt.leg}/{rt.seed}":
        raise RuntimeError(str(rt.hp("message", "planted")))
    if plant == f"sigkill_once={rt.leg}/{rt.seed}":
        marker = rt.env.checkpoint_dir / "killed-once"
        if not marker.exists():
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            if rt.sink is not None:
                rt.sink._ready.wait(60)  # its MLflow run exists: the kill leaves it RUNNING
            os.kill(os.getpid(), signal.SIGKILL)
    dim, batch, steps = 8, int(rt.hp("global_batch_size", 16)), int(rt.hp("max_steps", 40))
    data_seed = rt.seed + (1000 if plant == f"reshuffle_leg={rt.leg}" else 0)
    gen = torch.Generator().manual_seed(data_seed)
    true_w = torch.randn(dim, 1, generator=torch.Generator().manual_seed(7))
    torch.manual_seed(rt.seed)
    model = rt.prepare(nn.Linear(dim, 1))
    factor = {"lr_on_neuron": 3.0, "blowup_on_neuron": 40.0}.get(plant, 1.0) if rt.backend_name == "neuron" else 1.0
    if plant == f"blowup={rt.leg}/{rt.seed}":
        factor = 40.0
    lr = 0.02 * factor
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(steps):
        x = torch.randn(batch, dim, generator=gen)
        y = x @ true_w + 0.3 * torch.randn(batch, 1, generator=gen)
        with rt.autocast():
            loss = nn.functional.mse_loss(model(x.to(rt.device)).float(), y.to(rt.device))
        loss.backward()
        rt.optimizer_step(opt)
        opt.zero_grad(set_to_none=True)
        rt.track_step(step, loss, samples=batch)
        if plant == "slow":
            time.sleep(0.25)
        if plant == f"hang={rt.leg}/{rt.seed}" and step == 5:
            time.sleep(3600)
    with rt.validating(), torch.no_grad():
        vg = torch.Generator().manual_seed(99)
        x = torch.randn(512, dim, generator=vg)
        y = x @ true_w + 0.3 * torch.randn(512, 1, generator=vg)
        val = float(nn.functional.mse_loss(model(x.to(rt.device)).float(), y.to(rt.device)).item())
    if plant.startswith("quantised_offset="):
        val = round(val, 2) + (0.01 if plant == f"quantised_offset={rt.leg}" else 0.0)
    rt.log_validation(steps, val_mse=val)
