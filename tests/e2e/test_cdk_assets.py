"""Every deployed asset and the definition carry real values: no
placeholder survives synthesis, the evaluation config names the tracking server at deploy
time, the S3 definition path keeps the definition out of the template, the inline/S3
threshold is measured on the rendered definition, and the deployment Lambda's storage fits."""
import json
import re

import aws_cdk as cdk  # noqa: E402
import pytest
from aws_cdk import aws_s3 as s3  # noqa: E402
from aws_cdk.assertions import Annotations, Match, Template  # noqa: E402
from cdk_stacks import (
    BUCKET,
    QUICKSTART,
    ROLE,
    deploy_time,
    deployed_sources,
    make_stack,
    mapping,
    mlflow_arn,
    of_type,
    placeholder_hits,
    substitute,
)

from bakeoff.pipelines.errors import SpecError  # noqa: E402
from bakeoff.pipelines.sagemaker import compile_pipeline  # noqa: E402
from bakeoff.pipelines.spec.loader import load_spec  # noqa: E402
from bakeoff_cdk.definition import MARKER, tokenized_definition  # noqa: E402

REGION = "us-west-2"


@pytest.fixture(scope="module")
def with_server(tmp_path_factory):
    out = tmp_path_factory.mktemp("cdk-out")
    app = cdk.App(outdir=str(out))
    _, stack, construct = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION, app=app,
                                     mlflow_tracking_server=True)
    app.synth()
    return out, stack, construct, Template.from_stack(stack)


def _expected_with_server():
    spec = load_spec(QUICKSTART, ["seeds=3", f"mlflow.tracking_uri={mlflow_arn(REGION)}"])
    return compile_pipeline(spec, bucket=BUCKET, role_arn=ROLE, region=REGION)


def test_a_stack_with_the_mlflow_server_has_no_placeholder_in_its_template_or_assets(with_server):
    out, stack, construct, t = with_server
    template = json.dumps(t.to_json()).encode()
    hits = placeholder_hits(template, "template")
    sources = deployed_sources(out, t)
    resources = t.to_json()["Resources"]
    for files, markers in sources:
        for key, body in files.items():
            hits += placeholder_hits(body, key)
            # The only thing left to fill in is a deploy-time marker whose value the template
            # gives as a reference to one of its own resources.
            for i in range(10):
                if MARKER.format(i).encode() in body:
                    assert MARKER.format(i) in markers, (key, i)
        for value in markers.values():
            ref = value.get("Ref") or value.get("Fn::GetAtt", [None])[0]
            assert ref in resources, value
    assert hits == []
    assert len(sources) == 2 and sources[1][1]  # the assets, and the one rendered file (the config)


def test_the_evaluation_config_names_the_tracking_server_at_deploy_time(with_server):
    out, stack, construct, t = with_server
    files = deploy_time(deployed_sources(out, t), mapping(t, mlflow=mlflow_arn(REGION)))
    pipeline = next(iter(of_type(t, "AWS::SageMaker::Pipeline").values()))["Properties"]
    definition = json.loads(substitute(pipeline["PipelineDefinition"]["PipelineDefinitionBody"],
                                       mapping(t, mlflow=mlflow_arn(REGION))))
    evaluate = next(s for s in definition["Steps"] if s["Name"] == "Evaluate")["Arguments"]
    config_uri = next(i["S3Input"]["S3Uri"] for i in evaluate["ProcessingInputs"] if i["InputName"] == "config")
    key = config_uri[len(f"s3://{BUCKET}/"):]
    assert key in files  # the definition names the object the deployment writes
    config = json.loads(files[key])
    assert config["mlflow"]["tracking_uri"] == mlflow_arn(REGION)
    assert evaluate["Environment"]["MLFLOW_TRACKING_URI"] == mlflow_arn(REGION)
    assert evaluate["Environment"]["BAKEOFF_MLFLOW_INSTALL"] == "1"
    # Byte for byte what `bakeoff synth` makes with the server's ARN as the tracking URI (the
    # spec hash leaves the tracking URI out, so the stand-in does not change it) ...
    expected = _expected_with_server()
    expected_config = next(a for a in expected.assets if "/eval-config/" in a.key)
    assert config["spec_hash"] == json.loads(expected_config.body)["spec_hash"]
    assert files[key] == expected_config.body
    # ... and so is the definition, but for the config's key: its own per stack.
    assert json.dumps(definition, sort_keys=True, separators=(",", ":")) == \
        expected.to_json().replace(expected_config.key, key)
    assert key != expected_config.key and key.startswith("bakeoff/quickstart/eval-config/")


def test_two_stacks_sharing_a_bucket_never_share_a_rendered_config():
    from bakeoff_cdk import BakeoffPipeline

    app = cdk.App()
    stacks = []
    for name in ("One", "Two"):
        stack = cdk.Stack(app, name, env=cdk.Environment(region=REGION))
        shared = s3.Bucket.from_bucket_name(stack, "Shared", "team-bakeoffs")
        BakeoffPipeline(stack, "Bakeoff", spec=load_spec(QUICKSTART, ["seeds=3"]), bucket=shared,
                        mlflow_tracking_server=True)
        stacks.append(stack)
    keys = [set(re.findall(r"bakeoff/quickstart/eval-config/[0-9a-f]{64}/config.json",
                           json.dumps(Template.from_stack(stack).to_json()))) for stack in stacks]
    assert len(keys[0]) == len(keys[1]) == 1 and keys[0] != keys[1]


def test_the_inline_threshold_is_measured_on_the_rendered_definition():
    spec = load_spec(QUICKSTART, ["seeds=3"])
    _, stack, construct = make_stack(spec, region=REGION)
    t = Template.from_stack(stack)
    body = next(iter(of_type(t, "AWS::SageMaker::Pipeline").values()))["Properties"]["PipelineDefinition"][
        "PipelineDefinitionBody"]
    assert construct.definition_size == len(json.dumps(body, separators=(",", ":")))
    placeholder_text = len(tokenized_definition(spec, False, REGION).text)
    assert construct.definition_size > placeholder_text  # the tokens are longer than the sentinels
    # A limit the placeholder text fits under but the rendered definition does not: S3.
    _, stack, construct = make_stack(spec, region=REGION, inline_definition_limit=placeholder_text + 1)
    assert not construct.definition_inline
    pipeline = next(iter(of_type(Template.from_stack(stack), "AWS::SageMaker::Pipeline").values()))["Properties"]
    assert "PipelineDefinitionS3Location" in pipeline["PipelineDefinition"]


def test_the_deployment_lambda_storage_is_sized_from_the_assets_and_configurable():
    spec = load_spec(QUICKSTART, ["seeds=3"])
    _, stack, construct = make_stack(spec, region=REGION)
    needed = construct.deployment_storage_needed_mib
    assert needed > 256  # twice the assets plus headroom
    expected = max(512, -(-needed // 64) * 64)
    Template.from_stack(stack).has_resource_properties(
        "AWS::Lambda::Function", {"EphemeralStorage": {"Size": expected}, "MemorySize": 512})
    _, stack, construct = make_stack(spec, region=REGION, deployment_storage=cdk.Size.gibibytes(4),
                                     deployment_memory_mb=1024)
    Template.from_stack(stack).has_resource_properties(
        "AWS::Lambda::Function", {"EphemeralStorage": {"Size": 4096}, "MemorySize": 1024})
    _, stack, construct = make_stack(spec, region=REGION, deployment_storage=cdk.Size.mebibytes(512))
    if needed > 512:
        Annotations.from_stack(stack).has_warning("*", Match.string_like_regexp("deployment_storage=512 MiB"))
    with pytest.raises(SpecError, match="too large for CDK's asset deployment"):
        construct._deployment_storage(6 * 1024 ** 3, None)  # 6 GiB of local data: 12 GiB of /tmp
