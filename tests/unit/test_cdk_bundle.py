"""`bakeoff synth --cdk-out DIR`: the bundle the jsii construct (cdk/construct) deploys. Its definition is
`bakeoff synth --bucket B --role R` once the sentinels are replaced, its assets are the compiler's at their keys,
and its grants name only placeholders the construct fills in (tests/e2e/test_cdk_construct_jsii.py synthesizes
it and compares it with the Python construct)."""
import json
import re

from conftest import ROOT
from pipelines.sagemaker.cdk.placeholders import BUCKET_SENTINEL, role_sentinel

QUICKSTART = ROOT / "examples" / "quickstart.yaml"
ROLE = "arn:aws:iam::123456789012:role/r"


def test_the_bundle_is_the_compilers_definition_and_assets(tmp_path, cli):
    out = tmp_path / "bundle"
    proc = cli("synth", QUICKSTART, "--region", "eu-west-1", "--cdk-out", out)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["region"] == "eu-west-1" and manifest["format"] == 1
    assert manifest["sentinels"] == {"bucket": BUCKET_SENTINEL, "role": role_sentinel("eu-west-1")}
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
