"""MLflow where the images have none: the job installs the pinned client (offline, from a
wheel directory in the code bundle), and the Evaluate step back-fills any run a job could
not log itself, so the parent run always has all its children."""
import base64
import hashlib
import json
import zipfile

from bakeoff_runtime.tracking import install as mlflow_install


def _wheel(directory, name, version, module):
    """A minimal, valid pure-Python wheel (what `pip download` would have put there)."""
    dist = name.replace("-", "_")
    path = directory / f"{dist}-{version}-py3-none-any.whl"
    files = {
        f"{module}/__init__.py": f"__version__ = {version!r}\nFROM_WHEELHOUSE = True\n",
        f"{dist}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                              "Tag: py3-none-any\n",
    }
    record = []
    for arc, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}-{version}.dist-info/RECORD,,")
    files[f"{dist}-{version}.dist-info/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(path, "w") as zf:
        for arc, text in files.items():
            zf.writestr(arc, text)


def _pins():
    pins = {}
    for path in (mlflow_install.REQUIREMENTS, mlflow_install.REQUIREMENTS_SAGEMAKER):
        for line in path.read_text().splitlines():
            if line and not line.startswith("#"):
                name, version = line.split("==")
                pins[name] = version
    return pins


def test_the_pinned_client_is_installed_offline_from_the_bundles_wheels(tmp_path, monkeypatch):
    pins = _pins()
    assert set(pins) == {"mlflow-skinny", "sagemaker-mlflow"}
    code = tmp_path / "code"
    (code / "wheels").mkdir(parents=True)
    _wheel(code / "wheels", "mlflow-skinny", pins["mlflow-skinny"], "mlflow")
    _wheel(code / "wheels", "sagemaker-mlflow", pins["sagemaker-mlflow"], "sagemaker_mlflow")
    target = tmp_path / "site"
    # This test environment has mlflow itself: make the job's check see an image without it.
    seen = []
    monkeypatch.setattr(mlflow_install, "_importable", lambda *m: seen.append(m) or len(seen) > 1)
    environ = {"BAKEOFF_MLFLOW_INSTALL": "1",
               "MLFLOW_TRACKING_URI": "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/t"}
    result = mlflow_install.ensure_mlflow(code, target=target, environ=environ)
    assert result["action"] == "installed" and "wheels" in result["source"], result
    assert (target / "mlflow" / "__init__.py").exists() and (target / "sagemaker_mlflow" / "__init__.py").exists()
    assert json.loads(environ[mlflow_install.RESULT_ENV])["action"] == "installed"
    assert environ[mlflow_install.PATH_ENV] == str(target)
    assert seen[0] == ("mlflow", "sagemaker_mlflow")  # an ARN needs the SageMaker plugin too


def test_a_failed_install_is_one_line_and_training_goes_on(tmp_path, monkeypatch, capsys):
    code = tmp_path / "code"
    (code / "wheels").mkdir(parents=True)  # an empty wheelhouse: nothing to install from
    monkeypatch.setattr(mlflow_install, "_importable", lambda *m: False)
    result = mlflow_install.ensure_mlflow(code, target=tmp_path / "site",
                                          environ={"BAKEOFF_MLFLOW_INSTALL": "1", "MLFLOW_TRACKING_URI": "http://x"})
    assert result["action"] == "failed"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "could not install the MLflow client" in err[0] and "back-fills" in err[0]


def test_nothing_is_installed_when_the_job_does_not_log_to_mlflow(tmp_path):
    assert mlflow_install.ensure_mlflow(tmp_path, environ={})["action"] == "not needed"
    # Asked for, but with nowhere to log to; or a tracking URI without the ask: neither installs nor starts one.
    for environ in ({"BAKEOFF_MLFLOW_INSTALL": "1"}, {"MLFLOW_TRACKING_URI": "http://x"},
                    {"BAKEOFF_MLFLOW_INSTALL": "0", "MLFLOW_TRACKING_URI": "http://x"}):
        assert mlflow_install.ensure_mlflow(tmp_path, environ=dict(environ))["action"] == "not needed"
        started = dict(environ)
        assert mlflow_install.start_install(tmp_path, environ=started) is None
        assert started == environ  # nothing put into the job's environment either


def test_the_mlflow_client_process_waits_for_the_install_beside_the_training_and_says_so(tmp_path, monkeypatch):
    """The training process never waits for the client's install: its MLflow client process does, telling it
    (so that the flush at the job's end waits for the install rather than lose the run)."""
    from bakeoff_runtime.tracking.sink import Client

    marker = tmp_path / "site.result.json"
    monkeypatch.setenv(mlflow_install.MARKER_ENV, str(marker))
    monkeypatch.setenv(mlflow_install.PATH_ENV, str(tmp_path / "site"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    client = Client.start()
    try:
        assert json.loads(client.stdout.readline()) == {"installing": True}
        mlflow_install._write_marker(marker, {"action": "installed", "seconds": 1.5})
        assert json.loads(client.stdout.readline()) == {"installed": {"action": "installed", "seconds": 1.5}}
        client.stdin.close()  # the training process ended before it had a run
        assert json.loads(client.stdout.readline()) == {"ended": True}
    finally:
        client.kill()


def test_an_install_that_never_ends_is_given_up_on_with_its_reason(tmp_path):
    environ = {mlflow_install.MARKER_ENV: str(tmp_path / "never.json"), mlflow_install.PATH_ENV: str(tmp_path)}
    result = mlflow_install.wait_for_install(environ, timeout_s=0.3, poll_s=0.05)
    assert result == {"action": "failed", "error": "the install did not end within 0.3s"}
    assert mlflow_install.wait_for_install({}) is None  # no install was started for this job
