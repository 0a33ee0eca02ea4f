"""The container reads its job's BAKEOFF_* configuration through the typed `JobEnvironment`
(bakeoff_runtime/contract/environment.py), never as raw `environ.get(ENV[...])` strings that mypy cannot
check; and each call site reads it as it did before: the same defaults, "set but empty" as unset, "1" as
the only true flag, and at call time (the launcher and the tests change os.environ between calls)."""
import ast

import pytest

from bakeoff_runtime.contract import COLLECTIVE_BACKEND_ENV, ENV, JobEnvironment, TrainingEnv
from conftest import ENTRYPOINTS


def _raw_reads(tree: ast.AST):
    """Every `<x>.get(ENV[...])`, `<x>[ENV[...]]` and `<x>.get(contract.ENV[...])` read."""
    def is_env_key(node):
        return (isinstance(node, ast.Subscript) and
                ((isinstance(node.value, ast.Name) and node.value.id == "ENV") or
                 (isinstance(node.value, ast.Attribute) and node.value.attr == "ENV")))

    for node in ast.walk(tree):
        got = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
               and bool(node.args) and is_env_key(node.args[0]))
        indexed = isinstance(node, ast.Subscript) and is_env_key(node.slice) and isinstance(node.ctx, ast.Load)
        if got or indexed:
            yield node.lineno


def test_the_container_reads_no_job_variable_raw_the_contract_included():
    # The contract's own readers (TrainingEnv, opt_ml_root) go through JobEnvironment too: one parser per name.
    found = [f"{path.relative_to(ENTRYPOINTS)}:{line}" for path in sorted(ENTRYPOINTS.rglob("*.py"))
             for line in _raw_reads(ast.parse(path.read_text(), filename=str(path)))]
    assert not found, "read these through JobEnvironment.from_environ().<field>:\n" + "\n".join(found)


def test_the_check_sees_a_raw_read():
    tree = ast.parse('os.environ.get(ENV["backend"], "")\nenviron[contract.ENV["leg"]]\nENV["leg"]\n')
    assert list(_raw_reads(tree)) == [1, 2]


def test_from_environ_parses_as_the_call_sites_did():
    job = JobEnvironment.from_environ({ENV["nproc_per_node"]: "0", ENV["backend"]: "", ENV["preflight"]: "true",
                                       ENV["continue_on_failure"]: "1", ENV["network_gbps"]: "400"})
    assert job.nproc_per_node == 0 and job.backend == "" and job.preflight is False
    assert job.continue_on_failure is True and job.network_gbps == "400"
    unset = JobEnvironment.from_environ({})
    assert unset.nproc_per_node is None and unset.emulated_on == "" and unset.install_packages == ""
    assert JobEnvironment.from_environ({ENV["nproc_per_node"]: ""}).nproc_per_node is None


def _training_env(tmp_path, **kw):
    return TrainingEnv(*(tmp_path / d for d in ("model", "output", "data", "input", "config", "ckpt")), **kw)


def test_the_launcher_reads_the_process_count_at_call_time(monkeypatch, tmp_path):
    import launch

    env = _training_env(tmp_path, num_gpus=8)
    monkeypatch.setenv(ENV["backend"], "cuda")
    monkeypatch.delenv(ENV["nproc_per_node"], raising=False)
    assert launch.devices_per_host(env) == 8
    monkeypatch.setenv(ENV["nproc_per_node"], "")  # set but empty: unset, as before
    assert launch.devices_per_host(env) == 8
    monkeypatch.setenv(ENV["nproc_per_node"], "3")
    assert launch.devices_per_host(env) == 3
    monkeypatch.setenv(ENV["nproc_per_node"], "0")  # a non-empty string was taken as it is
    assert launch.devices_per_host(env) == 0


def test_the_launchers_flags(monkeypatch):
    import launch

    monkeypatch.delenv(ENV["continue_on_failure"], raising=False)
    monkeypatch.delenv(ENV["emulated_on"], raising=False)
    assert launch._continue_on_failure() is False and launch._emulated_on() is None
    monkeypatch.setenv(ENV["continue_on_failure"], "1")
    monkeypatch.setenv(ENV["emulated_on"], "a laptop")
    assert launch._continue_on_failure() is True and launch._emulated_on() == "a laptop"
    monkeypatch.setenv(ENV["continue_on_failure"], "true")  # only "1" is on
    monkeypatch.setenv(ENV["emulated_on"], "")
    assert launch._continue_on_failure() is False and launch._emulated_on() is None


def test_a_failure_the_launcher_records_names_the_backend_and_job_key(monkeypatch, tmp_path):
    import json

    import launch

    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.setenv(ENV["backend"], "cpu")
    monkeypatch.delenv(ENV["job_key"], raising=False)
    env = _training_env(tmp_path)
    launch.record_failure(env, "it broke", "script")
    summary = json.loads((env.model_dir / "summary.json").read_text())
    assert summary["backend"] == "cpu" and summary["job_key"] is None


@pytest.mark.parametrize(("value", "packages"), [(None, []), ("", []), ("json,,", ["json"])])
def test_packages_to_install(value, packages, tmp_path, monkeypatch):
    from bakeoff_runtime.process import package_install

    seen = []
    monkeypatch.setattr(package_install.importlib.util, "find_spec", lambda name: seen.append(name) or object())
    environ = {} if value is None else {ENV["install_packages"]: value}
    assert package_install.ensure_packages(tmp_path, environ) is None
    assert seen == packages


def test_mlflow_settings():
    from bakeoff_runtime.tracking import install, sink

    uri = {"MLFLOW_TRACKING_URI": "http://x"}
    assert sink.logs_to_mlflow({**uri, ENV["mlflow_experiment"]: "e"})
    assert sink.logs_to_mlflow({**uri, ENV["mlflow_experiment"]: "", "MLFLOW_EXPERIMENT_NAME": "e"})
    assert not sink.logs_to_mlflow({**uri, ENV["mlflow_experiment"]: ""})
    assert install._wanted({**uri, ENV["mlflow_install"]: "1"})
    assert not install._wanted({**uri, ENV["mlflow_install"]: "yes"})
    assert not install._wanted({ENV["mlflow_install"]: "1"})


def test_the_collective_checks_process_group_follows_the_backend(monkeypatch):
    import types

    import collective_check

    torch = types.SimpleNamespace(device=lambda *args: args)  # no torch in the unit tests
    monkeypatch.delenv(COLLECTIVE_BACKEND_ENV, raising=False)
    monkeypatch.setenv(ENV["backend"], "cpu")
    assert collective_check.backend_and_device(torch, 0)[:2] == ("gloo", ("cpu",))
    monkeypatch.setenv(ENV["backend"], "")
    assert collective_check.backend_and_device(torch, 0)[0] == "gloo"
