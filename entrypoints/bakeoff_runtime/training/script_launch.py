"""Script mode, in the launcher's supervising process: what happens around an unchanged script.

Before it: its requirements.txt installed (as the training toolkit does), its hyperparameters
turned into its command line, the SM_* variables the toolkit would have set, and its seed in
the variable the spec names. While it runs: every line of its output through the metric
regexes. After it: summary.json from the step hook's record, the metrics its sources give
(training/metric_sources: those regexes, a Trainer's trainer_state.json, its own MLflow logging) and how
it ended.
Torch-free; the worker process (script_probe) is the only part that imports torch.
"""
from __future__ import annotations

import os
import re
import resource
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bakeoff_runtime.contract import JobEnvironment, TrainingEnv
from bakeoff_runtime.contract.backend_table import BACKENDS
from bakeoff_runtime.contract.documents import summary_or_none
from bakeoff_runtime.contract.script_mode import (
    PROBE_FILE,
    SEED_HP,
    ScriptSettings,
    command_line,
    count_gpus,
    count_neuron_cores,
    requirements_command,
    sagemaker_environment,
    script_hyperparameters,
    seed_environment,
)
from bakeoff_runtime.tracking.script_run import ScriptRun
from bakeoff_runtime.training import metric_sources
from bakeoff_runtime.training.script_metrics import LogMetrics
from bakeoff_runtime.training.script_summary import compose, read_probe, write


@dataclass
class PreparedScript:
    arguments: list[str]
    environment: dict[str, str]
    metrics: LogMetrics
    failure: str | None = None
    notes: list[str] = field(default_factory=list)
    mlflow: ScriptRun | None = None
    failure_kind: str = "script"  # who must act on `failure` (training/failure_cause.py)
    # What each metric source noted before the script started, by its name (metric_sources.before).
    before: dict[str, Any] = field(default_factory=dict)


def _requirements(code_dir: Path) -> tuple[str | None, list[str]]:
    """(a failure, notes). Installs requirements.txt where the job asks for it (a container);
    elsewhere (this machine's own Python) only says what is missing from it."""
    cmd = requirements_command(code_dir)
    if cmd is None:
        return None, []
    if JobEnvironment.from_environ().install_requirements:
        print(f"[bakeoff] installing requirements.txt: {' '.join(cmd[1:])}", flush=True)
        done = subprocess.run(cmd, cwd=code_dir, capture_output=True, text=True)
        if done.returncode:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return f"pip install -r requirements.txt failed (exit {done.returncode}): {' | '.join(tail)}", []
        return None, ["requirements.txt installed"]
    from importlib.metadata import PackageNotFoundError, version

    missing = []
    for line in (code_dir / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name = re.split(r"[\s<>=!~;\[@]", line, maxsplit=1)[0]
        try:
            version(name)
        except PackageNotFoundError:
            missing.append(name)
    note = ("requirements.txt not installed here (a local run uses this Python)"
            + (f"; missing from it: {', '.join(missing)}" if missing else "; all of it is present"))
    print(f"[bakeoff] {note}", flush=True)
    return None, [note]


def prepare(env: TrainingEnv, script: Path, leg_args: list[str], settings: ScriptSettings) -> PreparedScript:
    failure, notes = _requirements(script.parent)
    kind = "script"
    if failure:
        from bakeoff_runtime.training.failure_cause import MISSING_PACKAGE, NO_NETWORK, classify

        # pip that cannot reach an index says so; one that finds no such package is a requirements.txt to fix
        found, _ = classify(failure)
        kind = NO_NETWORK if found == NO_NETWORK else MISSING_PACKAGE
    hps = script_hyperparameters(env.hyperparameters)
    arguments = command_line(hps, settings.argument_style) + list(leg_args)
    seed = env.hyperparameters.get(SEED_HP)
    # Locally the neuron leg is emulated and the GPU leg may run on the CPU: the counts are of
    # what this job really has, as the toolkit would count them, except that an emulated
    # Neuron leg has as many "NeuronCores" as it runs processes.
    job = JobEnvironment.from_environ()
    neurons = count_neuron_cores()
    backend = BACKENDS.get(job.backend)
    if not neurons and job.emulated_on and backend is not None and backend.accelerator == "neuron":
        neurons = job.nproc_per_node if job.nproc_per_node is not None else 1
    environment = sagemaker_environment(env, hps, entry_point=script.name, code_dir=script.parent,
                                        num_gpus=count_gpus(), num_neurons=neurons, user_args=arguments)
    environment.update(seed_environment(settings, int(seed) if seed is not None else None))
    environment.setdefault("PYTHONUNBUFFERED", "1")
    print(f"[bakeoff] script mode: {script.name} {' '.join(arguments)}".rstrip(), flush=True)
    run = ScriptRun(env, arguments) if env.host_rank == 0 and os.environ.get("MLFLOW_TRACKING_URI") else None
    if run is not None:
        environment.update(run.environment())
    metrics = LogMetrics(settings.metrics, settings.loss_metric,
                         env.model_dir / "metrics.jsonl" if env.host_rank == 0 else None,
                         on_value=run.log if run is not None else None)
    return PreparedScript(arguments, environment, metrics, failure, notes, run, failure_kind=kind,
                          before=metric_sources.before(env, settings))


def _ended(env: TrainingEnv) -> tuple[str, str | None, str | None]:
    """(status, reason, failure kind): a failed summary the launcher or the worker already wrote
    says how the script ended; none means it exited 0."""
    earlier = summary_or_none(env.model_dir / "summary.json")
    if earlier is None:
        return "completed", None, None
    return earlier.get("status") or "failed", earlier.get("reason"), earlier.get("failure_kind")


def finish(env: TrainingEnv, settings: ScriptSettings, job: PreparedScript, wall_time_s: float) -> dict:
    status, reason, kind = _ended(env)
    found = metric_sources.collect(env, settings, job)
    job.notes.extend(found.notes)
    summary = compose(env, settings, probe=read_probe(env.output_dir / PROBE_FILE), series=found.series,
                      status=status, reason=reason, failure_kind=kind, arguments=job.arguments,
                      metric_source=", ".join(found.labels) or "none declared", wall_time_s=wall_time_s)
    # The workers' peak resident memory (the script's own process, not this launcher's).
    summary["peak_host_memory_bytes"] = int(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
    if job.notes:
        summary["notes"] = job.notes
    if job.mlflow is not None:
        summary["mlflow"] = job.mlflow.close(summary["status"])
    write(env, summary)
    return summary
