"""The CDK helpers the tests/e2e/test_cdk*.py files share: a stack in a region, deploy-time substitution of the
template's intrinsics and of BucketDeployment markers, cdk-nag reports and the secured spec."""
import io
import json
import os
import sys
import tarfile
from pathlib import Path

from conftest import ROOT

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
sys.path.insert(0, str(ROOT / "cdk"))

import aws_cdk as cdk  # noqa: E402

from bakeoff.pipelines.sagemaker.cdk.placeholders import BUCKET_SENTINEL, SENTINEL_ACCOUNT, TAG  # noqa: E402
from bakeoff.pipelines.spec.loader import load_spec  # noqa: E402
from bakeoff_cdk import REASONS, BakeoffPipeline, add_security_checks  # noqa: E402

# Every sentinel bakeoff's compiler writes for a construct contains one of these: none may survive synthesis.
PLACEHOLDER_MARKS = (BUCKET_SENTINEL, TAG, "role-sentinel-7f3a", f":{SENTINEL_ACCOUNT}:", f"::{SENTINEL_ACCOUNT}:")

QUICKSTART = ROOT / "examples" / "quickstart.yaml"


BUCKET, ROLE = "resolved-bucket", "arn:aws:iam::123456789012:role/resolved-role"


ACCOUNT = "123456789012"


def mlflow_arn(region="us-east-1"):
    return f"arn:aws:sagemaker:{region}:{ACCOUNT}:mlflow-tracking-server/resolved"


def make_stack(spec=QUICKSTART, region="us-east-1", app=None, stack_id="Test", **kw):
    app = app or cdk.App()
    stack = cdk.Stack(app, stack_id, env=cdk.Environment(region=region) if region else None)
    construct = BakeoffPipeline(stack, "Bakeoff", spec=load_spec(spec) if isinstance(spec, Path) else spec, **kw)
    return app, stack, construct


def of_type(template, kind):
    return {k: v for k, v in template.to_json()["Resources"].items() if v["Type"] == kind}


def policies(template, prefix=""):
    """logical id -> statements of every AWS::IAM::Policy whose id starts with prefix."""
    return {k: v["Properties"]["PolicyDocument"]["Statement"] for k, v in of_type(template, "AWS::IAM::Policy").items()
            if k.startswith(prefix)}


def statements_by_sid(template, prefix):
    return {s["Sid"]: s for statements in policies(template, prefix).values() for s in statements if "Sid" in s}


def substitute(value, mapping):
    """Resolve the CloudFormation intrinsics of a string the way a deploy would."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(substitute(p, mapping) for p in parts)
    key = json.dumps(value, sort_keys=True)
    return mapping[key]


def inline_definition(template, **values):
    """The text of the stack's inline pipeline definition as a deploy writes it: its intrinsics resolved with
    `mapping(template, **values)`."""
    pipeline = next(iter(of_type(template, "AWS::SageMaker::Pipeline").values()))["Properties"]
    return substitute(pipeline["PipelineDefinition"]["PipelineDefinitionBody"], mapping(template, **values))


def mapping(template, mlflow=None, partition="aws"):
    """The deploy-time values of the stack's bucket, role, MLflow server and pseudo parameters."""
    resources = template.to_json()["Resources"]
    bucket = next(k for k, v in resources.items() if k.startswith("BakeoffArtifacts")
                  and v["Type"] == "AWS::S3::Bucket")
    role = next(k for k, v in resources.items() if k.startswith("BakeoffExecutionRole")
                and v["Type"] == "AWS::IAM::Role")
    out = {json.dumps({"Ref": bucket}): BUCKET, json.dumps({"Fn::GetAtt": [role, "Arn"]}, sort_keys=True): ROLE,
           json.dumps({"Ref": "AWS::Partition"}): partition, json.dumps({"Ref": "AWS::AccountId"}): ACCOUNT}
    if mlflow:
        server = next(k for k, v in resources.items() if v["Type"] == "AWS::SageMaker::MlflowTrackingServer")
        out[json.dumps({"Fn::GetAtt": [server, "TrackingServerArn"]}, sort_keys=True)] = mlflow
    return out


def deployed_sources(outdir: Path, template):
    """[(files, markers)] of the BakeoffPipeline's BucketDeployment, read from the cloud
    assembly: each source's files as the CDK CLI would upload them, and its markers."""
    deployment = next(v for k, v in of_type(template, "Custom::CDKBucketDeployment").items()
                      if k.startswith("BakeoffAssets"))["Properties"]
    markers = deployment.get("SourceMarkers") or [{} for _ in deployment["SourceObjectKeys"]]
    out = []
    for key, marks in zip(deployment["SourceObjectKeys"], markers, strict=True):
        folder = outdir / f"asset.{key.removesuffix('.zip')}"
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        out.append((files, marks))
    return out


def deploy_time(files_and_markers, mapping_):
    """key -> body after the BucketDeployment handler replaced the markers."""
    out = {}
    for files, marks in files_and_markers:
        values = {m: substitute(v, mapping_) for m, v in marks.items()}
        for key, body in files.items():
            for marker, value in values.items():
                body = body.replace(marker.encode(), value.encode())
            out[key] = body
    return out


def placeholder_hits(blob: bytes, where: str) -> list[str]:
    hits = [f"{where}: {m}" for m in PLACEHOLDER_MARKS if m.encode() in blob]
    if blob[:2] == b"\x1f\x8b":  # a code bundle: look inside
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            for member in tar.getmembers():
                if member.isfile():
                    hits += placeholder_hits(tar.extractfile(member).read(), f"{where}!{member.name}")
    return hits


SECURED = {
    "name": "secured", "description": "quickstart with a VPC, KMS keys and its data in S3",
    "model": {"d_model": 64, "n_layers": 2, "n_heads": 4},
    "training": {"global_batch_size": 32, "sequence_length": 64, "max_steps": 200, "eval_interval": 50},
    "data": {"channels": {"train": "s3://team-data/corpus/train/", "validation": "s3://team-data/corpus/validation/"}},
    "legs": [{"name": "trn1", "instance_type": "ml.trn1.32xlarge", "backend": "neuron", "precision": "bf16"},
             {"name": "p4d", "instance_type": "ml.p4d.24xlarge", "backend": "cuda", "precision": "bf16"}],
    "seeds": 2,
    "parity": {"metric": "val_loss", "margin": 0.1, "baseline": "p4d"},
    "security": {"subnets": ["subnet-0123456789abcdef0"], "security_group_ids": ["sg-0123456789abcdef0"],
                 "output_kms_key": "alias/bakeoff-output", "volume_kms_key": "1234abcd-12ab-34cd-56ef-1234567890ab"},
}


def secured_spec(tmp_path, **over):
    """A spec with the `security:` section (VPC, both KMS keys) and S3 data channels."""
    from conftest import write_spec

    data = json.loads(json.dumps(SECURED))
    for key, value in over.items():
        data[key] = value
    return load_spec(write_spec(tmp_path / "secured.yaml", data))


def nag_report(tmp_path, build, region="us-west-2"):
    """Synthesize with cdk-nag; returns (plugin report, construct)."""
    app = cdk.App(outdir=str(tmp_path / "out"))
    stack = cdk.Stack(app, "Nag", env=cdk.Environment(region=region))
    construct = build(stack)
    add_security_checks(app)
    app.synth()  # an unacknowledged finding would stop this
    report = json.loads((tmp_path / "out" / "validation-report.json").read_text())
    return report["pluginReports"][0], construct


def acknowledgments(scope):
    """[(construct path, finding, reason key)] of every cdk-nag acknowledgment under `scope` (a stack: the
    stack-level CDK handlers' too), as CDK records them in the construct tree's metadata (and the assembly's)."""
    key = {text: k for k, text in REASONS.items()}
    out = []
    for c in scope.node.find_all():
        for entry in c.node.metadata:
            if entry.type == "aws:cdk:acknowledged-rules":
                out += [(c.node.path, finding, key[reason]) for finding, reason in entry.data.items()]
    return out


def assert_acknowledgments_exact(plugin, scope):
    """cdk-nag passed, and what it suppressed in `scope`'s stack is exactly what was acknowledged there."""
    assert plugin["pluginName"] == "AwsSolutions" and plugin["conclusion"] == "success"
    assert plugin["violations"] == []
    suppressed = {(v["acknowledgedAt"], v["acknowledgedId"], v["reason"]) for v in plugin["suppressedViolations"]}
    made = acknowledgments(cdk.Stack.of(scope))
    recorded = {(path, finding, REASONS[reason]) for path, finding, reason in made}
    assert suppressed <= recorded, suppressed - recorded  # every suppression is one the construct made
    assert recorded - suppressed == set(), recorded - suppressed  # and every acknowledgment is needed
    assert len(recorded) == len(made)  # none twice
