"""Least privilege that works: bucket-level list and location
without false conditions, log groups created in a fresh account, `grant_start_execution`
that passes cdk-nag with what start/watch/report need, acknowledgments on the exact
statement, reads for data URIs declared as overrides, VPC/KMS permissions only when the
spec sets them, and a schedule role with a confused-deputy condition."""
import json

import aws_cdk as cdk  # noqa: E402
import pytest
from aws_cdk import aws_iam as iam  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402
from cdk_stacks import (
    QUICKSTART,
    acknowledgments,
    assert_acknowledgments_exact,
    make_stack,
    nag_report,
    of_type,
    policies,
    secured_spec,
    statements_by_sid,
)

from bakeoff.pipelines.errors import SpecError  # noqa: E402
from bakeoff.pipelines.sagemaker.cdk.grants import execution_grants  # noqa: E402
from bakeoff.pipelines.sagemaker.cdk.placeholders import PIPELINE_ARN  # noqa: E402
from bakeoff.pipelines.sagemaker.cdk.reads import START_ACTIONS, VPC_ACTIONS  # noqa: E402
from bakeoff.pipelines.spec.loader import load_spec  # noqa: E402
from bakeoff_cdk import BakeoffPipeline  # noqa: E402

REGION = "us-west-2"


@pytest.fixture(scope="module")
def quick():
    _, stack, construct = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION,
                                     schedule=cdk.aws_events.Schedule.cron(hour="3", minute="0"),
                                     schedule_parameters={"TrainDataUri": "s3://nightly-data/train/",
                                                          "MaxSteps": "500"},
                                     allowed_data_uris=["s3://team-data/ablation/"])
    team = iam.Role(stack, "Team", assumed_by=iam.AccountRootPrincipal())
    construct.grant_start_execution(team)
    return stack, construct, Template.from_stack(stack)


def _text(value):
    return json.dumps(value, sort_keys=True)


def test_bucket_list_and_location_carry_no_false_condition(quick):
    _, _, t = quick
    listing = statements_by_sid(t, "BakeoffExecutionRole")["ArtifactsList"]
    assert sorted(listing["Action"]) == ["s3:GetBucketLocation", "s3:ListBucket"]
    assert "Condition" not in listing  # a missing key answers 404, not 403 (botocore S3 GetObject/HeadObject)
    assert listing["Resource"]["Fn::GetAtt"][1] == "Arn"  # the bucket itself, not its objects


def test_log_groups_can_be_created_in_a_fresh_account(quick):
    _, _, t = quick
    by_sid = statements_by_sid(t, "BakeoffExecutionRole")
    groups = by_sid["JobLogGroups"]
    assert groups["Action"] == "logs:CreateLogGroup"
    ends = sorted(r["Fn::Join"][1][-1] for r in groups["Resource"])
    assert ends == [":log-group:/aws/sagemaker/ProcessingJobs", ":log-group:/aws/sagemaker/TrainingJobs"]
    streams = by_sid["JobLogStreams"]
    assert sorted(streams["Action"]) == ["logs:CreateLogStream", "logs:PutLogEvents"]
    assert sorted(r["Fn::Join"][1][-1] for r in streams["Resource"]) == [
        ":log-group:/aws/sagemaker/ProcessingJobs:log-stream:*", ":log-group:/aws/sagemaker/TrainingJobs:log-stream:*"]
    assert all(f":logs:{REGION}:" in _text(r) for r in groups["Resource"] + streams["Resource"])


def test_grant_start_execution_has_what_starting_watching_and_reporting_need(quick):
    _, construct, t = quick
    grant = statements_by_sid(t, "BakeoffStartExecution1")
    assert set(grant) == {"StartWatch", "ReportJobs", "ReadEvaluations"}
    assert sorted(grant["StartWatch"]["Action"]) == sorted(START_ACTIONS)
    assert {"sagemaker:DescribePipeline", "sagemaker:ListPipelineExecutions",
            "sagemaker:ListPipelineParametersForExecution"} <= set(grant["StartWatch"]["Action"])
    resources = _text(grant["StartWatch"]["Resource"])
    assert f":sagemaker:{REGION}:" in resources and f":pipeline/{construct.pipeline_name}" in resources
    assert f":pipeline/{construct.pipeline_name}/execution/*" in resources
    assert sorted(grant["ReportJobs"]["Action"]) == ["sagemaker:DescribeProcessingJob", "sagemaker:DescribeTrainingJob"]
    assert grant["ReadEvaluations"]["Action"] == "s3:GetObject"
    assert _text(grant["ReadEvaluations"]["Resource"]).endswith('"/bakeoff/quickstart/evaluation/*"]]}')
    # A policy of its own, attached to the team role.
    policy = next(v for k, v in of_type(t, "AWS::IAM::Policy").items() if k.startswith("BakeoffStartExecution1"))
    assert policy["Properties"]["Roles"] == [{"Ref": next(k for k in t.to_json()["Resources"]
                                                          if k.startswith("Team") and "Policy" not in k)}]


def test_data_uris_declared_as_overrides_are_readable(quick):
    _, _, t = quick
    reads = list(statements_by_sid(t, "BakeoffExecutionRoleReadAllowedData").values())
    objects = sorted(_text(s["Resource"]) for s in reads if s["Action"] == "s3:GetObject")
    assert len(objects) == 2
    assert ":s3:::nightly-data/train/*" in objects[0] and ":s3:::team-data/ablation/*" in objects[1]
    listings = [s for s in reads if s["Action"] == "s3:ListBucket"]
    assert sorted(s["Condition"]["StringLike"]["s3:prefix"][0] for s in listings) == ["ablation/*", "train/*"]


def test_schedule_parameters_are_checked_against_the_pipeline():
    spec = load_spec(QUICKSTART, ["seeds=3"])
    weekly = cdk.aws_events.Schedule.rate(cdk.Duration.days(7))
    with pytest.raises(SpecError, match="MaxStep is not a parameter of this pipeline"):
        make_stack(spec, region=REGION, schedule=weekly, schedule_parameters={"MaxStep": "5"})
    with pytest.raises(SpecError, match="MaxSteps takes a integer"):
        make_stack(spec, region=REGION, schedule=weekly, schedule_parameters={"MaxSteps": "five"})
    with pytest.raises(SpecError, match='scheduleParameters.TrainDataUri: "/local/train" is not an s3://bucket/prefix'):
        make_stack(spec, region=REGION, schedule=weekly, schedule_parameters={"TrainDataUri": "/local/train"})


def test_the_schedule_role_trusts_eventbridge_for_this_rule_only(quick):
    stack, construct, t = quick
    rule = next(iter(of_type(t, "AWS::Events::Rule").values()))["Properties"]
    assert rule["Name"] == construct.pipeline_name
    role = next(v for k, v in of_type(t, "AWS::IAM::Role").items() if k.startswith("BakeoffScheduleRole"))
    trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert len(trust) == 1 and trust[0]["Principal"] == {"Service": "events.amazonaws.com"}
    condition = trust[0]["Condition"]["StringEquals"]
    assert condition["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}
    source = condition["aws:SourceArn"]["Fn::Join"][1]
    assert source[-1] == f":rule/{rule['Name']}" and f":events:{REGION}:" in source[2]
    # It may start this pipeline and do nothing else: no wildcard, no acknowledgment.
    allowed = policies(t, "BakeoffScheduleRole")
    assert [s for statements in allowed.values() for s in statements] == [{
        "Action": "sagemaker:StartPipelineExecution", "Effect": "Allow",
        "Resource": json.loads(json.dumps(stack.resolve(construct.pipeline_arn)))}]
    assert not [r for r in acknowledgments(stack) if "ScheduleRole" in r[0]]


def test_a_later_wildcard_on_the_execution_role_is_still_a_finding(tmp_path):
    def build(stack):
        construct = BakeoffPipeline(stack, "Bakeoff", spec=load_spec(QUICKSTART, ["seeds=3"]))
        construct.role.add_to_principal_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
        return construct

    with pytest.raises(RuntimeError, match="ValidationFailed"):
        nag_report(tmp_path, build)
    report = json.loads((tmp_path / "out" / "validation-report.json").read_text())["pluginReports"][0]
    flagged = [(v["ruleName"], c["constructPath"]) for v in report["violations"] for c in v["violatingConstructs"]]
    # Exactly the `Resource::*` that a role-level acknowledgment of ecr:GetAuthorizationToken
    # would have hidden.
    assert flagged == [("AwsSolutions-IAM5[Resource::*]", "Nag/Bakeoff/ExecutionRole/DefaultPolicy/Resource")]


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    spec = secured_spec(tmp_path_factory.mktemp("secured"))
    _, stack, construct = make_stack(spec, region="eu-south-1")
    construct.grant_start_execution(iam.Role(stack, "Team", assumed_by=iam.AccountRootPrincipal()))
    return stack, construct, Template.from_stack(stack)


def test_vpc_jobs_get_their_network_interface_permissions_unscoped_as_aws_documents(secured):
    _, _, t = secured
    vpc = statements_by_sid(t, "BakeoffExecutionRole")["VpcNetworkInterfaces"]
    assert sorted(vpc["Action"]) == sorted(VPC_ACTIONS) and len(VPC_ACTIONS) == 9
    assert vpc["Resource"] == "*" and "Condition" not in vpc


def test_kms_keys_are_granted_by_key_arn_or_by_alias_condition(secured):
    _, _, t = secured
    by_sid = statements_by_sid(t, "BakeoffExecutionRole")
    volume = by_sid["VolumeKms"]
    assert volume["Action"] == "kms:CreateGrant"
    assert volume["Resource"]["Fn::Join"][1][-1] == ":key/1234abcd-12ab-34cd-56ef-1234567890ab"
    assert ":kms:eu-south-1:" in _text(volume["Resource"])
    output = next(s for sid, s in by_sid.items() if sid.startswith("OutputKmsAlias"))
    assert sorted(output["Action"]) == ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"]
    assert output["Condition"] == {"ForAnyValue:StringEquals": {"kms:ResourceAliases": "alias/bakeoff-output"}}
    # The team reads evaluation.json, written with the output key.
    grant = statements_by_sid(t, "BakeoffStartExecution1")
    decrypt = next(s for sid, s in grant.items() if sid.startswith("ReadEvaluationsKmsAlias"))
    assert decrypt["Action"] == "kms:Decrypt"


def test_the_specs_own_s3_data_is_readable_by_prefix(secured):
    _, _, t = secured
    reads = list(statements_by_sid(t, "BakeoffExecutionRoleReadData").values())
    assert sorted(_text(s["Resource"]) for s in reads if s["Action"] == "s3:GetObject") == [
        _text({"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":s3:::team-data/corpus/{c}/*"]]})
        for c in ("train", "validation")]


def test_nothing_for_vpc_kms_or_other_data_when_the_spec_sets_none(quick):
    _, _, t = quick
    sids = set(statements_by_sid(t, "BakeoffExecutionRole"))
    assert not {s for s in sids if s.startswith(("Vpc", "OutputKms", "VolumeKms", "ReadData", "ListOwnSteps"))}


def test_a_kms_key_of_another_region_is_refused(tmp_path):
    spec = secured_spec(tmp_path, security={**json.loads(json.dumps(secured_spec(tmp_path).security.model_dump())),
                                            "output_kms_key": "arn:aws:kms:us-east-1:123456789012:key/abcd-1234"})
    with pytest.raises(SpecError, match="is in us-east-1 but the stack deploys to eu-south-1"):
        make_stack(spec, region="eu-south-1")


def test_an_evaluate_step_that_lists_its_own_steps_may_do_so():
    # The grant bakeoff derives from the definition (the bundle manifest's executionGrants) ...
    definition = {"Parameters": [], "Steps": [{"Name": "Evaluate", "Type": "Processing", "Arguments": {
        "AppSpecification": {"ImageUri": f"763104351884.dkr.ecr.{REGION}.amazonaws.com/pytorch-training:x",
                             "ContainerArguments": ["--execution-arn", {"Get": "Execution.PipelineExecutionArn"}]}}}]}
    grants = {g["name"]: g for g in execution_grants(definition, "bakeoff", REGION, mlflow_arns=[])}
    [steps] = grants["ListOwnSteps"]["statements"]
    assert steps["Action"] == ["sagemaker:ListPipelineExecutionSteps"]
    assert steps["Resource"] == [PIPELINE_ARN, f"{PIPELINE_ARN}/execution/*"]
    assert grants["ListOwnSteps"]["reason"] == "executions"
    assert "ListOwnSteps" not in {g["name"] for g in execution_grants({"Parameters": [], "Steps": []}, "bakeoff",
                                                                      REGION, mlflow_arns=[])}
    # ... and in a stack: 50 seeds of two legs are more jobs than Evaluate's arguments name, so it lists them.
    _, stack, construct = make_stack(load_spec(QUICKSTART, ["seeds=50"]), region=REGION)
    t = Template.from_stack(stack)
    statement = statements_by_sid(t, "BakeoffExecutionRole")["ListOwnSteps"]
    arn = json.loads(json.dumps(stack.resolve(construct.pipeline_arn)))
    assert statement["Action"] == "sagemaker:ListPipelineExecutionSteps"
    pipeline, executions = statement["Resource"]
    assert pipeline == arn
    assert executions["Fn::Join"][1][:-1] == arn["Fn::Join"][1][:-1]
    assert executions["Fn::Join"][1][-1] == arn["Fn::Join"][1][-1] + "/execution/*"
    assert [reason for path, _, reason in acknowledgments(stack) if "ListOwnSteps" in path] == ["executions"]


def test_the_specs_own_sagemaker_tracking_server_is_granted():
    arn = f"arn:aws:sagemaker:{REGION}:123456789012:mlflow-tracking-server/team"
    _, stack, construct = make_stack(load_spec(QUICKSTART, ["seeds=3", f"mlflow.tracking_uri={arn}"]), region=REGION)
    mlflow = statements_by_sid(Template.from_stack(stack), "BakeoffExecutionRole")["MlflowTracking"]
    assert mlflow["Resource"] == arn


def test_an_mlflow_app_is_granted_its_data_plane_action_not_a_tracking_servers():
    """sagemaker-mlflow signs an App's requests for the `sagemaker` service: `sagemaker-mlflow:*` on it
    authorizes nothing, `sagemaker:CallMlflowAppApi` does."""
    arn = f"arn:aws:sagemaker:{REGION}:123456789012:mlflow-app/app-0123456789ab"
    _, stack, construct = make_stack(load_spec(QUICKSTART, ["seeds=3", f"mlflow.tracking_uri={arn}"]), region=REGION)
    mlflow = statements_by_sid(Template.from_stack(stack), "BakeoffExecutionRole")["MlflowTracking"]
    assert mlflow["Action"] == "sagemaker:CallMlflowAppApi" and mlflow["Resource"] == arn


def test_cdk_nag_passes_with_vpc_kms_s3_data_and_grants_to_imported_principals(tmp_path):
    def build(stack):
        construct = BakeoffPipeline(stack, "Bakeoff", spec=secured_spec(tmp_path), mlflow_tracking_server=True,
                                    allowed_data_uris=["s3://team-data/other/"],
                                    schedule=cdk.aws_events.Schedule.rate(cdk.Duration.days(1)),
                                    schedule_parameters={"TrainDataUri": "s3://nightly/train/"})
        construct.grant_start_execution(iam.Role.from_role_arn(stack, "Imported",
                                                               "arn:aws:iam::123456789012:role/team"))
        construct.grant_start_execution(iam.Group(stack, "Scientists"))
        return construct

    plugin, construct = nag_report(tmp_path, build, region="eu-south-1")
    assert_acknowledgments_exact(plugin, construct.stack)
    reasons = [reason for _, _, reason in acknowledgments(construct.stack)]
    assert reasons.count("vpc-interfaces") == 1 and reasons.count("kms-alias") == 3  # role + two grants
    assert reasons.count("data-prefixes") == 4  # team-data corpus x2, team-data/other, nightly/train
