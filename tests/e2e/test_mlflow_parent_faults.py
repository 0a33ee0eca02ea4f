"""The Evaluate step's MLflow parent run when the tracking server refuses part of what it is asked:
a role without the experiment-tag permission still gets its parent run and children (real sqlite store)."""
import json

from validity_inputs import CONFIG, _bakeoff

from bakeoff_runtime.tracking.parent_run import log_parent


def test_a_refused_experiment_tag_costs_the_parent_run_nothing(tmp_path, monkeypatch, mlflow_db):
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    ev = _bakeoff(tmp_path / "jobs")
    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps(ev))

    def refuse(self, *args, **kwargs):  # what a role without sagemaker-mlflow:SetExperimentTag gets
        raise MlflowException("AccessDenied: not authorized to perform sagemaker-mlflow:SetExperimentTag")

    monkeypatch.setattr(MlflowClient, "set_experiment_tag", refuse)
    uri = mlflow_db  # sqlite:///tmp_path/mlflow.db, new
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


def test_names_mlflow_refuses_are_renamed_once_and_the_rest_is_logged(tmp_path, capsys, mlflow_db):
    """MLflow refuses a whole batch over one name: `lr(peak)` used to empty a job's run, or the parent's."""
    from mlflow.tracking import MlflowClient

    from bakeoff_runtime.tracking.sink import MlflowSink

    uri = mlflow_db  # sqlite:///tmp_path/mlflow.db, new
    sink = MlflowSink(uri, "names", "trn-s0", tags={"bakeoff.leg": "trn"},
                      params={"leg": "trn", "seed": 0, "lr(peak)": 0.1}, artifact_location=str(tmp_path / "art"))
    sink.log_metrics({"val<acc>": 0.5, "loss": 2.0}, step=1)
    sink.log_metrics({"val<acc>": 0.6, "loss": 1.5, "../escape": 1.0, "x" * 300: 3.0}, step=2)
    sink.set_tags({"note(1)": "ok"})
    assert sink.close("FINISHED", timeout=60).get("error") is None
    run = MlflowClient(tracking_uri=uri).get_run(sink.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics == {"val_acc_": 0.6, "loss": 1.5, "__/escape": 1.0, "x" * 250: 3.0}
    assert run.data.tags["note_1_"] == "ok"
    err = capsys.readouterr().err
    assert err.count("metric 'val<acc>' logged as 'val_acc_'") == 1  # said once, not per step
    assert "MLflow logging disabled" not in err


def test_the_parent_run_logs_around_an_odd_hyperparameter_name_and_is_never_left_running(tmp_path, monkeypatch,
                                                                                          mlflow_db):
    from mlflow.tracking import MlflowClient

    from bakeoff_runtime.tracking import parent_run as mlflow_parent

    ev = _bakeoff(tmp_path / "jobs")
    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps(ev))
    monkeypatch.setattr(mlflow_parent, "shared_hyperparameters", lambda runs: ({"lr(peak)": "0.1", "wd": "0"}, []))
    uri = mlflow_db  # sqlite:///tmp_path/mlflow.db, new
    cfg = {"tracking_uri": uri, "experiment": "odd", "artifact_location": str(tmp_path / "art")}
    result = log_parent(cfg, ev, path, jobs_dir=tmp_path / "jobs")
    parent = MlflowClient(tracking_uri=uri).get_run(result["parent_run_id"])
    assert parent.info.status == "FINISHED" and parent.data.params["lr_peak_"] == "0.1"
    assert parent.data.params["wd"] == "0" and parent.data.metrics["verdict_pass"] == 1.0

    def refuse(self, *args, **kwargs):
        raise RuntimeError("database is locked (planted)")

    monkeypatch.setattr(MlflowClient, "log_artifact", refuse)
    ev["spec_hash"] = "another"  # a new parent run
    result = log_parent(cfg, ev, path, jobs_dir=tmp_path / "jobs")
    assert "database is locked" in result["error"]
    exp = MlflowClient(tracking_uri=uri).get_experiment_by_name("odd")
    parents = MlflowClient(tracking_uri=uri).search_runs([exp.experiment_id],
                                                         filter_string="tags.`bakeoff.role` = 'parent'")
    assert sorted(p.info.status for p in parents) == ["FAILED", "FINISHED"]  # none left RUNNING
