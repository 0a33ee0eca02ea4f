"""The built wheel, installed as a user installs it (a fresh virtualenv, `bakeoff[local]`): one import name
(`bakeoff`), the container code shipped as data, and the quickstart runs."""
import json
import subprocess
import zipfile

from conftest import ROOT, fresh_venv, installed_bakeoff, outside_env

TINY_MODEL = {"model.d_model": 32, "model.n_layers": 1, "model.n_heads": 2, "training.sequence_length": 32}


def test_the_wheel_installs_one_import_name_and_ships_the_container_code_as_data(bakeoff_wheel):
    names = zipfile.ZipFile(bakeoff_wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    # bakeoff_runtime: the container imports it by that name from the code bundle, where bakeoff is not
    # installed; bakeoff_cdk: the CDK construct library's own name.
    assert top == {"bakeoff", "bakeoff_runtime", "bakeoff_cdk"}
    assert {"bakeoff/__init__.py", "bakeoff/py.typed", "bakeoff/pipelines/cli/main.py",
            "bakeoff/estimators/registry.py", "bakeoff/pipelines/_bundle/entrypoints/train.py"} <= set(names)
    # Not importable as a top-level package: PyPI's `entrypoints` owns that name.
    assert not any(n.startswith("entrypoints/") for n in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "bakeoff = bakeoff.pipelines.cli.main:main" in zipfile.ZipFile(bakeoff_wheel).read(entry_points).decode()


def test_the_wheel_with_its_local_extra_runs_the_quickstart_in_a_fresh_venv(bakeoff_wheel, tmp_path):
    bin_dir = fresh_venv(tmp_path / "venv", f"bakeoff[local] @ {bakeoff_wheel.as_uri()}")
    bakeoff = installed_bakeoff(bin_dir, tmp_path, timeout=600)
    where = subprocess.run([str(bin_dir / "python"), "-c",
                            "from bakeoff.pipelines.plan import bundle as b; print(b.entrypoints_dir())"],
                           capture_output=True, text=True, env=outside_env(), cwd=tmp_path, check=True).stdout.strip()
    assert where.startswith(str(tmp_path / "venv")) and where.endswith("bakeoff/pipelines/_bundle/entrypoints")
    out = tmp_path / "run"
    proc = bakeoff("run", ROOT / "examples" / "quickstart.yaml", "--out", out, "--set", "seeds=2",
                   "--set", "training.max_steps=20", "--set", "training.eval_interval=0", "--no-mlflow",
                   # What is under test is the installed package running jobs, not the model: the smallest one
                   # (about 20 s less CPU than the quickstart's own).
                   *(arg for k, v in TINY_MODEL.items() for arg in ("--set", f"{k}={v}")))
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert ev["legs"]["trn1"]["completed"] == 2 and ev["legs"]["p4d"]["completed"] == 2
    code = out / "jobs" / "trn1-s0" / "opt" / "ml" / "code"
    assert (code / "train.py").read_bytes() == (ROOT / "entrypoints" / "train.py").read_bytes()


# The generic names bakeoff once installed, as another distribution's top-level packages.
OTHERS = ("pipelines", "estimators")


def _unrelated_project(root, name: str) -> str:
    """A tiny distribution owning the top-level packages named OTHERS, as another library might."""
    root.mkdir()
    (root / "pyproject.toml").write_text(
        f'[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        f'[project]\nname = "{name}"\nversion = "1.0"\n'
        f'[tool.hatch.build.targets.wheel]\npackages = {list(OTHERS)!r}\n'.replace("'", '"'))
    for package in OTHERS:
        (root / package).mkdir()
        (root / package / "__init__.py").write_text(f"MARKER = {name + '/' + package!r}\n")
    return str(root)


def test_the_wheel_installs_beside_other_top_level_pipelines_and_estimators(bakeoff_wheel, tmp_path):
    bin_dir = fresh_venv(tmp_path / "venv", str(bakeoff_wheel),
                         _unrelated_project(tmp_path / "unrelated", "someone-elses-pipelines"))
    code = ("import importlib, bakeoff.pipelines, bakeoff.estimators\n"
            "from bakeoff import load_spec\n"
            f"print(*(importlib.import_module(name).MARKER for name in {OTHERS!r}))\n"
            "print(bakeoff.pipelines.load_spec is load_spec, hasattr(bakeoff.estimators, 'lookup_instance'))\n")
    proc = subprocess.run([str(bin_dir / "python"), "-c", code], capture_output=True, text=True, env=outside_env(),
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["someone-elses-pipelines/pipelines someone-elses-pipelines/estimators",
                                        "True True"]
    checked = subprocess.run([str(bin_dir / "bakeoff"), "validate", str(ROOT / "examples" / "quickstart.yaml")],
                             capture_output=True, text=True, env=outside_env(), cwd=tmp_path, timeout=300)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
