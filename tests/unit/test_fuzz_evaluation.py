"""The Evaluate step against whatever a job's files hold (tests/fuzz_outputs.py): every case ends in a
verdict, each odd run counted with its reason, never a crash; and the script-mode readers of a Trainer's
state give up on a file they cannot read instead of raising."""
import json
import math
import shutil
import tempfile
from pathlib import Path

import pytest
from evaluation_inputs import CONFIG
from fuzz_outputs import (
    CORPUS_METRICS,
    CORPUS_SUMMARIES,
    CORPUS_TRAINER_STATES,
    metric_lines,
    summaries,
    trainer_states,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobtree import seal, trained_on

from bakeoff_runtime.verdict.evaluation import evaluate, write_evaluation
from bakeoff_runtime.verdict.job_outputs import load_jobs

VERDICTS = {"pass", "fail", "inconclusive"}


def _plant(root: Path, leg: str, seed: int, summary: bytes, metrics: bytes, sealed: bool) -> None:
    d = root / f"{leg}-s{seed}" / "opt" / "ml" / "model"
    d.mkdir(parents=True)
    (d / "summary.json").write_bytes(summary)
    (d / "metrics.jsonl").write_bytes(metrics)
    if sealed:
        seal(d)


def _healthy(root: Path, leg: str, seed: int) -> None:
    body = {"leg": leg, "seed": seed, "status": "completed", "metrics": {"val_loss": 2.4 + seed / 100},
            "throughput": {"unit": "tokens", "tokens_per_sec": 1000.0}, "wall_time_s": 10.0,
            **trained_on("cuda" if leg == "gpu" else "xla")}
    _plant(root, leg, seed, json.dumps(body).encode(), b"", True)


def _decide(root: Path) -> dict:
    ev = evaluate(CONFIG, load_jobs(root))
    assert ev["verdict"] in VERDICTS
    write_evaluation(ev, root.parent / "out")  # strict JSON, whatever the jobs held
    runs = {(leg, r["seed"]): r for leg, f in ev["legs"].items() for r in f["runs"]}
    assert len(runs) == 6  # every planned run is accounted for
    for run in runs.values():
        assert run["status"] in ("completed", "failed", "diverged", "lost")
        if run["status"] != "completed":
            assert isinstance(run["reason"], str) and run["reason"], run
    from bakeoff_runtime.report.document import render_html, render_markdown

    render_markdown(ev), render_html(ev)  # the report renders too
    return ev


@pytest.mark.parametrize("summary", CORPUS_SUMMARIES)
@pytest.mark.parametrize("metrics", [b"", *CORPUS_METRICS])
def test_the_corpus_ends_in_a_verdict_with_the_odd_run_lost_and_its_reason(tmp_path, summary, metrics):
    jobs = tmp_path / "jobs"
    for seed in range(3):
        _healthy(jobs, "gpu", seed)
    _healthy(jobs, "trn", 1)
    _healthy(jobs, "trn", 2)
    _plant(jobs, "trn", 0, summary, metrics, sealed=True)
    ev = _decide(jobs)
    odd = next(r for r in ev["legs"]["trn"]["runs"] if r["seed"] == 0)
    if odd["status"] != "completed":
        assert odd["reason"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(summary=summaries("trn", 0), metrics=metric_lines(), sealed=st.booleans(), also=summaries("gpu", 1))
def test_generated_outputs_end_in_a_verdict(summary, metrics, sealed, also):
    root = Path(tempfile.mkdtemp(prefix="fuzz-eval-"))
    try:
        jobs = root / "jobs"
        for seed in (0, 2):
            _healthy(jobs, "gpu", seed)
        for seed in (1, 2):
            _healthy(jobs, "trn", seed)
        _plant(jobs, "trn", 0, summary, metrics, sealed)
        _plant(jobs, "gpu", 1, also, b"", sealed)
        _decide(jobs)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("body", CORPUS_TRAINER_STATES)
def test_a_trainer_state_nobody_can_read_is_read_as_holding_nothing(tmp_path, body):
    from bakeoff_runtime.training.script_metrics import trainer_state

    path = tmp_path / "trainer_state.json"
    path.write_text(body)
    series, records = trainer_state(path, "train_loss")
    assert all(isinstance(r["step"], int) for r in records)


@settings(max_examples=200, deadline=None)
@given(body=trainer_states())
def test_generated_trainer_states_never_raise(body):
    from bakeoff_runtime.training.script_metrics import trainer_state

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "trainer_state.json"
        path.write_text(body)
        series, records = trainer_state(path, "train_loss")
    for values in series.values():
        assert 1 <= len(values) <= 2 and all(isinstance(v, float) for v in values)
    for r in records:
        value = r.get("train_loss", next(v for k, v in r.items() if k not in ("kind", "step", "source")))
        assert isinstance(r["step"], int)
        assert isinstance(value, str) or (isinstance(value, (int, float)) and math.isfinite(value))
