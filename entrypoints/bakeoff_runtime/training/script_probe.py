"""Script mode, inside the worker: make the leg's backend reachable and measure an unchanged script.

Before the script starts, on every leg: Python, NumPy and torch are seeded with the job's seed,
a global optimizer step post-hook (`torch.optim.optimizer.register_optimizer_step_post_hook`)
is installed, and so is the device watch (training/evidence.py: where the model's parameters
lived and what ran on the device, whether or not the script ever calls an optimizer). On a
neuron leg torch_xla and its distributed backend are imported first, so the script's
`torch.device("xla")` and `init_process_group("xla")` work as they are, and each step ends with
`torch_xla.sync()`: the graph boundary a GPU script never marks. A step is an optimizer step;
a script that never calls one (it updates its weights by hand) has its steps counted, and its
graphs cut, at each training forward pass of its model.

The hook is all bakeoff sees of the loop, so it is kept to a counter and a clock read per step;
every `sync_interval` steps (and at the end of warm-up) it waits for the device, so the step
times it reports are the device's, not the host's dispatch. It records graphs compiled in steps
after warm-up, CPU fallbacks and peak device memory. Rank 0 writes it all to the probe file when
the script ends, however it ends; the launcher turns that, and the metrics it read from the
script's output, into summary.json.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.hooks import RemovableHandle

from bakeoff_runtime.contract import PROCESS_START_ENV, JobEnvironment, step_line
from bakeoff_runtime.contract.phases import phase_line
from bakeoff_runtime.contract.script_mode import ScriptSettings
from bakeoff_runtime.training.backends import Backend, BackendUnavailable, get_backend
from bakeoff_runtime.training.evidence import DeviceWatch
from bakeoff_runtime.training.fingerprint import seed_everything


class _HostOnly(Backend):
    """What a leg whose backend is missing here is measured with: the host clock, no device."""

    name = "cpu"

    def device(self) -> torch.device:
        return torch.device("cpu")


class StepProbe:
    def __init__(self, settings: ScriptSettings, backend_name: str, precision: str = "fp32",
                 local_rank: int = 0, rank: int = 0, started_at: float | None = None):
        self.settings = settings
        self.rank = rank
        self.started_at = started_at if started_at is not None else time.time()
        self.unavailable: str | None = None
        try:
            self.backend = get_backend(backend_name, precision, local_rank)
        except BackendUnavailable as exc:
            # The script still runs (it chooses its own device); the verdict's backend check says
            # what ran instead, from the parameters' devices recorded below.
            self.unavailable = str(exc)
            self.backend = _HostOnly(precision, local_rank)
        if self.backend.lazy:
            import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" process group)
        self.lazy = self.backend.lazy
        self.steps = 0
        self.watch = DeviceWatch(on_training_forward=self._after_forward)
        self.first_step_at: float | None = None
        self.synced: list[tuple[int, float]] = []  # (steps done, device-synchronised time)
        self.recompiling_steps = 0
        self._graphs_before: int | None = None
        self._handle: RemovableHandle | None = None

    def _compiled_graphs(self) -> int:
        return int(self.backend.compile_stats().get("compiled_graphs") or 0)

    # --- the hook ---------------------------------------------------------------------------
    def install(self) -> None:
        self._handle = register_optimizer_step_post_hook(self._after_step)
        self.watch.install()

    def remove(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        self.watch.remove()

    def _after_forward(self, forwards: int) -> None:
        """A training forward pass of the model, in a script that has stepped no optimizer: the
        previous pass's step (its hand-written update included) has ended."""
        if self.watch.optimizer_steps == 0 and forwards > 1:
            self._step_ended()

    def _after_step(self, optimizer, _args, _kwargs) -> None:
        self._step_ended()

    def _step_ended(self) -> None:
        first = self.steps == 0
        if self.lazy:
            if first and self.rank == 0:
                # The script's first step is traced, not run, until this sync compiles its graph
                # (contract/phases.py): what the bar shows for that half minute on an XLA leg.
                print(phase_line("compiling"), flush=True)
            self.backend.mark_step()
        self.steps += 1
        step = self.steps
        warm = self.settings.warmup_steps
        if step > warm and self.lazy:
            graphs = self._compiled_graphs()
            if self._graphs_before is not None and graphs > self._graphs_before:
                self.recompiling_steps += 1
            self._graphs_before = graphs
        elif step == warm and self.lazy:
            self._graphs_before = self._compiled_graphs()
        if step == 1 or step == warm or step % self.settings.sync_interval == 0:
            self.backend.synchronize()
            now = time.time()
            if step == 1:
                self.first_step_at = now
                if self.rank == 0:
                    print(phase_line("training"), flush=True)
            self.synced.append((step, now))
            if self.rank == 0 and len(self.synced) > 1:
                self._say(step)

    def _say(self, step: int) -> None:
        (s0, t0), (s1, t1) = self.synced[-2], self.synced[-1]
        if t1 <= t0 or s1 <= s0:
            return
        values: dict[str, float] = {"step_time_s": (t1 - t0) / (s1 - s0)}
        if self.settings.units_per_step:
            values[f"{self.settings.unit}_per_sec"] = self.settings.units_per_step * (s1 - s0) / (t1 - t0)
        print(step_line(step, values), flush=True)

    # --- the record -------------------------------------------------------------------------
    def record(self) -> dict[str, Any]:
        try:
            self.backend.synchronize()
        except Exception:  # the device may be what failed
            pass
        end = time.time()
        stats: dict[str, Any] = {}
        fallbacks: list[str] = []
        try:
            stats = self.backend.compile_stats()
            fallbacks = list(getattr(self.backend, "fallback_ops", lambda: [])())
        except Exception as exc:
            stats = {"error": f"{type(exc).__name__}: {exc}"}
        if self.lazy:
            stats["recompiles_after_warmup"] = self.recompiling_steps
            stats["recompiles_basis"] = (f"optimizer steps after the first {self.settings.warmup_steps} that "
                                         "compiled a new graph (validation between steps included)")
        memory = None
        try:
            memory = self.backend.peak_device_memory_bytes()
        except Exception:
            pass
        return {
            "schema": "bakeoff.probe/1",
            "steps": self.steps if self.watch.optimizer_steps else max(self.steps, self.watch.training_forwards),
            "synced": self.synced,
            "started_at": self.started_at, "first_step_at": self.first_step_at, "ended_at": end,
            "warmup_steps": self.settings.warmup_steps, "model": self.watch.model,
            "step_basis": ("optimizer steps" if self.watch.optimizer_steps or not self.watch.training_forwards
                           else "training forward passes of the model (no optimizer step was seen)"),
            "evidence": self.watch.record(),
            "compile": {**stats, **({"fallback_ops": fallbacks} if self.lazy else {})},
            "peak_device_memory_bytes": memory, "versions": self.backend.versions(),
            "backend_device": self.backend.describe(), "backend_unavailable": self.unavailable,
            "hook": "torch.optim.optimizer.register_optimizer_step_post_hook"
                    + (" + torch_xla.sync()" if self.lazy else ""),
        }

    def write(self, path: Path) -> None:
        if self.rank != 0:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.record(), indent=2, sort_keys=True, default=str))
        os.replace(tmp, path)


def prepare(settings: ScriptSettings, seed: int | None, environ=None) -> StepProbe:
    """Everything that happens before the script's first line: seeds, the backend, the hook."""
    environ = os.environ if environ is None else environ
    if seed is not None:
        seed_everything(seed)
    started = float(environ.get(PROCESS_START_ENV) or time.time())
    job = JobEnvironment.from_environ(environ)
    probe = StepProbe(settings, job.backend or "cpu", job.precision or "fp32",
                      int(environ.get("LOCAL_RANK", 0)), int(environ.get("RANK", 0)), started)
    probe.install()
    return probe
