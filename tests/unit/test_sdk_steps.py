"""The SDK adapter (issue 42): bakeoff's steps as SageMaker Python SDK 3 objects, built offline, whose
pipeline definition equals bakeoff's own, and to which a team adds its own SDK steps."""
import json
import subprocess
import sys

import pytest

from bakeoff.pipelines.sagemaker import sdk_steps as adapter
from conftest import ROOT

# Not pytest.importorskip: importing the SDK needs a default region (the adapter lends one, see `_sdk`).
try:
    adapter._sdk()
except adapter.SdkMissingError as exc:
    pytest.skip(f"the SageMaker Python SDK 3 (the sdk extra) is not installed: {exc}", allow_module_level=True)

ROLE = "arn:aws:iam::123456789012:role/bakeoff-test"
SPEC = ROOT / "examples" / "quickstart.yaml"
# Every kind of step bakeoff compiles: preflight, a collective check, precompile, spot seeds after the first.
ALL_KINDS = ["seeds=2", "preflight.enabled=true", "legs.0.collective_check=true", "legs.0.precompile=true",
             "legs.1.managed_spot=after_first_seed"]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No AWS: an endpoint nothing listens on, and credentials that are no one's. The SDK's own
    ProcessingStep wants a default region even offline (it makes a LocalSession to read a method name:
    sagemaker/mlops/workflow/steps.py, sagemaker-mlops 1.27.0)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def _compiled(overrides):
    from bakeoff.pipelines.sagemaker import compile_pipeline
    from bakeoff.pipelines.spec.loader import load_spec

    return compile_pipeline(load_spec(SPEC, overrides), role_arn=ROLE, bucket="b")


@pytest.fixture(scope="module")
def quickstart():
    return _compiled(["seeds=2"])


@pytest.fixture(scope="module")
def all_kinds():
    return _compiled(ALL_KINDS)


@pytest.mark.parametrize("which", ["quickstart", "all_kinds"])
def test_the_sdk_pipeline_is_bakeoffs_definition(which, request):
    from bakeoff.pipelines.sagemaker.sdk_steps import sdk_pipeline

    compiled = request.getfixturevalue(which)
    sdk = json.loads(sdk_pipeline(compiled).definition())
    assert sdk["Steps"] == compiled.definition["Steps"]
    assert sdk["Parameters"] == compiled.definition["Parameters"]
    assert {k: sdk[k] for k in ("Version", "Metadata")} == {k: compiled.definition[k] for k in ("Version", "Metadata")}
    # What the SDK adds: both keys always, null here (no experiment config: bakeoff tracks in MLflow).
    assert {k: v for k, v in sdk.items() if k not in compiled.definition} == {"PipelineExperimentConfig": None,
                                                                               "MlflowConfig": None}
    if which == "all_kinds":
        assert {"Preflight", "Collective-trn1", "Precompile-trn1"} <= {s["Name"] for s in sdk["Steps"]}


def test_each_step_is_an_sdk_step_whose_request_is_bakeoffs(all_kinds):
    from sagemaker.core.workflow.functions import Join, JsonGet
    from sagemaker.core.workflow.parameters import ParameterInteger
    from sagemaker.core.workflow.properties import Properties
    from sagemaker.mlops.workflow.condition_step import ConditionStep
    from sagemaker.mlops.workflow.fail_step import FailStep
    from sagemaker.mlops.workflow.retry import SageMakerJobStepRetryPolicy
    from sagemaker.mlops.workflow.steps import ConfigurableRetryStep

    from bakeoff.pipelines.sagemaker.sdk_steps import request_of, sdk_steps

    steps = sdk_steps(all_kinds)
    assert [s.name for s in steps] == [s["Name"] for s in all_kinds.definition["Steps"]]
    for step, ours in zip(steps, all_kinds.definition["Steps"], strict=True):
        assert request_of(step) == ours, step.name
    by = {s.name: s for s in steps}
    train, evaluate, gate = by["Train-trn1-s0"], by["Evaluate"], by["ParityGate"]
    assert isinstance(train, ConfigurableRetryStep) and isinstance(gate, ConditionStep)
    assert all(isinstance(p, SageMakerJobStepRetryPolicy) for p in train.retry_policies)
    # bakeoff's expressions are the SDK's pipeline variables, so the SDK sees what each step reads.
    max_steps = train.arguments["HyperParameters"]["max_steps"]
    assert isinstance(max_steps, Join) and isinstance(max_steps.values[0], ParameterInteger)
    job_refs = [v for a in evaluate.arguments["AppSpecification"]["ContainerArguments"] if isinstance(a, Join)
                for v in a.values if isinstance(v, Properties)]
    assert {r._referenced_steps[0].name for r in job_refs} == {n for n in by if n.startswith("Train-")}
    verdict = gate.conditions[0].left
    assert isinstance(verdict, JsonGet) and verdict.property_file is evaluate.property_files[0]
    failed = gate.else_steps[0].if_steps[0]
    assert isinstance(failed, FailStep) and failed.name == "ParityFailed"
    # A team's step reads bakeoff's outputs as it would a TrainingStep's or ProcessingStep's.
    assert train.properties.TrainingJobName.expr == {"Get": "Steps.Train-trn1-s0.TrainingJobName"}


def test_the_sdks_graph_orders_the_gate_after_evaluate(quickstart):
    from sagemaker.mlops.workflow.pipeline import PipelineGraph

    from bakeoff.pipelines.sagemaker.sdk_steps import sdk_pipeline

    graph = PipelineGraph.from_pipeline(sdk_pipeline(quickstart))
    # ParityGate has no DependsOn: only its JsonGet of Evaluate's property file orders it.
    assert "ParityGate" in graph.adjacency_list["Evaluate"]
    order = [s.name for s in graph]
    assert order.index("Evaluate") < order.index("ParityGate") < order.index("ParityFailed")


def _team_step(steps, name, **kwargs):
    """A team's own SDK ProcessingStep (Processor.run() under a PipelineSession) reading bakeoff's outputs."""
    import boto3
    from sagemaker.core.processing import Processor
    from sagemaker.core.shapes import ProcessingInput, ProcessingS3Input
    from sagemaker.core.workflow.pipeline_context import PipelineSession
    from sagemaker.mlops.workflow.steps import ProcessingStep

    by = {s.name: s for s in steps}
    session = PipelineSession(boto_session=boto3.session.Session(region_name="us-east-1"), default_bucket="b")
    processor = Processor(role="arn:aws:iam::123456789012:role/team", instance_count=1,
                          image_uri="123456789012.dkr.ecr.us-east-1.amazonaws.com/team:1",
                          instance_type="ml.m5.large", sagemaker_session=session)
    evaluation = by["Evaluate"].properties.ProcessingOutputConfig.Outputs["evaluation"].S3Output.S3Uri
    with pytest.warns(UserWarning, match="PipelineSession"):
        args = processor.run(inputs=[ProcessingInput(input_name="verdict", s3_input=ProcessingS3Input(
            s3_uri=evaluation, local_path="/opt/ml/processing/input/verdict", s3_data_type="S3Prefix",
            s3_input_mode="File"))], arguments=["--job", by["Train-trn1-s0"].properties.TrainingJobName])
    return ProcessingStep(name=name, step_args=args, **kwargs)


def test_a_team_adds_its_own_steps_after_the_gate(quickstart):
    from bakeoff.pipelines.sagemaker.sdk_steps import sdk_pipeline
    from bakeoff.pipelines.sagemaker.validate import definition_problems

    pipeline = sdk_pipeline(quickstart, name="team-pipeline")
    steps = list(pipeline.steps)
    gate = steps[-1]
    # Runs only on a pass verdict: in the gate's IfSteps (bakeoff leaves them empty for this).
    gate.if_steps.append(_team_step(steps, "TeamRegister"))
    # Runs once the gate has decided, whatever it decided (DependsOn a Condition step).
    pipeline.steps.append(_team_step(steps, "TeamPublish", depends_on=["ParityGate"]))
    definition = json.loads(pipeline.definition())
    assert definition_problems(definition) == []
    rendered = {s["Name"]: s for s in definition["Steps"]}
    assert list(rendered) == [s["Name"] for s in quickstart.definition["Steps"]] + ["TeamPublish"]
    assert rendered["TeamPublish"]["DependsOn"] == ["ParityGate"]
    assert rendered["TeamPublish"]["Arguments"]["ProcessingInputs"][0]["S3Input"]["S3Uri"] == {
        "Get": "Steps.Evaluate.ProcessingOutputConfig.Outputs['evaluation'].S3Output.S3Uri"}
    assert [s["Name"] for s in rendered["ParityGate"]["Arguments"]["IfSteps"]] == ["TeamRegister"]
    # bakeoff's own steps are unchanged by the team's.
    for ours in quickstart.definition["Steps"][:-1]:
        assert rendered[ours["Name"]] == ours
    assert rendered["ParityGate"]["Arguments"]["ElseSteps"] == quickstart.definition["Steps"][-1]["Arguments"][
        "ElseSteps"]


def test_steps_from_another_call_are_other_steps(quickstart):
    """The pitfall sdk_pipeline's docstring names: the SDK adds a referenced step object it was not given."""
    from bakeoff.pipelines.sagemaker.sdk_steps import sdk_pipeline, sdk_steps

    pipeline = sdk_pipeline(quickstart)
    pipeline.steps.append(_team_step(sdk_steps(quickstart), "TeamPublish"))
    names = [s["Name"] for s in json.loads(pipeline.definition())["Steps"]]
    assert names.count("Train-trn1-s0") == 2


def test_a_spec_is_compiled_with_the_options_given(quickstart):
    from bakeoff.pipelines.sagemaker.sdk_steps import sdk_parameters, sdk_steps
    from bakeoff.pipelines.spec.loader import load_spec

    steps = sdk_steps(load_spec(SPEC, ["seeds=2"]), bucket="b", role_arn=ROLE)
    assert [s.name for s in steps] == [s["Name"] for s in quickstart.definition["Steps"]]
    assert steps[0].arguments["RoleArn"] == ROLE
    params = sdk_parameters(quickstart)
    assert [(p.name, p.default_value) for p in params][-2:] == [("MaxSteps", 200), ("ParityMargin", 0.1)]
    with pytest.raises(Exception, match="compile options"):
        sdk_steps(quickstart, bucket="other")


def test_without_the_sdk_the_error_names_the_extra(monkeypatch):
    adapter._sdk.cache_clear()
    monkeypatch.setitem(sys.modules, "sagemaker.mlops.workflow", None)  # as if it were not installed
    try:
        with pytest.raises(adapter.SdkMissingError, match=r"pip install 'bakeoff\[sdk\]'"):
            adapter._sdk()
    finally:
        adapter._sdk.cache_clear()


def test_importing_the_adapter_imports_no_sdk():
    code = ("import sys, bakeoff.pipelines.sagemaker.sdk_steps; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sagemaker'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
