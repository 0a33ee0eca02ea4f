"""What a job is doing, as it says so: the `[bakeoff] phase=NAME` line on its stdout.

The host already reads a job's stdout line by line for its step lines (the local engine's bars); a
phase line goes the same way, so the bar of an XLA leg can say "compiling" for the half minute before
its first step instead of sitting at 0 steps. On SageMaker the line is one more log line: no metric
definition matches it (their regexes want `step=` or a number after a known name).

The job decides its phase from what it knows, never the host from a leg's name:
  starting   the process is up (imports, model, data) and no step has begun;
  compiling  the first step's graph is being built: on a lazy (XLA) device the step's ops are only
             traced until its `torch_xla.sync()`/`xm.mark_step()`, which compiles the graph and runs it
             (PyTorch/XLA evaluates lazily and executes at a mark_step; the `CompileTime` metric of
             `torch_xla.debug.metrics` counts that compile: AWS Neuron, "How to debug models in PyTorch
             NeuronX"); a `torch.compile`d model compiles on its first call;
  training   a step has completed;
  evaluating inside the runtime's `validating()` block.
"""
from __future__ import annotations

import re
from typing import Literal, cast, get_args

Phase = Literal["starting", "compiling", "training", "evaluating"]
PHASES: tuple[Phase, ...] = get_args(Phase)

_PHASE_LINE = re.compile(r"^\[bakeoff\] phase=([a-z]+)\s*$")


def phase_line(phase: Phase) -> str:
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    return f"[bakeoff] phase={phase}"


def parse_phase_line(line: str) -> Phase | None:
    """The phase a line reports; None for any other line (a step line, the script's own output, a phase
    name this side does not know)."""
    m = _PHASE_LINE.match(line.rstrip("\n"))
    if not m or m.group(1) not in PHASES:
        return None
    return cast(Phase, m.group(1))
