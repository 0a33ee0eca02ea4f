"""requirements.txt as pip reads it (pipelines/plan/requirements_file.py, after pip's req_file.py): the
lines that take packages from somewhere other than PyPI are named by `bakeoff validate`, and refused in one
line when the jobs run with network isolation and the line needs the network or a path outside the source
dir. The packages it names still count as provided (script_checks' import check)."""
import textwrap

import pytest

from bakeoff.pipelines.plan.requirements_file import read
from conftest import write_spec

METRICS = [{"name": "val_loss", "regex": r"val loss ([0-9.]+)"}]
TRN = {"name": "trn1", "instance_type": "ml.trn1.2xlarge", "precision": "fp32", "arguments": ["--device", "xla"]}
G5 = {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}
SCRIPT = """
import argparse
p = argparse.ArgumentParser()
p.add_argument("--seed", type=int, default=0)
p.add_argument("--device", default="cpu")
args = p.parse_args()
print("val loss 0.4")
"""


def _read(text: str, **more: str):
    files = {"requirements.txt": textwrap.dedent(text).encode(), **{k: v.encode() for k, v in more.items()}}
    return read(files, "requirements.txt")


@pytest.mark.parametrize(("line", "why", "beyond"), [
    ("--index-url https://pypi.example.com/simple", "another index", True),
    ("-i https://pypi.example.com/simple", "another index", True),
    ("-ihttps://pypi.example.com/simple", "another index", True),
    ("--pypi-url=https://pypi.example.com/simple", "another index", True),
    ("--extra-index-url https://download.pytorch.org/whl/cu121", "an extra index", True),
    ("--extra https://download.pytorch.org/whl/cu121", "an extra index", True),  # optparse takes a prefix
    ("--trusted-host pypi.example.com", "a host pip trusts without checking its certificate", True),
    ("--find-links https://download.pytorch.org/whl/torch_stable.html", "a page of links", True),
    ("-f /opt/wheels", "a path outside the source dir", True),
    ("-e git+https://github.com/org/lib.git#egg=lib", "an editable install from a git checkout", True),
    ("--editable=../../lib", "an editable install from a path outside the source dir", True),
    ("-e ./lib", "an editable install of a source dir folder, built as the job starts", False),
    ("git+https://github.com/org/lib.git@v1.2#egg=lib", "a git checkout", True),
    ("lib @ git+ssh://git@github.com/org/lib.git", "a git checkout", True),
    ("hg+https://hg.example.com/lib#egg=lib", "a Mercurial checkout", True),
    ("https://example.com/lib-1.0-py3-none-any.whl", "a download", True),
    ("lib @ https://example.com/lib-1.0.tar.gz", "a download", True),
    ("lib @ file:///opt/lib", "a path outside the source dir", True),
    ("/opt/lib-1.0-py3-none-any.whl", "a path outside the source dir", True),
    ("-r https://example.com/requirements.txt", "a requirements file fetched from the network", True),
    ("-r ../requirements-dev.txt", "a requirements file outside the source dir", True),
    ("-c /etc/constraints.txt", "a constraints file outside the source dir", True),
    ("-r missing.txt", "a requirements file the code bundle does not hold", False),
])
def test_each_way_pip_takes_packages_from_elsewhere_is_named(line, why, beyond):
    found = _read(f"numpy==1.26\n{line}\n")
    assert [(s.line, s.why, s.beyond) for s in found.sources] == [(2, why, beyond)], found.sources


@pytest.mark.parametrize("text", [
    "numpy==1.26\ntorch>=2.3 ; python_version >= '3.10'\n",
    "--index-url https://pypi.org/simple\n--no-index\n--find-links wheels\nnumpy\n",
    "./vendor/lib-1.0-py3-none-any.whl\nlib[extra]==1.0 --hash=sha256:" + "ab" * 32 + "\n",
    "# --index-url https://pypi.example.com/simple (a comment)\nnumpy  # pinned below\n",
    "--prefer-binary\n--only-binary=:all:\n--pre\nnumpy\n",
])
def test_pypi_and_the_source_dir_s_own_files_are_not_named(text):
    assert _read(text).sources == ()


def test_nested_files_continuations_names_and_passwords():
    found = _read("""\
        numpy==1.26 \\
            --hash=sha256:abcd
        -r dev/more.txt
        -c constraints.txt
        --extra-index-url https://ci:PASSWORD@private.example.com/simple
        lib @ https://example.com/lib.whl
        """.replace("PASSWORD", "s3" + "cret"),
        **{"dev/more.txt": "scipy\n-e git+https://github.com/org/x.git#egg=xlib\n-r ../requirements.txt\n",
           "constraints.txt": "pandas<3\n--index-url https://mirror.example.com/simple\n"})
    assert found.names == ("numpy", "lib", "scipy", "xlib")  # constraints name no requirement
    assert [(s.file, s.line, s.why) for s in found.sources] == [
        ("requirements.txt", 5, "an extra index"), ("requirements.txt", 6, "a download"),
        ("dev/more.txt", 2, "an editable install from a git checkout"),
        ("constraints.txt", 2, "another index")]
    shown = str(found.sources[0])
    assert shown == "requirements.txt:5 `--extra-index-url https://\u2026@private.example.com/simple` (an extra index)"
    assert "s3cret" not in " ".join(str(s) for s in found.sources)


def _spec(tmp_path, requirements: str, wheels: bool = False, **top):
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "train.py").write_text(textwrap.dedent(SCRIPT))
    (src / "requirements.txt").write_text(textwrap.dedent(requirements))
    if wheels:
        (src / "wheels").mkdir()
        (src / "wheels" / "numpy-1.26.0-cp312-cp312-manylinux2014_x86_64.whl").write_bytes(b"PK\x03\x04\0")
    entry = {"source_dir": "src", "script": "train.py", "mode": "script",
             "script_mode": {"metrics": METRICS, "seed": {"argument": "seed"}, **top.pop("script_mode", {})}}
    data = {"name": "reqs", "entrypoint": entry, "legs": [TRN, G5], "seeds": 2,
            "parity": {"metric": "val_loss", "margin": 0.1, "baseline": "g5"}, **top}
    return write_spec(tmp_path / "bakeoff.yaml", data)


def _warnings(proc) -> list[str]:
    return [ln.strip()[len("warning: "):] for ln in proc.stdout.splitlines() if ln.strip().startswith("warning: ")]


def test_validate_names_each_line_that_takes_packages_from_elsewhere(tmp_path, cli):
    spec = _spec(tmp_path, "numpy\n--extra-index-url https://download.pytorch.org/whl/cu121\n"
                           "git+https://github.com/org/lib.git#egg=lib\n")
    proc = cli("validate", spec)
    assert proc.returncode == 0, proc.stderr
    said = [w for w in _warnings(proc) if "elsewhere than PyPI" in w]
    assert said == ["requirements.txt takes packages from elsewhere than PyPI: requirements.txt:2 `--extra-index-url "
                    "https://download.pytorch.org/whl/cu121` (an extra index); requirements.txt:3 "
                    "`git+https://github.com/org/lib.git#egg=lib` (a git checkout); every job's pip installs from "
                    "there as it starts: check each is a source you trust"], _warnings(proc)


def test_not_installed_it_is_not_said(tmp_path, cli):
    spec = _spec(tmp_path, "--index-url https://pypi.example.com/simple\nnumpy\n",
                 script_mode={"install_requirements": False})
    proc = cli("validate", spec)
    assert proc.returncode == 0 and not [w for w in _warnings(proc) if "PyPI" in w], proc.stdout


def test_under_network_isolation_a_line_that_needs_the_network_is_refused_in_one_line(tmp_path, cli):
    spec = _spec(tmp_path, "numpy\n--index-url https://pypi.example.com/simple\n-e git+https://x.example/y.git\n",
                 wheels=True, security={"network_isolation": True})
    proc = cli("validate", spec)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "security.network_isolation" in lines[0] and "bakeoff.yaml:" in lines[0]
    assert "requirements.txt:2 `--index-url https://pypi.example.com/simple` (another index) (and 1 more)" in lines[0]
    assert "wheels/" in lines[0] and "install_requirements: false" in lines[0]


def test_under_network_isolation_wheels_and_the_source_dir_s_own_paths_pass(tmp_path, cli):
    spec = _spec(tmp_path, "--no-index\n--find-links wheels\nnumpy==1.26.0\n-e ./lib\n", wheels=True,
                 security={"network_isolation": True})
    (tmp_path / "src" / "lib").mkdir()
    (tmp_path / "src" / "lib" / "pyproject.toml").write_text("[project]\nname = 'lib'\nversion = '0'\n")
    proc = cli("validate", spec)
    assert proc.returncode == 0, proc.stderr
    said = [w for w in _warnings(proc) if "elsewhere than PyPI" in w]
    assert len(said) == 1 and "`--editable ./lib` (an editable install of a source dir folder" in said[0], said
