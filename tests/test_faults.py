"""Faults injected into real local runs: a hung job, a stopped run, two runs on one
directory, an evaluation that cannot run, outputs changed after the verdict, MLflow
down. Each ends as promised: nothing lost, nothing stale, no orphan, the right exit code."""
import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, bakeoff, write_spec

pytestmark = pytest.mark.slow  # real bake-offs through `bakeoff run`

LEGS = [{"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32"},
        {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}]


def _spec(tmp_path, plant="none", seeds=2, legs=LEGS, mlflow=False, **extra):
    if not (tmp_path / "verdict").exists():
        shutil.copytree(ROOT / "tests" / "assets" / "verdict", tmp_path / "verdict")
    return write_spec(tmp_path / "bakeoff.yaml", {
        "name": "faults", "entrypoint": {"source_dir": "verdict", "script": "train.py"},
        "hyperparameters": {"plant": plant},
        "training": {"global_batch_size": 16, "max_steps": 40, "log_interval": 10},
        "legs": legs, "seeds": seeds, "mlflow": {"enabled": mlflow},
        "parity": {"metric": "val_mse", "margin": 0.05, "baseline": "g5"}, **extra})


def _job(out: Path, name: str) -> dict:
    return json.loads((out / "jobs" / name / "job.json").read_text())


def _processes_using(path: Path) -> list[str]:
    """Command lines of live processes that mention `path` (the run directory)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (proc / "environ").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(path) in cmd or str(path) in environ:
            found.append(f"{proc.name}: {cmd[:200]}")
    return found


def _wait_for(predicate, timeout=240.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_hung_job_is_stopped_at_its_max_runtime_and_leaves_its_reason(tmp_path):
    legs = [{**LEGS[0], "max_runtime_s": 6}, LEGS[1]]
    spec = _spec(tmp_path, plant="hang=m5/0", legs=legs)
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow")
    out = tmp_path / "out"
    meta = _job(out, "m5-s0")
    assert meta["timed_out"] and meta["status"] == "failed" and meta["lost"], meta
    assert "stopped at its max runtime (6 s" in meta["reason"]
    model = out / "jobs" / "m5-s0" / "opt" / "ml" / "model"
    summary = json.loads((model / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["failure_kind"] == "interrupted"
    assert summary["steps_completed"] == 6  # the steps before the hang are kept
    assert (out / "jobs" / "m5-s0" / "opt" / "ml" / "output" / "failure").exists()
    assert len((model / "metrics.jsonl").read_text().splitlines()) >= 1
    # A job stopped by its stopping condition says nothing about quality: inconclusive, not fail.
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert ev["verdict"] == "inconclusive" and proc.returncode == 3, proc.stderr[-2000:]
    run = next(r for r in ev["legs"]["m5"]["runs"] if r["seed"] == 0)
    assert run["status"] == "lost" and "max runtime" in run["reason"]
    assert not _processes_using(out)


def test_sigterm_stops_the_job_group_keeps_what_finished_and_a_rerun_resumes(tmp_path):
    spec = _spec(tmp_path, plant="slow")
    out = tmp_path / "out"
    exe = Path(sys.executable).with_name("bakeoff")
    # One job at a time, so that one has finished and the next is training (side by side: the test below).
    run = subprocess.Popen([str(exe), "run", str(spec), "--out", str(out), "--no-mlflow", "--jobs", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # Wait until the first job has finished and the second is training.
        _wait_for(lambda: (out / "jobs" / "m5-s0" / "job.json").exists() and
                  (out / "jobs" / "g5-s0" / "opt" / "ml" / "model" / "metrics.jsonl").exists(),
                  what="the second job to start")
        # A second run on the same directory refuses, naming the first.
        second = bakeoff("run", spec, "--out", out, "--no-mlflow")
        assert second.returncode == 2, second.stderr
        assert f"in use by pid {run.pid}" in second.stderr and len(second.stderr.strip().splitlines()) == 1
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "stopped by SIGTERM" in stderr and "Traceback" not in stderr
    assert not _processes_using(out), "the job outlived `bakeoff run`"
    assert _job(out, "m5-s0")["status"] == "completed"
    stopped = _job(out, "g5-s0")
    assert stopped["status"] == "failed" and "interrupted" in stopped["reason"]
    summary = json.loads((out / "jobs" / "g5-s0" / "opt" / "ml" / "model" / "summary.json").read_text())
    assert summary["failure_kind"] == "interrupted" and "SIGTERM" in summary["reason"]
    assert not (out / "evaluation" / "evaluation.json").exists()
    # The lock went with the run: a re-run is allowed, and runs only what did not finish.
    again = bakeoff("run", spec, "--out", out, "--no-mlflow")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "m5-s0: unchanged, not re-run" in again.stderr and "g5-s0: completed" in again.stderr, again.stderr
    assert _job(out, "g5-s0")["status"] == "completed"


def test_sigterm_with_jobs_side_by_side_stops_every_one_and_a_rerun_resumes_them(tmp_path):
    spec = _spec(tmp_path, plant="slow")
    out = tmp_path / "out"
    exe = Path(sys.executable).with_name("bakeoff")
    run = subprocess.Popen([str(exe), "run", str(spec), "--out", str(out), "--no-mlflow", "--jobs", "2"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    first = ("m5-s0", "g5-s0")  # the plan's first two: they start together
    try:
        _wait_for(lambda: all((out / "jobs" / n / "opt" / "ml" / "model" / "metrics.jsonl").exists() for n in first),
                  what="two jobs to train side by side")
        assert not any((out / "jobs" / n / "job.json").exists() for n in first)  # both still running
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "stopped by SIGTERM" in stderr and "Traceback" not in stderr
    assert not _processes_using(out), "a job outlived `bakeoff run`"
    for name in first:
        stopped = _job(out, name)
        assert stopped["status"] == "failed" and "interrupted" in stopped["reason"], (name, stopped)
    assert not (out / "jobs" / "m5-s1").exists()  # never started after the signal
    again = bakeoff("run", spec, "--out", out, "--no-mlflow", "--jobs", "2")
    assert again.returncode == 0, again.stderr[-2000:]
    assert all(_job(out, n)["status"] == "completed" for n in (*first, "m5-s1", "g5-s1"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_kill_9_of_bakeoff_run_leaves_no_job_running_and_a_rerun_finds_nothing_of_it(tmp_path):
    # A job that has stopped printing: no broken pipe would ever end it.
    spec = _spec(tmp_path, plant="hang=m5/0")
    out = tmp_path / "out"
    exe = Path(sys.executable).with_name("bakeoff")
    run = subprocess.Popen([str(exe), "run", str(spec), "--out", str(out), "--no-mlflow"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_for(lambda: (out / "jobs" / "m5-s0" / "opt" / "ml" / "model" / "metrics.jsonl").exists(),
                  what="the first job to train")
        assert _processes_using(out)  # the job (launcher and script) is running
        run.kill()  # SIGKILL: no handler of bakeoff's runs
        run.wait(30)
        _wait_for(lambda: not _processes_using(out), timeout=60, what="the job to end with `bakeoff run`")
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    again = bakeoff("run", _spec(tmp_path, plant="none"), "--out", out, "--no-mlflow")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "in use by pid" not in again.stderr


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
    root = tmp_path_factory.mktemp("passed")
    spec = _spec(root)
    proc = bakeoff("run", spec, "--out", root / "out", "--no-mlflow")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root


def _fresh_copy(passed_run, tmp_path) -> Path:
    shutil.copytree(passed_run, tmp_path / "r", symlinks=True)
    return tmp_path / "r"


def test_report_decides_again_when_a_job_output_changed_after_the_verdict(passed_run, tmp_path):
    root = _fresh_copy(passed_run, tmp_path)
    out = root / "out"
    # The run directory moved: the verdict is still current (nothing it was decided from changed).
    current = bakeoff("report", out, "--json")
    assert current.returncode == 0 and "deciding again" not in current.stderr, current.stderr
    tarball = next(out.glob("s3/**/Train-m5-s1-*/output/output.tar.gz"))
    # Rewritten after the job finished (by hand, or by another job): its numbers are never used.
    _rewrite_summary(tarball, lambda raw: json.dumps({**json.loads(raw), "metrics": {"val_mse": 9.0}}).encode())
    proc = bakeoff("report", out, "--json")
    assert "its jobs changed after the verdict was written; deciding again" in proc.stderr, proc.stderr
    assert proc.stdout.startswith("{"), proc.stderr[-3000:]
    ev = json.loads(proc.stdout)
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


def test_report_of_a_read_only_run_directory_writes_elsewhere_and_changes_nothing(passed_run, tmp_path):
    root = _fresh_copy(passed_run, tmp_path)
    out = root / "out"
    (tmp_path / "cwd").mkdir()
    before = {p: p.stat().st_mtime_ns for p in (out / "evaluation").iterdir()}
    with _read_only(root):
        proc = bakeoff("report", out, "--json", cwd=tmp_path / "cwd")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert f"{out / 'evaluation'} is read-only: the report goes to {tmp_path / 'cwd' / 'bakeoff-report-out'}" \
            in proc.stderr
        files, elsewhere_dir = json.loads(proc.stdout)["files"], tmp_path / "cwd" / "bakeoff-report-out"
        assert Path(files["report"]).resolve() == (elsewhere_dir / "report.html").resolve()
        assert json.loads((elsewhere_dir / "evaluation.json").read_text())["verdict"] == "pass"
        assert {p: p.stat().st_mtime_ns for p in (out / "evaluation").iterdir()} == before
        # A changed job needs the verdict decided again, which writes: one line saying what to do.
        tarball = next(out.glob("s3/**/Train-m5-s1-*/output/output.tar.gz"))
    elsewhere = bakeoff("report", out, "--out", tmp_path / "asked")
    assert elsewhere.returncode == 0 and (tmp_path / "asked" / "report.html").exists(), elsewhere.stderr[-3000:]
    assert {p: p.stat().st_mtime_ns for p in (out / "evaluation").iterdir()} == before, "--out wrote in the run"
    _rewrite_summary(tarball, lambda raw: json.dumps({**json.loads(raw), "metrics": {"val_mse": 9.0}}).encode())
    with _read_only(root):
        refused = bakeoff("report", out, cwd=tmp_path / "cwd")
    assert refused.returncode == 2, refused.stderr[-3000:]
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "is read-only, so it cannot be decided again there" in lines[0], refused.stderr
    assert f"cp -r {out} DEST" in lines[0]


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


def test_deciding_a_run_directory_again_runs_none_of_its_commands_or_code(passed_run, tmp_path):
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

    proc = bakeoff("report", out, "--json")
    assert not ran_command.exists() and not ran_bundle.exists(), proc.stderr[-2000:]
    assert proc.returncode == 0 and json.loads(proc.stdout)["verdict"] == "pass", proc.stderr[-3000:]
    assert "deciding again" in proc.stderr
    assert "pipeline.json differs from what this bakeoff compiles for the run's spec.json" in proc.stderr
    assert "not run: deciding with this bakeoff's evaluation" in proc.stderr
    assert (out / "evaluation" / "inputs.json").exists()  # decided, and recorded what from


def test_an_s3_uri_in_a_run_directory_cannot_reach_outside_its_store(tmp_path):
    from pipelines.local.store import LocalS3

    store = LocalS3(tmp_path / "s3")
    assert store.path("s3://b/k/x.json") == tmp_path / "s3" / "b" / "k" / "x.json"
    for uri in ("s3://b/../../etc/passwd", "s3://../x", "s3://b//etc/passwd", "s3:///etc/passwd", "s3://b/./k"):
        with pytest.raises(ValueError, match="not an S3 URI this store holds"):
            store.path(uri)


def test_a_truncated_summary_is_a_lost_run_not_a_crash_or_a_stale_pass(passed_run, tmp_path):
    root = _fresh_copy(passed_run, tmp_path)
    out = root / "out"
    tarball = next(out.glob("s3/**/Train-g5-s0-*/output/output.tar.gz"))
    _rewrite_summary(tarball, lambda raw: raw[: len(raw) // 2])
    proc = bakeoff("report", out, "--json")
    ev = json.loads(proc.stdout)
    run = next(r for r in ev["legs"]["g5"]["runs"] if r["seed"] == 0)
    assert run["status"] == "lost" and "not valid JSON" in run["reason"]
    assert ev["verdict"] == "inconclusive" and proc.returncode == 3


def test_an_evaluation_that_cannot_run_removes_the_old_verdict_and_exits_4(passed_run, tmp_path, monkeypatch,
                                                                            capsys):
    from pipelines.cli import main
    from pipelines.local import executor as executor_module
    from pipelines.local.jobs import Outcome

    root = _fresh_copy(passed_run, tmp_path)
    out = root / "out"
    assert (out / "evaluation" / "evaluation.json").exists()

    def crashing(job, eval_dir, store, process, config_override=None):
        (eval_dir / "stdout.log").write_text("Traceback (most recent call last):\nMemoryError\n")
        return Outcome(1, 0.1)

    monkeypatch.setattr(executor_module, "run_processing", crashing)
    code = main(["run", str(root / "bakeoff.yaml"), "--out", str(out), "--no-mlflow"])
    err = capsys.readouterr().err
    assert code == 4, err
    assert "the evaluation step failed: MemoryError" in err and "no verdict was written" in err
    for stale in ("evaluation.json", "report.html", "report.md", "gate.json"):
        assert not (out / "evaluation" / stale).exists(), stale
    # `bakeoff report` never serves what is not there: it decides again from the jobs.
    monkeypatch.undo()
    proc = bakeoff("report", out)
    assert proc.returncode == 0 and "it has no verdict" in proc.stderr, proc.stderr[-2000:]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_mlflow_down_costs_no_retries_one_terminal_warning_and_no_billable_time(tmp_path):
    spec = _spec(tmp_path, mlflow=True)
    uri = f"http://127.0.0.1:{_closed_port()}"
    proc = bakeoff("run", spec, "--out", tmp_path / "out", env={"MLFLOW_TRACKING_URI": uri})
    assert proc.returncode == 0, proc.stderr[-2000:]
    terminal = proc.stdout + proc.stderr
    assert sum("unreachable" in line for line in terminal.splitlines()) == 1, terminal[-3000:]
    for name in ("m5-s0", "g5-s1"):
        summary = json.loads((tmp_path / "out" / "jobs" / name / "opt" / "ml" / "model" / "summary.json").read_text())
        mlflow = summary["mlflow"]
        # The probe found the server down before any MLflow call: no client retries were waited out.
        assert "unreachable" in mlflow["error"] and mlflow["run_id"] is None
        meta = _job(tmp_path / "out", name)
        assert meta["mlflow_wait_s"] == mlflow["wait_s"] and "less the wait for MLflow" in meta["billable_basis"]
    ev = json.loads((tmp_path / "out" / "evaluation" / "evaluation.json").read_text())
    assert ev["verdict"] == "pass" and "unreachable" in ev["mlflow"]["error"]


def test_mlflow_tells_the_truth_across_a_killed_job_and_a_rerun(tmp_path):
    from mlflow.tracking import MlflowClient

    spec = _spec(tmp_path, plant="sigkill_once=m5/0", mlflow=True)
    out = tmp_path / "out"
    first = bakeoff("run", spec, "--out", out)
    assert first.returncode == 3, first.stderr[-2000:]
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow' / 'mlflow.db'}")
    experiments = {e.name: e for e in client.search_experiments()}
    assert list(experiments) == ["bakeoff-faults"]  # no Default experiment beside it
    exp = experiments["bakeoff-faults"].experiment_id

    def children():
        return {r.info.run_name: r for r in client.search_runs([exp])
                if r.data.tags.get("bakeoff.role") not in ("parent", "summary")}

    killed = children()["m5-s0"]
    assert killed.info.status == "KILLED"  # not left RUNNING by the process SIGKILL ended
    parent = next(r for r in client.search_runs([exp]) if r.data.tags.get("bakeoff.role") == "parent")
    assert killed.data.tags["mlflow.parentRunId"] == parent.info.run_id
    # Re-run the lost job (its second attempt is spared): one child per job, the parent's figures once.
    second = bakeoff("run", spec, "--out", out)
    assert second.returncode == 0, second.stderr[-2000:]
    runs = children()
    assert sorted(runs) == ["g5-s0", "g5-s1", "m5-s0", "m5-s1"]
    assert all(r.info.status == "FINISHED" for r in runs.values())
    assert runs["m5-s0"].info.run_id != killed.info.run_id
    assert client.get_run(killed.info.run_id).info.lifecycle_stage == "deleted"
    g5 = next(r for r in client.search_runs([exp]) if r.info.run_name == "g5 (summary)")
    assert len(client.get_metric_history(g5.info.run_id, "parity/val_mse_mean")) == 1
    # --force runs every job again: each replaces its own earlier run.
    third = bakeoff("run", spec, "--out", out, "--force")
    assert third.returncode == 0, third.stderr[-2000:]
    assert sorted(children()) == ["g5-s0", "g5-s1", "m5-s0", "m5-s1"]
    assert not list((out / "jobs").rglob("mlruns"))
