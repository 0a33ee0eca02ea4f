"""The decision on the MLflow parent run (real sqlite store): the projection's figures as metrics, its
sentence as a tag, and decision.html (the report's decision section as a page) as an artifact."""
import json

from validity_inputs import _bakeoff

from bakeoff_runtime.report.document import write_reports
from bakeoff_runtime.tracking.parent_run import log_parent
from bakeoff_runtime.verdict.projection import project

DECISION = {"production": {"units": 1e9, "unit": "tokens", "steps": None, "batch": None}, "instances": {},
            "runs_per_period": 4, "period": "quarter", "purchase": {},
            "porting": {"hours_spent": 10, "hours_expected": 30, "usd_per_hour": 150}, "confidence": 0.9}


def test_the_parent_run_carries_the_decision(tmp_path, mlflow_db):
    from mlflow.tracking import MlflowClient

    ev = _bakeoff(tmp_path / "jobs")
    for name, usd in zip(ev["legs"], (21.5, 32.77), strict=False):  # the fixture's jobs carry no price
        ev["legs"][name]["price"] = {"usd_per_hour": usd, "source": "test catalog", "as_of": "2026-12-01"}
    ev["projection"] = project(ev, DECISION)
    legs = ev["projection"]["legs"]
    priced = [n for n, p in legs.items() if p["cost_per_run_usd"]["mean"] is not None]
    assert priced, legs  # the fixture's legs have throughput and prices
    out = tmp_path / "evaluation"
    reports = write_reports(ev, out)
    assert out / "decision.html" in reports
    path = out / "evaluation.json"
    path.write_text(json.dumps(ev))
    result = log_parent({"tracking_uri": mlflow_db, "experiment": "decision",
                         "artifact_location": str(tmp_path / "art")}, ev, path, extra_artifacts=reports,
                        jobs_dir=tmp_path / "jobs")
    client = MlflowClient(tracking_uri=mlflow_db)
    parent = client.get_run(result["parent_run_id"])
    for name in priced:
        assert parent.data.metrics[f"decision.{name}.cost_per_run_usd"] == legs[name]["cost_per_run_usd"]["mean"]
    for c in ev["projection"]["comparisons"]:
        if c["saving_per_run_usd"]:
            assert parent.data.metrics[f"decision.{c['leg']}.saving_per_run_usd"] == c["saving_per_run_usd"]["mean"]
    assert parent.data.tags["bakeoff.decision"] == ev["projection"]["sentence"][:5000]
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert "decision.html" in artifacts
    page = (tmp_path / "art").rglob("decision.html")
    assert "The decision" in next(page).read_text()
