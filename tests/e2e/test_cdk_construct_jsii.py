"""The jsii construct library (cdk/construct): jsii builds it, a TypeScript app's `cdk synth` deploys a bundle from
`bakeoff synth --cdk-out` cdk-nag clean, with the Python construct's definition byte for byte (inline and through
S3) and its execution role statement for statement, and jsii-pacmak's Python package synthesizes the same."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from cdk_stacks import (
    ACCOUNT,
    BUCKET,
    QUICKSTART,
    deploy_time,
    deployed_sources,
    make_stack,
    mapping,
    of_type,
    substitute,
)

from bakeoff.pipelines.sagemaker.cdk.reads import START_ACTIONS
from bakeoff.pipelines.sagemaker.cdk.reasons import REASONS
from bakeoff.pipelines.spec.loader import load_spec
from conftest import ROOT

CONSTRUCT = ROOT / "cdk" / "construct"
REGION = "us-west-2"
STACK = "Bakeoff-ts"


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_"))}
    env.update(PATH=f"{Path(sys.executable).parent}:{env['PATH']}", AWS_EC2_METADATA_DISABLED="true",
               JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20", AWS_CONFIG_FILE="/nonexistent",
               AWS_SHARED_CREDENTIALS_FILE="/nonexistent")
    return env


def _run(args, cwd=CONSTRUCT, timeout=600, env=None):
    proc = subprocess.run(args, cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args}: {proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def _npx(*args, **kw):
    npx = shutil.which("npx")
    assert npx, "Node.js/npx is required for the jsii construct"
    return _run([npx, "--no-install", *args], **kw)


@pytest.fixture(scope="module")
def built():
    """jsii compiles the library (its own TypeScript, and its jsii rules: what other languages see), then tsc the
    test app against it."""
    _npx("jsii", "--silence-warnings=reserved-word")
    _npx("tsc", "-p", "test-app")
    return json.loads((CONSTRUCT / ".jsii").read_text())


def bundle(tmp_path, *overrides, flags=()):
    out = tmp_path / "bundle"
    sets = [a for o in overrides for a in ("--set", o)]
    _run([str(Path(sys.executable).with_name("bakeoff")), "synth", str(QUICKSTART), *sets, "--region", REGION,
          "--cdk-out", str(out), "-q", *flags], cwd=ROOT)
    return out


def ts_synth(tmp_path, bundle_dir):
    out = tmp_path / "ts.out"
    _npx("cdk", "synth", "-q", "--app", "node test-app/app.js", "-o", str(out), "-c", f"bundleDir={bundle_dir}",
         "-c", f"region={REGION}", "-c", f"stackName={STACK}", timeout=300)
    return out, Template.from_json(json.loads((out / f"{STACK}.template.json").read_text()))


def py_synth(tmp_path, *overrides):
    app = cdk.App(outdir=str(tmp_path / "py.out"))
    _, stack, construct = make_stack(load_spec(QUICKSTART, list(overrides)), region=REGION, app=app, stack_id=STACK)
    app.synth()
    return tmp_path / "py.out", Template.from_stack(stack), construct


def definition(template):
    body = next(iter(of_type(template, "AWS::SageMaker::Pipeline").values()))["Properties"]["PipelineDefinition"]
    return substitute(body["PipelineDefinitionBody"], mapping(template)) if "PipelineDefinitionBody" in body else None


def deployed_definition(outdir, template):
    files = deploy_time(deployed_sources(outdir, template), mapping(template))
    [key] = [k for k in files if "/definition/" in k]
    return files[key]


@pytest.fixture(scope="module")
def inline(built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("inline")
    return ts_synth(tmp, bundle(tmp, "seeds=3")), py_synth(tmp, "seeds=3")


def test_the_typescript_app_is_cdk_nag_clean(inline):
    (out, _), _ = inline
    plugin = json.loads((out / "validation-report.json").read_text())["pluginReports"][0]
    assert plugin["pluginName"] == "AwsSolutions" and plugin["conclusion"] == "success" and plugin["violations"] == []
    # Every finding let through is one of the acknowledged kinds, with its reason.
    reasons = {v["reason"] for v in plugin["suppressedViolations"]}
    assert reasons and reasons <= set(REASONS.values()), reasons - set(REASONS.values())
    assert REASONS["job-names"] in reasons and REASONS["executions"] in reasons


def test_the_same_definition_byte_for_byte_as_the_python_construct(inline):
    (_, ts), (_, py, construct) = inline
    assert definition(ts) is not None and definition(ts) == definition(py)
    outputs = {k.rstrip("0123456789ABCDEF"): v["Value"] for k, v in ts.to_json()["Outputs"].items()}
    assert outputs["BakeoffPipelineName"] == construct.pipeline_name  # the same default name, per stack and path
    # A stack moving from one construct to the other keeps its bucket, role and pipeline (the same logical ids).
    for kind, prefix in (("AWS::S3::Bucket", "Bakeoff"), ("AWS::IAM::Role", "BakeoffExecutionRole"),
                         ("AWS::SageMaker::Pipeline", "Bakeoff")):
        kept = {k for k in of_type(py, kind) if k.startswith(prefix)}
        assert kept and kept == {k for k in of_type(ts, kind) if k.startswith(prefix)}, kind


def _resolved(value, m):
    if isinstance(value, list):
        return [_resolved(v, m) for v in value]
    if isinstance(value, dict):
        if {"Fn::Join", "Ref", "Fn::GetAtt"} & set(value):
            return substitute(value, m)
        return {k: _resolved(v, m) for k, v in value.items()}
    return value


def role_statements(template):
    m = mapping(template)
    bucket = next(k for k, v in template.to_json()["Resources"].items()
                  if k.startswith("BakeoffArtifacts") and v["Type"] == "AWS::S3::Bucket")
    m[json.dumps({"Fn::GetAtt": [bucket, "Arn"]}, sort_keys=True)] = f"arn:aws:s3:::{BUCKET}"
    out = {}
    for logical, policy in of_type(template, "AWS::IAM::Policy").items():
        if logical.startswith("BakeoffExecutionRole"):
            for s in policy["Properties"]["PolicyDocument"]["Statement"]:
                out[s["Sid"]] = _resolved(s, m)
    return out


def test_the_same_execution_role_as_the_python_construct(inline):
    (_, ts), (_, py, _) = inline
    assert role_statements(ts) == role_statements(py)
    assert {"PipelineJobs", "InputsReadOnly", "PullTrainingImages"} <= set(role_statements(ts))


def test_grant_start_execution_gives_a_policy_of_its_own(inline):
    (_, ts), _ = inline
    policies = {k: v["Properties"] for k, v in of_type(ts, "AWS::IAM::Policy").items() if "StartExecution" in k}
    assert len(policies) == 2  # the deployed pipeline's and the imported one's, each on the Starters role
    starters = [k for k in of_type(ts, "AWS::IAM::Role") if k.startswith("Starters")]
    for props in policies.values():
        assert [r["Ref"] for r in props["Roles"]] == starters
    statements = [s for p in policies.values() for s in p["PolicyDocument"]["Statement"]]
    assert sum(sorted(s["Action"]) == sorted(START_ACTIONS) for s in statements) == 2
    assert {s.get("Sid") for s in statements} >= {"ReportJobs", "ReadEvaluations"}  # the deployed one's reports
    rules = [r["Properties"]["EventPattern"] for r in of_type(ts, "AWS::Events::Rule").values()
             if "EventPattern" in r["Properties"]]
    kinds = {"SageMaker Model Building Pipeline Execution Status Change",
             "SageMaker Model Building Pipeline Execution Step Status Change"}
    assert {t for r in rules for t in r["detail-type"]} == kinds
    assert any(r["detail"].get("stepName") == ["ParityFailed"] for r in rules)
    [alarm] = of_type(ts, "AWS::CloudWatch::Alarm").values()
    assert alarm["Properties"]["Namespace"] == "AWS/Sagemaker/ModelBuildingPipeline"
    assert alarm["Properties"]["MetricName"] == "ExecutionFailed"


def test_a_schedule_starts_the_pipeline_through_a_role_for_that_one_rule(inline):
    (_, ts), (_, _, construct) = inline
    [rule] = [r["Properties"] for r in of_type(ts, "AWS::Events::Rule").values()
              if "ScheduleExpression" in r["Properties"]]
    assert rule["ScheduleExpression"] == "cron(0 3 * * ? *)" and rule["Name"] == construct.pipeline_name
    [target] = rule["Targets"]
    assert target["SageMakerPipelineParameters"] == {"PipelineParameterList": [{"Name": "MaxSteps", "Value": "100"}]}
    roles = [k for k in of_type(ts, "AWS::IAM::Role") if k.startswith("BakeoffScheduleRole")]
    [role] = [of_type(ts, "AWS::IAM::Role")[k]["Properties"] for k in roles]
    condition = role["AssumeRolePolicyDocument"]["Statement"][0]["Condition"]["StringEquals"]
    assert f":rule/{construct.pipeline_name}" in json.dumps(condition["aws:SourceArn"])
    statements = [s for p in of_type(ts, "AWS::IAM::Policy").values()
                  if p["Properties"]["Roles"] == [{"Ref": k} for k in roles]
                  for s in p["Properties"]["PolicyDocument"]["Statement"]]
    assert [s["Action"] for s in statements] == ["sagemaker:StartPipelineExecution"]


def test_a_definition_through_s3_is_the_same_once_deployed(built, tmp_path):
    # Five seeds: too long for the template, so both deploy it to the bucket with deploy-time markers.
    ts_out, ts = ts_synth(tmp_path, bundle(tmp_path))
    py_out, py, _ = py_synth(tmp_path)
    assert definition(ts) is None and definition(py) is None
    assert deployed_definition(ts_out, ts) == deployed_definition(py_out, py)


def test_the_python_package_jsii_pacmak_builds_deploys_the_same(inline, tmp_path):
    (_, ts), _ = inline
    _npx("jsii-pacmak", "--targets", "python", "--outdir", str(tmp_path / "dist"))
    [wheel] = (tmp_path / "dist" / "python").glob("bakeoff_cdk_construct-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    bundle_dir = bundle(tmp_path, "seeds=3")
    # From Python, the type union takes a topic, and a list a list.
    script = f"""
import aws_cdk as cdk, bakeoff_cdk_construct as b
from aws_cdk import aws_sns as sns
app = cdk.App(outdir={str(tmp_path / 'py.jsii')!r})
stack = cdk.Stack(app, {STACK!r}, env=cdk.Environment(region={REGION!r}))
b.BakeoffPipeline(stack, "Bakeoff", bundle_dir={str(bundle_dir)!r},
                  notify=sns.Topic(stack, "Outcomes", enforce_ssl=True), allowed_data_uris={ALLOWED!r})
app.synth()
"""
    env = _env()
    env["PYTHONPATH"] = str(site)
    _run([sys.executable, "-c", script], cwd=tmp_path, env=env, timeout=300)
    template = Template.from_json(json.loads((tmp_path / "py.jsii" / f"{STACK}.template.json").read_text()))
    assert definition(template) == definition(ts)
    topic = next(iter(of_type(template, "AWS::SNS::Topic")))
    rules = [r["Properties"] for r in of_type(template, "AWS::Events::Rule").values()]
    assert len(rules) == 4 and all(r["Targets"][0]["Arn"] == {"Ref": topic} for r in rules)
    assert sum(s.get("Sid", "").startswith("ReadObjects") for s in statements(template).values()) == len(ALLOWED)


def test_the_committed_api_reference_is_current(built, tmp_path):
    _npx("jsii-docgen", "--output", str(tmp_path / "API.md"))
    assert (tmp_path / "API.md").read_text() == (CONSTRUCT / "API.md").read_text(), \
        "cdk/construct/API.md is stale: run `npm run docgen` in cdk/construct"


# --- what cdk/bakeoff_cdk's options add, from a TypeScript app and from the Python construct -------------------
ALLOWED = ["s3://team-data/ablation/", "s3://team-data/other/"]


def ts_features(tmp_path, bundle_dir, **context):
    out = tmp_path / "ts.out"
    extra = [a for k, v in context.items() for a in ("-c", f"{k}={v}")]
    _npx("cdk", "synth", "-q", "--app", "node test-app/features.js", "-o", str(out), "-c", f"bundleDir={bundle_dir}",
         "-c", f"region={REGION}", "-c", f"stackName={STACK}", *extra, timeout=300)
    return out, Template.from_json(json.loads((out / f"{STACK}.template.json").read_text()))


def py_features(tmp_path, build, *overrides):
    """The Python construct with cdk-nag's checks, as the repository's app runs them."""
    from bakeoff_cdk import add_security_checks

    out = tmp_path / "py.out"
    app = cdk.App(outdir=str(out))
    stack = cdk.Stack(app, STACK, env=cdk.Environment(region=REGION))
    construct = build(stack, load_spec(QUICKSTART, list(overrides)))
    add_security_checks(app)
    app.synth()  # an unacknowledged finding stops this
    return out, Template.from_json(json.loads((out / f"{STACK}.template.json").read_text())), construct


def flat(value):
    """A template fragment with each intrinsic written as one string (Ref X -> <X>, GetAtt -> <X.Attr>, a join
    joined): two templates with the same logical ids compare equal exactly when they deploy the same values."""
    if isinstance(value, list):
        return [flat(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"Ref"}:
            return f"<{value['Ref']}>"
        if set(value) == {"Fn::GetAtt"}:
            return "<{}.{}>".format(*value["Fn::GetAtt"])
        if set(value) == {"Fn::Join"}:
            sep, parts = value["Fn::Join"]
            return sep.join(str(flat(p)) for p in parts)
        return {k: flat(v) for k, v in value.items()}
    return value


def resources(template, kind):
    return {k: flat(v["Properties"]) for k, v in of_type(template, kind).items()}


def statements(template):
    """(policy's logical id, Sid) -> statement, for every IAM policy of the stack."""
    return {(k, s.get("Sid", json.dumps(s, sort_keys=True))): s
            for k, p in resources(template, "AWS::IAM::Policy").items() for s in p["PolicyDocument"]["Statement"]}


def nag_clean(outdir):
    plugin = json.loads((outdir / "validation-report.json").read_text())["pluginReports"][0]
    assert plugin["pluginName"] == "AwsSolutions" and plugin["conclusion"] == "success" and plugin["violations"] == []
    return {v["reason"] for v in plugin["suppressedViolations"]}


def warnings(outdir):
    """The synth warnings of a cloud assembly: in the manifest, or in each stack's <stack>.metadata.json."""
    manifest = json.loads((outdir / "manifest.json").read_text())
    tables = [a.get("metadata") or {} for a in manifest["artifacts"].values()]
    tables += [json.loads(f.read_text()) for f in outdir.glob("*.metadata.json")]
    return [m["data"] for table in tables for entries in table.values() for m in entries
            if m["type"] == "aws:cdk:warning"]


def assert_same_stack(ts, py):
    """The same resources (logical id and type), IAM statements Sid by Sid, rules, topic policy, tracking server,
    pipeline (its definition byte for byte) and outputs."""
    # (The CDK CLI adds its CDKMetadata resource to what it synthesizes.)
    kinds = lambda t: {(k, v["Type"]) for k, v in t.to_json()["Resources"].items() if k != "CDKMetadata"}  # noqa: E731
    assert kinds(ts) == kinds(py), kinds(ts) ^ kinds(py)
    assert statements(ts) == statements(py)
    for kind in ("AWS::IAM::Role", "AWS::Events::Rule", "AWS::SNS::TopicPolicy", "AWS::SageMaker::Pipeline",
                 "AWS::SageMaker::MlflowTrackingServer", "AWS::S3::Bucket"):
        assert resources(ts, kind) == resources(py, kind), kind
    assert flat(ts.to_json()["Outputs"]) == flat(py.to_json()["Outputs"])


@pytest.fixture(scope="module")
def server_notify_allowed(built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("features")
    bundle_dir = bundle(tmp, "seeds=3", flags=["--mlflow-server"])
    ts_out, ts = ts_features(tmp, bundle_dir, notify=1, allowedDataUris=",".join(ALLOWED))

    def build(stack, spec):
        from aws_cdk import aws_sns as sns

        from bakeoff_cdk import BakeoffPipeline

        topic = sns.Topic(stack, "Outcomes", enforce_ssl=True)
        return BakeoffPipeline(stack, "Bakeoff", spec=spec, mlflow_tracking_server=True, notify=topic,
                               allowed_data_uris=ALLOWED)

    py_out, py, construct = py_features(tmp, build, "seeds=3")
    return (ts_out, ts), (py_out, py, construct)


def test_a_tracking_server_notifications_and_allowed_data_are_the_python_constructs(server_notify_allowed):
    (ts_out, ts), (py_out, py, construct) = server_notify_allowed
    assert nag_clean(py_out)
    reasons = nag_clean(ts_out)
    assert {REASONS["mlflow-artifacts"], REASONS["data-prefixes"]} <= reasons <= set(REASONS.values())
    assert_same_stack(ts, py)
    assert len(of_type(ts, "AWS::SageMaker::MlflowTrackingServer")) == 1 and len(of_type(ts, "AWS::Events::Rule")) == 4
    sids = {sid for _, sid in statements(ts)}
    assert {"MlflowTracking", "MlflowArtifacts"} <= sids
    assert sum(sid.startswith("ReadObjects") for sid in sids) == len(ALLOWED)
    # Each outcome's line reaches the topic, from a rule on this pipeline's events.
    texts = [r["Targets"][0]["InputTransformer"]["InputTemplate"] for r in resources(ts, "AWS::Events::Rule").values()]
    assert sum("bakeoff verdict:" in t for t in texts) == 3 and any("without a verdict" in t for t in texts)


def test_with_a_tracking_server_the_same_files_are_deployed(server_notify_allowed):
    """The evaluation config names the server: both render it at deploy time under the same key of the stack's
    own (the definition names that key), to the same bytes."""
    (ts_out, ts), (py_out, py, construct) = server_notify_allowed
    server = construct.mlflow_tracking_server_arn
    arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:mlflow-tracking-server/{construct.pipeline_name}"
    ts_files = deploy_time(deployed_sources(ts_out, ts), mapping(ts, mlflow=arn))
    py_files = deploy_time(deployed_sources(py_out, py), mapping(py, mlflow=arn))
    assert ts_files == py_files
    [config] = [k for k in ts_files if "/eval-config/" in k and arn.encode() in ts_files[k]]
    [pipeline] = resources(ts, "AWS::SageMaker::Pipeline").values()
    assert config in pipeline["PipelineDefinition"]["PipelineDefinitionBody"] and server is not None


@pytest.fixture(scope="module")
def given_role(built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("role")
    ts_out, ts = ts_features(tmp, bundle(tmp, "seeds=3"), givenRole=1, allowedDataUris=ALLOWED[1])

    def build(stack, spec):
        from aws_cdk import aws_iam as iam

        from bakeoff_cdk import BakeoffPipeline

        team = iam.Role(stack, "Team", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
        return BakeoffPipeline(stack, "Bakeoff", spec=spec, role=team, allowed_data_uris=[ALLOWED[1]])

    py_out, py, construct = py_features(tmp, build, "seeds=3")
    return (ts_out, ts), (py_out, py, construct)


def test_a_given_role_is_used_as_is_like_the_python_constructs(given_role):
    (ts_out, ts), (py_out, py, _) = given_role
    assert nag_clean(ts_out) and nag_clean(py_out)
    assert_same_stack(ts, py)
    roles = list(of_type(ts, "AWS::IAM::Role"))
    assert not [r for r in roles if r.startswith("BakeoffExecutionRole")]
    [team] = [r for r in roles if r.startswith("Team")]
    [pipeline] = resources(ts, "AWS::SageMaker::Pipeline").values()
    assert pipeline["RoleArn"] == f"<{team}.Arn>"
    assert f"<{team}.Arn>" in pipeline["PipelineDefinition"]["PipelineDefinitionBody"]
    assert not [p for p in resources(ts, "AWS::IAM::Policy").values() if {"Ref": team} in p.get("Roles", [])
                or f"<{team}>" in p.get("Roles", [])]  # nothing granted to it
    # What the given role must read is said, by both.
    said = [w for w in warnings(ts_out) if "given, not made" in w]
    assert said and ALLOWED[1] in said[0] and [w for w in warnings(py_out) if "given, not made" in w]


def test_the_repositorys_app_and_a_typescript_app_deploy_the_same_definition(built, tmp_path):
    """`npx cdk synth` of cdk/app.py (the repository's Python app) and of a TypeScript app with the jsii construct,
    from the same spec: both cdk-nag clean, the same pipeline definition byte for byte once deployed."""
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(QUICKSTART, specs / QUICKSTART.name)
    py_out = tmp_path / "app.out"
    _npx("cdk", "synth", "-q", "-o", str(py_out), "-c", f"specDir={specs}", "-c", f"region={REGION}",
         cwd=ROOT / "cdk", timeout=600)
    stack = "Bakeoff-quickstart"  # the app's stack for the spec; the TypeScript app names its stack the same
    py = Template.from_json(json.loads((py_out / f"{stack}.template.json").read_text()))
    out = tmp_path / "bundle"
    _run([str(Path(sys.executable).with_name("bakeoff")), "synth", str(specs / QUICKSTART.name), "--region", REGION,
          "--cdk-out", str(out), "-q"], cwd=ROOT)
    ts_out = tmp_path / "ts.out"
    # The TypeScript app under the Python app's feature flags (cdk/cdk.json), which change how CDK writes policies.
    flags = {k: v for k, v in json.loads((ROOT / "cdk" / "cdk.json").read_text())["context"].items() if k != "specDir"}
    _npx("cdk", "synth", "-q", "--app", "node test-app/features.js", "-o", str(ts_out), "-c", f"bundleDir={out}",
         "-c", f"region={REGION}", "-c", f"stackName={stack}",
         *[a for k, v in flags.items() for a in ("-c", f"{k}={json.dumps(v)}")], timeout=300)
    ts = Template.from_json(json.loads((ts_out / f"{stack}.template.json").read_text()))
    assert nag_clean(py_out) and nag_clean(ts_out)
    assert definition(py) is None and definition(ts) is None  # five seeds: deployed through the bucket
    assert deployed_definition(ts_out, ts) == deployed_definition(py_out, py)
    assert resources(ts, "AWS::SageMaker::Pipeline") == resources(py, "AWS::SageMaker::Pipeline")
    # bakeoff_cdk is the jsii construct given a spec: the whole stack is the TypeScript app's, resource for
    # resource, assets (named by their content) included; only the app's stack description and CDK's own
    # analytics resource (which names the libraries each app loaded) differ.
    same = lambda t: {k: v for k, v in t.to_json().items() if k != "Description"}  # noqa: E731
    py_json, ts_json = same(py), same(ts)
    for t in (py_json, ts_json):
        assert t["Resources"].pop("CDKMetadata")["Type"] == "AWS::CDK::Metadata"
    assert py_json == ts_json
