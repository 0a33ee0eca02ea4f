"""A spec cannot put a secret into a job's environment: SageMaker returns a job's Environment to
anyone who may call DescribeTrainingJob, and the pipeline definition stores it."""
import pytest
import yaml

import bakeoff.pipelines.cli.main as cli
from bakeoff.pipelines.spec.model import looks_like_secret
from conftest import ROOT

QUICKSTART = ROOT / "examples" / "quickstart.yaml"


@pytest.mark.parametrize("name", ["HF_TOKEN", "GITHUB_TOKEN", "WANDB_API_KEY", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY",
                                  "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN", "OPENAI_APIKEY", "SSH_PRIVATE_KEY"])
def test_a_secret_named_environment_value_is_one_located_line(tmp_path, capsys, name):
    spec = yaml.safe_load(QUICKSTART.read_text())
    spec["legs"][1]["environment"] = {"NEURON_RT_LOG_LEVEL": "INFO", name: "hunter2"}
    path = tmp_path / "bakeoff.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    code = cli.main(["validate", str(path)])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert f"legs[1].environment.{name}" in lines[0] and "looks like a secret" in lines[0]
    assert "execution role" in lines[0] and "Secrets Manager" in lines[0]
    assert "hunter2" not in err


@pytest.mark.parametrize("name", ["TOKENIZERS_PARALLELISM", "NEURON_CC_FLAGS", "XLA_FLAGS", "PASSTHROUGH_MODE",
                                  "KEYBOARD", "OMP_NUM_THREADS"])
def test_ordinary_names_pass(name):
    assert not looks_like_secret(name)


def test_the_report_shows_a_port_s_flags_but_not_other_environment_values():
    from bakeoff_runtime.verdict.porting import spec_difference

    lines = spec_difference({"environment": {"MY_SERVICE_URL": "https://user:pw@example.test"}},
                            {"environment": {"NEURON_CC_FLAGS": "--model-type=transformer", "MY_SERVICE_URL": "other"}})
    assert "environment NEURON_CC_FLAGS: --model-type=transformer (baseline: (unset))" in lines
    assert "environment MY_SERVICE_URL: (set; value not shown) (baseline: (set; value not shown))" in lines
    assert not any("pw@" in line or "other" in line for line in lines)
