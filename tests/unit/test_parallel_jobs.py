"""Local jobs side by side (`--jobs N`): the runner reads results in the plan's order, so the same
jobs are run, stopped and recorded as with `--jobs 1`, whatever order they end in.

The runner (pipelines/local/parallel.py) is driven here by a small executor whose jobs are
torch-free Python processes (started through the engine's own JobProcess): each writes the eval
curve it is given and waits, where told, until a named file exists. That lets a test decide
which job ends first, which real training jobs would leave to the scheduler of the machine."""
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bakeoff.pipelines.local.doomed import DoomWatch
from bakeoff.pipelines.local.jobs import Outcome
from bakeoff.pipelines.local.parallel import ParallelJobs
from bakeoff.pipelines.local.slots import (
    default_jobs,
    rendezvous_environment,
    thread_environment,
    threads_per_process,
    warms_locally,
)
from bakeoff_runtime import contract

# A job: its curve of val_mse at steps 10 and 20; then, if told, wait for a file before ending.
# The standard library only: it runs with -S (no site, no editable-install import hook to load).
FAKE_JOB = r"""
import json, os, sys, time
from pathlib import Path
model = Path(os.environ["FAKE_MODEL_DIR"]); model.mkdir(parents=True, exist_ok=True)
curve = json.loads(os.environ["FAKE_CURVE"])
with open(model / "metrics.jsonl", "w") as f:
    for i, v in enumerate(curve):
        f.write(json.dumps({"kind": "eval", "step": 10 * (i + 1), "val_mse": v}) + "\n")
        print(f"[bakeoff] step={10 * (i + 1)} val_mse={v}", flush=True)
gate = os.environ.get("FAKE_WAIT_FOR")
while gate and not Path(gate).exists():
    time.sleep(0.02)
(model / "summary.json").write_text(json.dumps({"status": "completed", "metrics": {"val_mse": curve[-1]},
                                                "threads": os.environ.get("OMP_NUM_THREADS")}))
"""


@dataclass
class FakeJob:
    step_name: str
    name: str
    leg: str
    seed: int
    environment: dict[str, str]
    hyperparameters: dict[str, str] = field(default_factory=lambda: {"max_steps": "20"})
    hosts: tuple[str, ...] = ("algo-1",)


class Display:
    """The display calls, in the order they were made (all on the runner's thread)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.thread_ids: set[int] = set()

    def __getattr__(self, name: str):
        def record(*args):
            self.thread_ids.add(threading.get_ident())
            self.calls.append((name, *args))
        return record


class FakeExecutor:
    """What the runner uses of LocalExecutor: where jobs live, how one runs and is recorded."""

    def __init__(self, out: Path, seeds: list[int], curves: dict[str, list[float]], gates: dict[str, Path]):
        self.out = out
        self.spec = SimpleNamespace(seed_list=seeds, baseline="g5", entrypoint=SimpleNamespace(mode="runtime"),
                                    parity=SimpleNamespace(metric="val_mse", direction="minimize", margin=0.05,
                                                           margin_type="absolute"))
        self.progress = Display()
        self.curves, self.gates = curves, gates
        self.started: list[str] = []
        self.metric_checked: list[list[str]] = []

    def train(self, job, key, store, process, on_line, interrupted=lambda: False) -> dict[str, Any]:
        self.started.append(job.name)
        job_dir = self.out / "jobs" / job.name
        model = job_dir / "opt" / "ml" / "model"
        env = {**job.environment, "FAKE_MODEL_DIR": str(model), "FAKE_CURVE": json.dumps(self.curves[job.name]),
               "PATH": "/usr/bin:/bin"}
        if job.name in self.gates:
            env["FAKE_WAIT_FOR"] = str(self.gates[job.name])
        job_dir.mkdir(parents=True, exist_ok=True)
        outcome = process.run([sys.executable, "-S", "-c", FAKE_JOB], env, job_dir, job_dir / "stdout.log", 120,
                              on_line)
        if interrupted():
            outcome = Outcome(outcome.exit_code, outcome.wall_s, interrupted=True)
        status = "completed" if outcome.exit_code == 0 else "failed"
        self.record_job(job, job_dir, key, 0.0, outcome, store, status=status)
        return {"training_job_name": f"{job.step_name}-{key}", "status": status, "wall_s": outcome.wall_s,
                "summary": {}, "reason": None if status == "completed" else f"exit {outcome.exit_code}"}

    def record_job(self, job, job_dir, key, started, outcome, store, status=None) -> dict:
        try:
            summary = json.loads((job_dir / "opt" / "ml" / "model" / "summary.json").read_text())
        except FileNotFoundError:  # stopped before it wrote one
            summary = {"status": "failed"}
        (job_dir / "job.json").write_text(json.dumps({
            "job_key": key, "training_job_name": f"{job.step_name}-{key}",
            "status": status or summary.get("status"), "failure_kind": summary.get("failure_kind"),
            "interrupted": outcome.interrupted}))
        return summary

    def stop_if_nobody_reports_the_metric(self, job_dirs) -> None:
        self.metric_checked.append([d.name for d in job_dirs])


ORDER = ["trn1-s0", "g5-s0", "trn1-s1", "g5-s1", "trn1-s2", "g5-s2"]  # seed-major, as plan.seed_major
GOOD, BLOWN = [0.30, 0.20], [0.5, float("nan")]


def _run(tmp_path: Path, at_once: int, curves: dict[str, list[float]], gates: dict[str, Path] | None = None,
         reuse: set[str] = frozenset(), stopped: dict[str, str] | None = None):
    out = tmp_path / f"out-{at_once}"
    x = FakeExecutor(out, [0, 1, 2], curves, gates or {})
    jobs = {n: FakeJob(n, n, n.split("-")[0], int(n.split("-s")[1]), {contract.ENV["backend"]: "cpu"})
            for n in ORDER}
    keys = {n: f"k{i}" for i, n in enumerate(ORDER)}
    for name in reuse:  # a finished job of an earlier run, as the cache finds it
        d = out / "jobs" / name
        (d / "opt" / "ml" / "model").mkdir(parents=True)
        (d / "opt" / "ml" / "model" / "metrics.jsonl").write_text(json.dumps(
            {"kind": "eval", "step": 10, "val_mse": 0.3}) + "\n")
        (d / "opt" / "ml" / "model" / "summary.json").write_text(json.dumps({"status": "completed"}))
        (d / "job.json").write_text(json.dumps({"training_job_name": f"{name}-cached", "status": "completed"}))
    ctx = SimpleNamespace(training_job_names={})
    watch = DoomWatch(x.spec)
    runner = ParallelJobs(x, ORDER, jobs, keys, set(reuse), dict(stopped or {}), watch, ctx, None, at_once, gpu=False)
    executed, skipped = runner.run()
    records = {n: json.loads((out / "jobs" / n / "job.json").read_text()) for n in ORDER}
    return SimpleNamespace(x=x, executed=executed, skipped=skipped, records=records, watch=watch,
                           names=dict(ctx.training_job_names), out=out)


def _outcome(r) -> dict:
    """What a run leaves for the Evaluate step: each job's record and what is readable as its result."""
    result = {}
    for name, rec in r.records.items():
        model = r.out / "jobs" / name / "opt" / "ml" / "model"
        summary = json.loads((model / "summary.json").read_text())
        result[name] = (rec["status"], summary.get("failure_kind"), summary.get("reason"),
                        (model / "metrics.jsonl").exists())
    return {"jobs": result, "doomed": dict(r.watch.doomed), "names": r.names, "executed": r.executed,
            "skipped": r.skipped}


def test_side_by_side_runs_decide_as_one_at_a_time(tmp_path):
    curves = {n: list(GOOD) for n in ORDER}
    one, two = _run(tmp_path, 1, curves), _run(tmp_path, 2, curves)
    assert _outcome(one) == _outcome(two)
    assert one.x.started == ORDER == two.x.started  # started in the plan's order
    assert one.x.metric_checked == two.x.metric_checked == [["trn1-s0", "g5-s0"]]  # once, after the first seed
    # Display calls all on the runner's thread; one bar per job, advanced by job index.
    assert len(two.x.progress.thread_ids) == 1
    advances = [c for c in two.x.progress.calls if c[0] == "advance"]
    assert advances and all(len(c) == 3 and c[2] in range(1, 7) for c in advances)
    assert {c[3] for c in two.x.progress.calls if c[0] == "finish"} == {"completed"}


def test_a_job_started_beside_the_one_that_dooms_its_leg_is_stopped_and_recorded_as_never_run(tmp_path):
    # trn1-s0 blows up but ends last of the first two; meanwhile g5-s0 ends and trn1-s1 starts
    # beside it (the bet), and must then be stopped and recorded doomed, as --jobs 1 records it.
    curves = {n: (list(BLOWN) if n == "trn1-s0" else list(GOOD)) for n in ORDER}
    gate = tmp_path / "let-trn1-s0-end"
    gates = {"trn1-s0": gate, "trn1-s1": tmp_path / "never"}

    def open_gate_when_trn1_s1_runs():
        deadline = time.time() + 60
        while time.time() < deadline and not (tmp_path / "out-2" / "jobs" / "trn1-s1" / "opt" / "ml" / "model"
                                              / "metrics.jsonl").exists():
            time.sleep(0.02)
        gate.touch()

    opener = threading.Thread(target=open_gate_when_trn1_s1_runs, daemon=True)
    opener.start()
    two = _run(tmp_path, 2, curves, gates)
    opener.join()
    gate.unlink()
    one = _run(tmp_path, 1, curves)
    assert "trn1-s1" in two.x.started and "trn1-s1" not in one.x.started  # it really ran beside, then stopped
    assert _outcome(one) == _outcome(two)
    assert two.records["trn1-s1"]["status"] == "failed"
    summary = json.loads((two.out / "jobs" / "trn1-s1" / "opt" / "ml" / "model" / "summary.json").read_text())
    assert summary["failure_kind"] == "doomed" and "stopped early after seed 0" in summary["reason"]
    # Nothing the stopped job wrote is left where the Evaluate step reads results.
    assert not (two.out / "jobs" / "trn1-s1" / "opt" / "ml" / "model" / "metrics.jsonl").exists()
    notes = [c[1] for c in two.x.progress.calls if c[0] == "note"]
    assert any("leg trn1: stopped early after seed 0" in n and "set aside" in n for n in notes), notes
    # Its bar ended without a "failed" line: the doomed note says what happened to it.
    assert not [c for c in two.x.progress.calls if c[0] == "finish" and c[2] == "trn1-s1"]


def test_a_job_that_ended_before_the_one_that_dooms_its_leg_has_its_result_set_aside(tmp_path):
    # trn1-s1 ends (fine) while trn1-s0 (blown up) still runs: its result must not count.
    curves = {n: (list(BLOWN) if n == "trn1-s0" else list(GOOD)) for n in ORDER}
    gate = tmp_path / "let-trn1-s0-end"

    def open_gate_when_trn1_s1_ended():
        deadline = time.time() + 60
        while time.time() < deadline and not (tmp_path / "out-3" / "jobs" / "trn1-s1" / "job.json").exists():
            time.sleep(0.02)
        gate.touch()

    opener = threading.Thread(target=open_gate_when_trn1_s1_ended, daemon=True)
    opener.start()
    three = _run(tmp_path, 3, curves, {"trn1-s0": gate})
    opener.join()
    one = _run(tmp_path, 1, curves)
    assert "trn1-s1" in three.x.started
    assert _outcome(one) == _outcome(three)


def test_reused_and_stopped_legs_take_no_slot_and_keep_their_order(tmp_path):
    curves = {n: list(GOOD) for n in ORDER}
    stopped = {"trn1": "collective check failed, so the leg did not train: planted"}
    two = _run(tmp_path, 2, curves, reuse={"g5-s0"}, stopped=stopped)
    one = _run(tmp_path, 1, curves, reuse={"g5-s0"}, stopped=stopped)
    assert _outcome(one) == _outcome(two)
    assert two.skipped == ["g5-s0"] and two.x.started == ["g5-s1", "g5-s2"]
    assert all(two.records[n]["status"] == "failed" for n in ORDER if n.startswith("trn1"))


def test_each_job_gets_its_share_of_the_cores(tmp_path):
    curves = {n: list(GOOD) for n in ORDER}
    two = _run(tmp_path, 2, curves)
    threads = {json.loads((two.out / "jobs" / n / "opt" / "ml" / "model" / "summary.json").read_text())["threads"]
               for n in ORDER}
    expected = threads_per_process(2)
    assert threads == {str(expected)} and expected >= 1
    assert threads_per_process(1) is None  # one at a time: torch's own default, as before --jobs
    assert threads_per_process(2, cores=8) == 4 and threads_per_process(3, cores=2) == 1
    assert threads_per_process(2, processes=4, cores=8) == 2  # a 4-process job on 2 slots' worth of 8 cores
    # The spec's setting wins; torch.compile's kernel compiler gets the job's share too.
    assert thread_environment(2, {"OMP_NUM_THREADS": "7"}) == {"MKL_NUM_THREADS": "2",
                                                                "TORCHINDUCTOR_COMPILE_THREADS": "2"}
    assert thread_environment(None, {}) == {}


def test_the_default_is_one_job_per_core_as_the_memory_holds():
    gib = 1024**3
    assert default_jobs(cores=2, memory=20 * gib) == 2
    assert default_jobs(cores=16, memory=5 * gib) == 2  # 2 GiB a job
    assert default_jobs(cores=4, memory=1 * gib) == 1
    assert default_jobs(cores=64, memory=None) == 8  # capped
    # The legs' warm interpreters hold their own memory beside the jobs: 5 GiB less two of them holds 1 job.
    assert default_jobs(cores=16, memory=5 * gib, warm_interpreters=2) == 1
    assert default_jobs(cores=16, memory=9 * gib, warm_interpreters=2) == 3


def test_the_engine_budgets_one_warm_interpreter_a_leg_unless_none_starts(monkeypatch, tmp_path):
    from bakeoff.pipelines.local.executor import _warm_legs
    from bakeoff.pipelines.local.warm import starts_warm_interpreters
    from bakeoff.pipelines.spec.model import BakeoffSpec
    from conftest import tiny_spec

    spec = BakeoffSpec.model_validate(tiny_spec())
    assert _warm_legs(spec) == 2
    # A brought script starts cold (launch.py): no interpreter is started for its legs, nor budgeted.
    script = spec.model_copy(update={"entrypoint": spec.entrypoint.model_copy(update={"mode": "script"})})
    assert _warm_legs(script) == 0 and not starts_warm_interpreters(script)
    monkeypatch.setenv(contract.WARM_START_ENV, "0")
    assert _warm_legs(spec) == 0 and not starts_warm_interpreters(spec)


def test_an_error_in_one_job_stops_the_others_and_is_raised(tmp_path):
    curves = {n: list(GOOD) for n in ORDER}
    x = FakeExecutor(tmp_path, [0, 1, 2], curves, {"g5-s0": tmp_path / "never"})
    real_train = x.train

    def train(job, *args, **kwargs):
        if job.name == "trn1-s0":
            raise RuntimeError("planted")
        return real_train(job, *args, **kwargs)

    x.train = train
    jobs = {n: FakeJob(n, n, n.split("-")[0], int(n.split("-s")[1]), {}) for n in ORDER}
    runner = ParallelJobs(x, ORDER, jobs, {n: n for n in ORDER}, set(), {}, DoomWatch(x.spec),
                          SimpleNamespace(training_job_names={}), None, 2, gpu=False)
    with pytest.raises(RuntimeError, match="planted"):
        runner.run()
    rec = json.loads((tmp_path / "jobs" / "g5-s0" / "job.json").read_text())
    assert rec["interrupted"]  # the job beside it was stopped and recorded as interrupted, not left running


def test_a_leg_whose_cache_warms_here_starts_its_later_seeds_after_its_first_and_others_go_ahead(tmp_path):
    """g5 stands for a torch.compile leg: its later seeds wait for g5-s0 to fill the inductor cache (as one
    at a time they would start warm); trn1's seeds are not held up meanwhile."""
    curves = {n: list(GOOD) for n in ORDER}
    gate = tmp_path / "release-g5-s0"
    out = tmp_path / "out"
    x = FakeExecutor(out, [0, 1, 2], curves, {"g5-s0": gate})
    compiled = {contract.ENV["backend"]: "cpu", contract.ENV["torch_compile"]: "1",
                contract.ENV["compile_cache"]: str(tmp_path / "cache")}
    jobs = {n: FakeJob(n, n, n.split("-")[0], int(n.split("-s")[1]),
                       dict(compiled) if n.startswith("g5") else {contract.ENV["backend"]: "neuron"}) for n in ORDER}

    def release() -> None:  # once trn1 has gone ahead as far as it can
        deadline = time.time() + 60
        while "trn1-s2" not in x.started and time.time() < deadline:
            time.sleep(0.02)
        gate.touch()

    threading.Thread(target=release, daemon=True).start()
    runner = ParallelJobs(x, ORDER, jobs, {n: n for n in ORDER}, set(), {}, DoomWatch(x.spec),
                          SimpleNamespace(training_job_names={}), None, 2, gpu=False)
    runner.run()
    started = x.started
    assert started.index("trn1-s2") < started.index("g5-s1")  # g5-s1 waited; trn1 went ahead
    assert sorted(started) == sorted(ORDER)
    assert not rendezvous_environment(1, {})  # one process: nothing to meet on


def test_jobs_of_several_processes_meet_on_ports_of_their_own():
    first, second = rendezvous_environment(2, {}), rendezvous_environment(4, {})
    name = contract.ENV["master_port"]
    assert set(first) == {name} and 0 < int(first[name]) < 65536 and int(second[name]) > 0
    assert rendezvous_environment(2, {name: "29500"}) == {}  # the spec's port is kept
    assert warms_locally({contract.ENV["torch_compile"]: "1", contract.ENV["compile_cache"]: "/c"})
    assert not warms_locally({contract.ENV["compile_cache"]: "/c"})  # XLA on the CPU cannot load its cache
