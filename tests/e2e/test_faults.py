"""Faults injected into real local runs: a stopped run, two runs on one directory, MLflow down.
Each ends as promised: nothing lost, nothing stale, no orphan, the right exit code. A hung job,
outputs changed after the verdict and an evaluation that cannot run: tests/engine/."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from planted_runs import _spec

from conftest import bakeoff, processes_using


def _job(out: Path, name: str) -> dict:
    return json.loads((out / "jobs" / name / "job.json").read_text())


def _wait_for(predicate, timeout=240.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_sigterm_stops_every_running_job_keeps_what_finished_and_a_rerun_resumes(tmp_path):
    # One run shows it all: two jobs at a time over three seeds, so that the first seed's two have finished,
    # the second's two are training side by side and the third's have not started when the signal comes.
    spec = _spec(tmp_path, plant="slow", seeds=3)
    out = tmp_path / "out"
    exe = Path(sys.executable).with_name("bakeoff")
    run = subprocess.Popen([str(exe), "run", str(spec), "--out", str(out), "--no-mlflow", "--jobs", "2"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    finished, stopped, never = ("m5-s0", "g5-s0"), ("m5-s1", "g5-s1"), ("m5-s2", "g5-s2")  # the plan's order
    try:
        _wait_for(lambda: (out / "jobs" / "m5-s0" / "opt" / "ml" / "model" / "metrics.jsonl").exists(),
                  what="the first job to train")
        # A second run on the same directory refuses, naming the first (here, while the first seed's jobs
        # train: the second seed's may not finish before the signal).
        second = bakeoff("run", spec, "--out", out, "--no-mlflow")
        assert second.returncode == 2, second.stderr
        assert f"in use by pid {run.pid}" in second.stderr and len(second.stderr.strip().splitlines()) == 1
        _wait_for(lambda: all((out / "jobs" / n / "job.json").exists() for n in finished) and
                  all((out / "jobs" / n / "opt" / "ml" / "model" / "metrics.jsonl").exists() for n in stopped),
                  what="the first seed's jobs to finish and the second's to train side by side")
        assert not any((out / "jobs" / n / "job.json").exists() for n in stopped)  # both still running
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "stopped by SIGTERM" in stderr and "Traceback" not in stderr
    assert not processes_using(out), "a job outlived `bakeoff run`"
    assert all(_job(out, n)["status"] == "completed" for n in finished)
    for name in stopped:
        job = _job(out, name)
        assert job["status"] == "failed" and "interrupted" in job["reason"], (name, job)
        summary = json.loads((out / "jobs" / name / "opt" / "ml" / "model" / "summary.json").read_text())
        assert summary["failure_kind"] == "interrupted" and "SIGTERM" in summary["reason"], (name, summary)
    assert not any((out / "jobs" / n).exists() for n in never)  # never started after the signal
    assert not (out / "evaluation" / "evaluation.json").exists()
    # The lock went with the run: a re-run is allowed, and runs only what did not finish. The four jobs
    # left side by side: each sleeps through its planted slow steps, so at once, not in two rounds.
    again = bakeoff("run", spec, "--out", out, "--no-mlflow", "--jobs", "4")
    assert again.returncode == 0, again.stderr[-2000:]
    assert all(f"{n}: unchanged, not re-run" in again.stderr for n in finished), again.stderr
    assert all(f"{n}: completed" in again.stderr for n in (*stopped, *never)), again.stderr
    assert all(_job(out, n)["status"] == "completed" for n in (*finished, *stopped, *never))


def test_sigterm_during_the_evaluation_ends_the_run_not_hangs_it(tmp_path):
    # The Evaluate step's process is waited for on the main thread: the signal handler interrupts that wait,
    # and must not wait on the same process itself (Popen's wait lock is held there: a deadlock).
    spec = _spec(tmp_path, seeds=1)
    out = tmp_path / "out"
    exe = Path(sys.executable).with_name("bakeoff")
    run = subprocess.Popen([str(exe), "run", str(spec), "--out", str(out), "--no-mlflow", "--jobs", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for(lambda: (out / "evaluation" / "stdout.log").exists(), what="the Evaluate step to start")
        time.sleep(0.5)  # inside its wait: the step's Python is still importing
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "stopped by SIGTERM" in stderr and "Traceback" not in stderr
    assert not processes_using(out), "the Evaluate step outlived `bakeoff run`"
    assert not (out / "evaluation" / "evaluation.json").exists()


def test_ctrl_c_stops_the_running_job_and_exits_130_with_the_error_as_json(tmp_path):
    # Ctrl-C is SIGINT to the foreground process: bakeoff stops its job's process group first, as for SIGTERM,
    # and exits 128 + 2 as a shell reports an interrupted command; under --json stdout says so as one object.
    spec = _spec(tmp_path, plant="slow", seeds=1)
    out = tmp_path / "out"
    exe = Path(sys.executable).with_name("bakeoff")
    run = subprocess.Popen([str(exe), "run", str(spec), "--out", str(out), "--no-mlflow", "--jobs", "1", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for(lambda: (out / "jobs" / "m5-s0" / "opt" / "ml" / "model" / "metrics.jsonl").exists(),
                  what="the first job to train")
        run.send_signal(signal.SIGINT)
        stdout, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 130, stderr[-2000:]
    assert "stopped by SIGINT" in stderr and "Traceback" not in stderr
    body = json.loads(stdout)
    assert body["exit_code"] == 130 and body["error"] == "Interrupted" and body["message"] == "stopped by SIGINT"
    assert not processes_using(out), "a job outlived `bakeoff run`"
    job = _job(out, "m5-s0")
    assert job["status"] == "failed" and "interrupted" in job["reason"], job
    assert not (out / "evaluation" / "evaluation.json").exists()


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
        assert processes_using(out)  # the job (launcher and script) is running
        run.kill()  # SIGKILL: no handler of bakeoff's runs
        run.wait(30)
        _wait_for(lambda: not processes_using(out), timeout=60, what="the job to end with `bakeoff run`")
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    again = bakeoff("run", _spec(tmp_path, plant="none"), "--out", out, "--no-mlflow")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "in use by pid" not in again.stderr




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
