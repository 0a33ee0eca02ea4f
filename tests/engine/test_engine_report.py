"""Deciding a local run directory again (`bakeoff report DIR`, or a re-run whose evaluation cannot run):
outputs changed after the verdict, a truncated summary, a read-only or travelled directory. The run
directory comes from a bake-off whose jobs ran in the fake container (fake_container.py); every
`bakeoff` below runs the real CLI in this process and runs no training job. Once in tests/e2e/test_faults.py,
on a real bake-off."""
import contextlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from fake_container import FakeContainer, Recipe, bakeoff_cli, evaluate_here, verdict_spec


def _bakeoff(monkeypatch, capsys, *args, cwd=None):
    """`conftest.bakeoff`'s result, from the CLI run here (`cwd`: where it runs)."""
    with monkeypatch.context() as m:
        if cwd is not None:
            m.chdir(cwd)
        code, out, err = bakeoff_cli(monkeypatch, capsys, None, *args)
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


def _rewrite_summary(tarball: Path, change) -> None:
    with tarfile.open(tarball) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    members["summary.json"] = change(members["summary.json"])
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    tarball.write_bytes(buf.getvalue())


@pytest.fixture(scope="module")
def passed_run(tmp_path_factory):
    """A passed bake-off (2 CPU legs x 2 seeds), its jobs in the fake container: the run directory the
    tests below change and decide again."""
    from bakeoff.pipelines import api

    root = tmp_path_factory.mktemp("passed")
    spec = verdict_spec(root, seeds=2, mlflow={"enabled": False})
    result = api.run_local(spec, root / "out", mlflow=False, container=FakeContainer(Recipe()),
                           processor=evaluate_here)
    assert result.exit_code == 0, result.evaluation.get("summary")
    return root


def _fresh_copy(passed_run, tmp_path) -> Path:
    shutil.copytree(passed_run, tmp_path / "r", symlinks=True)
    return tmp_path / "r"


def test_report_decides_again_when_a_job_output_changed_after_the_verdict(passed_run, tmp_path, monkeypatch,
                                                                          capsys):
    root = _fresh_copy(passed_run, tmp_path)
    out = root / "out"
    # The run directory moved: the verdict is still current (nothing it was decided from changed).
    current = _bakeoff(monkeypatch, capsys, "report", out, "--json")
    assert current.returncode == 0 and "deciding again" not in current.stderr, current.stderr
    tarball = next(out.glob("s3/**/Train-m5-s1-*/output/output.tar.gz"))
    # Rewritten after the job finished (by hand, or by another job): its numbers are never used.
    _rewrite_summary(tarball, lambda raw: json.dumps({**json.loads(raw), "metrics": {"val_mse": 9.0}}).encode())
    # Deciding again writes into the run directory: refused unless asked for, with one line saying how.
    refused = _bakeoff(monkeypatch, capsys, "report", out, "--json")
    assert refused.returncode == 2 and f"`bakeoff report {out} --write`" in refused.stderr, refused.stderr[-2000:]
    assert json.loads((out / "evaluation" / "evaluation.json").read_text())["verdict"] == "pass"
    proc = _bakeoff(monkeypatch, capsys, "report", out, "--json", "--write")
    assert "its jobs changed after the verdict was written; deciding again" in proc.stderr, proc.stderr
    assert proc.stdout.startswith("{"), proc.stderr[-3000:]
    ev = json.loads(proc.stdout)["evaluation"]
    run = next(r for r in ev["legs"]["m5"]["runs"] if r["seed"] == 1)
    assert run["status"] == "lost" and run["failure_kind"] == "changed-output", run
    assert "its outputs changed after it finished (summary.json does not match" in run["reason"]
    # One seed without a result on m5 alone: undecided, neither the tampered fail nor a pass.
    assert ev["verdict"] == "inconclusive" and proc.returncode == 3
    assert json.loads((out / "evaluation" / "evaluation.json").read_text())["verdict"] == "inconclusive"


@contextlib.contextmanager
def _read_only(directory: Path):
    """`directory` read-only as an unpacked artifact or a shared mount is: a read-only bind mount
    (root ignores permission bits), or the permission bits when not root."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [directory, *directory.rglob("*")] if not p.is_symlink()}
        for p in modes:
            p.chmod(modes[p] & ~0o222)
        try:
            yield
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    bound = subprocess.run(["mount", "--bind", str(directory), str(directory)], capture_output=True)
    if bound.returncode != 0:
        pytest.skip(f"cannot make a read-only directory here: {bound.stderr.decode().strip()}")
    try:
        if subprocess.run(["mount", "-o", "remount,ro,bind", str(directory)], capture_output=True).returncode:
            pytest.skip("cannot remount read-only here")
        yield
    finally:
        subprocess.run(["umount", str(directory)], check=True)


def _snapshot(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in sorted(folder.rglob("*"))}


def test_report_of_a_run_directory_writes_nothing_into_it_unless_asked(passed_run, tmp_path, monkeypatch, capsys):
    root = _fresh_copy(passed_run, tmp_path)
    out = root / "out"
    (tmp_path / "cwd").mkdir()
    before = _snapshot(root)
    proc = _bakeoff(monkeypatch, capsys, "report", out, "--json", cwd=tmp_path / "cwd")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["report_path"] == str(out / "evaluation" / "report.html")  # its own
    from bakeoff import report

    assert json.loads(proc.stdout) == report(out).model_dump(mode="json")  # the API's Report, exactly
    assert _snapshot(root) == before and not list((tmp_path / "cwd").iterdir())
    with _read_only(root):
        proc = _bakeoff(monkeypatch, capsys, "report", out, "--json", cwd=tmp_path / "cwd")
        assert proc.returncode == 0 and json.loads(proc.stdout)["verdict"] == "pass", proc.stderr[-3000:]
        tarball = next(out.glob("s3/**/Train-m5-s1-*/output/output.tar.gz"))
    elsewhere = _bakeoff(monkeypatch, capsys, "report", out, "--out", tmp_path / "asked")
    assert elsewhere.returncode == 0 and (tmp_path / "asked" / "report.html").exists(), elsewhere.stderr[-3000:]
    assert json.loads((tmp_path / "asked" / "evaluation.json").read_text())["verdict"] == "pass"
    assert _snapshot(root) == before, "--out wrote in the run"
    # A changed job needs the verdict decided again, which writes: one line saying what to do, asked or not.
    _rewrite_summary(tarball, lambda raw: json.dumps({**json.loads(raw), "metrics": {"val_mse": 9.0}}).encode())
    changed = _snapshot(root)
    for args in ((), ("--write",)):
        with _read_only(root):
            refused = _bakeoff(monkeypatch, capsys, "report", out, *args, cwd=tmp_path / "cwd")
        assert refused.returncode == 2, refused.stderr[-3000:]
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and ("--write`" in lines[0] if not args else "is read-only" in lines[0]), lines
    assert _snapshot(root) == changed


def _rewrite_member(tarball: Path, name: str, body: bytes) -> None:
    with tarfile.open(tarball) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert name in members, sorted(members)
    members[name] = body
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    tarball.write_bytes(buf.getvalue())


def test_deciding_a_run_directory_again_runs_none_of_its_commands_or_code(passed_run, tmp_path, monkeypatch,
                                                                          capsys):
    """A run directory travels (a tarball, a CI artifact): `bakeoff report` re-decides it from its
    data with this bakeoff, never with the Evaluate command or the code bundle stored in it."""
    root = _fresh_copy(passed_run, tmp_path)
    out = root / "out"
    ran_command, ran_bundle = tmp_path / "command-ran", tmp_path / "bundle-ran"
    definition = json.loads((out / "pipeline.json").read_text())
    evaluate = next(s for s in definition["Steps"] if s["Name"] == "Evaluate")
    evaluate["Arguments"]["AppSpecification"]["ContainerEntrypoint"] = [
        "/bin/sh", "-c", f"id > {ran_command}; exec python3 /opt/ml/code/evaluate.py \"$@\"", "evaluate"]
    (out / "pipeline.json").write_text(json.dumps(definition, indent=2))
    bundle = next(out.glob("s3/**/code/*/sourcedir.tar.gz"))
    _rewrite_member(bundle, "evaluate.py", f"open({str(ran_bundle)!r}, 'w').write('ran')\n".encode())
    (out / "evaluation" / "inputs.json").unlink()  # so report must decide again

    proc = _bakeoff(monkeypatch, capsys, "report", out, "--json", "--write")
    assert not ran_command.exists() and not ran_bundle.exists(), proc.stderr[-2000:]
    assert proc.returncode == 0 and json.loads(proc.stdout)["verdict"] == "pass", proc.stderr[-3000:]
    assert "deciding again" in proc.stderr
    assert "pipeline.json differs from what this bakeoff compiles for the run's spec.json" in proc.stderr
    assert "not run: deciding with this bakeoff's evaluation" in proc.stderr
    assert (out / "evaluation" / "inputs.json").exists()  # decided, and recorded what from


def test_an_s3_uri_in_a_run_directory_cannot_reach_outside_its_store(tmp_path):
    from bakeoff.pipelines.local.store import LocalS3

    store = LocalS3(tmp_path / "s3")
    assert store.path("s3://b/k/x.json") == tmp_path / "s3" / "b" / "k" / "x.json"
    for uri in ("s3://b/../../etc/passwd", "s3://../x", "s3://b//etc/passwd", "s3:///etc/passwd", "s3://b/./k"):
        with pytest.raises(ValueError, match="not an S3 URI this store holds"):
            store.path(uri)


def test_a_truncated_summary_is_a_lost_run_not_a_crash_or_a_stale_pass(passed_run, tmp_path, monkeypatch,
                                                                       capsys):
    root = _fresh_copy(passed_run, tmp_path)
    out = root / "out"
    tarball = next(out.glob("s3/**/Train-g5-s0-*/output/output.tar.gz"))
    _rewrite_summary(tarball, lambda raw: raw[: len(raw) // 2])
    proc = _bakeoff(monkeypatch, capsys, "report", out, "--json", "--write")
    ev = json.loads(proc.stdout)["evaluation"]
    run = next(r for r in ev["legs"]["g5"]["runs"] if r["seed"] == 0)
    assert run["status"] == "lost" and "not valid JSON" in run["reason"]
    assert ev["verdict"] == "inconclusive" and proc.returncode == 3


def test_an_evaluation_that_cannot_run_removes_the_old_verdict_and_exits_4(passed_run, tmp_path, monkeypatch,
                                                                            capsys):
    from bakeoff.pipelines.local.jobs import Outcome

    root = _fresh_copy(passed_run, tmp_path)
    out = root / "out"
    assert (out / "evaluation" / "evaluation.json").exists()

    def crashing(job, eval_dir, store, process, config_override=None):
        (eval_dir / "stdout.log").write_text("Traceback (most recent call last):\nMemoryError\n")
        return Outcome(1, 0.1)

    # Every job is reused: only the Evaluate step runs (and crashes).
    code, _, err = bakeoff_cli(monkeypatch, capsys, None, "run", root / "bakeoff.yaml", "--out", out, "--no-mlflow",
                               processor=crashing)
    assert code == 4, err
    assert "the evaluation step failed: MemoryError" in err and "no verdict was written" in err
    for stale in ("evaluation.json", "report.html", "report.md", "gate.json"):
        assert not (out / "evaluation" / stale).exists(), stale
    # `bakeoff report` never serves what is not there: it decides again from the jobs.
    monkeypatch.undo()
    proc = _bakeoff(monkeypatch, capsys, "report", out, "--write")
    assert proc.returncode == 0 and "it has no verdict" in proc.stderr, proc.stderr[-2000:]


def test_deciding_again_a_run_made_without_mlflow_logs_nothing_to_mlflow(tmp_path, monkeypatch, capsys):
    from bakeoff.pipelines import api

    spec = verdict_spec(tmp_path, seeds=2)  # the spec logs to MLflow; the run was made with --no-mlflow
    out = tmp_path / "out"
    assert api.run_local(spec, out, mlflow=False, container=FakeContainer(Recipe()),
                         processor=evaluate_here).exit_code == 0
    assert not (out / "mlflow").exists()
    tarball = next(out.glob("s3/**/Train-m5-s1-*/output/output.tar.gz"))
    _rewrite_summary(tarball, lambda raw: json.dumps({**json.loads(raw), "metrics": {"val_mse": 9.0}}).encode())
    proc = _bakeoff(monkeypatch, capsys, "report", out, "--json", "--write")
    assert "deciding again" in proc.stderr and proc.returncode == 3, proc.stderr[-2000:]
    assert not (out / "mlflow").exists(), "deciding again made an MLflow store for a run that logged none"
