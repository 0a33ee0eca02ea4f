"""`bakeoff init DIR`: a bake-off that validates (each template) and runs (the minimal one)."""
import json

import pytest

from bakeoff.pipelines.cli.init import TEMPLATES, init_project
from bakeoff.pipelines.spec.model import BakeoffSpec


def _script_for(target, template):
    """The script template is written around an existing script: one the user has in src/."""
    if template != "script":
        return []
    (target / "src").mkdir(parents=True)
    (target / "src" / "train.py").write_text("import argparse\np = argparse.ArgumentParser()\n"
                                             "p.add_argument('--seed', type=int)\n")
    return ["--script", target / "src" / "train.py"]


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_init_then_validate(tmp_path, template, cli):
    target = tmp_path / "My Project_1"
    made = cli("init", target, "--template", template, *_script_for(target, template))
    assert made.returncode == 0, made.stderr
    assert (target / "bakeoff.yaml").exists() and (target / "src" / "train.py").exists()
    checked = cli("validate", target / "bakeoff.yaml")
    assert checked.returncode == 0, checked.stderr
    # The name comes from the folder, made into a valid spec name.
    assert "ok: My-Project-1," in checked.stdout
    spec_text = (target / "bakeoff.yaml").read_text()
    assert spec_text.splitlines()[0] == "# yaml-language-server: $schema=./bakeoff.schema.json"
    schema = json.loads((target / "bakeoff.schema.json").read_text())
    assert schema == json.loads(json.dumps(BakeoffSpec.model_json_schema()))


def test_the_templates_are_trn1_against_a_gpu(tmp_path):
    from bakeoff.pipelines.spec.loader import load_spec

    for template in TEMPLATES:
        script = _script_for(tmp_path / template, template)
        init_project(tmp_path / template, template, script[-1] if script else None)
        spec = load_spec(str(tmp_path / template / "bakeoff.yaml"))
        kinds = {leg.kind.name for leg in spec.legs}
        assert "trn1" in kinds and "gpu" in kinds, (template, kinds)
        assert spec.entrypoint.source_dir == "src"


def test_hf_template_is_the_builtin_trainer_with_data(tmp_path):
    from bakeoff.pipelines.plan.bundle import entrypoints_dir

    init_project(tmp_path, "hf")
    assert (tmp_path / "src" / "train.py").read_bytes() == (entrypoints_dir() / "hf_causal_lm.py").read_bytes()
    assert (tmp_path / "data" / "train" / "train.bin").stat().st_size > 100_000
    assert (tmp_path / "data" / "validation" / "validation.bin").exists()


def test_init_never_overwrites(tmp_path, cli):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("mine\n")
    refused = cli("init", tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "already exists" in refused.stderr
    assert "Traceback" not in refused.stderr
    # All or nothing: the files that did not clash were not written either.
    assert not (tmp_path / "bakeoff.yaml").exists()
    assert (tmp_path / "src" / "train.py").read_text() == "mine\n"


def test_init_into_a_file_is_bad_input(tmp_path, cli):
    (tmp_path / "f").write_text("")
    proc = cli("init", tmp_path / "f")
    assert proc.returncode == 2 and "not a directory" in proc.stderr


def test_unknown_template_is_bad_input(tmp_path, cli):
    proc = cli("init", tmp_path / "x", "--template", "nope")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
