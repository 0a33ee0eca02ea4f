"""The collective check over gloo with two processes: it passes on a healthy group and fails
clearly when one rank contributes a wrong value (a planted fault)."""
import io
import json
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import ENTRYPOINTS


def test_comparison_with_the_network_figure_only_across_instances():
    sys.path.insert(0, str(ENTRYPOINTS))
    import collective_check as cc

    bw = {"all_reduce": {"busbw_GBps": 50.0}}
    across = cc.compare(bw, hosts=2, network_gbps=800, emulated=None)
    assert across["fraction_of_network"] == pytest.approx(0.5)  # 50 GB/s = 400 Gbps of 800
    assert "fraction_of_network" not in cc.compare(bw, hosts=1, network_gbps=800, emulated=None)
    assert "emulated" in cc.compare(bw, hosts=2, network_gbps=800, emulated="local cpu")["note"]


# --- the pipeline step ------------------------------------------------------------------
def _compiled(overrides):
    from bakeoff.pipelines.sagemaker import compile_pipeline
    from bakeoff.pipelines.spec.loader import load_spec
    from conftest import ROOT

    spec = load_spec(ROOT / "examples" / "quickstart.yaml", overrides)
    return compile_pipeline(spec, role_arn="arn:aws:iam::123456789012:role/bakeoff-test", bucket="b").definition


def test_collective_steps_run_first_on_the_legs_own_instances_and_stop_only_that_leg():
    from bakeoff.pipelines.sagemaker.validate import definition_problems

    definition = _compiled(["legs.0.collective_check=true", "legs.1.collective_check=true"])
    steps = {s["Name"]: s for s in definition["Steps"]}
    trn, p4d = steps["Collective-trn1"], steps["Collective-p4d"]
    args = trn["Arguments"]
    assert args["ResourceConfig"]["InstanceType"] == "ml.trn1.32xlarge"
    assert "collective_check.py" in args["AlgorithmSpecification"]["ContainerEntrypoint"][-1]
    assert "launch.py" in args["AlgorithmSpecification"]["ContainerEntrypoint"][-1]  # one process per device
    # Its result reaches the leg's jobs as a channel; a failed check fails its step (launch.py, whatever
    # BAKEOFF_CONTINUE_ON_FAILURE says), so the step cache never serves it.
    assert args["Environment"]["BAKEOFF_CONTINUE_ON_FAILURE"] == "1"
    assert args["Environment"]["BAKEOFF_NETWORK_GBPS"] == "800"
    assert p4d["Arguments"]["Environment"]["BAKEOFF_NETWORK_GBPS"] == "400"
    assert "MetricDefinitions" not in args["AlgorithmSpecification"]  # no metric of it reaches a comparison
    for name, step in steps.items():
        if name.startswith("Train-trn1-"):
            assert "Collective-trn1" in step["DependsOn"] and "Collective-p4d" not in step["DependsOn"]
            channel = next(c for c in step["Arguments"]["InputDataConfig"] if c["ChannelName"] == "collective")
            assert channel["DataSource"]["S3DataSource"]["S3Uri"] == {
                "Get": "Steps.Collective-trn1.ModelArtifacts.S3ModelArtifacts"}
        if name.startswith("Train-p4d-"):
            assert step["DependsOn"] == ["Collective-p4d"]
    assert definition_problems(definition) == []


def test_no_collective_step_unless_asked():
    assert not [s for s in _compiled([])["Steps"] if s["Name"].startswith("Collective-")]


def test_every_size_of_a_sweep_gets_its_own_check():
    import yaml

    from bakeoff.pipelines.sagemaker import compile_pipeline
    from bakeoff.pipelines.sagemaker.validate import definition_problems
    from bakeoff.pipelines.spec.loader import spec_from_dict
    from conftest import ROOT

    data = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text())
    data["legs"][0].update(collective_check=True, scaling=[{"instance_type": "ml.trn1.32xlarge", "instance_count": 2}])
    data["training"]["global_batch_size"] = 64  # divisible by 2 x 32 devices
    definition = compile_pipeline(spec_from_dict(data)).definition
    checks = {s["Name"]: s for s in definition["Steps"] if s["Name"].startswith("Collective-")}
    assert sorted(checks) == ["Collective-trn1", "Collective-trn1-x2"]
    assert checks["Collective-trn1-x2"]["Arguments"]["ResourceConfig"]["InstanceCount"] == 2
    assert definition_problems(definition) == []


def _launch_with_result(tmp_path, result, as_tar=True):
    """launch.py in a SageMaker-shaped tree whose `collective` channel holds the check's result."""
    import io
    import os
    import subprocess
    import sys
    import tarfile

    from conftest import ENTRYPOINTS

    opt = tmp_path / "opt" / "ml"
    channel = opt / "input" / "data" / "collective"
    channel.mkdir(parents=True)
    body = json.dumps(result).encode()
    if as_tar:
        with tarfile.open(channel / "model.tar.gz", "w:gz") as tar:
            info = tarfile.TarInfo("collective.json")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    else:
        (channel / "collective.json").write_bytes(body)
    (opt / "input" / "config").mkdir(parents=True)
    (opt / "input" / "config" / "hyperparameters.json").write_text(json.dumps({"leg": "trn1", "seed": "0"}))
    (opt / "input" / "config" / "inputdataconfig.json").write_text(json.dumps(  # as SageMaker writes it
        {"collective": {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated"}}))
    script = tmp_path / "train.py"
    script.write_text("open('trained', 'w').write('yes')\n")
    env = {**os.environ, "SM_INPUT_DIR": str(opt / "input"), "SM_MODEL_DIR": str(opt / "model"),
           "SM_OUTPUT_DIR": str(opt / "output"), "SM_OUTPUT_DATA_DIR": str(opt / "output" / "data"),
           "BAKEOFF_CONTINUE_ON_FAILURE": "1", "BAKEOFF_MLFLOW_INSTALL": "never"}
    proc = subprocess.run([sys.executable, str(ENTRYPOINTS / "launch.py"), str(script)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    return proc, opt


def test_a_failed_check_in_the_channel_stops_the_job_before_training(tmp_path):
    proc, opt = _launch_with_result(tmp_path, {"ok": False, "reason": "collective check failed on rank 0: "
                                                "all_reduce sum 6.0 != 7.0"})
    assert proc.returncode == 1  # even with continue-on-failure: a blocked job is never a cached result
    assert not (tmp_path / "trained").exists()
    summary = json.loads((opt / "model" / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["failure_kind"] == "collective"
    assert "did not train" in summary["reason"] and "6.0 != 7.0" in summary["reason"]
    assert (opt / "output" / "data" / "summary.json").exists()


def test_a_passed_check_lets_the_job_train(tmp_path):
    proc, opt = _launch_with_result(tmp_path, {"ok": True}, as_tar=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "trained").read_text() == "yes"


def test_the_check_writes_its_result_where_sagemaker_packs_the_model_with_no_sm_variable_set(monkeypatch):
    # bakeoff overrides the container's entrypoint, so nothing sets SM_MODEL_DIR on SageMaker: the result must
    # still land in /opt/ml/model (the step's model.tar.gz), not in the working directory.
    import argparse

    import collective_check

    for name in ("SM_MODEL_DIR", "SM_OUTPUT_DIR", "SM_INPUT_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert collective_check.output_dir(argparse.Namespace(out=None)) == Path("/opt/ml/model")
    assert collective_check.output_dir(argparse.Namespace(out="elsewhere")) == Path("elsewhere")


# --- the Evaluate step reads the checks as inputs, on SageMaker as locally ----------------------
def test_the_evaluate_step_receives_each_legs_check_as_an_input():
    from bakeoff.pipelines.sagemaker.validate import definition_problems

    definition = _compiled(["legs.0.collective_check=true", "legs.1.collective_check=true", "preflight.enabled=true"])
    evaluate = next(s for s in definition["Steps"] if s["Name"] == "Evaluate")["Arguments"]
    inputs = {i["InputName"]: i["S3Input"] for i in evaluate["ProcessingInputs"]}
    args = evaluate["AppSpecification"]["ContainerArguments"]
    records = args[args.index("--records") + 1]
    for leg in ("trn1", "p4d"):
        record = inputs[f"collective-{leg}"]
        assert record["S3Uri"] == {"Get": f"Steps.Collective-{leg}.ModelArtifacts.S3ModelArtifacts"}
        assert record["LocalPath"] == f"{records}/collective/{leg}"
    assert inputs["preflight"]["LocalPath"] == f"{records}/preflight"
    assert not [a for a in args if str(a).startswith("--record=")]  # all fit as inputs
    assert definition_problems(definition) == []


def test_records_past_the_input_limit_travel_as_arguments_and_none_is_lost():
    from bakeoff.pipelines.names import COLLECTIVE_STEP_PREFIX
    from bakeoff.pipelines.steps.evaluate import records as _records
    from bakeoff.pipelines.steps.request import MAX_PROCESSING_INPUTS

    legs = [f"leg{i}" for i in range(12)]
    steps = [{"Name": "Preflight"}, *({"Name": f"{COLLECTIVE_STEP_PREFIX}{leg}"} for leg in legs),
             {"Name": "Train-leg0-s0"}]
    inputs, args = _records(steps)
    assert len(inputs) == MAX_PROCESSING_INPUTS - 2  # the code and config inputs take the other two
    fetched = [a for a in args if isinstance(a, dict)]  # Std:Join of the prefix and the step's artifact
    named = {i["InputName"] for i in inputs}
    assert len(named) + len(fetched) == 1 + len(legs)
    by_join = {a["Std:Join"]["Values"][0]: a["Std:Join"]["Values"][1] for a in fetched}
    for leg in legs:
        if f"collective-{leg}" not in named:
            assert by_join[f"--record=collective/{leg}="] == {
                "Get": f"Steps.{COLLECTIVE_STEP_PREFIX}{leg}.ModelArtifacts.S3ModelArtifacts"}
    assert _records([{"Name": "Train-leg0-s0"}]) == ([], [])


def _model_tar(path: Path, files: dict[str, bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, body in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))


def test_evaluate_reads_checks_from_inputs_and_fetched_records_alike(tmp_path, monkeypatch):
    """One leg's check as a ProcessingInput (laid under --records), another's as a `--record`
    argument fetched from S3 (here the local store), a third that left nothing: the porting
    section sees all three, the last as failed."""
    sys.path.insert(0, str(ENTRYPOINTS))
    import evaluate as evaluate_script

    from bakeoff_runtime.contract import LOCAL_S3_ROOT_ENV
    from bakeoff_runtime.verdict import porting

    records = tmp_path / "records"
    _model_tar(records / "collective" / "trn1" / "model.tar.gz",
               {"collective.json": json.dumps({"ok": False, "reason": "allreduce hung"}).encode()})
    store = tmp_path / "s3"
    _model_tar(store / "b" / "run" / "Collective-p4d" / "model.tar.gz",
               {"collective.json": json.dumps({"ok": True, "gbps": 90.0}).encode()})
    monkeypatch.setenv(LOCAL_S3_ROOT_ENV, str(store))
    evaluate_script.fetch_records(["collective/p4d=s3://b/run/Collective-p4d/model.tar.gz",
                                   "collective/g5=s3://b/run/Collective-g5/model.tar.gz",  # left nothing
                                   "../escape=s3://b/x"], records)
    assert not (tmp_path / "escape").exists()
    found = porting.read_records(records)["collective"]
    assert found["trn1"] == {"ok": False, "reason": "allreduce hung"}
    assert found["p4d"] == {"ok": True, "gbps": 90.0}
    assert found["g5"]["ok"] is False and "no result" in found["g5"]["reason"]


def test_the_timed_collectives_trace_the_graph_the_warm_up_compiled():
    """On XLA the ops between two syncs are one lazily traced graph, compiled the first time it is seen: the
    timed window must trace the warm-up's graph (the same ops, as many), or it times a compilation."""
    import types

    import collective_check

    # timed() takes torch as an argument; only tensor creation is asked of it here.
    torch = types.SimpleNamespace(float32="float32", ones=lambda *a, **k: object(), empty_like=lambda t: object())
    segments: list[list[str]] = [[]]

    class Dist:
        def all_reduce(self, tensor):
            segments[-1].append("all_reduce")

        def all_gather(self, out, tensor):
            segments[-1].append("all_gather")

        def barrier(self):
            pass

    for op in ("all_reduce", "all_gather"):
        segments[:] = [[]]
        collective_check.timed(torch, Dist(), op, 2, 8, "cpu", 5, lambda: segments.append([]))
        warm_up, window = segments[0], segments[1]
        assert warm_up == window == [op] * 5, segments
