"""The stack's region drives the images: a concrete region is required,
it must agree with the spec's, and the registry account and DNS suffix come from the
per-region table in estimators/images.py (the SageMaker SDK's pytorch.json, aws_facts.md
section 3). Synthesized in us-west-2 (registry 763104351884) and eu-south-1 (692866216735)."""
import json
import re

import aws_cdk as cdk  # noqa: E402
import pytest
from aws_cdk.assertions import Template  # noqa: E402
from cdk_stacks import BUCKET, QUICKSTART, ROLE, inline_definition, make_stack, of_type

from bakeoff.estimators.images import dns_suffix, registry_account  # noqa: E402
from bakeoff.pipelines.errors import SpecError  # noqa: E402
from bakeoff.pipelines.sagemaker import compile_pipeline  # noqa: E402
from bakeoff.pipelines.sagemaker.cdk.reads import image_uris  # noqa: E402
from bakeoff.pipelines.spec.loader import load_spec  # noqa: E402
from conftest import write_spec  # noqa: E402

REGION_RE = re.compile(r"\b(?:us|eu|ap|sa|ca|me|af|il|mx|cn)(?:-gov)?-[a-z]+-\d\b")


@pytest.fixture(scope="module", params=["us-west-2", "eu-south-1"])
def regional(request):
    region = request.param
    _, stack, construct = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=region)
    return region, construct, Template.from_stack(stack)


def test_a_stack_names_only_its_own_regions_images_and_grants(regional):
    region, construct, t = regional
    text = json.dumps(t.to_json())
    assert set(REGION_RE.findall(text)) == {region}  # no ARN, image or bucket of another region
    definition = json.loads(inline_definition(t))
    host = f"{registry_account(region)}.dkr.ecr.{region}.{dns_suffix(region)}/"
    images = image_uris(definition)
    assert images and all(uri.startswith(host) for uri in images), images
    grants = [s for st in (v["Properties"]["PolicyDocument"]["Statement"]
                           for v in of_type(t, "AWS::IAM::Policy").values()) for s in st
              if s.get("Sid") == "PullTrainingImages"][0]
    repos = json.dumps(grants["Resource"])
    assert f":ecr:{region}:{registry_account(region)}:repository/pytorch-training-neuronx" in repos
    assert set(re.findall(r":ecr:([a-z0-9-]+):(\d{12}):", repos)) == {(region, registry_account(region))}


def test_the_definition_is_bakeoff_synth_for_the_stacks_region(regional):
    region, construct, t = regional
    text = inline_definition(t)
    expected = compile_pipeline(load_spec(QUICKSTART, ["seeds=3"]), bucket=BUCKET, role_arn=ROLE, region=region)
    assert text == expected.to_json()


def test_eu_south_1_uses_its_own_registry_account():
    # The point of the per-region table: not every region pulls from 763104351884.
    assert registry_account("eu-south-1") == "692866216735" != registry_account("us-west-2")


def test_a_region_agnostic_stack_is_a_clear_synth_error():
    with pytest.raises(SpecError) as info:
        make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=None)
    message = str(info.value)
    assert "has no concrete region" in message and "env=Environment(region=...)" in message
    assert "\n" not in message


def test_a_spec_that_names_another_region_is_refused():
    spec = load_spec(QUICKSTART, ["seeds=3", "storage.region=eu-west-1"])
    with pytest.raises(SpecError) as info:
        make_stack(spec, region="us-west-2")
    assert "the spec runs in eu-west-1 but stack 'Test' deploys to us-west-2" in str(info.value)
    # The same spec in its own region is fine.
    _, stack, _ = make_stack(spec, region="eu-west-1")
    uris = image_uris(json.loads(inline_definition(Template.from_stack(stack))))
    assert uris and all(".eu-west-1." in uri for uri in uris), uris


def test_an_explicit_image_from_another_region_is_refused(tmp_path):
    data = json.loads(json.dumps(load_spec(QUICKSTART).model_dump(mode="json", exclude_unset=True)))
    data["legs"][1]["image"] = ("763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:"
                                "2.9.0-gpu-py312-cu130-ubuntu22.04-sagemaker")
    spec = load_spec(write_spec(tmp_path / "pinned.yaml", data))
    make_stack(spec, region="us-east-1")  # where the image is
    with pytest.raises(SpecError) as info:
        make_stack(spec, region="us-west-2")
    assert "us-east-1" in str(info.value) and "us-west-2" in str(info.value)


def test_china_gets_its_partitions_dns_suffix_and_no_mlflow_server():
    _, stack, _ = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region="cn-north-1")
    uris = image_uris(json.loads(inline_definition(Template.from_stack(stack), partition="aws-cn")))
    assert uris and all(u.startswith(f"{registry_account('cn-north-1')}.dkr.ecr.cn-north-1.amazonaws.com.cn/")
                        for u in uris)
    with pytest.raises(SpecError, match="sagemaker-mlflow client supports the aws and aws-us-gov partitions"):
        make_stack(load_spec(QUICKSTART, ["seeds=3"]), region="cn-north-1", mlflow_tracking_server=True)


def _app(tmp_path, context, environ, specs):
    import app as cdk_app

    folder = tmp_path / f"specs{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    for name, overrides in specs.items():
        data = load_spec(QUICKSTART, overrides).model_dump(mode="json", exclude_unset=True)
        data["name"] = name
        write_spec(folder / f"{name}.yaml", data)
    app = cdk.App(context={"specDir": str(folder), **context})
    cdk_app.build_app(app, environ=environ)
    return {s.stack_name: s.region for s in app.node.children if isinstance(s, cdk.Stack)}


def test_the_app_takes_the_region_from_context_then_the_spec_then_the_cli(tmp_path):
    specs = {"plain": ["seeds=3"], "pinned": ["seeds=3", "storage.region=eu-west-1"]}
    # CDK_DEFAULT_REGION (what the CDK CLI sets from AWS_REGION or the profile) for specs that name none.
    assert _app(tmp_path, {}, {"CDK_DEFAULT_REGION": "us-west-2"}, specs) == {
        "Bakeoff-plain": "us-west-2", "Bakeoff-pinned": "eu-west-1"}
    # -c region wins, and a spec that names another region says so.
    assert _app(tmp_path, {"region": "us-west-2"}, {}, {"plain": ["seeds=3"]}) == {"Bakeoff-plain": "us-west-2"}
    with pytest.raises(SpecError, match="the spec runs in eu-west-1"):
        _app(tmp_path, {"region": "us-west-2"}, {}, specs)
    with pytest.raises(SpecError, match="no region for bake-off 'plain'"):
        _app(tmp_path, {}, {}, {"plain": ["seeds=3"]})
