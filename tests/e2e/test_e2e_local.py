"""The whole bake-off through the local executor: real processes, real XLA, real MLflow store."""
import json
import shutil

from shared_runs import shared_tiny_run  # noqa: F401  (the fixture `tiny_run`: one real run per invocation)

from conftest import ROOT, bakeoff, tiny_spec, write_spec


def test_tiny_bakeoff_runs_both_backends(tiny_run):
    proc, out = tiny_run["proc"], tiny_run["out"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Each leg told where it runs here: a GPU hidden from legs that do not run on one, XLA from all but trn.
    assert "local: leg trn1: 1 x ml.trn1.2xlarge (neuron) -> 1 process on local xla:cpu (PJRT_DEVICE=CPU, " \
           "CUDA_VISIBLE_DEVICES=\"\")" in proc.stderr, proc.stderr[:2000]
    assert "local: leg p4d: 1 x ml.p4d.24xlarge (cuda) -> 1 process on local cpu (USE_TORCH_XLA=0, " \
           "CUDA_VISIBLE_DEVICES=\"\")" in proc.stderr, proc.stderr[:2000]
    # ... and the run directory has every substitution, the batching and the backend each leg runs as.
    said = json.loads((out / "substitutions.json").read_text())["substitutions"]
    assert "leg trn1: 1 x ml.trn1.2xlarge (neuron, 2 processes per host) -> 1 host x 1 process on local " \
           "xla:cpu (PJRT_DEVICE=CPU, CUDA_VISIBLE_DEVICES=\"\")" in "\n".join(said)
    assert "leg p4d: 1 x ml.p4d.24xlarge (cuda, 8 processes per host) -> 1 host x 1 process on local cpu " \
           "(USE_TORCH_XLA=0, CUDA_VISIBLE_DEVICES=\"\"), BAKEOFF_BACKEND=cpu" in "\n".join(said)
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    # fp32 on xla:cpu and eager CPU, paired by seed: the same numerics to ~1e-4, well inside 0.2.
    assert ev["verdict"] == "pass", ev["summary"]
    check = next(c for c in ev["checks"] if c["name"] == "parity:trn1~p4d")
    assert check["test"] == "paired" and check["n_pairs"] == 2
    assert set(ev["legs"]) == {"trn1", "p4d"}
    for _name, leg in ev["legs"].items():
        assert leg["completed"] == 2, leg["runs"]
        assert leg["metric"]["mean"] < 5.0  # learned something: ln(256) = 5.55 at init
        assert leg["throughput_mean"] > 0 and leg["cost_per_run_usd_mean"] > 0
    trn = json.loads((out / "jobs" / "trn1-s0" / "opt" / "ml" / "model" / "summary.json").read_text())
    assert trn["environment"]["torch_xla"].startswith("2.9")
    assert trn["environment"]["backend_device"] == "neuron on local xla:cpu (emulated)"
    assert trn["compile"]["compiled_graphs"] >= 2 and trn["compile"]["compile_time_s"] > 0
    assert trn["compile"]["fallback_ops"] == []
    assert trn["fairness"] == {"global_batch_size": 16, "world_size": 1, "per_device_batch_size": 16,
                               "gradient_accumulation_steps": 1}
    cpu = json.loads((out / "jobs" / "p4d-s0" / "opt" / "ml" / "model" / "summary.json").read_text())
    # Same seed, same init and data on every backend: fp32 losses agree closely.
    assert abs(trn["metrics"]["val_loss"] - cpu["metrics"]["val_loss"]) < 0.05
    plan = json.loads((out / "plan.json").read_text())
    assert plan["legs"]["trn1"]["batching"]["target"]["world_size"] == 2  # 2 NeuronCores on trn1.2xlarge
    assert plan["legs"]["p4d"]["batching"]["target"]["per_device_batch_size"] == 2


def test_container_layout_of_a_job(tiny_run):
    opt_ml = tiny_run["out"] / "jobs" / "trn1-s1" / "opt" / "ml"
    hps = json.loads((opt_ml / "input" / "config" / "hyperparameters.json").read_text())
    assert hps["seed"] == "1" and hps["leg"] == "trn1"
    assert json.loads((opt_ml / "input" / "config" / "resourceconfig.json").read_text())["hosts"] == ["algo-1"]
    assert (opt_ml / "input" / "data" / "train").is_symlink()
    assert (opt_ml / "model" / "model.pt").exists() and (opt_ml / "model" / "metrics.jsonl").exists()
    assert (opt_ml / "code" / "launch.py").exists() and (opt_ml / "code" / "bakeoff_runtime").is_dir()


def test_mlflow_parent_with_nested_children(tiny_run):
    from mlflow.tracking import MlflowClient

    out = tiny_run["out"]
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("bakeoff-tiny")
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if r.data.tags.get("bakeoff.role") == "parent"]
    assert len(parents) == 1
    parent = parents[0]
    assert parent.info.run_id == ev["mlflow"]["parent_run_id"]
    assert parent.data.tags["bakeoff.verdict"] == ev["verdict"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id
                and r.data.tags.get("bakeoff.role") != "summary"]  # the legs' summary runs: test_mlflow_ui.py
    assert sorted(r.data.tags["mlflow.runName"] for r in children) == ["p4d-s0", "p4d-s1", "trn1-s0", "trn1-s1"]
    child = next(r for r in children if r.data.tags["mlflow.runName"] == "trn1-s0")
    for tag in ("bakeoff.leg", "bakeoff.backend", "bakeoff.instance_type", "bakeoff.seed", "bakeoff.spec_hash"):
        assert tag in child.data.tags, tag
    history = client.get_metric_history(child.info.run_id, "train_loss")
    assert len(history) >= 5
    assert parent.data.metrics["verdict_pass"] == float(ev["verdict"] == "pass")
    artifacts = [a.path for a in client.list_artifacts(parent.info.run_id)]
    assert "evaluation.json" in artifacts


def test_rerun_of_a_copy_skips_finished_jobs(tiny_run, tmp_path):
    # A copy: the cache key is the request as run (MLflow's store under the run directory included), not where
    # the run directory lives.
    spec, out = tiny_run["spec"], tmp_path / "copy"
    shutil.copytree(tiny_run["out"], out, symlinks=True)
    same = bakeoff("run", spec, "--out", out)
    assert same.stderr.count("unchanged, not re-run") == 4, same.stderr[-2000:]
    assert "running" not in same.stderr
    assert json.loads((out / "evaluation" / "evaluation.json").read_text())["legs"]["trn1"]["completed"] == 2
    # A changed hyperparameter and --force: tests/engine/test_engine_runs.py (the same spec, a fake container).


def test_planted_quality_regression_fails_parity(tmp_path):
    """A leg whose script trains with a 30x smaller learning rate must fail parity."""
    src = tmp_path / "regressed"
    shutil.copytree(ROOT / "tests" / "assets" / "regressed", src)
    data = tiny_spec(name="regression", entrypoint={"source_dir": "regressed", "script": "train.py"},
                     data={"channels": {}})
    data["legs"] = [{"name": "good", "instance_type": "ml.g5.xlarge", "precision": "fp32"},
                    {"name": "slow", "instance_type": "ml.m5.xlarge", "precision": "fp32"}]
    data["parity"] = {"metric": "val_loss", "margin": 0.05, "baseline": "good"}
    spec = write_spec(tmp_path / "regression.yaml", data)
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow")
    assert proc.returncode == 1, proc.stderr[-3000:]
    ev = json.loads((tmp_path / "out" / "evaluation" / "evaluation.json").read_text())
    assert ev["verdict"] == "fail"
    check = next(c for c in ev["checks"] if c["name"] == "parity:slow~good")
    assert check["status"] == "failed" and check["diff"] > 0.05
    assert ev["legs"]["good"]["completed"] == 2 and ev["legs"]["slow"]["completed"] == 2
