"""bakeoff's CreateTrainingJob arguments against the SageMaker Python SDK 3.x's
(ModelTrainer + TrainingStep, built under moto) for the same legs and seeds."""
import re
import sys

import pytest

from bakeoff.pipelines.sagemaker import compile_pipeline
from bakeoff.pipelines.sagemaker.validate import resolve
from bakeoff.pipelines.spec.loader import load_spec
from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

ROLE = "arn:aws:iam::123456789012:role/bakeoff-reference"
BUCKET = "bakeoff-artifacts"

# Where bakeoff differs from the SDK on purpose, and why.
INTENTIONAL_DIFFERENCES = {
    "AlgorithmSpecification.ContainerEntrypoint": "the SDK runs its sm_drivers/sm_train.sh from a timestamped "
        "upload; bakeoff unpacks its sha256-addressed bundle and runs launch.py (torchrun when a leg has "
        "several devices), so the definition stays the same for unchanged code",
    "AlgorithmSpecification.ContainerArguments": "part of the SDK's driver command line (see above)",
    "AlgorithmSpecification.MetricDefinitions": "bakeoff adds regexes for what its entrypoint prints",
    "AlgorithmSpecification.EnableSageMakerMetricsTimeSeries": "bakeoff turns on metric time series",
    "InputDataConfig[code]": "SDK: s3://.../<base-job-name>-<timestamp>/input/code (new on every build, so "
        "step caching misses); bakeoff: s3://.../code/<sha256>/sourcedir.tar.gz",
    "InputDataConfig[sm_drivers]": "the SDK's driver scripts; bakeoff needs none",
    "InputDataConfig[data].S3Uri": "bakeoff makes each data channel a pipeline parameter (overridable per "
        "execution) whose default is a content-addressed upload",
    "HyperParameters.max_steps": "a pipeline parameter in bakeoff (Std:Join of MaxSteps); its default is the SDK's "
                                 "value",
    "Environment (extra keys)": "bakeoff adds the compile-cache location, the pipeline's region for the "
        "container's AWS clients (and MLflow settings when configured)",
    "Tags": "bakeoff tags every job with name, leg, seed, spec hash, backend and compile-cache path",
    "RetryPolicies": "bakeoff retries SageMaker.CAPACITY_ERROR with backoff",
}


@pytest.fixture(scope="module")
def both():
    from sdk_build import sdk_definition

    spec = load_spec(ROOT / "examples" / "quickstart.yaml", ["seeds=1"])
    ours = compile_pipeline(spec, role_arn=ROLE, bucket=BUCKET).definition
    sdk = sdk_definition(spec, ROLE, BUCKET)
    def pick(d):
        return {s["Name"]: s for s in d["Steps"] if s["Type"] == "Training"}
    return pick(ours), pick(sdk), {p["Name"]: p for p in ours["Parameters"]}


def test_same_training_steps(both):
    ours, sdk, _ = both
    assert set(ours) == set(sdk) == {"Train-trn1-s0", "Train-p4d-s0"}


@pytest.mark.parametrize("step", ["Train-trn1-s0", "Train-p4d-s0"])
def test_create_training_job_arguments_agree_with_the_sdk(both, step):
    ours_all, sdk_all, params = both
    ours = resolve(ours_all[step]["Arguments"], params)  # parameters at their defaults
    sdk = sdk_all[step]["Arguments"]
    for field in ("TrainingImage", "TrainingInputMode"):
        assert ours["AlgorithmSpecification"][field] == sdk["AlgorithmSpecification"][field], field
    for field in ("ResourceConfig", "StoppingCondition", "OutputDataConfig", "RoleArn"):
        assert ours[field] == sdk[field], field
    assert ours["HyperParameters"] == sdk["HyperParameters"]  # max_steps resolved to its default
    assert isinstance(ours_all[step]["Arguments"]["HyperParameters"]["max_steps"], dict)
    common = set(ours["Environment"]) & set(sdk["Environment"])
    assert common == set(sdk["Environment"])  # bakeoff sets everything the SDK sets, and more
    assert {k: ours["Environment"][k] for k in common} == sdk["Environment"]
    assert set(ours["Environment"]) - common == {"BAKEOFF_COMPILE_CACHE", "BAKEOFF_CONTINUE_ON_FAILURE",
                                                  "AWS_DEFAULT_REGION"} | (
        {"NEURON_COMPILE_CACHE_URL"} if "trn1" in step else set())
    ours_ch = {c["ChannelName"]: c for c in ours["InputDataConfig"]}
    sdk_ch = {c["ChannelName"]: c for c in sdk["InputDataConfig"]}
    for name in ("train", "validation"):
        a, b = ours_ch[name], sdk_ch[name]
        assert a["InputMode"] == b["InputMode"]
        for key in ("S3DataType", "S3DataDistributionType"):
            assert a["DataSource"]["S3DataSource"][key] == b["DataSource"]["S3DataSource"][key]
    # The documented differences are real ones.
    assert set(sdk_ch) - set(ours_ch) == {"sm_drivers"}
    assert re.search(r"-\d{14}/input/code$", sdk_ch["code"]["DataSource"]["S3DataSource"]["S3Uri"])
    assert re.search(r"/code/[0-9a-f]{64}/sourcedir\.tar\.gz$", ours_ch["code"]["DataSource"]["S3DataSource"]["S3Uri"])
    assert ours["AlgorithmSpecification"]["ContainerEntrypoint"] != sdk["AlgorithmSpecification"]["ContainerEntrypoint"]
    assert "Tags" not in sdk and "RetryPolicies" not in sdk_all[step]
    assert all(INTENTIONAL_DIFFERENCES.values())
