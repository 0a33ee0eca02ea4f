"""The CDK construct and app: Template assertions, cdk-nag, cfn-lint, `cdk synth`."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
sys.path.insert(0, str(ROOT / "cdk"))

import aws_cdk as cdk  # noqa: E402
from aws_cdk import aws_iam as iam  # noqa: E402
from aws_cdk.assertions import Match, Template  # noqa: E402

from bakeoff_cdk import REASONS, BakeoffPipeline, add_security_checks  # noqa: E402
from pipelines.errors import SpecError  # noqa: E402
from pipelines.loader import load_spec  # noqa: E402
from pipelines.sagemaker import compile_pipeline  # noqa: E402

QUICKSTART = ROOT / "examples" / "quickstart.yaml"
BUCKET, ROLE, MLFLOW = "resolved-bucket", "arn:aws:iam::123456789012:role/resolved-role", \
    "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/resolved"


def _stack(spec=QUICKSTART, **kw):
    app = cdk.App()
    stack = cdk.Stack(app, "Test")
    construct = BakeoffPipeline(stack, "Bakeoff", spec=load_spec(spec) if isinstance(spec, Path) else spec, **kw)
    return app, stack, construct


@pytest.fixture(scope="module")
def quickstart():
    # 3 seeds keep the definition small enough to sit inline in the template (the S3 path has its own test).
    app, stack, construct = _stack(load_spec(QUICKSTART, ["seeds=3"]))
    return stack, construct, Template.from_stack(stack)


def _of_type(template, kind):
    return {k: v for k, v in template.to_json()["Resources"].items() if v["Type"] == kind}


def _substitute(value, mapping):
    """Resolve the CloudFormation intrinsics of a definition string the way a deploy would."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(_substitute(p, mapping) for p in parts)
    key = json.dumps(value, sort_keys=True)
    return mapping[key]


def _mapping(template, mlflow=False):
    resources = template.to_json()["Resources"]
    bucket = next(k for k in resources if k.startswith("BakeoffArtifacts") and resources[k]["Type"] == "AWS::S3::Bucket")
    role = next(k for k in resources if k.startswith("BakeoffExecutionRole") and resources[k]["Type"] == "AWS::IAM::Role")
    out = {json.dumps({"Ref": bucket}): BUCKET, json.dumps({"Fn::GetAtt": [role, "Arn"]}, sort_keys=True): ROLE}
    if mlflow:
        server = next(k for k, v in resources.items() if v["Type"] == "AWS::SageMaker::MlflowTrackingServer")
        out[json.dumps({"Fn::GetAtt": [server, "TrackingServerArn"]}, sort_keys=True)] = MLFLOW
    return out


def test_resources(quickstart):
    stack, construct, t = quickstart
    t.resource_count_is("AWS::SageMaker::Pipeline", 1)
    t.resource_count_is("AWS::S3::Bucket", 2)  # artifacts + its access logs
    t.resource_count_is("AWS::IAM::Role", 2)  # the execution role + CDK's asset-deployment handler
    t.resource_count_is("Custom::CDKBucketDeployment", 1)
    t.resource_count_is("AWS::SageMaker::MlflowTrackingServer", 0)
    t.resource_count_is("AWS::Events::Rule", 0)
    t.has_resource_properties("Custom::CDKBucketDeployment", {"Prune": False})  # never deletes outputs/caches
    outputs = t.to_json()["Outputs"]
    assert {k[len("Bakeoff"):].rstrip("0123456789ABCDEF") for k in outputs} >= {"PipelineName", "PipelineArn",
                                                                                    "BucketName", "RoleArn"}


def test_bucket_is_encrypted_private_tls_only_versioned_logged_and_expires_caches(quickstart):
    _, _, t = quickstart
    t.has_resource_properties("AWS::S3::Bucket", {
        "BucketEncryption": {"ServerSideEncryptionConfiguration": [
            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
        "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                           "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
        "VersioningConfiguration": {"Status": "Enabled"},
        "LoggingConfiguration": {"DestinationBucketName": Match.any_value(), "LogFilePrefix": "artifacts/"},
        "LifecycleConfiguration": {"Rules": Match.array_with([Match.object_like(
            {"Id": "expire-compile-caches", "Prefix": "bakeoff/compile-cache/", "ExpirationInDays": 30,
             "Status": "Enabled"})])},
    })
    t.has_resource_properties("AWS::S3::BucketPolicy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Effect": "Deny", "Action": "s3:*",
                           "Condition": {"Bool": {"aws:SecureTransport": "false"}}})])}})


def test_compile_cache_expiry_is_configurable():
    _, _, construct = _stack(compile_cache_expiry_days=7)
    t = Template.from_stack(cdk.Stack.of(construct))
    t.has_resource_properties("AWS::S3::Bucket", {"LifecycleConfiguration": {"Rules": Match.array_with([
        Match.object_like({"Id": "expire-compile-caches", "ExpirationInDays": 7})])}})


def test_execution_role_least_privilege(quickstart):
    stack, construct, t = quickstart
    policies = _of_type(t, "AWS::IAM::Policy")
    role_policy = next(v for k, v in policies.items() if k.startswith("BakeoffExecutionRoleDefaultPolicy"))
    statements = {s["Sid"]: s for s in role_policy["Properties"]["PolicyDocument"]["Statement"]}
    assert set(statements) == {"PipelineJobs", "PassItselfToJobs", "ArtifactsObjects", "ArtifactsList",
                               "PullTrainingImages", "EcrLogin", "JobLogs", "JobMetrics"}
    assert sorted(statements["PipelineJobs"]["Action"]) == sorted([
        "sagemaker:CreateTrainingJob", "sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob",
        "sagemaker:CreateProcessingJob", "sagemaker:DescribeProcessingJob", "sagemaker:StopProcessingJob",
        "sagemaker:AddTags"])
    jobs = json.dumps(statements["PipelineJobs"]["Resource"])
    assert ":training-job/pipelines-*" in jobs and ":processing-job/pipelines-*" in jobs
    assert statements["PassItselfToJobs"]["Condition"] == {
        "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}
    assert sorted(statements["ArtifactsObjects"]["Action"]) == ["s3:AbortMultipartUpload", "s3:DeleteObject",
                                                                "s3:GetObject", "s3:PutObject"]
    assert json.dumps(statements["ArtifactsObjects"]["Resource"]).endswith('"/bakeoff/*"]]}')
    assert statements["ArtifactsList"]["Condition"] == {"StringLike": {"s3:prefix": ["bakeoff/*", "bakeoff"]}}
    repos = json.dumps(statements["PullTrainingImages"]["Resource"])
    for repo in ("pytorch-training-neuronx", "pytorch-training"):
        assert f":repository/{repo}" in repos
    assert "763104351884" in repos  # the images' registry account: exactly the repositories the spec names
    logs = json.dumps(statements["JobLogs"]["Resource"])
    assert "log-group:/aws/sagemaker/TrainingJobs:*" in logs and "log-group:/aws/sagemaker/ProcessingJobs:*" in logs
    assert statements["JobMetrics"]["Condition"] == {"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}}


def test_star_resources_only_where_the_action_cannot_be_scoped(quickstart):
    _, _, t = quickstart
    star = []
    for name, policy in _of_type(t, "AWS::IAM::Policy").items():
        for s in policy["Properties"]["PolicyDocument"]["Statement"]:
            if s["Resource"] == "*" or s["Resource"] == ["*"]:
                star.append(s["Action"] if isinstance(s["Action"], str) else tuple(s["Action"]))
    # Named here on purpose: neither action supports resource-level permissions.
    assert sorted(star) == ["cloudwatch:PutMetricData", "ecr:GetAuthorizationToken"]


def test_definition_equals_bakeoff_synth_after_token_substitution(quickstart):
    stack, construct, t = quickstart
    pipeline = next(iter(_of_type(t, "AWS::SageMaker::Pipeline").values()))["Properties"]
    assert construct.definition_inline
    text = _substitute(pipeline["PipelineDefinition"]["PipelineDefinitionBody"], _mapping(t))
    expected = compile_pipeline(load_spec(QUICKSTART, ["seeds=3"]), bucket=BUCKET, role_arn=ROLE).to_json()
    assert text == expected  # byte for byte
    assert pipeline["PipelineName"] == "bakeoff-quickstart"
    assert pipeline["RoleArn"] == {"Fn::GetAtt": [next(k for k in t.to_json()["Resources"]
                                                        if k.startswith("BakeoffExecutionRole")
                                                        and not "Policy" in k), "Arn"]}


def test_a_large_definition_goes_to_s3_without_the_user_doing_anything():
    _, stack, construct = _stack(load_spec(QUICKSTART, ["seeds=10"]))
    t = Template.from_stack(stack)
    pipeline = next(iter(_of_type(t, "AWS::SageMaker::Pipeline").values()))["Properties"]
    location = pipeline["PipelineDefinition"]["PipelineDefinitionS3Location"]
    assert not construct.definition_inline
    assert re.fullmatch(r"bakeoff/quickstart/definition/[0-9a-f]{64}\.json", location["Key"])
    deployment = next(iter(_of_type(t, "Custom::CDKBucketDeployment").values()))["Properties"]
    assert len(deployment["SourceObjectKeys"]) == 2  # the assets and the definition (with deploy-time tokens)
    assert "PipelineDefinitionBody" not in json.dumps(pipeline)


def test_mlflow_server_schedule_and_grant():
    app, stack, construct = _stack(load_spec(QUICKSTART, ["seeds=3"]), mlflow_tracking_server=True, schedule=cdk.aws_events.Schedule.rate(cdk.Duration.days(7)),
                                   schedule_parameters={"MaxSteps": "500"})
    user = iam.Role(stack, "Scientist", assumed_by=iam.AccountRootPrincipal())
    construct.grant_start_execution(user)
    t = Template.from_stack(stack)
    t.has_resource_properties("AWS::SageMaker::MlflowTrackingServer", {
        "TrackingServerName": "bakeoff-quickstart", "ArtifactStoreUri": Match.any_value()})
    pipeline = next(iter(_of_type(t, "AWS::SageMaker::Pipeline").values()))["Properties"]
    body = pipeline["PipelineDefinition"].get("PipelineDefinitionBody")
    text = _substitute(body, _mapping(t, mlflow=True)) if body else None
    definition = json.loads(text)
    env = definition["Steps"][0]["Arguments"]["Environment"]
    assert env["MLFLOW_TRACKING_URI"] == MLFLOW
    policy = next(v for k, v in _of_type(t, "AWS::IAM::Policy").items() if k.startswith("BakeoffExecutionRole"))
    mlflow = next(s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Sid"] == "MlflowTracking")
    assert all(a.startswith("sagemaker-mlflow:") for a in mlflow["Action"]) and "*" not in json.dumps(mlflow["Action"])
    rule = next(iter(_of_type(t, "AWS::Events::Rule").values()))["Properties"]
    assert rule["ScheduleExpression"] == "rate(7 days)"
    assert rule["Targets"][0]["SageMakerPipelineParameters"]["PipelineParameterList"] == [
        {"Name": "MaxSteps", "Value": "500"}]
    grant = next(v for k, v in _of_type(t, "AWS::IAM::Policy").items() if k.startswith("ScientistDefaultPolicy"))
    stmt = grant["Properties"]["PolicyDocument"]["Statement"][0]
    assert "sagemaker:StartPipelineExecution" in stmt["Action"]
    assert ":pipeline/bakeoff-quickstart" in json.dumps(stmt["Resource"])
    outputs = json.dumps(t.to_json()["Outputs"])
    assert "MlflowTrackingServerArn" in outputs


def test_bad_spec_stops_synth_with_the_cli_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(QUICKSTART.read_text().replace("ml.trn1.32xlarge", "ml.trn1.33xlarge"))
    with pytest.raises(SpecError) as info:
        _stack(bad)
    from conftest import bakeoff

    cli = bakeoff("validate", bad)
    assert cli.returncode == 2
    assert cli.stderr.strip() == f"bakeoff: error: {info.value}"


def test_cdk_nag_zero_findings_and_every_acknowledgment_asserted(tmp_path):
    app = cdk.App(outdir=str(tmp_path / "out"))
    stack = cdk.Stack(app, "Nag")
    construct = BakeoffPipeline(stack, "Bakeoff", spec=load_spec(QUICKSTART), mlflow_tracking_server=True,
                                schedule=cdk.aws_events.Schedule.rate(cdk.Duration.days(1)))
    add_security_checks(app)
    app.synth()  # an unacknowledged finding would stop this
    report = json.loads((tmp_path / "out" / "validation-report.json").read_text())
    plugin = report["pluginReports"][0]
    assert plugin["pluginName"] == "AwsSolutions" and plugin["conclusion"] == "success"
    assert plugin["violations"] == []
    suppressed = {(v["acknowledgedAt"], v["acknowledgedId"], v["reason"]) for v in plugin["suppressedViolations"]}
    recorded = {(path, finding, REASONS[reason]) for path, finding, reason in construct.acknowledge.records}
    assert suppressed <= recorded, suppressed - recorded  # every suppression is one the construct made
    assert recorded - suppressed == set(), recorded - suppressed  # and every acknowledgment is needed
    rules = sorted({finding.split("[")[0] for _, finding, _ in recorded})
    assert rules == ["AwsSolutions::AwsSolutions-IAM4", "AwsSolutions::AwsSolutions-IAM5",
                     "AwsSolutions::AwsSolutions-L1"]
    # The whole list, so none can be added silently.
    assert sorted(reason for _, _, reason in construct.acknowledge.records) == sorted(
        ["mlflow-artifacts", "job-names", "job-names", "prefix-objects", "unscopable",
         "log-streams", "log-streams", "deployment-managed-policy", "deployment-actions", "deployment-actions",
         "deployment-actions", "deployment-actions", "deployment-actions", "deployment-objects",
         "deployment-objects", "deployment-runtime", "executions"])
    assert all(len(r) > 40 for r in REASONS.values())


def test_cfn_lint_passes_on_the_synthesized_template(quickstart, tmp_path):
    stack, _, t = quickstart
    path = tmp_path / "template.json"
    path.write_text(json.dumps(t.to_json()))
    proc = subprocess.run([str(Path(sys.executable).with_name("cfn-lint")), "--format", "json", str(path)],
                          capture_output=True, text=True)
    findings = json.loads(proc.stdout or "[]")
    errors = [f for f in findings if f["Level"] == "Error"]
    assert errors == []
    # Tolerated: W3005 on CDK's own BucketDeployment handler (aws-cdk-lib emits a redundant DependsOn).
    others = [f for f in findings if not (f["Rule"]["Id"] == "W3005" and "CDKBucketDeployment" in json.dumps(f))]
    assert others == []


def test_no_secrets_or_account_literals(quickstart):
    _, _, t = quickstart
    text = json.dumps(t.to_json())
    accounts = set(re.findall(r"(?<![0-9])[0-9]{12}(?![0-9])", text))
    assert accounts <= {"763104351884"}  # AWS's public Deep Learning Containers registry
    assert "000000000000" not in text and "AKIA" not in text


def test_npx_cdk_synth_works_offline_without_credentials(tmp_path):
    npx = shutil.which("npx")
    assert npx, "Node.js/npx is required for the CDK CLI"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(PATH=f"{Path(sys.executable).parent}:{env['PATH']}", AWS_EC2_METADATA_DISABLED="true",
               JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20", AWS_CONFIG_FILE="/nonexistent",
               AWS_SHARED_CREDENTIALS_FILE="/nonexistent")
    out = tmp_path / "cdk.out"
    proc = subprocess.run([npx, "--no-install", "cdk", "synth", "-q", "-o", str(out)], cwd=ROOT / "cdk", env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    templates = sorted(p.name for p in out.glob("*.template.json"))
    assert "Bakeoff-quickstart.template.json" in templates
    report = json.loads((out / "validation-report.json").read_text())
    assert report["pluginReports"][0]["violations"] == []
