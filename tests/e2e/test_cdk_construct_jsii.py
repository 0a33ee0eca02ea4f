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
from cdk_stacks import BUCKET, QUICKSTART, deploy_time, deployed_sources, make_stack, mapping, of_type, substitute

from conftest import ROOT
from pipelines.sagemaker.cdk.reads import START_ACTIONS
from pipelines.sagemaker.cdk.reasons import REASONS
from pipelines.spec.loader import load_spec

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


def bundle(tmp_path, *overrides):
    out = tmp_path / "bundle"
    sets = [a for o in overrides for a in ("--set", o)]
    _run([str(Path(sys.executable).with_name("bakeoff")), "synth", str(QUICKSTART), *sets, "--region", REGION,
          "--cdk-out", str(out), "-q"], cwd=ROOT)
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
    script = f"""
import aws_cdk as cdk, bakeoff_cdk_construct as b
app = cdk.App(outdir={str(tmp_path / 'py.jsii')!r})
stack = cdk.Stack(app, {STACK!r}, env=cdk.Environment(region={REGION!r}))
b.BakeoffPipeline(stack, "Bakeoff", bundle_dir={str(bundle_dir)!r})
app.synth()
"""
    env = _env()
    env["PYTHONPATH"] = str(site)
    _run([sys.executable, "-c", script], cwd=tmp_path, env=env, timeout=300)
    template = Template.from_json(json.loads((tmp_path / "py.jsii" / f"{STACK}.template.json").read_text()))
    assert definition(template) == definition(ts)


def test_the_committed_api_reference_is_current(built, tmp_path):
    _npx("jsii-docgen", "--output", str(tmp_path / "API.md"))
    assert (tmp_path / "API.md").read_text() == (CONSTRUCT / "API.md").read_text(), \
        "cdk/construct/API.md is stale: run `npm run docgen` in cdk/construct"
