"""`bakeoff run`, a re-run and `bakeoff report` over jobs whose files hold anything (tests/fuzz_outputs.py):
each ends in a verdict (exit 0, 1 or 3) with the odd run counted and its reason, never a crash (exit 4 or
a traceback). The jobs are planted by a container at the engine's seam that writes the generated files
where a job writes its own; the engine, the Evaluate step and the gate run for real."""
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from fuzz_outputs import CORPUS_METRICS, CORPUS_SUMMARIES, metric_lines, summaries
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobtree import seal

from bakeoff.pipelines.local.jobs import Outcome, lay_out
from fake_container import CPU_LEGS, bakeoff_cli, verdict_spec

VERDICT_CODES = (0, 1, 3)


class Planting:
    """A JobContainer that writes the given files as the job's outputs: job "m5/0" gets the odd ones,
    every other job a healthy summary."""

    def __init__(self, summary: bytes, metrics: bytes, sealed: bool = True):
        self.summary, self.metrics, self.sealed = summary, metrics, sealed

    def __call__(self, job, job_dir, store, process, on_line) -> Outcome:
        opt_ml = lay_out(job, job_dir, store)
        odd = (job.leg, job.seed) == ("m5", 0)
        if odd:
            summary, metrics = self.summary, self.metrics
        else:
            summary = json.dumps({"leg": job.leg, "seed": job.seed, "status": "completed",
                                  "metrics": {"val_mse": 0.3 + job.seed / 100},
                                  "model": {"parameters": 10, "tensors": 2, "shapes": {"5": 2},
                                            "devices": {"cpu": 2}},
                                  "evidence": {"optimizer_steps": 5, "training_forwards": 5, "processes": 1},
                                  "throughput": {"unit": "samples", "samples_per_sec": 100.0}}).encode()
            metrics = b'{"kind": "train", "step": 0, "train_loss": 1.0}\n'
        for folder in (opt_ml / "model", opt_ml / "output" / "data"):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "summary.json").write_bytes(summary)
            (folder / "metrics.jsonl").write_bytes(metrics)
            if self.sealed or not odd:
                seal(folder)
        return Outcome(0, 0.05)


def _bake(tmp: Path, monkeypatch, capsys, container: Planting) -> None:
    spec = verdict_spec(tmp, legs=CPU_LEGS, seeds=2)
    out = tmp / "out"
    for attempt in ("run", "re-run"):
        code, stdout, stderr = bakeoff_cli(monkeypatch, capsys, container, "run", spec, "--out", out, "--no-mlflow",
                                           "--jobs", "1")
        assert code in VERDICT_CODES, (attempt, code, stderr[-2000:])
        assert "Traceback" not in stderr and "could not run" not in stderr, stderr[-2000:]
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    odd = next(r for r in ev["legs"]["m5"]["runs"] if r["seed"] == 0)
    assert odd["status"] == "completed" or odd["reason"], odd
    code, _, stderr = bakeoff_cli(monkeypatch, capsys, None, "report", out)
    assert code in VERDICT_CODES and "Traceback" not in stderr, stderr[-2000:]


@pytest.mark.parametrize("summary", CORPUS_SUMMARIES)
def test_the_corpus_of_summaries_ends_in_a_verdict_on_every_run(tmp_path, monkeypatch, capsys, summary):
    _bake(tmp_path, monkeypatch, capsys, Planting(summary, b""))


@pytest.mark.parametrize("metrics", CORPUS_METRICS)
def test_the_corpus_of_metric_lines_ends_in_a_verdict_on_every_run(tmp_path, monkeypatch, capsys, metrics):
    good = json.dumps({"leg": "m5", "seed": 0, "status": "completed", "metrics": {"val_mse": 0.31},
                       "model": {"parameters": 10, "tensors": 2, "shapes": {"5": 2}, "devices": {"cpu": 2}}}).encode()
    _bake(tmp_path, monkeypatch, capsys, Planting(good, metrics))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(summary=summaries("m5", 0), metrics=metric_lines(), sealed=st.booleans())
def test_generated_job_outputs_end_in_a_verdict_on_every_run(monkeypatch, capsys, summary, metrics, sealed):
    root = Path(tempfile.mkdtemp(prefix="fuzz-engine-"))
    try:
        _bake(root, monkeypatch, capsys, Planting(summary, metrics, sealed))
    finally:
        shutil.rmtree(root, ignore_errors=True)
