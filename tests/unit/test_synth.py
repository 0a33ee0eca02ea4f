"""The spec -> pipeline-definition compiler: deterministic, complete, valid."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bakeoff.pipelines.sagemaker import compile_pipeline
from bakeoff.pipelines.sagemaker.compiler import metric_definitions
from bakeoff.pipelines.sagemaker.published_schema import KNOWN_GAPS, known_gap, schema_errors, unexplained
from bakeoff.pipelines.sagemaker.validate import definition_problems
from bakeoff.pipelines.spec.loader import load_spec
from conftest import ROOT, bakeoff

QUICKSTART = ROOT / "examples" / "quickstart.yaml"
# AWS's published definition schema (aws-sagemaker-mlops/sagemaker-model-building-pipeline-definition-
# JSON-schema, April 2025), vendored so this test runs on any clone.
SCHEMA = ROOT / "tests" / "assets" / "sagemaker-pipeline-definition.schema.json"
ROLE = "arn:aws:iam::123456789012:role/bakeoff-test"


@pytest.fixture(scope="module")
def quickstart():
    return compile_pipeline(load_spec(QUICKSTART), role_arn=ROLE, bucket="my-bucket")


def _steps(definition):
    return {s["Name"]: s for s in definition["Steps"]}


def test_synth_is_byte_identical_across_processes(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for out in (a, b):
        proc = bakeoff("synth", QUICKSTART, "-o", out, env={"PYTHONHASHSEED": str(hash(out) % 1000)})
        assert proc.returncode == 0, proc.stderr
    assert a.read_bytes() == b.read_bytes()
    # The Python API returns the same definition.
    assert json.loads(a.read_text()) == compile_pipeline(load_spec(QUICKSTART)).definition


CACHE_KEY = ("AlgorithmSpecification", "CheckpointConfig", "Environment", "HyperParameters", "InputDataConfig")


def _cache_keys(definition):
    """What SageMaker's step cache compares for each training step."""
    return {n: {k: s["Arguments"].get(k) for k in CACHE_KEY} for n, s in _steps(definition).items()
            if s["Type"] == "Training"}


def test_one_hyperparameter_changes_only_the_affected_steps():
    base = compile_pipeline(load_spec(QUICKSTART)).definition
    changed = compile_pipeline(load_spec(QUICKSTART, ["model.dropout=0.1"])).definition
    differ = {n for n, s in _steps(base).items() if s != _steps(changed)[n]}
    trains = {n for n in _steps(base) if n.startswith("Train-")}
    # A shared hyperparameter reaches every training step and the evaluation config; not the gate.
    assert differ == trains | {"Evaluate"}
    for name in trains:
        before, after = _steps(base)[name]["Arguments"], _steps(changed)[name]["Arguments"]
        assert before["HyperParameters"]["dropout"] == "0.0" and after["HyperParameters"]["dropout"] == "0.1"
    # A change to one leg leaves the other leg's cache keys alone (only its spec-hash tag moves).
    leg_only = compile_pipeline(load_spec(QUICKSTART, ["legs.0.volume_size_gb=200"])).definition
    k0, k1 = _cache_keys(base), _cache_keys(leg_only)
    assert {n for n in k0 if k0[n] != k1[n]} == set()  # volume size is not a cache key
    assert _steps(leg_only)["Train-trn1-s0"]["Arguments"]["ResourceConfig"]["VolumeSizeInGB"] == 200
    assert _steps(leg_only)["Train-p4d-s0"]["Arguments"]["ResourceConfig"] == \
        _steps(base)["Train-p4d-s0"]["Arguments"]["ResourceConfig"]
    precision = _cache_keys(compile_pipeline(load_spec(QUICKSTART, ["legs.0.precision=fp32"])).definition)
    assert {n for n in k0 if k0[n] != precision[n]} == {f"Train-trn1-s{s}" for s in range(5)}


def test_code_bundle_is_addressed_by_its_sha256(quickstart):
    import hashlib

    code = next(a for a in quickstart.assets if a.key.endswith("sourcedir.tar.gz"))
    assert hashlib.sha256(code.body).hexdigest() in code.key
    again = compile_pipeline(load_spec(QUICKSTART), role_arn=ROLE, bucket="my-bucket")
    assert next(a for a in again.assets if a.key == code.key).body == code.body
    step = _steps(quickstart.definition)["Train-trn1-s0"]
    assert step["Arguments"]["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] == f"s3://my-bucket/{code.key}"


def test_training_steps_are_complete_create_training_job_requests(quickstart):
    steps = _steps(quickstart.definition)
    assert sorted(n for n in steps if n.startswith("Train-")) == sorted(
        f"Train-{leg}-s{seed}" for leg in ("p4d", "trn1") for seed in range(5))
    trn = steps["Train-trn1-s0"]
    args = trn["Arguments"]
    assert args["ResourceConfig"] == {"InstanceType": "ml.trn1.32xlarge", "InstanceCount": 1, "VolumeSizeInGB": 100}
    assert "pytorch-training-neuronx" in args["AlgorithmSpecification"]["TrainingImage"]
    env = args["Environment"]
    assert env["BAKEOFF_BACKEND"] == "neuron" and env["BAKEOFF_PRECISION"] == "bf16"
    assert env["BAKEOFF_NPROC_PER_NODE"] == "32"  # one process per NeuronCore, through torchrun
    assert env["NEURON_COMPILE_CACHE_URL"].startswith("s3://my-bucket/bakeoff/compile-cache/neuron/")
    assert "--auto-cast" in env["NEURON_CC_FLAGS"]
    tags = {t["Key"]: t["Value"] for t in args["Tags"]}
    assert tags["bakeoff:compile-cache"] == env["NEURON_COMPILE_CACHE_URL"]
    assert tags["bakeoff:leg"] == "trn1" and tags["bakeoff:seed"] == "0" and tags["bakeoff:name"] == "quickstart"
    from bakeoff.pipelines.plan.model import spec_hash

    assert tags["bakeoff:spec-hash"] == spec_hash(load_spec(QUICKSTART))
    assert "BAKEOFF_SPEC_HASH" not in env  # it changes with every other leg: a tag, not a cache key
    assert trn["CacheConfig"]["Enabled"] is True
    assert trn["RetryPolicies"][0]["ExceptionType"] == ["SageMaker.CAPACITY_ERROR"]
    # Over a training quota, a job waits for instances to be released instead of failing the execution.
    assert trn["RetryPolicies"][1] == {"ExceptionType": ["SageMaker.RESOURCE_LIMIT"], "IntervalSeconds": 900,
                                       "BackoffRate": 1.0, "MaxAttempts": 12}
    assert args["HyperParameters"]["per_device_batch_size"] == "1"
    assert steps["Train-p4d-s0"]["Arguments"]["HyperParameters"]["per_device_batch_size"] == "4"
    assert steps["Train-p4d-s0"]["Arguments"]["Environment"]["BAKEOFF_NPROC_PER_NODE"] == "8"
    regexes = {d["Name"] for d in args["AlgorithmSpecification"]["MetricDefinitions"]}
    assert {"train:loss", "validation:loss", "time_to_first_step"} <= regexes


def test_nothing_per_execution_in_environment_or_hyperparameters(quickstart):
    for step in quickstart.definition["Steps"]:
        if step["Type"] != "Training":
            continue
        text = json.dumps([step["Arguments"]["Environment"], step["Arguments"]["HyperParameters"]])
        assert "Execution." not in text  # step caching keys on both


def test_evaluation_gate_and_fail_steps(quickstart):
    steps = _steps(quickstart.definition)
    ev = steps["Evaluate"]
    assert ev["Type"] == "Processing"
    assert ev["PropertyFiles"] == [{"PropertyFileName": "EvaluationReport", "OutputName": "evaluation",
                                    "FilePath": "evaluation.json"}]
    jobs = [a for a in ev["Arguments"]["AppSpecification"]["ContainerArguments"] if isinstance(a, dict)]
    assert len(jobs) == 2 + 10  # the margin, the execution id, and one output per training job
    gate = steps["ParityGate"]["Arguments"]
    assert gate["Conditions"][0]["LeftValue"]["Std:JsonGet"]["Path"] == "verdict"
    assert gate["Conditions"][0]["RightValue"] == "pass" and gate["IfSteps"] == []
    # Not pass: fail and inconclusive end in distinct Fail steps, so the failure reason tells them apart.
    which = gate["ElseSteps"][0]
    assert which["Type"] == "Condition" and which["Arguments"]["Conditions"][0]["RightValue"] == "fail"
    failed, = which["Arguments"]["IfSteps"]
    undecided, = which["Arguments"]["ElseSteps"]
    assert (failed["Name"], failed["Type"]) == ("ParityFailed", "Fail")
    assert (undecided["Name"], undecided["Type"]) == ("ParityInconclusive", "Fail")
    assert "failed_checks" in json.dumps(failed["Arguments"]["ErrorMessage"])
    assert "exit code 1" in json.dumps(failed["Arguments"]["ErrorMessage"])
    msg = json.dumps(undecided["Arguments"]["ErrorMessage"])
    assert "undecided_checks" in msg and "to_decide" in msg and "exit code 3" in msg
    params = {p["Name"]: p for p in quickstart.definition["Parameters"]}
    assert set(params) == {"TrainDataUri", "ValidationDataUri", "MaxSteps", "ParityMargin"}
    assert params["MaxSteps"]["DefaultValue"] == 200 and params["ParityMargin"]["Type"] == "Float"


def test_managed_spot_sets_wait_time_and_checkpoints():
    spec = load_spec(QUICKSTART, ["legs.1.managed_spot=true"])
    args = _steps(compile_pipeline(spec).definition)["Train-p4d-s0"]["Arguments"]
    assert args["EnableManagedSpotTraining"] is True
    assert args["StoppingCondition"]["MaxWaitTimeInSeconds"] >= args["StoppingCondition"]["MaxRuntimeInSeconds"]
    assert args["CheckpointConfig"]["S3Uri"].startswith("s3://bakeoff-artifacts/bakeoff/quickstart/checkpoints/")
    assert definition_problems(compile_pipeline(spec).definition) == []


def test_spot_after_the_first_seed_keeps_the_first_on_demand():
    spec = load_spec(QUICKSTART, ["legs.0.managed_spot=after_first_seed", "seeds=3"])
    steps = _steps(compile_pipeline(spec).definition)
    assert "EnableManagedSpotTraining" not in steps["Train-trn1-s0"]["Arguments"]
    assert "CheckpointConfig" not in steps["Train-trn1-s0"]["Arguments"]
    for seed in (1, 2):
        args = steps[f"Train-trn1-s{seed}"]["Arguments"]
        assert args["EnableManagedSpotTraining"] is True and "CheckpointConfig" in args
    assert "EnableManagedSpotTraining" not in steps["Train-p4d-s1"]["Arguments"]
    # The spot seeds start after the first has filled the leg's compile cache, not beside it compiling cold.
    assert steps["Train-trn1-s1"]["DependsOn"] == steps["Train-trn1-s2"]["DependsOn"] == ["Train-trn1-s0"]
    assert "DependsOn" not in steps["Train-trn1-s0"] and "DependsOn" not in steps["Train-p4d-s1"]
    assert definition_problems(compile_pipeline(spec).definition) == []
    # With a Precompile step they wait for that instead (it fills the cache for every seed).
    pre = _steps(compile_pipeline(load_spec(QUICKSTART, ["legs.0.managed_spot=after_first_seed", "seeds=3",
                                                         "legs.0.precompile=true"])).definition)
    assert pre["Train-trn1-s1"]["DependsOn"] == ["Precompile-trn1"]
    # Growing the seeds (--until-decided) leaves the first round's steps as they were: the step cache serves them.
    grown = _steps(compile_pipeline(load_spec(QUICKSTART, ["legs.0.managed_spot=after_first_seed", "seeds=5"]))
                   .definition)
    for name in ("Train-trn1-s0", "Train-trn1-s1"):
        assert {k: v for k, v in grown[name]["Arguments"].items() if k != "Tags"} == \
            {k: v for k, v in steps[name]["Arguments"].items() if k != "Tags"}


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_synthesizes_and_validates(example):
    compiled = compile_pipeline(load_spec(example))
    assert definition_problems(compiled.definition) == []
    assert len(compiled.to_json()) < 1_048_576


def test_validator_catches_what_sagemaker_would_refuse(quickstart):
    d = json.loads(quickstart.to_json())
    args = d["Steps"][0]["Arguments"]
    args["ResourceConfig"]["InstanceType"] = "ml.trn9.huge"
    args["Bogus"] = 1
    args["Tags"][0]["Value"] = "not#allowed"
    d["Steps"][1]["Arguments"]["HyperParameters"]["x"] = {"Get": "Parameters.Missing"}
    d["Steps"][2]["DependsOn"] = ["Train-nope-s0"]
    problems = "\n".join(definition_problems(d))
    assert "'ml.trn9.huge' is not one of the allowed values" in problems
    assert 'Unknown parameter in input: "Bogus"' in problems
    assert "Tags[0].Value: 'not#allowed' does not match" in problems
    assert "Parameters.Missing names no parameter" in problems
    assert "DependsOn 'Train-nope-s0' names no step" in problems


def test_validator_checks_size_and_step_names(quickstart):
    d = json.loads(quickstart.to_json())
    d["Steps"][0]["Name"] = "x" * 65
    d["Metadata"] = {"pad": "y" * 1_100_000}
    problems = "\n".join(definition_problems(d))
    assert "does not match ^[A-Za-z0-9-_]{1,64}$" in problems
    assert "SageMaker accepts at most 1,048,576" in problems


def test_published_schema_loose_check_with_each_known_gap_listed(quickstart):
    schema = json.loads(SCHEMA.read_text())
    errors = schema_errors(quickstart.definition, schema)
    assert unexplained(errors) == []
    # Every tolerated gap still occurs: none stays listed after the schema (or we) stop needing it.
    by_path = {}
    for (owner, path, _), msg in errors:
        by_path.setdefault((owner, path), []).append(msg)
    used = {known_gap(o, p, m, by_path[(o, p)])["name"] for (o, p, _), m in errors}
    assert used == {g["name"] for g in KNOWN_GAPS}
    assert all(g["why"] for g in KNOWN_GAPS)


@pytest.mark.parametrize("args,expect", [
    (["--set", "legs.0.name=" + "a" * 59], "step name 'Train-" + "a" * 59 + "-s0' does not match"),
    (["--set", "legs.0.image=not a uri"], "is not a registry image URI"),
    (["--set", "legs.0.instance_count=0"], "legs[0].instance_count: Input should be greater than or equal to 1"),
    (["--role", "my-role"], "'my-role' is not an IAM role ARN"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, args, expect, cli):
    proc = cli("synth", QUICKSTART, "-o", tmp_path / "d.json", *args)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert expect in line, line


def test_synth_needs_no_aws(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE="/nonexistent", AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
               AWS_EC2_METADATA_DISABLED="true", PATH=os.environ["PATH"])
    exe = Path(sys.executable).with_name("bakeoff")
    proc = subprocess.run([str(exe), "synth", str(QUICKSTART), "-o", str(tmp_path / "d.json")], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "d.json").read_text())["Version"] == "2020-12-01"


def test_platform_options_reach_every_job_and_pass_botocores_model(tmp_path):
    from bakeoff.pipelines.sagemaker.validate import check_definition
    from conftest import tiny_spec, write_spec

    data = tiny_spec(security={"subnets": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
                               "security_group_ids": ["sg-0123456789abcdef0"], "network_isolation": True,
                               "encrypt_inter_container_traffic": True,
                               "volume_kms_key": "arn:aws:kms:us-east-1:123456789012:key/"
                                                 "1234abcd-12ab-34cd-56ef-1234567890ab",
                               "output_kms_key": "alias/bakeoff-outputs"},
                     mlflow={"tracking_uri": "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/t"},
                     preflight={"enabled": True})
    compiled = compile_pipeline(load_spec(write_spec(tmp_path / "s.yaml", data)))
    check_definition(compiled.definition)
    steps = _steps(compiled.definition)
    trn = steps["Train-trn1-s0"]["Arguments"]
    assert trn["VpcConfig"] == {"SecurityGroupIds": ["sg-0123456789abcdef0"],
                                "Subnets": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]}
    assert trn["EnableNetworkIsolation"] is True and trn["EnableInterContainerTrafficEncryption"] is True
    assert trn["OutputDataConfig"]["KmsKeyId"] == "alias/bakeoff-outputs"
    # trn1 and p4d have local NVMe storage: SageMaker refuses a volume key there (hardware-encrypted).
    assert "VolumeKmsKeyId" not in trn["ResourceConfig"]
    assert "VolumeKmsKeyId" in steps["Preflight"]["Arguments"]["ResourceConfig"]  # ml.m5: EBS
    # An isolated job cannot reach MLflow: it neither tries nor installs a client.
    assert "MLFLOW_TRACKING_URI" not in trn["Environment"] and trn["Environment"]["BAKEOFF_CONTINUE_ON_FAILURE"] == "1"
    # Nor the S3 compile cache: the Neuron cache stays on the instance instead of failing on an unreachable URL.
    assert "NEURON_COMPILE_CACHE_URL" not in trn["Environment"] and "BAKEOFF_COMPILE_CACHE" not in trn["Environment"]
    ev = steps["Evaluate"]["Arguments"]
    assert ev["NetworkConfig"]["VpcConfig"] == trn["VpcConfig"] and "EnableNetworkIsolation" not in ev["NetworkConfig"]
    assert ev["ProcessingOutputConfig"]["KmsKeyId"] == "alias/bakeoff-outputs"
    assert ev["ProcessingResources"]["ClusterConfig"]["VolumeKmsKeyId"].startswith("arn:aws:kms:")
    assert ev["Environment"]["BAKEOFF_MLFLOW_INSTALL"] == "1"


def test_metric_definitions_capture_finite_numbers_only():
    import re

    for d in metric_definitions(load_spec(QUICKSTART)):
        regex = re.compile(d["Regex"])
        for bad in ("nan", "inf", "-inf"):
            line = f"[bakeoff] step=5 train_loss={bad} val_loss={bad} tokens_per_sec={bad} samples_per_sec={bad}"
            assert regex.search(line) is None, (d["Name"], bad)
    loss = next(d for d in metric_definitions(load_spec(QUICKSTART)) if d["Name"] == "train:loss")
    assert re.search(loss["Regex"], "[bakeoff] step=5 train_loss=2.5e-01 lr=0.1").group(1) == "2.5e-01"


def test_a_spot_leg_checkpoints_a_tenth_of_the_run_when_the_spec_sets_no_interval(tmp_path):
    from bakeoff.pipelines.plan.model import build_plan
    from bakeoff.pipelines.spec.loader import load_spec

    spec = load_spec(QUICKSTART)
    assert build_plan(spec).jobs[0].hyperparameters["checkpoint_interval"] == spec.training.checkpoint_interval == 0
    spot = spec.model_copy(update={"legs": [spec.legs[0].model_copy(update={"managed_spot": "after_first_seed"}),
                                            *spec.legs[1:]]})
    hps = {j.hyperparameters["checkpoint_interval"] for j in build_plan(spot).jobs}
    assert hps == {max(1, spec.training.steps // 10)}  # every leg alike: the fairness contract


def test_network_isolation_refuses_precompile_and_says_trn_jobs_compile_cold(tmp_path, cli):
    from conftest import tiny_spec, write_spec

    data = tiny_spec(security={"network_isolation": True})
    proc = cli("validate", write_spec(tmp_path / "ok.yaml", data))
    assert proc.returncode == 0 and "cannot reach the S3 compile cache" in proc.stdout, proc.stdout + proc.stderr
    data["legs"][0]["precompile"] = True
    proc = cli("validate", write_spec(tmp_path / "bad.yaml", data))
    assert proc.returncode == 2 and "legs[0].precompile" in proc.stderr and "isolated job" in proc.stderr


def test_the_preflight_step_splits_the_batch_for_its_one_process_and_fails_on_a_crash(tmp_path):
    from bakeoff.pipelines.plan.model import build_plan
    from bakeoff.pipelines.sagemaker.compiler import compile_plan

    spec = load_spec(QUICKSTART)
    spec = spec.model_copy(update={"preflight": spec.preflight.model_copy(update={"enabled": True})})
    steps = _steps(compile_plan(build_plan(spec)).definition)
    pre = steps["Preflight"]["Arguments"]
    hps = pre["HyperParameters"]
    # trn1.32xlarge's 32 devices share the global batch 32 one each; the Preflight step runs one process.
    assert steps["Train-trn1-s0"]["Arguments"]["HyperParameters"]["per_device_batch_size"] == "1"
    assert int(hps["per_device_batch_size"]) * int(hps["gradient_accumulation_steps"]) == \
        spec.training.global_batch_size
    assert pre["Environment"]["BAKEOFF_NPROC_PER_NODE"] == "1"
    assert "BAKEOFF_CONTINUE_ON_FAILURE" not in pre["Environment"]  # a crash stops the trn jobs
    assert steps["Train-trn1-s0"]["Arguments"]["Environment"]["BAKEOFF_CONTINUE_ON_FAILURE"] == "1"
