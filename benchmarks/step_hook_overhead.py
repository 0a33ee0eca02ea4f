"""Script mode's step hook: the same bare training loop with and without it.

The hook (bakeoff_runtime.training.script_probe) is a global optimizer step post-hook that every
script-mode job runs behind, with the device watch (training/evidence.py: its own optimizer post-hook,
and, once the model's outermost module is known, a forward pre-hook on that module alone); this
measures what they add to an optimizer step on the host CPU backend (its device synchronisation is a
no-op there, so the figure is the hooks' own work: counters, a clock read, a step line every
`sync_interval` steps). Both variants run in this
one process, interleaved round by round so machine noise hits them alike; the figure is the
ratio of median step times, the order within each round alternating. On a shared machine that ratio
moves by several percent from noise alone, so the goal is judged on the hook's own time per call
(its post-hook called directly on a real optimizer) over the bare step time. Goal: under 1% of step time.

    .venv/bin/python benchmarks/step_hook_overhead.py [--steps 80] [--rounds 7]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "entrypoints"))

import torch  # noqa: E402

from bakeoff_runtime.contract.script_mode import ScriptSettings  # noqa: E402
from bakeoff_runtime.training.reference.model import LMConfig, TinyLM  # noqa: E402
from bakeoff_runtime.training.script_probe import StepProbe  # noqa: E402


def loop(steps: int, hooked: bool) -> float:
    torch.manual_seed(0)
    model = TinyLM(LMConfig(sequence_length=64, d_model=64, n_layers=2, n_heads=4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 256, (16, 64))
    probe = None
    if hooked:
        probe = StepProbe(ScriptSettings(units_per_step=float(x.numel()), unit="tokens"), "cpu")
        probe.install()
    times = []
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the step lines are written; a terminal is not measured
            for _ in range(steps):
                t0 = time.perf_counter()
                _, loss = model(x, x)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                times.append(time.perf_counter() - t0)
    finally:
        if probe is not None:
            probe.remove()
    return statistics.median(times[5:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))
    bare, hooked = [], []
    loop(args.steps, False)  # warm-up: the allocator and the kernels, for neither variant's benefit
    for r in range(args.rounds):
        # Alternate which goes first (ABBA): the second of a pair runs warmer, which must favour neither.
        for with_hook in ((True, False) if r % 2 else (False, True)):
            (hooked if with_hook else bare).append(loop(args.steps, with_hook))
    base, with_hook = statistics.median(bare), statistics.median(hooked)
    overhead = (with_hook - base) / base
    per_call = hook_call_s()
    print(json.dumps({"benchmark": "step_hook_overhead", "median_step_s_without": base,
                      "median_step_s_with": with_hook, "overhead_ratio": overhead,
                      # The A/B ratio cannot resolve 1% on a shared machine; the hook's own time per call,
                      # over the same bare step, can: that is the figure the goal is judged on.
                      "hook_s_per_step": per_call, "hook_share_of_step": per_call / base, "goal": "< 0.01",
                      "met": per_call / base < 0.01, "rounds": args.rounds, "steps": args.steps}, indent=2))


def hook_call_s(calls: int = 20_000) -> float:
    """The hooks' own time per optimizer step: the probe's and the watch's post-hooks, and the watch's
    forward pre-hook on the model, called directly on a real optimizer and model."""
    model = TinyLM(LMConfig(sequence_length=64, d_model=64, n_layers=2, n_heads=4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    probe = StepProbe(ScriptSettings(units_per_step=1024.0, unit="tokens"), "cpu")
    watch = probe.watch
    with contextlib.redirect_stdout(io.StringIO()):
        probe._after_step(opt, (), {})  # the first step records the model, once per job
        watch._after_optimizer_step(opt, (), {})
        t0 = time.perf_counter()
        for _ in range(calls):
            watch._count_forward(model, ())
            probe._after_step(opt, (), {})
            watch._after_optimizer_step(opt, (), {})
        return (time.perf_counter() - t0) / calls


if __name__ == "__main__":
    main()
