"""`bakeoff_cdk.BakeoffPipeline` is the jsii construct (cdk/construct's Python package, bakeoff_cdk_construct) given
a spec: a Python app has the construct's whole API (grants as iam.Grant, EventBridge helpers, metrics, import by
name), and the bundle it compiles lands in the app's own output directory, named by its content."""
import json

import aws_cdk as cdk
import bakeoff_cdk_construct
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template
from cdk_stacks import QUICKSTART, make_stack, of_type

from bakeoff.pipelines.spec.loader import load_spec
from bakeoff_cdk import BakeoffPipeline, IBakeoffPipeline, Verdict

REGION = "us-west-2"


def test_the_python_construct_is_the_jsii_construct_with_its_api(tmp_path):
    app, stack, construct = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION,
                                       app=cdk.App(outdir=str(tmp_path / "out")))
    assert isinstance(construct, bakeoff_cdk_construct.BakeoffPipeline)
    team = iam.Role(stack, "Team", assumed_by=iam.AccountRootPrincipal())
    grant = construct.grant_start_execution(team)
    assert isinstance(grant, iam.Grant) and grant.success
    construct.on_verdict("Failed", verdict=Verdict.FAIL)
    construct.on_execution_status_change("Status")
    metric = construct.metric_execution_failed()
    other: IBakeoffPipeline = BakeoffPipeline.from_pipeline_name(stack, "Other", "bakeoff-other")
    other.grant_start_execution(team)

    t = Template.from_stack(stack).to_json()
    patterns = [r["Properties"]["EventPattern"] for r in t["Resources"].values() if r["Type"] == "AWS::Events::Rule"]
    assert any(p["detail"].get("stepName") == ["ParityFailed"] for p in patterns)
    assert any(p["detail-type"] == ["SageMaker Model Building Pipeline Execution Status Change"] for p in patterns)
    assert metric.namespace == "AWS/Sagemaker/ModelBuildingPipeline" and metric.metric_name == "ExecutionFailed"
    starts = [s for p in of_type(Template.from_stack(stack), "AWS::IAM::Policy").values()
              for s in p["Properties"]["PolicyDocument"]["Statement"]
              if "sagemaker:StartPipelineExecution" in s["Action"]]
    resources = json.dumps([s["Resource"] for s in starts])
    assert len(starts) == 2 and "pipeline/bakeoff-other" in resources  # the imported one's, by its name
    assert "sagemaker:RetryPipelineExecution" in starts[0]["Action"]  # `bakeoff retry`, not only start and stop


def test_the_bundle_lands_in_the_apps_output_directory_by_its_content(tmp_path):
    out = tmp_path / "out"
    spec = load_spec(QUICKSTART, ["seeds=3"])
    app = cdk.App(outdir=str(out))
    make_stack(spec, region=REGION, app=app, stack_id="A")
    make_stack(spec, region=REGION, app=app, stack_id="B")  # the same spec: the same bundle
    make_stack(load_spec(QUICKSTART, ["seeds=4"]), region=REGION, app=app, stack_id="C")
    bundles = sorted(p for p in (out / "bakeoff.bundles").iterdir())
    assert len(bundles) == 2 and all((b / "manifest.json").is_file() for b in bundles)  # no half-written folder
    app.synth()
    again = cdk.App(outdir=str(out))
    make_stack(spec, region=REGION, app=again, stack_id="A")  # re-synthesized unchanged: found, not rewritten
    assert sorted(p for p in (out / "bakeoff.bundles").iterdir()) == bundles


def test_an_unknown_option_is_refused_by_name():
    with pytest.raises(TypeError, match="unexpected keyword argument 'compile_cache_days'"):
        make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION, compile_cache_days=3)
