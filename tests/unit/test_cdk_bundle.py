"""`bakeoff synth --cdk-out DIR`: the bundle the jsii construct (cdk/construct) deploys. Its definition is
`bakeoff synth --bucket B --role R` once the sentinels are replaced, its assets are the compiler's at their keys,
and its grants name only placeholders the construct fills in (tests/e2e/test_cdk_construct_jsii.py synthesizes
it and compares it with the Python construct)."""
import hashlib
import json
import re

from bakeoff.pipelines.sagemaker.cdk.placeholders import BUCKET_SENTINEL, mlflow_sentinel, role_sentinel
from conftest import ROOT

QUICKSTART = ROOT / "examples" / "quickstart.yaml"
ROLE = "arn:aws:iam::123456789012:role/r"


def test_the_bundle_is_the_compilers_definition_and_assets(tmp_path, cli):
    out = tmp_path / "bundle"
    proc = cli("synth", QUICKSTART, "--region", "eu-west-1", "--cdk-out", out)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["region"] == "eu-west-1" and manifest["format"] == 2
    assert manifest["sentinels"] == {"bucket": BUCKET_SENTINEL, "role": role_sentinel("eu-west-1"), "mlflow": None}
    assert manifest["renderedAssets"] == [] and manifest["mlflowServer"] is None
    text = (out / "definition.json").read_text()
    plain = cli("synth", QUICKSTART, "--region", "eu-west-1", "--bucket", "my-bucket", "--role", ROLE, "--json")
    expected = json.loads(plain.stdout)
    deployed = text.replace(BUCKET_SENTINEL, "my-bucket").replace(role_sentinel("eu-west-1"), ROLE)
    assert json.loads(deployed) == expected["definition"]
    assert deployed == json.dumps(expected["definition"], sort_keys=True, separators=(",", ":"))
    files = sorted(p.relative_to(out / "assets").as_posix() for p in (out / "assets").rglob("*") if p.is_file())
    assert files == manifest["assetKeys"] == sorted(a["key"] for a in expected["assets"])


def test_the_grants_name_only_the_constructs_placeholders(tmp_path, cli):
    out = tmp_path / "bundle"
    assert cli("synth", QUICKSTART, "--region", "us-west-2", "--cdk-out", out).returncode == 0
    manifest = json.loads((out / "manifest.json").read_text())
    text = json.dumps(manifest["executionGrants"] + manifest["startGrants"])
    assert set(re.findall(r"\$\{([^}]*)\}", text)) == {"AWS::Partition", "AWS::AccountId", "BucketArn", "RoleArn",
                                                       "PipelineArn"}
    assert "000000000000" not in text and BUCKET_SENTINEL not in text
    assert set(manifest["reasons"]) >= {g["reason"] for g in manifest["executionGrants"] if g["reason"]}
    assert manifest["gateSteps"] == {"fail": "ParityFailed", "inconclusive": "ParityInconclusive"}


def test_bad_combinations_are_one_line_and_exit_2(tmp_path, cli):
    proc = cli("synth", QUICKSTART, "--bucket", "b", "--cdk-out", tmp_path / "x")
    assert proc.returncode == 2 and "creates the bucket and role" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("synth", QUICKSTART, "--region", "mars-1", "--cdk-out", tmp_path / "x")
    assert proc.returncode == 2 and "mars-1" in proc.stderr
    assert not (tmp_path / "x").exists()
    proc = cli("synth", QUICKSTART, "--region", "us-west-2", "--mlflow-server")
    assert proc.returncode == 2 and "--cdk-out" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("synth", QUICKSTART, "--region", "cn-north-1", "--mlflow-server", "--cdk-out", tmp_path / "x")
    assert proc.returncode == 2 and "aws-us-gov partitions only" in proc.stderr and "Traceback" not in proc.stderr


def test_a_bundle_for_a_tracking_server_renders_what_names_it(tmp_path, cli):
    """With --mlflow-server the jobs track to the server the construct creates: its ARN is a sentinel in the
    definition and in the assets that name it (kept apart, with their hashes), and the execution role's grant
    names the construct's placeholder."""
    out = tmp_path / "bundle"
    assert cli("synth", QUICKSTART, "--region", "us-west-2", "--cdk-out", out, "--mlflow-server").returncode == 0
    manifest = json.loads((out / "manifest.json").read_text())
    server = mlflow_sentinel("us-west-2")
    assert manifest["sentinels"]["mlflow"] == server and server in (out / "definition.json").read_text()
    assert manifest["mlflowServer"] == {"version": "3.0", "clientForServer": {"2.13": "2.13.2", "2.16": "2.16.2",
                                                                              "3.0": "3.0.0"}}
    [rendered] = manifest["renderedAssets"]
    body = (out / "rendered" / rendered["key"]).read_bytes()
    assert "/eval-config/" in rendered["key"] and server.encode() in body
    assert rendered["sha256"] == hashlib.sha256(body).hexdigest() and rendered["key"] not in manifest["assetKeys"]
    assert not any(server.encode() in p.read_bytes() for p in (out / "assets").rglob("*") if p.is_file())
    [mlflow] = [g for g in manifest["executionGrants"] if g["name"] == "MlflowTracking"]
    assert mlflow["statements"][0]["Resource"] == ["${MlflowArn}"]
    assert {"mlflow-artifacts", "data-prefixes"} <= set(manifest["reasons"])
