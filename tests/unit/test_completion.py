"""`bakeoff completion bash|zsh|fish`: argcomplete's shellcode, answered by the CLI's own parser.

The bash tests source the printed script in a real bash and call the function it registers, with the
line in COMP_LINE/COMP_POINT as bash's `complete -F` would: that function runs the real `bakeoff`
under argcomplete's protocol (`_ARGCOMPLETE=1`, the answer on fd 8)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bakeoff.pipelines.cli.completion import SHELLS, script
from bakeoff.pipelines.cli.spec_paths import DEFAULT_LEGS, candidates, fields
from bakeoff.pipelines.spec.model import BakeoffSpec
from bakeoff.pipelines.spec.overrides import apply_overrides
from conftest import ROOT, bakeoff

BIN = str(Path(sys.executable).parent)  # where the `bakeoff` the shellcode runs is installed


@pytest.fixture(scope="module")
def shellcode(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "bakeoff.bash"
    proc = bakeoff("completion", "bash")
    assert proc.returncode == 0, proc.stderr
    path.write_text(proc.stdout)
    return path


def _complete(shellcode: Path, line: str, cwd: Path) -> list[str]:
    """What bash offers for `line` (completing its end), with `bakeoff completion bash` sourced."""
    words = line.split(" ")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "LINE": line}
    # COMP_WORDS as bash splits the line: `=` is in COMP_WORDBREAKS, so `a=b` is three words.
    cmd = (f"source {shellcode}; COMP_LINE=\"$LINE\"; COMP_POINT=${{#COMP_LINE}}; "
           f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}; "
           "_python_argcomplete bakeoff; printf '%s\\n' \"${COMPREPLY[@]}\"")
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, cwd=cwd, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [w.strip() for w in proc.stdout.splitlines() if w.strip()]


@pytest.fixture
def spec_dir(tmp_path) -> Path:
    spec = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text())
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    return tmp_path


@pytest.mark.parametrize("shell", SHELLS)
def test_each_script_is_argcompletes_shellcode_for_bakeoff(shell):
    import argcomplete

    text = script(shell)
    assert text == argcomplete.shellcode(["bakeoff"], shell=shell)
    assert "_ARGCOMPLETE" in text and "bakeoff" in text


def test_bash_script_is_valid_bash(shellcode):
    proc = subprocess.run(["bash", "-n", str(shellcode)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_bash_completes_commands_options_and_choices(shellcode, spec_dir):
    assert _complete(shellcode, "bakeoff comp", spec_dir) == ["completion"]
    assert _complete(shellcode, "bakeoff va", spec_dir) == ["validate"]
    assert "--rule-change" in _complete(shellcode, "bakeoff run spec.yaml --r", spec_dir)
    assert sorted(_complete(shellcode, "bakeoff init dir --template ", spec_dir)) == ["hf", "minimal", "script"]
    assert {"bash", "fish", "zsh"} <= set(_complete(shellcode, "bakeoff completion ", spec_dir))
    assert _complete(shellcode, "bakeoff validate sp", spec_dir) == ["spec.yaml"]  # a positional: file names


def test_bash_completes_set_keys_from_the_spec_models(shellcode, spec_dir):
    assert _complete(shellcode, "bakeoff run spec.yaml --set storage.re", spec_dir) == ["storage.region="]
    assert sorted(_complete(shellcode, "bakeoff validate spec.yaml --set stor", spec_dir)) == [
        "storage.bucket=", "storage.prefix=", "storage.region="]
    top = _complete(shellcode, "bakeoff run spec.yaml --set ", spec_dir)
    assert {"name=", "storage.", "training.", "legs.", "seeds="} <= set(top)
    # One group matches: its fields are offered, not a lone `training.` followed by a space.
    assert "training.optimizer." in _complete(shellcode, "bakeoff run spec.yaml --set trai", spec_dir)
    # Every subcommand with --set completes it (plan's and the AWS commands' too).
    assert _complete(shellcode, "bakeoff synth spec.yaml --set storage.re", spec_dir) == ["storage.region="]


def test_bash_completes_legs_by_the_spec_files_names(shellcode, spec_dir):
    names = [leg["name"] for leg in yaml.safe_load((spec_dir / "spec.yaml").read_text())["legs"]]
    assert sorted(_complete(shellcode, "bakeoff run spec.yaml --set legs.", spec_dir)) == sorted(
        f"legs.{n}." for n in names)
    leg = names[0]
    assert _complete(shellcode, f"bakeoff run spec.yaml --set legs.{leg}.instance_t", spec_dir) == [
        f"legs.{leg}.instance_type="]
    # After `=`, bash completes the word after it: a field's values where they are few.
    assert sorted(_complete(shellcode, f"bakeoff run spec.yaml --set legs.{leg}.precision=", spec_dir)) == [
        "bf16", "fp32"]
    # No readable spec on the line: legs by index.
    assert sorted(_complete(shellcode, "bakeoff run missing.yaml --set legs.", spec_dir)) == ["legs.0.", "legs.1."]


def test_every_offered_path_is_one_set_applies(spec_dir):
    """The paths come from the models, the parsing from the loader: each offered path must be one
    `apply_overrides` walks to (a value that is wrong for the field is validation's business, later)."""
    spec = yaml.safe_load((spec_dir / "spec.yaml").read_text())
    names = tuple(leg["name"] for leg in spec["legs"])
    paths = fields(BakeoffSpec, names)
    assert "storage.region" in paths and f"legs.{names[0]}.instance_type" in paths and "parity.margin" in paths
    for path in paths:
        data, touched = apply_overrides(spec, [f"{path}=1"])
        assert touched and touched[0][1] == f"{path}=1"
    for index in DEFAULT_LEGS:
        apply_overrides(spec, [f"legs.{index}.precision=fp32"])


def test_values_come_from_the_fields_types():
    assert sorted(candidates("parity.test=", None)) == ["parity.test=equivalence", "parity.test=non_inferiority"]
    assert sorted(candidates("mlflow.enabled=", None)) == ["mlflow.enabled=false", "mlflow.enabled=true"]
    assert candidates("storage.region=", None) == {}  # free text: nothing to offer
    assert candidates("no.such.field=", None) == {}
    assert candidates("nosuch", None) == {}
    # Each key carries its field's description (zsh and fish show it beside the key).
    region = candidates("storage.re", None)
    assert list(region) == ["storage.region="] and region["storage.region="].startswith("AWS region")


def test_a_bad_spec_never_breaks_completion(tmp_path):
    (tmp_path / "bad.yaml").write_text("legs: [unclosed\n")
    assert sorted(candidates("legs.", str(tmp_path / "bad.yaml"))) == ["legs.0.", "legs.1."]
    (tmp_path / "odd.yaml").write_text("legs: 3\n")
    assert sorted(candidates("legs.", str(tmp_path / "odd.yaml"))) == ["legs.0.", "legs.1."]


def test_start_up_imports_no_completion_code():
    """argcomplete, pydantic and the spec paths load only when a shell is completing."""
    code = ("import os, sys; os.environ.pop('_ARGCOMPLETE', None); import bakeoff.pipelines.cli.main as c; "
            "from bakeoff.pipelines.cli.completion import autocomplete; autocomplete(c.build_parser()); "
            "print(sorted(m for m in ('argcomplete', 'pydantic', 'bakeoff.pipelines.cli.spec_paths', 'yaml') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_the_entry_point_carries_argcompletes_marker():
    # argcomplete's global completion runs an entry point only if this marker is in its first 1024 bytes.
    assert "# PYTHON_ARGCOMPLETE_OK" in (ROOT / "pipelines" / "cli" / "main.py").read_text()[:1024]


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh is not installed here: its script is not run")
def test_zsh_script_registers_itself(tmp_path):
    path = tmp_path / "_bakeoff"
    path.write_text(script("zsh"))
    assert subprocess.run(["zsh", "-n", str(path)]).returncode == 0
    loaded = subprocess.run(["zsh", "-fc", f"autoload -U compinit; compinit -u -d {tmp_path / 'zcd'}; "
                             f"source {path}; echo $_comps[bakeoff]"], capture_output=True, text=True)
    assert loaded.stdout.strip() == "_python_argcomplete", loaded.stdout + loaded.stderr


@pytest.mark.skipif(not shutil.which("fish"), reason="fish is not installed here: its script is not run")
def test_fish_script_completes(tmp_path):
    path = tmp_path / "bakeoff.fish"
    path.write_text(script("fish"))
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    asked = subprocess.run(["fish", "-c", f"source {path}; complete -C 'bakeoff comp'"], capture_output=True,
                           text=True, env=env)
    assert [line.split("\t")[0] for line in asked.stdout.splitlines()] == ["completion"], asked.stdout + asked.stderr


def test_cli_prints_the_script_and_refuses_an_unknown_shell():
    ok = bakeoff("completion", "bash")
    assert ok.returncode == 0 and ok.stdout == script("bash")
    bad = bakeoff("completion", "tcsh")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
