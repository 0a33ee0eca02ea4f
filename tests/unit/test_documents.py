"""The documents that cross the host/container seam (bakeoff_runtime/contract/documents.py): what the writers
produce is what the types declare, and each reader refuses a document it does not know with one clear error.

The key checks read the TypedDicts' declared keys at run time: every key a real document holds must be
declared (the parity metric's own key excepted), and every key declared without NotRequired must be there.
"""
import json
import sys

import pytest
from evaluation_inputs import CONFIG, _jobs

from bakeoff_runtime.contract import EVALUATION_SCHEMA, SUMMARY_SCHEMA
from bakeoff_runtime.contract import documents as d
from bakeoff_runtime.verdict.evaluation import evaluate, write_evaluation
from bakeoff_runtime.verdict.job_outputs import load_job, load_jobs
from conftest import ROOT


def _required(doc: type) -> set[str]:
    # The module's annotations stay strings (its __future__ import), so NotRequired is read from the text.
    return {k for k in doc.__required_keys__
            if not getattr(doc.__annotations__[k], "__forward_arg__", "").startswith("NotRequired[")}


def _conforms(doc: type, body: dict, *, named: tuple[str, ...] = (), declared_only: bool = False) -> None:
    undeclared = set(body) - set(doc.__annotations__) - set(named)
    missing = set() if declared_only else _required(doc) - set(body)
    assert not undeclared and not missing, f"{doc.__name__}: undeclared {sorted(undeclared)}, missing {sorted(missing)}"


def _evaluation_conforms(ev: dict, declared_only: bool = False) -> None:
    metric = ev["parity"]["metric"]
    parts = [(d.Evaluation, ev, ()), (d.ParityRecord, ev["parity"], ()), (d.RuleRecord, ev["rule"], ()),
             (d.Speed, ev["speed"], ())]
    for leg in ev["legs"].values():
        parts += [(d.LegFigures, leg, ()), (d.LegThroughput, leg["throughput"], ()),
                  (d.MetricFigures, leg["metric"], ()), (d.Spread, leg["cost_per_run"], ())]
        parts += [(d.RunRow, run, (metric,)) for run in leg["runs"]]
        parts += [(d.Curves, run["curves"], (metric,)) for run in leg["runs"]]
    parts += [(d.Check, check, ()) for check in ev["checks"]]
    if ev["recommendation"]:
        parts.append((d.Recommendation, ev["recommendation"], ()))
    if ev["looks"]:
        parts.append((d.Looks, ev["looks"], ()))
    for doc, body, named in parts:
        _conforms(doc, body, named=named, declared_only=declared_only)


def _engine_run(monkeypatch, capsys, tmp_path, plant: str):
    """A bake-off on the local engine, its jobs in the engine tests' fake container (the Evaluate step real)."""
    if str(ROOT / "tests" / "engine") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests" / "engine"))
    from fake_container import FakeContainer, Recipe, bakeoff_cli, verdict_spec

    recipe = Recipe() if plant == "none" else Recipe(diverge={"g5/1"})
    code, _, err = bakeoff_cli(monkeypatch, capsys, FakeContainer(recipe), "run", verdict_spec(tmp_path),
                               "--out", tmp_path / "out", "--no-mlflow")
    return code, err, tmp_path / "out"


@pytest.mark.parametrize("plant", ["none", "baseline diverges"])
def test_the_local_engine_writes_documents_that_read_as_their_types(monkeypatch, capsys, tmp_path, plant):
    code, err, out = _engine_run(monkeypatch, capsys, tmp_path, plant)
    ev = d.read_evaluation(out / "evaluation" / "evaluation.json")
    assert ev["schema"] == EVALUATION_SCHEMA
    assert (ev["verdict"], code) == (("pass", 0) if plant == "none" else ("inconclusive", 3)), err[-2000:]
    _evaluation_conforms(ev)
    if plant != "none":  # the undecided verdict's own parts are there, and typed
        assert ev["recommendation"] and ev["to_decide"] != "none"
    # The evaluation config the Evaluate step read, as the engine completed it.
    config = next((out / "evaluation" / "opt" / "ml" / "processing" / "input" / "config").rglob("*.json"))
    cfg = d.read_evaluation_config(config)
    _conforms(d.EvaluationConfig, cfg)
    _conforms(d.ParityRule, cfg["parity"])
    for leg in cfg["legs"].values():
        _conforms(d.LegConfig, leg)
        _conforms(d.PerLeg, leg["per_leg"])
    # Every job's summary.json and the record the evaluation made of it. The fake job writes through the
    # Runtime's Telemetry but composes fewer figures than the Runtime: its keys are declared, not all there.
    summaries = sorted((out / "jobs").glob("*/opt/ml/model/summary.json"))
    assert summaries
    for path in summaries:
        summary = d.read_summary(path)
        assert summary["schema"] == SUMMARY_SCHEMA
        _conforms(d.JobSummary, summary)
        if summary.get("throughput"):
            _conforms(d.Throughput, summary["throughput"], named=(f"{summary['throughput']['unit']}_per_sec",),
                      declared_only=True)
        record = load_job(path.parents[3])
        _conforms(d.JobRecord, record)
        _conforms(d.MetricDigest, record["digest"])
        assert record["summary"] == summary


def test_an_evaluation_written_by_the_evaluate_step_reads_back_unchanged(tmp_path):
    ev = evaluate(CONFIG, _jobs(tmp_path / "jobs", [2.40, 2.61, 2.32], [2.41, 2.45, 2.40]))
    path = write_evaluation(ev, tmp_path / "out")
    read = d.read_evaluation(path)
    assert read == json.loads(path.read_text()) and read["verdict"] == "inconclusive"
    _evaluation_conforms(read, declared_only=True)  # CONFIG is a test's, with fewer keys than a compiled one


def test_a_document_of_another_schema_is_refused_with_one_clear_error(tmp_path):
    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps({"schema": "bakeoff.evaluation/9", "verdict": "pass"}))
    with pytest.raises(d.DocumentError) as err:
        d.read_evaluation(path)
    assert str(err.value) == (f"{path}: an evaluation of schema 'bakeoff.evaluation/9', which this bakeoff does not "
                              "read (it reads 'bakeoff.evaluation/3', 'bakeoff.evaluation/2')")
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"schema": "bakeoff.evaluation/2", "status": "completed"}))
    with pytest.raises(d.DocumentError, match="a job summary of schema 'bakeoff.evaluation/2'"):
        d.read_summary(summary)
    # Not a JSON object at all, and a config without its rule: the same error type, saying what it is not.
    path.write_text("[1, 2]")
    with pytest.raises(d.DocumentError, match="not an evaluation .a JSON object was expected, found list"):
        d.read_evaluation(path)
    with pytest.raises(d.DocumentError, match="not an evaluation config .no parity object"):
        d.read_evaluation_config('{"legs": {}}')


def test_a_document_from_before_the_schema_id_still_reads(tmp_path):
    # The readers' callers keep their behaviour for old files: no schema key reads as the current one.
    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps({"verdict": "inconclusive", "legs": {}, "checks": []}))
    assert d.read_evaluation(path)["verdict"] == "inconclusive"


def test_a_job_summary_of_an_unknown_schema_is_an_unreadable_output_not_a_crash(tmp_path):
    _jobs(tmp_path / "jobs", [2.40], [2.41])
    summary = tmp_path / "jobs" / "trn-s0" / "opt" / "ml" / "model" / "summary.json"
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "schema": "bakeoff.summary/9"}))
    record = next(r for r in load_jobs(tmp_path / "jobs") if r["dir"] == "trn-s0")
    assert record["summary"] is None and record["summary_problem_kind"] == "unreadable-output"
    assert "schema 'bakeoff.summary/9'" in record["summary_problem"]


def test_the_host_reads_evaluation_json_through_the_typed_reader(tmp_path):
    # `bakeoff validate --from` and `bakeoff plan --from` turn the reader's error into the CLI's one line.
    from bakeoff.pipelines.advice.budget import _evaluation
    from bakeoff.pipelines.advice.seeds import _previous_evaluation
    from bakeoff.pipelines.errors import SpecError

    (tmp_path / "evaluation.json").write_text(json.dumps({"schema": "bakeoff.evaluation/9"}))
    with pytest.raises(SpecError, match="schema 'bakeoff.evaluation/9'"):
        _evaluation(tmp_path)
    with pytest.raises(SpecError, match="schema 'bakeoff.evaluation/9'"):
        _previous_evaluation(tmp_path)


def test_the_engine_and_the_launcher_peek_at_a_summary_through_one_reader(tmp_path):
    # The local engine (job record, doomed legs, the parity-metric check) and the launcher read a job's
    # status through summary_or_none: a summary not written yet, torn, or of another schema is "none".
    from bakeoff.pipelines.local.doomed import _diverged
    from bakeoff.pipelines.local.metric_watch import unreported

    model = tmp_path / "trn-s0" / "opt" / "ml" / "model"
    model.mkdir(parents=True)
    path = model / "summary.json"
    assert d.summary_or_none(path) is None
    path.write_text('{"status": "div')
    assert d.summary_or_none(path) is None
    path.write_text(json.dumps({"schema": "bakeoff.summary/9", "status": "diverged", "reason": "NaN"}))
    assert d.summary_or_none(path) is None and _diverged(tmp_path / "trn-s0") is None
    path.write_text(json.dumps({"schema": SUMMARY_SCHEMA, "status": "diverged", "reason": "NaN at step 3"}))
    assert d.summary_or_none(path)["status"] == "diverged"
    assert _diverged(tmp_path / "trn-s0") == "NaN at step 3"
    path.write_text(json.dumps({"schema": SUMMARY_SCHEMA, "status": "completed", "metrics": {"val_loss": 2.4}}))
    assert unreported("val_acc", [tmp_path / "trn-s0"]) == ["val_loss"]
    assert unreported("val_loss", [tmp_path / "trn-s0"]) is None


def test_a_training_curve_is_drawn_from_training_lines_even_where_they_alternate_with_validation():
    # A Trainer that logs and evaluates at the same steps writes train and eval records in turn: a curve
    # sampled from every k-th line of both (k even) would hold no training point at all.
    from bakeoff_runtime.verdict.job_outputs import CURVE_POINTS, digest_metrics

    records = []
    for step in range(1, 2 * CURVE_POINTS + 1):
        records += [{"kind": "train", "step": step, "train_loss": 3.0 - step / 1000, "source": "trainer_state.json"},
                    {"kind": "eval", "step": step, "eval_loss": 3.1 - step / 1000, "source": "trainer_state.json"}]
    digest = digest_metrics("".join(json.dumps(r) + "\n" for r in records).encode())
    assert len(digest["evals"]) == 2 * CURVE_POINTS and digest["train_records"] == 2 * CURVE_POINTS
    assert CURVE_POINTS // 2 <= len(digest["train_curve"]) <= CURVE_POINTS + 1
    assert digest["train_curve"][-1] == [2 * CURVE_POINTS, 3.0 - 2 * CURVE_POINTS / 1000]
