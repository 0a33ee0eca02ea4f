"""Script mode's metric sources (bakeoff_runtime.training.metric_sources): each one's `collect` over the files a
job really leaves, their precedence as the launcher applies it, a new source as one module, and the question
`validate` and `bakeoff run` ask of the same sources before any job starts."""
from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bakeoff_runtime.contract import ENV, TrainingEnv
from bakeoff_runtime.contract.script_mode import (
    METRIC_SOURCE_RULES,
    MetricRegex,
    MetricSourceRule,
    ScriptSettings,
    sources_giving,
)
from bakeoff_runtime.training import metric_sources
from bakeoff_runtime.training.metric_sources import SOURCES, Collected, MetricSource
from bakeoff_runtime.training.script_launch import PreparedScript
from bakeoff_runtime.training.script_metrics import LogMetrics
from conftest import ROOT, write_spec

PLAIN_LOOP = ROOT / "tests" / "assets" / "script_mode" / "plain_loop"
REGEXES = (MetricRegex("train_loss", r"step \d+: loss ([0-9.]+)"), MetricRegex("eval_loss", r"eval loss ([0-9.]+)"))
# What tests/assets/script_mode/plain_loop/train.py prints, with an evaluation line the regexes also read.
LOG = """[bakeoff] script mode: train.py --seed 1
step 0: loss 2.50000
step 10: loss 1.75000
eval loss 9.00000
step 20: loss 1.25000
validation loss 1.10000
"""
# A Trainer's trainer_state.json as TrainerState.save_to_json writes it (transformers 4.x), after ten steps
# evaluated at 5 and 10: `loss` is the training loss, the last entry the run's summary.
TRAINER_STATE = {
    "best_global_step": None, "best_metric": None, "best_model_checkpoint": None, "epoch": 0.5,
    "eval_steps": 5, "global_step": 10, "is_hyper_param_search": False, "is_local_process_zero": True,
    "is_world_process_zero": True, "logging_steps": 5, "max_steps": 10, "num_input_tokens_seen": 0,
    "num_train_epochs": 1, "save_steps": 500, "total_flos": 1234.0, "train_batch_size": 8,
    "trial_name": None, "trial_params": None,
    "log_history": [
        {"epoch": 0.25, "grad_norm": 1.5, "learning_rate": 0.0005, "loss": 4.1, "step": 5},
        {"epoch": 0.25, "eval_loss": 3.9, "eval_runtime": 0.2, "eval_samples_per_second": 80.0,
         "eval_steps_per_second": 10.0, "step": 5},
        {"epoch": 0.5, "grad_norm": 1.1, "learning_rate": 0.0, "loss": 3.5, "step": 10},
        {"epoch": 0.5, "eval_loss": 3.4, "eval_runtime": 0.2, "eval_samples_per_second": 80.0,
         "eval_steps_per_second": 10.0, "step": 10},
    ],
    "stateful_callbacks": {"TrainerControl": {"args": {"should_save": True}, "attributes": {}}},
}


@pytest.fixture
def env(tmp_path, monkeypatch) -> TrainingEnv:
    """A job's /opt/ml under tmp_path, run from a working directory of its own (a Trainer's relative
    output_dir lands there, so the trainer_state source looks there too)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    job = TrainingEnv.from_environ({ENV["opt_ml"]: str(tmp_path / "opt" / "ml")})
    job.model_dir.mkdir(parents=True)
    return job


def _job(env: TrainingEnv, settings: ScriptSettings, sources: tuple[MetricSource, ...] = SOURCES,
         mlflow: Any = None) -> PreparedScript:
    """The launcher's job as `script_launch.prepare` leaves it, before the script starts."""
    metrics = LogMetrics(settings.metrics, settings.loss_metric, env.model_dir / "metrics.jsonl")
    return PreparedScript([], {}, metrics, mlflow=mlflow, before=metric_sources.before(env, settings, sources))


def _run_script(job: PreparedScript, log: str = LOG) -> None:
    """What the launcher does while the script runs: every line of its output through the regexes."""
    for line in log.splitlines(keepends=True):
        job.metrics.feed(line)
    job.metrics.close()


def _write_trainer_state(folder: Path, body: dict = TRAINER_STATE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "trainer_state.json"
    path.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
    return path


def _records(env: TrainingEnv) -> list[dict]:
    return [json.loads(line) for line in (env.model_dir / "metrics.jsonl").read_text().splitlines()]


class ScriptRunLogged:
    """Stands in for tracking.script_run.ScriptRun where it reads the MLflow server back (the unit tests load
    no MLflow; tests/e2e/test_script_mode_e2e.py and test_hostile_scripts.py read a real server): what the
    script's own processes logged, and the values another process wrote into its run."""

    def __init__(self, logged: dict[str, list[float]], foreign: dict[str, int]):
        self.logged, self.foreign = logged, {}
        self._later_foreign = foreign

    def logged_by_script(self) -> dict[str, list[float]]:
        self.foreign = self._later_foreign  # as ScriptRun: known once the run was read back
        return self.logged

    def foreign_note(self) -> str:
        return f"MLflow: foreign values in {', '.join(sorted(self.foreign))}; not used"


# --- each source on the files a job leaves --------------------------------------------------------------

def test_the_log_regexes_give_each_metrics_first_and_last_value(env):
    settings = ScriptSettings(metrics=REGEXES)
    job = _job(env, settings)
    _run_script(job)
    found = metric_sources.collect(env, settings, job)
    assert found.series == {"train_loss": [2.5, 1.25], "eval_loss": [9.0]}
    assert found.labels == ["log regexes"] and found.notes == []
    assert [(r["kind"], r["step"], r["source"]) for r in _records(env)] == [
        ("train", 1, "log"), ("train", 2, "log"), ("eval", 1, "log"), ("train", 3, "log")]


def test_the_log_regexes_are_named_where_declared_even_when_nothing_matched(env):
    settings = ScriptSettings(metrics=REGEXES)
    job = _job(env, settings)
    _run_script(job, "nothing that matches\n")
    found = metric_sources.collect(env, settings, job)
    assert found.series == {} and found.labels == ["log regexes"]


def test_a_trainers_state_written_by_the_job_gives_its_log_history(env):
    settings = ScriptSettings(hf_trainer_state=True)
    job = _job(env, settings)
    path = _write_trainer_state(env.model_dir / "checkpoint-10")  # the script's save_state()
    found = metric_sources.collect(env, settings, job)
    assert found.series == {"train_loss": [4.1, 3.5], "eval_loss": [3.9, 3.4]}
    assert found.labels == [f"trainer_state.json ({path.parent.name}/)"] and found.notes == []
    # Appended to metrics.jsonl with the Trainer's own steps.
    assert [(r["kind"], r["step"], r["source"]) for r in _records(env)] == [
        ("train", 5, "trainer_state.json"), ("eval", 5, "trainer_state.json"), ("train", 10, "trainer_state.json"),
        ("eval", 10, "trainer_state.json")]


def test_a_relative_trainer_output_dir_in_the_working_directory_is_found(env):
    settings = ScriptSettings(hf_trainer_state=True)
    job = _job(env, settings)
    _write_trainer_state(Path.cwd() / "out")
    assert metric_sources.collect(env, settings, job).labels == ["trainer_state.json (out/)"]


def test_a_trainer_state_that_was_there_before_the_script_is_not_the_jobs(env):
    settings = ScriptSettings(hf_trainer_state=True)
    _write_trainer_state(env.checkpoint_dir / "checkpoint-5")  # a checkpoint channel's, left as it was
    job = _job(env, settings)
    found = metric_sources.collect(env, settings, job)
    assert found.series == {} and found.labels == []
    assert found.notes == ["no trainer_state.json was written (call trainer.save_state() at the end)"]
    assert not (env.model_dir / "metrics.jsonl").read_text()  # nothing appended


def test_a_source_the_spec_left_off_is_not_read(env):
    settings = ScriptSettings(metrics=REGEXES)  # hf_trainer_state off
    job = _job(env, settings)
    assert job.before == {"log_regexes": None}  # no snapshot of trainer_state.json files taken
    _write_trainer_state(env.model_dir)
    _run_script(job)
    found = metric_sources.collect(env, settings, job)
    assert found.series["eval_loss"] == [9.0] and found.labels == ["log regexes"] and found.notes == []


# --- precedence ------------------------------------------------------------------------------------------

def test_the_registry_holds_the_contracts_rules_in_their_order():
    # validate asks the contract's rules; the launcher reads through SOURCES: one reader per rule, same order.
    assert [s.rule for s in SOURCES] == list(METRIC_SOURCE_RULES)
    assert [s.name for s in SOURCES] == ["log_regexes", "trainer_state", "mlflow"]


def test_regexes_first_then_trainer_state_over_them_then_mlflow_only_where_neither_gave(env):
    settings = ScriptSettings(metrics=REGEXES, hf_trainer_state=True, metrics_from_mlflow=True)
    run = ScriptRunLogged({"eval_loss": [0.5], "val_acc": [0.25, 0.75]}, foreign={"val_acc": 1})
    job = _job(env, settings, mlflow=run)
    _run_script(job)
    path = _write_trainer_state(env.model_dir / "trainer")
    found = metric_sources.collect(env, settings, job)
    # eval_loss: the regex's 9.0 overridden by trainer_state.json, MLflow's 0.5 not taken; val_acc: only MLflow's.
    assert found.series == {"train_loss": [4.1, 3.5], "eval_loss": [3.9, 3.4], "val_acc": [0.25, 0.75]}
    assert found.labels == ["log regexes", f"trainer_state.json ({path.parent.name}/)",
                            "the script's own MLflow logging (val_acc)"]
    assert found.notes == ["MLflow: foreign values in val_acc; not used"]
    sources = [r["source"] for r in _records(env)]  # the regexes' records as they came, then the Trainer's
    assert sources == ["log"] * 4 + ["trainer_state.json"] * 4


def test_mlflow_is_read_wherever_the_job_has_a_run_and_named_only_when_it_gave_something(env):
    settings = ScriptSettings(metrics=REGEXES)  # metrics_from_mlflow off: the verdict does not count on it
    job = _job(env, settings, mlflow=ScriptRunLogged({"train_loss": [7.0]}, foreign={}))
    _run_script(job)
    found = metric_sources.collect(env, settings, job)
    assert found.series["train_loss"] == [2.5, 1.25] and found.labels == ["log regexes"] and found.notes == []
    no_run = _job(env, ScriptSettings(metrics_from_mlflow=True))  # MLflow off for the job: no run to read
    assert metric_sources.collect(env, ScriptSettings(metrics_from_mlflow=True), no_run).labels == []


# --- a new source is one module ----------------------------------------------------------------------------

class LightningCsv(MetricSource):
    """What a module for Lightning's CSVLogger would hold: the last `metrics.csv` under the job's model dir,
    each column a metric (a row holds the ones logged at its step; the others are empty)."""

    rule = MetricSourceRule("lightning_csv", "Lightning's CSVLogger metrics.csv", "script_mode.lightning_csv",
                            "set script_mode.lightning_csv: true for a Lightning CSVLogger",
                            enabled=lambda s: True, gives=lambda s, metric: True)

    def collect(self, env: TrainingEnv, settings: ScriptSettings, job: PreparedScript,
                found: Mapping[str, list[float]]) -> Collected:
        files = sorted(env.model_dir.rglob("metrics.csv"))
        if not files:
            return Collected(notes=("no metrics.csv was written",))
        columns: dict[str, list[float]] = {}
        with open(files[-1], newline="") as fh:
            for row in csv.DictReader(fh):
                for name, value in row.items():
                    if name not in ("step", "epoch") and value:
                        columns.setdefault(name, []).append(float(value))
        series = {name: [v[0], v[-1]] if len(v) > 1 else v for name, v in columns.items() if name not in found}
        return Collected(series, label=f"{files[-1].parent.name}/metrics.csv")


def test_a_new_source_is_one_module_added_to_the_sources(env):
    settings = ScriptSettings(metrics=REGEXES)
    sources = (*SOURCES, LightningCsv())
    job = _job(env, settings, sources)
    _run_script(job)
    logs = env.model_dir / "lightning_logs" / "version_0"
    logs.mkdir(parents=True)
    (logs / "metrics.csv").write_text("epoch,step,train_loss,val_acc\n0,9,2.0,\n0,9,,0.5\n1,19,1.5,\n1,19,,0.75\n")
    found = metric_sources.collect(env, settings, job, sources)
    assert found.series == {"train_loss": [2.5, 1.25], "eval_loss": [9.0], "val_acc": [0.5, 0.75]}
    assert found.labels == ["log regexes", "version_0/metrics.csv"]


# --- before any job: can an enabled source give the parity metric? ---------------------------------------

@pytest.mark.parametrize("settings, mlflow, given", [
    (ScriptSettings(metrics=REGEXES), True, []),  # no regex for val_loss
    (ScriptSettings(metrics=(*REGEXES, MetricRegex("val_loss", "v ([0-9.]+)"))), False, ["log_regexes"]),
    (ScriptSettings(hf_trainer_state=True), False, ["trainer_state"]),
    (ScriptSettings(metrics_from_mlflow=True), True, ["mlflow"]),
    (ScriptSettings(metrics=REGEXES, metrics_from_mlflow=True), False, []),  # MLflow off: nothing gives it
])
def test_which_enabled_sources_can_give_a_metric(settings, mlflow, given):
    assert [r.name for r in sources_giving(settings, "val_loss", mlflow_enabled=mlflow)] == given


def _mlflow_spec(tmp_path: Path, **over: Any) -> Path:
    """A script whose parity metric only its own MLflow logging gives (a regex for the training loss only)."""
    shutil.copytree(PLAIN_LOOP, tmp_path / "plain_loop", dirs_exist_ok=True)
    data = {"name": "own-mlflow", "entrypoint": {
        "source_dir": "plain_loop", "script": "train.py", "mode": "script",
        "script_mode": {"metrics": [{"name": "train_loss", "regex": r"step \d+: loss ([0-9.]+)"}],
                        "metrics_from_mlflow": True, "seed": {"argument": "seed"}}},
            "hyperparameters": {"steps": 20},
            "legs": [{"name": "m5", "instance_type": "ml.m5.xlarge"}, {"name": "g5", "instance_type": "ml.g5.xlarge"}],
            "seeds": 2, "parity": {"metric": "val_mse", "margin": 0.5, "baseline": "g5"}, **over}
    return write_spec(tmp_path / "bakeoff.yaml", data)


def test_validate_refuses_metrics_from_mlflow_with_mlflow_off_and_no_regex_in_one_line(tmp_path, cli):
    proc = cli("validate", _mlflow_spec(tmp_path, mlflow={"enabled": False}))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "parity.metric" in lines[0] and "mlflow.enabled: false turns MLflow off" in lines[0]
    assert "set mlflow.enabled: true" in lines[0] and "declare 'val_mse' in entrypoint.script_mode.metrics" in lines[0]
    assert cli("validate", _mlflow_spec(tmp_path)).returncode == 0  # MLflow on: the script's logging gives it


def test_run_with_no_mlflow_stops_before_any_job_when_only_mlflow_gives_the_metric(tmp_path, cli):
    out = tmp_path / "out"
    proc = cli("run", _mlflow_spec(tmp_path), "--out", out, "--no-mlflow", "--quiet")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--no-mlflow turns MLflow off" in lines[0], proc.stderr
    assert "run without --no-mlflow" in lines[0] and "no job was started" in lines[0]
    assert not out.exists()
