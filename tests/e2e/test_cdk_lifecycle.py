"""Names that can coexist and teardown that is clean both ways: a
stack-scoped, stable, configurable pipeline name (and MLflow server and rule names);
RETAIN keeps the buckets' TLS-only policies; DESTROY empties the versioned buckets."""
import json
import re

import aws_cdk as cdk  # noqa: E402
import pytest
from aws_cdk.assertions import Template  # noqa: E402
from cdk_stacks import QUICKSTART, acknowledgments, assert_acknowledgments_exact, make_stack, nag_report, of_type

from bakeoff.pipelines.errors import SpecError  # noqa: E402
from bakeoff.pipelines.spec.loader import load_spec  # noqa: E402
from bakeoff_cdk import BakeoffPipeline  # noqa: E402

REGION = "us-west-2"
NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}$")  # PipelineName / TrackingServerName


def _names(app, stack_ids):
    out = {}
    for stack_id in stack_ids:
        _, stack, _ = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION, app=app, stack_id=stack_id,
                                 mlflow_tracking_server=True,
                                 schedule=cdk.aws_events.Schedule.rate(cdk.Duration.days(1)))
        out[stack_id] = stack
    names = {}
    for stack_id, stack in out.items():
        resources = Template.from_stack(stack).to_json()["Resources"].values()
        props = {r["Type"]: r["Properties"] for r in resources}
        names[stack_id] = (props["AWS::SageMaker::Pipeline"]["PipelineName"],
                           props["AWS::SageMaker::MlflowTrackingServer"]["TrackingServerName"],
                           props["AWS::Events::Rule"]["Name"])
    return names


def test_one_spec_in_two_stacks_of_one_region_gets_distinct_stable_names():
    names = _names(cdk.App(), ["TeamA", "TeamB"])
    a, b = names["TeamA"], names["TeamB"]
    assert all(x != y for x, y in zip(a, b, strict=True)), names
    assert all(NAME.match(n) and n.startswith("bakeoff-quickstart-") for n in a + b)
    assert len(a[2]) <= 64  # EventBridge rule names
    assert _names(cdk.App(), ["TeamA"])["TeamA"] == a  # the same stack keeps its names across synths


def test_two_bake_offs_in_one_stack_coexist_and_pass_cdk_nag(tmp_path):
    pipelines = []

    def build(stack):
        for construct_id, seeds in (("Small", 3), ("Large", 10)):  # one inline, one from S3
            pipelines.append(BakeoffPipeline(stack, construct_id, spec=load_spec(QUICKSTART, [f"seeds={seeds}"]),
                                             mlflow_tracking_server=True))
        return pipelines[0]

    plugin, construct = nag_report(tmp_path, build)
    assert plugin["conclusion"] == "success" and plugin["violations"] == []
    suppressed = {(v["acknowledgedAt"], v["acknowledgedId"]) for v in plugin["suppressedViolations"]}
    made = acknowledgments(cdk.Stack.of(construct))
    recorded = [(path, finding) for path, finding, _ in made]
    assert set(recorded) == suppressed and len(recorded) == len(set(recorded))
    assert {path.split("/")[1] for path, _ in recorded} >= {"Small", "Large"}  # each pipeline's own findings
    assert len({p.pipeline_name for p in pipelines}) == 2
    # The shared BucketDeployment handler: each construct acknowledged the write to its own bucket.
    writes = [f for _, f, r in made if r == "deployment-objects" and "Artifacts" in f]
    assert len(writes) == 2 and len(set(writes)) == 2


def test_the_pipeline_name_is_configurable_and_checked():
    _, stack, construct = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION, pipeline_name="team-llm")
    t = Template.from_stack(stack)
    assert next(iter(of_type(t, "AWS::SageMaker::Pipeline").values()))["Properties"]["PipelineName"] == "team-llm"
    assert construct.pipeline_arn.endswith(":pipeline/team-llm") or "pipeline/team-llm" in json.dumps(
        stack.resolve(construct.pipeline_arn))
    with pytest.raises(SpecError, match="Bakeoff: pipeline name team_llm must be 1-256 letters, digits and hyphens"):
        make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION, pipeline_name="team_llm")


def test_retain_keeps_the_buckets_and_their_tls_only_policies():
    _, stack, _ = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION)
    t = Template.from_stack(stack)
    for kind in ("AWS::S3::Bucket", "AWS::S3::BucketPolicy"):
        found = of_type(t, kind)
        assert len(found) == 2
        assert all(r["DeletionPolicy"] == "Retain" and r["UpdateReplacePolicy"] == "Retain"
                   for r in found.values()), kind
    t.resource_count_is("Custom::S3AutoDeleteObjects", 0)


def test_destroy_empties_the_versioned_buckets_and_passes_cdk_nag(tmp_path):
    def build(stack):
        return BakeoffPipeline(stack, "Bakeoff", spec=load_spec(QUICKSTART, ["seeds=3"]),
                               removal_policy=cdk.RemovalPolicy.DESTROY)

    plugin, construct = nag_report(tmp_path, build)
    assert_acknowledgments_exact(plugin, construct)
    t = Template.from_json(json.loads((tmp_path / "out" / "Nag.template.json").read_text()))
    buckets = of_type(t, "AWS::S3::Bucket")
    assert all(b["DeletionPolicy"] == "Delete" for b in buckets.values())
    assert all(b["Properties"]["VersioningConfiguration"] == {"Status": "Enabled"} for b in buckets.values())
    cleaners = of_type(t, "Custom::S3AutoDeleteObjects")
    assert sorted(c["Properties"]["BucketName"]["Ref"] for c in cleaners.values()) == sorted(buckets)


def test_the_pipeline_is_created_after_its_roles_policies():
    _, stack, _ = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION)
    t = Template.from_stack(stack)
    pipeline = next(iter(of_type(t, "AWS::SageMaker::Pipeline").values()))
    role_policies = {k for k, v in of_type(t, "AWS::IAM::Policy").items() if k.startswith("BakeoffExecutionRole")}
    assert role_policies and role_policies <= set(pipeline["DependsOn"])
