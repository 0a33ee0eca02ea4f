"""The command line as a user meets it."""
import re
import subprocess
import sys

from conftest import ROOT, bakeoff


def test_help_lists_every_command():
    proc = bakeoff("--help")
    assert proc.returncode == 0
    from bakeoff.pipelines.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in sub.choices:
        assert re.search(rf"^\s+{name}\b", proc.stdout, re.M), name


def test_version():
    proc = bakeoff("--version")
    from bakeoff import __version__

    assert proc.returncode == 0 and proc.stdout.strip() == f"bakeoff {__version__}"


def test_startup_imports_nothing_heavy():
    code = ("import sys, bakeoff.pipelines.cli.main as c; c.build_parser(); "
            "print(','.join(m for m in ('torch', 'boto3', 'botocore', 'mlflow', 'sagemaker', 'pydantic', 'rich') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_validate_shows_the_derivation(cli):
    proc = cli("validate", ROOT / "examples" / "quickstart.yaml")
    assert proc.returncode == 0, proc.stderr
    assert "leg trn1: 1 x ml.trn1.32xlarge (32 devices)" in proc.stdout
    assert "per-device batch 4 x accumulation 1 = global 32" in proc.stdout


def test_data_prepares_channels_with_sha256(tmp_path):
    proc = bakeoff("data", tmp_path)
    assert proc.returncode == 0, proc.stderr
    import hashlib
    import json

    manifest = json.loads((tmp_path / "manifest.json").read_text())
    train = tmp_path / manifest["channels"]["train"]["path"]
    assert hashlib.sha256(train.read_bytes()).hexdigest() == manifest["channels"]["train"]["sha256"]
    assert manifest["channels"]["validation"]["bytes"] > 10_000
    # Deterministic: the same bytes a second time.
    again = tmp_path / "again"
    bakeoff("data", again)
    assert json.loads((again / "manifest.json").read_text())["channels"] == manifest["channels"]


def test_instances_lists_catalog_with_prices(cli):
    proc = cli("instances")
    assert proc.returncode == 0
    assert "ml.trn1.32xlarge" in proc.stdout and "ml.p4d.24xlarge" in proc.stdout


def test_ui_without_a_run_is_bad_input(tmp_path, cli):
    proc = cli("ui", tmp_path)
    assert proc.returncode == 2 and "no MLflow store" in proc.stderr


def test_every_example_validates(cli):
    for spec in sorted((ROOT / "examples").glob("*.yaml")):
        proc = cli("validate", spec)
        assert proc.returncode == 0, (spec, proc.stderr)


def test_validate_warns_when_the_seeds_cannot_decide(tmp_path, cli):
    import json

    from evaluation_inputs import CONFIG, _jobs

    from bakeoff_runtime.verdict.evaluation import evaluate

    one = cli("validate", ROOT / "examples" / "quickstart.yaml", "--set", "seeds=1")
    assert one.returncode == 0 and "warning: seeds: 1 cannot decide anything" in one.stdout
    # A previous run whose per-seed differences spread by ~0.1 against the quickstart's 0.1 margin.
    ev = evaluate(CONFIG, _jobs(tmp_path / "jobs", [2.40, 2.61, 2.32], [2.41, 2.45, 2.40]))
    (tmp_path / "run" / "evaluation").mkdir(parents=True)
    (tmp_path / "run" / "evaluation" / "evaluation.json").write_text(json.dumps(ev))
    proc = cli("validate", ROOT / "examples" / "quickstart.yaml", "--set", "seeds=3", "--from", tmp_path / "run")
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if "parity:trn~gpu" in x)
    assert "3 seeds pass legs that truly agree only" in line and "seeds would reach 80%" in line
    missing = cli("validate", ROOT / "examples" / "quickstart.yaml", "--from", tmp_path / "nothing")
    assert missing.returncode == 2 and "has no evaluation.json" in missing.stderr
