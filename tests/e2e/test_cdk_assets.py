"""Every deployed asset and the definition carry real values: no
placeholder survives synthesis, the evaluation config names the tracking server at deploy
time, the S3 definition path keeps the definition out of the template, the inline/S3
threshold is measured on the rendered definition, and the deployment Lambda's storage fits."""
import json
import math
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
    inline_definition,
    make_stack,
    mapping,
    mlflow_arn,
    of_type,
    placeholder_hits,
)

import bakeoff_cdk.pipeline  # noqa: E402
from bakeoff.pipelines.errors import SpecError  # noqa: E402
from bakeoff.pipelines.sagemaker import compile_pipeline  # noqa: E402
from bakeoff.pipelines.sagemaker.cdk.bundle import write_bundle  # noqa: E402
from bakeoff.pipelines.spec.loader import load_spec  # noqa: E402

REGION = "us-west-2"
MARKER = "<<marker:0xbaba:{}>>"  # CDK BucketDeployment's deploy-time marker (aws-s3-deployment render-data)
MIB = 1024 * 1024


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
    definition = json.loads(inline_definition(t, mlflow=mlflow_arn(REGION)))
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


def test_the_inline_threshold_is_measured_on_the_rendered_definition(tmp_path):
    spec = load_spec(QUICKSTART, ["seeds=3"])
    _, stack, construct = make_stack(spec, region=REGION)
    assert construct.definition_inline
    body = next(iter(of_type(Template.from_stack(stack), "AWS::SageMaker::Pipeline").values()))["Properties"][
        "PipelineDefinition"]["PipelineDefinitionBody"]
    size = len(json.dumps(body, separators=(",", ":")))
    # What the construct starts from: the bundle's definition, with the bucket and role as sentinels.
    write_bundle(spec, tmp_path / "bundle", region=REGION)
    placeholder_text = len((tmp_path / "bundle" / "definition.json").read_text())
    assert size > placeholder_text  # the tokens are longer than the sentinels

    def pipeline(limit):
        _, stack, construct = make_stack(spec, region=REGION, inline_definition_limit=limit)
        definition = next(iter(of_type(Template.from_stack(stack), "AWS::SageMaker::Pipeline").values()))[
            "Properties"]["PipelineDefinition"]
        assert construct.definition_inline == ("PipelineDefinitionBody" in definition)
        return definition

    # The limit is compared with the rendered definition's size in the template, to the character ...
    assert pipeline(size)["PipelineDefinitionBody"] == body
    # ... so a limit the placeholder text fits under but the rendered definition does not: S3.
    for limit in (size - 1, placeholder_text + 1):
        assert "PipelineDefinitionS3Location" in pipeline(limit)


def _with_large_assets(monkeypatch, size):
    """The construct's bundle gets a (sparse) local data file of `size` bytes besides the quickstart's; returns
    the bundle folders it deploys, as they are staged."""
    staged = []
    real = bakeoff_cdk.pipeline.staged_bundle

    def staged_bundle(*args, **kwargs):
        bundle = real(*args, **kwargs)
        manifest = json.loads((bundle / "manifest.json").read_text())
        key = "bakeoff/data/0123456789abcdef0123456789abcdef/train/large.bin"
        (bundle / "assets" / key).parent.mkdir(parents=True)
        with open(bundle / "assets" / key, "wb") as f:
            f.truncate(size)
        manifest["assetKeys"] = sorted([*manifest["assetKeys"], key])
        (bundle / "manifest.json").write_text(json.dumps(manifest))
        staged.append(bundle)
        return bundle

    monkeypatch.setattr(bakeoff_cdk.pipeline, "staged_bundle", staged_bundle)
    return staged


def _stack(tmp_path, name, **kw):
    """A quickstart stack in its own output directory, its assets hashed where they lie (not copied there)."""
    app = cdk.App(outdir=str(tmp_path / name), context={"aws:cdk:disable-asset-staging": True})
    return make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION, app=app, **kw)


def _needed_mib(total_bytes):
    """CDK's BucketDeployment handler keeps each source zip in /tmp and unpacks it there: twice the assets, and
    256 MiB of room."""
    return math.ceil(2 * total_bytes / MIB) + 256


def _storage(stack):
    [handler] = [f["Properties"] for f in of_type(Template.from_stack(stack), "AWS::Lambda::Function").values()
                 if "EphemeralStorage" in f["Properties"]]
    return handler["EphemeralStorage"]["Size"], handler["MemorySize"]


def test_the_deployment_lambda_storage_is_sized_from_the_assets_and_configurable(tmp_path):
    out = tmp_path / "out"
    app = cdk.App(outdir=str(out))
    _, stack, _ = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION, app=app)
    app.synth()
    t = Template.from_stack(stack)
    total = sum(len(body) for files, _ in deployed_sources(out, t) for body in files.values())
    needed = _needed_mib(total)
    assert total > 0 and needed <= 512  # the quickstart's few files: Lambda's least /tmp
    assert _storage(stack) == (512, 512)
    _, stack, _ = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION,
                             deployment_storage=cdk.Size.gibibytes(4), deployment_memory_limit=1024)
    assert _storage(stack) == (4096, 1024)
    with pytest.warns(DeprecationWarning, match="deployment_memory_mb"):
        _, stack, _ = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION, deployment_memory_mb=1024)
    assert _storage(stack) == (512, 1024)
    Annotations.from_stack(stack).has_no_warning("*", Match.string_like_regexp("deploymentStorage"))


def test_large_assets_get_room_for_twice_their_size_and_a_smaller_storage_is_warned_of(tmp_path, monkeypatch):
    staged = _with_large_assets(monkeypatch, 200 * MIB)
    _, stack, _ = _stack(tmp_path, "default")
    total = sum(p.stat().st_size for p in (staged[-1] / "assets").rglob("*") if p.is_file())
    needed = _needed_mib(total)
    assert needed > 512 + 64
    assert _storage(stack) == (math.ceil(needed / 64) * 64, 512)  # whole 64 MiB
    Annotations.from_stack(stack).has_no_warning("*", Match.string_like_regexp("deploymentStorage"))
    _, stack, _ = _stack(tmp_path, "given", deployment_storage=cdk.Size.mebibytes(512))
    assert _storage(stack) == (512, 512)  # as given ...
    Annotations.from_stack(stack).has_warning(  # ... with a warning
        "/Test/Bakeoff", Match.string_like_regexp(f"deploymentStorage=512 MiB is less than the {needed} MiB"))


def test_local_data_too_large_for_the_asset_deployment_is_refused(tmp_path, monkeypatch):
    _with_large_assets(monkeypatch, 6 * 1024 * MIB)  # 6 GiB of local data: 12 GiB of /tmp
    with pytest.raises(SpecError, match="^Test/Bakeoff: the local data and code .* are too large for CDK's asset "
                                        "deployment"):
        _stack(tmp_path, "huge")
