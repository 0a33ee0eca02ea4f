"""The Evaluate step's MLflow parent run when the tracking server refuses part of what it is asked:
a role without the experiment-tag permission still gets its parent run and children (real sqlite store)."""
import json

from test_validity import CONFIG, _bakeoff

from bakeoff_runtime.mlflow_parent import log_parent


def test_a_refused_experiment_tag_costs_the_parent_run_nothing(tmp_path, monkeypatch):
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    ev = _bakeoff(tmp_path / "jobs")
    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps(ev))

    def refuse(self, *args, **kwargs):  # what a role without sagemaker-mlflow:SetExperimentTag gets
        raise MlflowException("AccessDenied: not authorized to perform sagemaker-mlflow:SetExperimentTag")

    monkeypatch.setattr(MlflowClient, "set_experiment_tag", refuse)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = log_parent({"tracking_uri": uri, "experiment": "faults", "artifact_location": str(tmp_path / "art")},
                        ev, path, jobs_dir=tmp_path / "jobs")
    assert result.get("parent_run_id"), result
    client = MlflowClient(tracking_uri=uri)
    parent = client.get_run(result["parent_run_id"])
    assert parent.info.status == "FINISHED" and "verdict_pass" in parent.data.metrics
    exp = client.get_experiment_by_name("faults")
    children = client.search_runs([exp.experiment_id], filter_string="tags.`bakeoff.backfilled` = 'true'")
    assert len(children) == 6  # 2 legs x 3 seeds, back-filled from their metrics
    assert CONFIG["legs"].keys() == {c.data.tags["bakeoff.leg"] for c in children}
