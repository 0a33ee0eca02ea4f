"""A torch-free container for the local engine's tests: `LocalExecutor(..., container=FakeContainer(recipe))`.

It stands where `bakeoff.pipelines.local.jobs.run_training` does (the engine's JobContainer seam): the job's
`/opt/ml` is laid out by the engine's own `lay_out`, and its process is run by the engine's own
JobProcess (stdout.log, step lines to the display, the stopping condition, signals, exit codes). Only
the program differs: tests/engine/fake_job.py, which writes what a job on bakeoff's Runtime writes
(metrics.jsonl, summary.json, output/data, the output digest, output/failure) from a Recipe in a
tenth of a second, where a real job spends seconds importing torch, torch_xla and MLflow. The
Evaluate step and the gate still run for real, so every verdict in these tests is a real verdict.

A Recipe plants what tests/assets/verdict/train.py plants by hyperparameter, keyed by leg or by
"leg/seed": a regression on one leg (`offset`), unpaired data (`unpaired`), a metric that moves in
steps (`quantum`), divergence, a script error, SIGKILL (once or always), a hang.
"""
from __future__ import annotations

import json
import random
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from bakeoff.pipelines.local.jobs import JobProcess, Outcome, lay_out, run_processing
from bakeoff.pipelines.local.store import LocalS3
from bakeoff.pipelines.local.substitutions import LocalProcessingJob, LocalTrainingJob, host_environment
from conftest import ENTRYPOINTS

FAKE_JOB = Path(__file__).with_name("fake_job.py")


@dataclass
class Recipe:
    """What each job of a bake-off reports, and how it fails."""

    metric: str = "val_mse"
    base: float = 0.30  # every leg's metric at the end of training, before the per-seed noise
    seed_noise: float = 0.01  # SD of a per-seed change shared by every leg (the same seed, the same data)
    offset: dict[str, float] = field(default_factory=dict)  # leg -> added to its metric (a regression)
    unpaired: dict[str, float] = field(default_factory=dict)  # leg -> SD of noise of its own (other data order)
    quantum: float | None = None  # the metric is rounded to this step (it moves in steps)
    values: dict[str, float] = field(default_factory=dict)  # "leg/seed" -> the metric, outright
    diverge: set[str] = field(default_factory=set)  # "leg" or "leg/seed": the loss blows up
    crash: dict[str, str] = field(default_factory=dict)  # "leg/seed" -> a RuntimeError's message
    sigkill: set[str] = field(default_factory=set)  # "leg/seed": killed by SIGKILL
    sigkill_once: set[str] = field(default_factory=set)  # "leg/seed": SIGKILL on its first attempt only
    hang: set[str] = field(default_factory=set)  # "leg/seed": stops making progress after step 5

    def value(self, leg: str, seed: int) -> float:
        key = f"{leg}/{seed}"
        if key in self.values:
            return self.values[key]
        value = self.base + random.Random(seed).gauss(0.0, self.seed_noise) + self.offset.get(leg, 0.0)
        if leg in self.unpaired:
            value += random.Random(key).gauss(0.0, self.unpaired[leg])
        if self.quantum:
            value = round(round(value / self.quantum) * self.quantum, 10)
        return value


class FakeContainer:
    """A JobContainer for Train steps; `ran` lists the jobs it ran, in the order they started."""

    def __init__(self, recipe: Recipe | None = None):
        self.recipe = recipe or Recipe()
        self.ran: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, job: LocalTrainingJob, job_dir: Path, store: LocalS3, process: JobProcess,
                 on_line) -> Outcome:
        if not job.step_name.startswith("Train-"):  # a Preflight or Collective step needs the real container
            raise AssertionError(f"the fake container runs training steps only, not {job.step_name}")
        with self._lock:
            self.ran.append(job.name)
        opt_ml = lay_out(job, job_dir, store)
        r = self.recipe
        plan = {"metric": r.metric, "values": {job.leg: {str(job.seed): r.value(job.leg, job.seed)}},
                "diverge": sorted(r.diverge), "crash": r.crash, "sigkill": sorted(r.sigkill),
                "sigkill_once": sorted(r.sigkill_once), "hang": sorted(r.hang)}
        env = {**host_environment(), **job.environment, "FAKE_RECIPE": json.dumps(plan),
               "PYTHONPATH": str(ENTRYPOINTS)}  # bakeoff_runtime's source
        # -S: the job needs the standard library and bakeoff_runtime only. The site module would add
        # the venv's editable-install import hook, a third of a fake job's start-up, hundreds of times.
        return process.run([sys.executable, "-S", str(FAKE_JOB)], env, opt_ml, job_dir / "stdout.log",
                           job.max_runtime_s, on_line)


# --- a bake-off through the real CLI, its jobs in the fake container ------------------------------
CPU_LEGS = [{"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32"},
            {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}]
TRN = {"name": "trn1", "instance_type": "ml.trn1.2xlarge", "backend": "neuron", "precision": "fp32"}


def verdict_spec(tmp_path: Path, legs=CPU_LEGS, margin: float = 0.05, seeds=3, plant: str = "none", **extra) -> Path:
    """The spec of the real end-to-end verdict tests (tests/assets/verdict): the same compiled requests,
    so the same cache keys, rules and records; only the container differs."""
    import shutil

    from conftest import ROOT, write_spec

    if not (tmp_path / "verdict").exists():
        shutil.copytree(ROOT / "tests" / "assets" / "verdict", tmp_path / "verdict")
    return write_spec(tmp_path / "bakeoff.yaml", {
        "name": "verdict", "entrypoint": {"source_dir": "verdict", "script": "train.py"},
        "hyperparameters": {"plant": plant},
        "training": {"global_batch_size": 16, "max_steps": 40, "log_interval": 10},
        "legs": legs, "seeds": seeds,
        "parity": {"metric": "val_mse", "margin": margin, "baseline": "g5"}, **extra})


def bakeoff_cli(monkeypatch, capsys, container: FakeContainer | None, *args,
                processor=None) -> tuple[int, str, str]:
    """`bakeoff ARGS` in this process, as `conftest.bakeoff` runs it in a subprocess: the real parser,
    display, error lines and exit codes. `run` reaches the engine through `api.run_local`, given the
    fake container here; None: the command must run no training job (a refusal, a re-decision). Its
    Evaluate step runs in this process (`evaluate_here`) unless `processor` says otherwise, and so does
    the one `bakeoff report` runs to decide a run directory again (the engine's default processor)."""
    from functools import partial

    from bakeoff.pipelines import api
    from bakeoff.pipelines.cli.main import main
    from bakeoff.pipelines.local import executor

    capsys.readouterr()  # what came before is not this command's
    with monkeypatch.context() as m:
        m.setattr(api, "run_local", partial(api.run_local, container=container or _no_container,
                                            processor=processor or evaluate_here))
        m.setattr(executor, "run_processing", processor or evaluate_here)
        code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def evaluate_here(job: LocalProcessingJob, eval_dir: Path, store: LocalS3, process: JobProcess,
                  config_override: dict | None = None) -> Outcome:
    """The Evaluate step's request as `jobs.run_processing` runs it (its inputs staged from the store,
    the config override written, its outputs uploaded), but its command's evaluate.py run in this
    process: the same arguments, environment, working directory and log, the same exit code. What it
    saves is a Python start-up and numpy/scipy's import per bake-off; the process boundary itself is
    exercised by tests/e2e."""
    return run_processing(job, eval_dir, store, _EvaluateInThisProcess(), config_override)  # type: ignore[arg-type]


class _EvaluateInThisProcess:
    """What `JobProcess.run` is to run_processing, for the Evaluate step's command only."""

    def run(self, command: list[str], env: dict[str, str], cwd: Path, log: Path, max_runtime_s: float,
            on_line=None) -> Outcome:
        import contextlib
        import os
        import time
        import traceback

        # `sh -c SCRIPT evaluate ARGS...` as compiled, or `PYTHON evaluate.py ARGS...` (deciding again).
        args = command[4:] if len(command) > 1 and command[1] == "-c" else command[2:]
        started, saved_env, saved_cwd = time.time(), dict(os.environ), os.getcwd()
        with open(log, "w") as out, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            os.environ.clear()
            os.environ.update(env)
            os.chdir(cwd)
            try:
                code = _evaluate_module().main([str(a) for a in args])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            except Exception:  # what the interpreter prints, and its exit status
                traceback.print_exc()
                code = 1
            finally:
                os.environ.clear()
                os.environ.update(saved_env)
                os.chdir(saved_cwd)
        return Outcome(code, time.time() - started)


def _evaluate_module():
    """This checkout's entrypoints/evaluate.py, imported once (the bundle's copy is the same file)."""
    import importlib.util

    from bakeoff.pipelines.plan.bundle import EVALUATE_SCRIPT, entrypoints_dir

    if "bakeoff_evaluate_step" not in sys.modules:
        spec = importlib.util.spec_from_file_location("bakeoff_evaluate_step", entrypoints_dir() / EVALUATE_SCRIPT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["bakeoff_evaluate_step"] = module
        spec.loader.exec_module(module)
    return sys.modules["bakeoff_evaluate_step"]


def _no_container(job, job_dir, store, process, on_line) -> Outcome:
    raise AssertionError(f"{job.name} ran, where this command was to run no training job")
