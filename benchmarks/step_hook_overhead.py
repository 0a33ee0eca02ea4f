"""Script mode's step hook: the same bare training loop with and without it.

The hook (bakeoff_runtime.script_probe) is a global optimizer step post-hook that every
script-mode job runs behind; this measures what it adds to an optimizer step on the host CPU
backend (its device synchronisation is a no-op there, so the figure is the hook's own work:
a counter, a clock read, a step line every `sync_interval` steps). Both variants run in this
one process, interleaved round by round so machine noise hits them alike; the figure is the
ratio of median step times. Goal: overhead under 1% of step time.

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

from bakeoff_runtime.reference.model import LMConfig, TinyLM  # noqa: E402
from bakeoff_runtime.script_contract import ScriptSettings  # noqa: E402
from bakeoff_runtime.script_probe import StepProbe  # noqa: E402


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
    for _ in range(args.rounds):
        bare.append(loop(args.steps, False))
        hooked.append(loop(args.steps, True))
    base, with_hook = statistics.median(bare), statistics.median(hooked)
    overhead = (with_hook - base) / base
    print(json.dumps({"benchmark": "step_hook_overhead", "median_step_s_without": base,
                      "median_step_s_with": with_hook, "overhead_ratio": overhead, "goal": "< 0.01",
                      "met": overhead < 0.01, "rounds": args.rounds, "steps": args.steps}, indent=2))


if __name__ == "__main__":
    main()
