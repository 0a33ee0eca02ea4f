"""The CDK construct and app: Template assertions, cdk-nag, cfn-lint, `cdk synth`.

The helpers (a stack in a region, deploy-time substitution of the template's intrinsics and of
BucketDeployment markers) are in tests/cdk_stacks.py, shared by the tests/e2e/test_cdk*.py files."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cdk_stacks import (
    BUCKET,
    QUICKSTART,
    ROLE,
    acknowledgments,
    assert_acknowledgments_exact,
    deploy_time,
    deployed_sources,
    inline_definition,
    make_stack,
    mapping,
    mlflow_arn,
    nag_report,
    of_type,
    policies,
    secured_spec,
    statements_by_sid,
    substitute,
)

# isort: split
# After cdk_stacks, which sets jsii's environment and puts cdk/ on sys.path.
import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template

from bakeoff.estimators.images import registry_account
from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.sagemaker import compile_pipeline
from bakeoff.pipelines.sagemaker.cdk.mlflow_server import MLFLOW_CLIENT_FOR_SERVER, MLFLOW_SERVER_VERSION
from bakeoff.pipelines.sagemaker.cdk.reads import MLFLOW_ACTIONS, MLFLOW_CLIENT_ACTIONS, START_ACTIONS
from bakeoff.pipelines.spec.loader import load_spec
from bakeoff_cdk import REASONS, BakeoffPipeline
from conftest import ROOT


@pytest.fixture(scope="module")
def quickstart():
    # 3 seeds keep the definition small enough to sit inline in the template (the S3 path has its own test).
    app, stack, construct = make_stack(load_spec(QUICKSTART, ["seeds=3"]))
    return stack, construct, Template.from_stack(stack)


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
    assert {k[len("Bakeoff"):].rstrip("0123456789ABCDEF") for k in outputs} >= {
        "PipelineName", "PipelineArn", "StartCommand", "BucketName", "RoleArn"}
    start = next(v for k, v in outputs.items() if k.startswith("BakeoffStartCommand"))
    assert start["Value"] == f"bakeoff start {construct.pipeline_name} --region us-east-1"


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
    _, stack, _ = make_stack(compile_cache_expiry=cdk.Duration.days(7))
    # bakeoff_cdk 0.1.0's keyword still works, with a warning naming the new one.
    with pytest.warns(DeprecationWarning,
                      match=r"compile_cache_expiry_days=\.\.\.\) is deprecated: use compile_cache_expiry="):
        _, old, _ = make_stack(compile_cache_expiry_days=7)
    for s in (stack, old):
        t = Template.from_stack(s)
        t.has_resource_properties("AWS::S3::Bucket", {"LifecycleConfiguration": {"Rules": Match.array_with([
            Match.object_like({"Id": "expire-compile-caches", "ExpirationInDays": 7})])}})


def test_execution_role_least_privilege(quickstart):
    stack, construct, t = quickstart
    statements = statements_by_sid(t, "BakeoffExecutionRole")
    assert set(statements) == {"PipelineJobs", "PassItselfToJobs", "ArtifactsObjects", "InputsReadOnly",
                               "ArtifactsList", "PullTrainingImages", "EcrLogin", "JobMetrics", "JobLogGroups",
                               "JobLogStreams", "JobLogStreamsRead"}
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
    # No job (the script runs with this role) can rewrite what the verdict is decided from: the code, the
    # data and the Evaluate step's config, all uploaded by the deployer.
    deny = statements["InputsReadOnly"]
    assert deny["Effect"] == "Deny" and sorted(deny["Action"]) == ["s3:AbortMultipartUpload", "s3:DeleteObject",
                                                                    "s3:PutObject"]
    denied = json.dumps(deny["Resource"])
    for key in ("/bakeoff/code/*", "/bakeoff/data/*", "/bakeoff/*/eval-config/*"):
        assert key in denied, denied
    definition = json.loads(inline_definition(t))
    config_uri = next(s for s in definition["Steps"] if s["Type"] == "Processing")["Arguments"]["ProcessingInputs"]
    assert any(f"s3://{BUCKET}/bakeoff/" in json.dumps(i) and "/eval-config/" in json.dumps(i) for i in config_uri)
    repos = json.dumps(statements["PullTrainingImages"]["Resource"])
    for repo in ("pytorch-training-neuronx", "pytorch-training"):
        assert f":repository/{repo}" in repos
    assert f":ecr:us-east-1:{registry_account('us-east-1')}:repository/" in repos
    assert statements["JobMetrics"]["Condition"] == {"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}}


def test_star_resources_only_where_the_action_cannot_be_scoped(quickstart):
    _, _, t = quickstart
    star = []
    for statements in policies(t).values():
        for s in statements:
            if s["Resource"] == "*" or s["Resource"] == ["*"]:
                star.append(s["Action"] if isinstance(s["Action"], str) else tuple(s["Action"]))
    # Named here on purpose: neither action supports resource-level permissions.
    assert sorted(star) == ["cloudwatch:PutMetricData", "ecr:GetAuthorizationToken"]


def test_definition_equals_bakeoff_synth_after_token_substitution(quickstart):
    stack, construct, t = quickstart
    pipeline = next(iter(of_type(t, "AWS::SageMaker::Pipeline").values()))["Properties"]
    assert construct.definition_inline
    text = substitute(pipeline["PipelineDefinition"]["PipelineDefinitionBody"], mapping(t))
    expected = compile_pipeline(load_spec(QUICKSTART, ["seeds=3"]), bucket=BUCKET, role_arn=ROLE,
                                region="us-east-1").to_json()
    assert text == expected  # byte for byte
    assert pipeline["PipelineName"] == construct.pipeline_name
    assert pipeline["RoleArn"] == {"Fn::GetAtt": [next(k for k in t.to_json()["Resources"]
                                                        if k.startswith("BakeoffExecutionRole")
                                                        and t.to_json()["Resources"][k]["Type"] == "AWS::IAM::Role"),
                                                   "Arn"]}


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """A 10-seed quickstart: its definition is too large to sit inline. (out dir, construct, template)"""
    out = tmp_path_factory.mktemp("large")
    app = cdk.App(outdir=str(out))
    _, stack, construct = make_stack(load_spec(QUICKSTART, ["seeds=10"]), app=app)
    app.synth()
    return out, construct, Template.from_stack(stack)


def _bucket_and_role(t):
    """The deploy-time values a definition names: the artifacts bucket's name and the execution role's ARN."""
    bucket = next(k for k in of_type(t, "AWS::S3::Bucket") if k.startswith("BakeoffArtifacts"))
    role = next(k for k in of_type(t, "AWS::IAM::Role") if k.startswith("BakeoffExecutionRole"))
    return {"Ref": bucket}, {"Fn::GetAtt": [role, "Arn"]}


def test_a_large_definition_goes_to_s3_without_the_user_doing_anything(large):
    outdir, construct, t = large
    pipeline = next(iter(of_type(t, "AWS::SageMaker::Pipeline").values()))["Properties"]
    location = pipeline["PipelineDefinition"]["PipelineDefinitionS3Location"]
    assert not construct.definition_inline
    assert re.fullmatch(r"bakeoff/quickstart/definition/[0-9a-f]{64}\.json", location["Key"])
    deployment = next(iter(of_type(t, "Custom::CDKBucketDeployment").values()))["Properties"]
    assert len(deployment["SourceObjectKeys"]) == 2  # the assets, and the rendered definition
    assert "PipelineDefinitionBody" not in json.dumps(pipeline)
    # The template carries markers of the bucket and the role only, not the definition.
    markers = [m for m in deployment["SourceMarkers"] if m]
    assert len(markers) == 1
    values = {json.dumps(v, sort_keys=True) for v in markers[0].values()}
    assert values == {json.dumps(v, sort_keys=True) for v in _bucket_and_role(t)}
    assert "AlgorithmSpecification" not in json.dumps(t.to_json())
    # What lands in S3 at deploy time is `bakeoff synth`, byte for byte.
    files = deploy_time(deployed_sources(outdir, t), mapping(t))
    expected = compile_pipeline(load_spec(QUICKSTART, ["seeds=10"]), bucket=BUCKET, role_arn=ROLE,
                                region="us-east-1").to_json()
    assert files[location["Key"]].decode() == expected


def test_a_large_definition_costs_the_template_one_marker_per_deploy_time_value(large):
    # Not one per occurrence of the bucket or role in the definition (CDK's Source.data would give 136 markers for
    # these 10 seeds, 557 for 50): the template stays small however large the definition.
    _, _, t = large
    deployment = next(iter(of_type(t, "Custom::CDKBucketDeployment").values()))["Properties"]
    (markers,) = [m for m in deployment["SourceMarkers"] if m]
    assert sorted(json.dumps(v, sort_keys=True) for v in markers.values()) == sorted(
        json.dumps(v, sort_keys=True) for v in _bucket_and_role(t))


def test_mlflow_server_schedule_and_grant():
    app, stack, construct = make_stack(load_spec(QUICKSTART, ["seeds=3"]), mlflow_tracking_server=True,
                                       schedule=cdk.aws_events.Schedule.rate(cdk.Duration.days(7)),
                                       schedule_parameters={"MaxSteps": "500"})
    user = iam.Role(stack, "Scientist", assumed_by=iam.AccountRootPrincipal())
    construct.grant_start_execution(user)
    t = Template.from_stack(stack)
    t.has_resource_properties("AWS::SageMaker::MlflowTrackingServer", {
        "TrackingServerName": construct.pipeline_name, "ArtifactStoreUri": Match.any_value(),
        "MlflowVersion": MLFLOW_SERVER_VERSION})
    pipeline = next(iter(of_type(t, "AWS::SageMaker::Pipeline").values()))["Properties"]
    body = pipeline["PipelineDefinition"].get("PipelineDefinitionBody")
    definition = json.loads(substitute(body, mapping(t, mlflow=mlflow_arn())))
    for step in definition["Steps"][:-1]:  # every job logs to the server and installs MLflow at start
        env = step["Arguments"]["Environment"]
        assert env["MLFLOW_TRACKING_URI"] == mlflow_arn() and env["BAKEOFF_MLFLOW_INSTALL"] == "1", step["Name"]
    assert pipeline["ParallelismConfiguration"] == {"MaxParallelExecutionSteps": 8}
    mlflow = statements_by_sid(t, "BakeoffExecutionRole")["MlflowTracking"]
    assert all(a.startswith("sagemaker-mlflow:") for a in mlflow["Action"]) and "*" not in json.dumps(mlflow["Action"])
    # Every MLflow call bakeoff makes on a SageMaker tracking server, the experiment tag and run trash included.
    assert {"sagemaker-mlflow:SetExperimentTag", "sagemaker-mlflow:DeleteRun", "sagemaker-mlflow:CreateRun",
            "sagemaker-mlflow:LogBatch", "sagemaker-mlflow:UpdateRun"} <= set(mlflow["Action"])
    assert set(mlflow["Action"]) == set(MLFLOW_ACTIONS) and mlflow["Resource"] == {
        "Fn::GetAtt": [next(iter(of_type(t, "AWS::SageMaker::MlflowTrackingServer"))), "TrackingServerArn"]}
    rule = next(iter(of_type(t, "AWS::Events::Rule").values()))["Properties"]
    assert rule["ScheduleExpression"] == "rate(7 days)"
    assert rule["Targets"][0]["SageMakerPipelineParameters"]["PipelineParameterList"] == [
        {"Name": "MaxSteps", "Value": "500"}]
    (grant,) = policies(t, "BakeoffStartExecution1").values()
    (start,) = [s for s in grant if "sagemaker:StartPipelineExecution" in s["Action"]]
    assert sorted(start["Action"]) == sorted(START_ACTIONS) and start["Effect"] == "Allow"
    resources = json.dumps(start["Resource"])
    assert f":pipeline/{construct.pipeline_name}\"" in resources
    assert f":pipeline/{construct.pipeline_name}/execution/*\"" in resources
    (attached,) = [v["Properties"]["Roles"] for k, v in of_type(t, "AWS::IAM::Policy").items()
                   if k.startswith("BakeoffStartExecution1")]
    assert [r["Ref"] for r in attached] == [next(k for k in of_type(t, "AWS::IAM::Role") if k.startswith("Scientist"))]
    outputs = json.dumps(t.to_json()["Outputs"])
    assert "MlflowTrackingServerArn" in outputs


def _mlflow_client_calls():
    """(file, method) of every MlflowClient call in the code that runs in SageMaker jobs."""
    import ast

    calls = set()
    for path in sorted((ROOT / "entrypoints").rglob("*.py")):
        text = path.read_text()
        # tracking/file_store prepares the local executor's store (pipelines/local/executor.py), never a job's.
        if "MlflowClient" not in text or path.name == "file_store.py":
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id == "client":
                calls.add((path.name, node.func.attr))
    return calls


def test_every_mlflow_call_the_jobs_make_has_its_action_in_the_synthesized_role():
    calls = _mlflow_client_calls()
    assert {f for f, _ in calls} == {"parent_run.py", "parent_extras.py", "run_inputs.py", "sink.py",
                                     "script_run.py"}, calls
    unknown = {(f, m) for f, m in calls if m not in MLFLOW_CLIENT_ACTIONS}
    assert not unknown, f"MlflowClient calls without a sagemaker-mlflow action in cdk/reads.py: {unknown}"
    # The local-only store helper stays local: nothing else imports it.
    users = [p for top in ("pipelines", "entrypoints", "estimators", "cdk/bakeoff_cdk")
             for p in (ROOT / top).rglob("*.py")
             if p.name != "file_store.py" and "tracking.file_store" in p.read_text()]
    assert [p.relative_to(ROOT).as_posix() for p in users] == ["pipelines/local/executor.py"]
    _, stack, _ = make_stack(load_spec(QUICKSTART, ["seeds=3"]), mlflow_tracking_server=True)
    granted = set(statements_by_sid(Template.from_stack(stack), "BakeoffExecutionRole")["MlflowTracking"]["Action"])
    needed = {f"sagemaker-mlflow:{a}" for _, m in calls for a in MLFLOW_CLIENT_ACTIONS[m]}
    assert needed <= granted, needed - granted
    assert "sagemaker-mlflow:AccessUI" not in granted  # no resource type: it would need "*"


def test_the_jobs_mlflow_client_is_the_one_aws_names_for_the_default_server():
    from bakeoff_runtime.tracking import install as mlflow_install

    pins = {}
    for path in (mlflow_install.REQUIREMENTS, mlflow_install.REQUIREMENTS_SAGEMAKER):
        for line in path.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                name, version = line.split("==")
                pins[name.strip()] = version.strip()
    assert pins["mlflow-skinny"] == MLFLOW_CLIENT_FOR_SERVER[MLFLOW_SERVER_VERSION]


def _warnings(stack, pattern: str) -> list[str]:
    """The stack's warnings that match `pattern`, read from each construct's metadata.

    Not `Annotations.find_warning`: when it has matches to return, jsii fails to rebuild them
    ("Unknown interface: aws-cdk-lib.cloud_assembly_schema.MetadataEntry")."""
    return [m.data for c in stack.node.find_all() for m in c.node.metadata
            if m.type == "aws:cdk:warning" and re.search(pattern, str(m.data))]


def test_mlflow_version_is_a_prop_checked_at_synth():
    _, stack, _ = make_stack(load_spec(QUICKSTART, ["seeds=3"]), mlflow_tracking_server=True, mlflow_version="3.0.1")
    t = Template.from_stack(stack)
    t.has_resource_properties("AWS::SageMaker::MlflowTrackingServer", {"MlflowVersion": "3.0.1"})
    assert _warnings(stack, "bakeoff:mlflow-version") == []  # same 3.0.x server
    _, old, _ = make_stack(load_spec(QUICKSTART, ["seeds=3"]), mlflow_tracking_server=True, mlflow_version="2.16")
    (warning,) = _warnings(old, "bakeoff:mlflow-version")
    assert re.search(r"mlflow==2\.16\.2", warning)
    cdk.assertions.Annotations.from_stack(old).has_warning("*", Match.string_like_regexp(r"mlflow==2\.16\.2"))
    # The construct's refusal (thrown in its JavaScript): one line, naming the construct and the prop.
    with pytest.raises(SpecError) as info:
        make_stack(load_spec(QUICKSTART, ["seeds=3"]), mlflow_tracking_server=True, mlflow_version="latest")
    assert str(info.value).startswith('Test/Bakeoff: mlflowVersion "latest" is not an MLflow version such as "3.0"')
    assert "\n" not in str(info.value)


def test_bad_spec_stops_synth_with_the_cli_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(QUICKSTART.read_text().replace("ml.trn1.32xlarge", "ml.trn1.33xlarge"))
    with pytest.raises(SpecError) as info:
        make_stack(bad)
    from conftest import bakeoff

    cli = bakeoff("validate", bad)
    assert cli.returncode == 2
    assert cli.stderr.strip() == f"bakeoff: error: {info.value}"


EVERYTHING_ACKS = sorted(
    ["mlflow-artifacts", "job-names", "job-names", "prefix-objects", "unscopable",
     "log-streams", "log-streams", "log-streams", "log-streams",
     "deployment-managed-policy", "deployment-actions", "deployment-actions",
     "deployment-actions", "deployment-actions", "deployment-actions", "deployment-objects",
     "deployment-objects", "deployment-runtime",
     # grant_start_execution(team role): executions, the jobs it reports on, the evaluations
     "executions", "job-names", "job-names", "evaluations"])


def test_cdk_nag_zero_findings_and_every_acknowledgment_asserted(tmp_path):
    def build(stack):
        construct = BakeoffPipeline(stack, "Bakeoff", spec=load_spec(QUICKSTART), mlflow_tracking_server=True,
                                    schedule=cdk.aws_events.Schedule.rate(cdk.Duration.days(1)))
        # As the README shows it: granting start to a team role passes cdk-nag.
        construct.grant_start_execution(iam.Role(stack, "Team", assumed_by=iam.AccountRootPrincipal()))
        return construct

    plugin, construct = nag_report(tmp_path, build)
    stack = cdk.Stack.of(construct)
    assert_acknowledgments_exact(plugin, stack)
    records = acknowledgments(stack)
    rules = sorted({finding.split("[")[0] for _, finding, _ in records})
    assert rules == ["AwsSolutions::AwsSolutions-IAM4", "AwsSolutions::AwsSolutions-IAM5",
                     "AwsSolutions::AwsSolutions-L1"]
    # The whole list, so none can be added silently.
    assert sorted(reason for _, _, reason in records) == EVERYTHING_ACKS
    # Each acknowledgment sits on the one policy that holds the statement it names, never on a
    # role: a wildcard added later anywhere else is still a finding.
    for path, finding, _ in records:
        if "IAM5" in finding:
            assert not path.endswith(("ExecutionRole", "MlflowRole", "ScheduleRole", "Team")), path
    assert all(len(r) > 40 for r in REASONS.values())


def test_cfn_lint_passes_on_the_synthesized_templates(quickstart, tmp_path):
    stack, _, t = quickstart
    # And one stack with every option: MLflow, schedule, grant, DESTROY, VPC and KMS, S3 data.
    _, full, construct = make_stack(secured_spec(tmp_path), region="eu-south-1", mlflow_tracking_server=True,
                                    removal_policy=cdk.RemovalPolicy.DESTROY,
                                    schedule=cdk.aws_events.Schedule.rate(cdk.Duration.days(1)),
                                    allowed_data_uris=["s3://team-data/other/"])
    construct.grant_start_execution(iam.Role(full, "Team", assumed_by=iam.AccountRootPrincipal()))
    paths = []
    for name, template in (("quickstart", t), ("full", Template.from_stack(full))):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(template.to_json()))
        paths.append(str(path))
    proc = subprocess.run([str(Path(sys.executable).with_name("cfn-lint")), "--format", "json", *paths],
                          capture_output=True, text=True)
    findings = json.loads(proc.stdout or "[]")
    errors = [f for f in findings if f["Level"] == "Error"]
    assert errors == []
    # Tolerated: W3005 on CDK's own BucketDeployment handler and auto-delete provider (aws-cdk-lib
    # emits a redundant DependsOn).
    cdk_own = ("CDKBucketDeployment", "S3AutoDeleteObjectsCustomResourceProvider")
    others = [f for f in findings if not (f["Rule"]["Id"] == "W3005" and any(c in json.dumps(f) for c in cdk_own))]
    assert others == []


def test_no_secrets_or_account_literals(quickstart):
    _, _, t = quickstart
    text = json.dumps(t.to_json())
    # Twelve digits inside a hex content hash (the code bundle's S3 key) are not an account.
    accounts = set(re.findall(r"(?<![0-9a-f])[0-9]{12}(?![0-9a-f])", text))
    assert accounts <= {registry_account("us-east-1")}  # AWS's public Deep Learning Containers registry
    assert "000000000000" not in text and "AKIA" not in text


def test_npx_cdk_synth_works_offline_without_credentials(tmp_path):
    npx = shutil.which("npx")
    assert npx, "Node.js/npx is required for the CDK CLI"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_"))}
    env.update(PATH=f"{Path(sys.executable).parent}:{env['PATH']}", AWS_EC2_METADATA_DISABLED="true",
               JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20", AWS_CONFIG_FILE="/nonexistent",
               AWS_SHARED_CREDENTIALS_FILE="/nonexistent")
    out = tmp_path / "cdk.out"
    proc = subprocess.run([npx, "--no-install", "cdk", "synth", "-q", "-o", str(out), "-c", "region=af-south-1"],
                          cwd=ROOT / "cdk", env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    templates = sorted(p.name for p in out.glob("*.template.json"))
    assert "Bakeoff-quickstart.template.json" in templates
    report = json.loads((out / "validation-report.json").read_text())
    assert report["pluginReports"][0]["violations"] == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["artifacts"]["Bakeoff-quickstart"]["environment"].endswith("/af-south-1")
    text = (out / "Bakeoff-quickstart.template.json").read_text()
    # af-south-1's Deep Learning Containers come from its own registry account: the grants...
    assert f":ecr:af-south-1:{registry_account('af-south-1')}:repository/pytorch-training-neuronx" in text
    assert "us-east-1" not in text and registry_account("us-east-1") not in text
    # ... and the definition (5 seeds: it goes through S3, as the CLI will upload it).
    files = b"".join(b for found, _ in deployed_sources(out, Template.from_json(json.loads(text)))
                     for b in found.values())
    assert f"{registry_account('af-south-1')}.dkr.ecr.af-south-1.amazonaws.com/".encode() in files
    assert b"us-east-1" not in files
