"""`bakeoff completion bash|zsh|fish`: scripts generated from the parser, so they name every command."""
import shutil
import subprocess

import pytest

from conftest import bakeoff
from pipelines.cli.completion import SHELLS, commands, script
from pipelines.cli.main import build_parser


def _subcommands() -> list[str]:
    return [c.name for c in commands(build_parser())[1]]


def test_the_parser_is_read_whole():
    names = _subcommands()
    assert {"run", "validate", "init", "completion", "synth", "report"} <= set(names)


@pytest.mark.parametrize("shell", SHELLS)
def test_each_script_names_every_subcommand_and_its_options(shell):
    text = script(shell, build_parser())
    for name in _subcommands():
        assert name in text, f"{shell} completion misses {name}"
    # An option of a subcommand, and the choices of an option that takes one:
    assert "rule-change" in text
    assert "minimal" in text and "hf" in text


def test_bash_script_is_valid_bash(tmp_path):
    path = tmp_path / "bakeoff.bash"
    path.write_text(script("bash", build_parser()))
    proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _complete(tmp_path, *words: str) -> list[str]:
    """What bash offers after `words` (the last one being completed), with the script sourced."""
    path = tmp_path / "bakeoff.bash"
    path.write_text(script("bash", build_parser()))
    array = " ".join(f"'{w}'" for w in ("bakeoff", *words))
    cmd = (f"source {path}; COMP_WORDS=({array}); COMP_CWORD={len(words)}; _bakeoff; "
           "printf '%s\\n' \"${COMPREPLY[@]}\"")
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return [w for w in proc.stdout.splitlines() if w]


def test_bash_completes_commands_options_and_choices(tmp_path):
    assert _complete(tmp_path, "comp") == ["completion"]
    assert set(_complete(tmp_path, "va")) == {"validate"}
    assert "--rule-change" in _complete(tmp_path, "run", "spec.yaml", "--r")
    assert sorted(_complete(tmp_path, "init", "dir", "--template", "")) == ["hf", "minimal", "script"]
    assert sorted(_complete(tmp_path, "completion", "")) == ["bash", "fish", "zsh"]
    (tmp_path / "spec.yaml").write_text("name: x\n")
    assert _complete(tmp_path, "validate", "sp") == ["spec.yaml"]  # positionals complete file names


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh is not installed")
def test_zsh_script_parses(tmp_path):
    path = tmp_path / "_bakeoff"
    path.write_text(script("zsh", build_parser()))
    assert subprocess.run(["zsh", "-n", str(path)]).returncode == 0
    # Sourced after compinit, it registers itself as bakeoff's completer.
    loaded = subprocess.run(["zsh", "-fc", f"autoload -U compinit; compinit -u -d {tmp_path / 'zcd'}; "
                             f"source {path}; echo $_comps[bakeoff]"], capture_output=True, text=True)
    assert loaded.stdout.strip() == "_bakeoff", loaded.stdout + loaded.stderr


@pytest.mark.skipif(not shutil.which("fish"), reason="fish is not installed")
def test_fish_script_parses(tmp_path):
    path = tmp_path / "bakeoff.fish"
    path.write_text(script("fish", build_parser()))
    assert subprocess.run(["fish", "--no-execute", str(path)]).returncode == 0
    # fish answers a completion query itself: what it offers, with the parser's help text.
    asked = subprocess.run(["fish", "-c", f"source {path}; complete -C 'bakeoff comp'; "
                            "complete -C 'bakeoff init x --template '"], capture_output=True, text=True)
    offered = [line.split("\t")[0] for line in asked.stdout.splitlines()]
    assert offered == ["completion", "hf", "minimal"], asked.stdout + asked.stderr


def test_cli_prints_the_script_and_refuses_an_unknown_shell():
    ok = bakeoff("completion", "bash")
    assert ok.returncode == 0 and ok.stdout == script("bash", build_parser())
    bad = bakeoff("completion", "tcsh")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
