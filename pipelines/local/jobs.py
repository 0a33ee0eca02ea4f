"""Running one job on this machine the way SageMaker runs its container: the `/opt/ml`
tree laid out from the request, the container command run in a process group of its own,
the stopping condition enforced, signals passed on, and the outputs put where the
request says (output.tar.gz under OutputDataConfig.S3OutputPath)."""
from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bakeoff_runtime import contract
from bakeoff_runtime.process import parent_death

from .store import LocalS3
from .substitutions import LocalProcessingJob, LocalTrainingJob, host_environment
from .warm import WarmPool

STOP_GRACE_S = 10  # SIGTERM, then this long, then SIGKILL (SageMaker gives 120 s)
DRAIN_S = 5.0  # after a job's process ended: what is left of its output has this long to arrive


@dataclass
class Outcome:
    exit_code: int | None
    wall_s: float
    timed_out: bool = False
    interrupted: bool = False


class JobProcess:
    """A job's process group: started, watched, stopped on time or on request."""

    def __init__(self, warm: WarmPool | None = None) -> None:
        self.proc: subprocess.Popen | None = None
        self._cancelled = False
        self._lock = threading.Lock()
        self.warm = warm  # the run's warm interpreters, for a training job's worker (warm.py)

    def cancel(self) -> None:
        """Stop it for good: running, or still to start (a job whose worker has not started its
        process yet must not start it after the run was stopped)."""
        with self._lock:
            self._cancelled = True
        self.stop()

    def signal(self, signum: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signum)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        """SIGTERM to the whole group, SIGKILL after a grace period: no orphans."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.proc.wait()

    def stop_soon(self) -> None:
        """From a signal handler: SIGTERM to the group now and SIGKILL after the grace period, without
        waiting here. The handler may have interrupted this process's own `wait` on the same thread, which
        holds the Popen's wait lock: waiting again would deadlock. The exception the handler raises then
        ends that wait, and `run` stops and reaps the process on its way out."""
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        self.signal(signal.SIGTERM)

        def kill() -> None:
            if proc.returncode is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

        timer = threading.Timer(STOP_GRACE_S, kill)
        timer.daemon = True
        timer.start()

    def run(self, command: list[str], env: dict[str, str], cwd: Path, log: Path, max_runtime_s: float,
            on_line: Callable[[str], None] = lambda line: None) -> Outcome:
        started = time.time()
        timed_out = threading.Event()
        with open(log, "w") as out, self._lock:
            if self._cancelled:
                return Outcome(None, 0.0, interrupted=True)
            # Its own process group (stopped as one), ended with `bakeoff run` even when that is kill -9'd.
            # No preexec_fn: this process has threads (parent_death.wrapped says why that matters).
            self.proc = subprocess.Popen(parent_death.wrapped(command), cwd=cwd, env=env, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True)
        with open(log, "a") as out:

            def deadline() -> None:
                timed_out.set()
                self.stop()

            timer = threading.Timer(max_runtime_s, deadline)
            timer.daemon = True
            timer.start()
            proc = self.proc

            def read() -> None:
                assert proc.stdout is not None
                for line in proc.stdout:
                    out.write(line)
                    on_line(line)

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            try:
                # The job ends when its container process ends, not when its output closes: what it left
                # running would hold the pipe to the max runtime. The launcher ends those itself; whatever
                # is still in the job's process group after a grace period goes with it.
                code = proc.wait()
                reader.join(DRAIN_S)
                if reader.is_alive():
                    for sig in (signal.SIGTERM, signal.SIGKILL):
                        try:
                            os.killpg(proc.pid, sig)
                        except (ProcessLookupError, PermissionError):
                            pass
                        reader.join(DRAIN_S)
                        if not reader.is_alive():
                            break
            except BaseException:
                self.stop()
                raise
            finally:
                timer.cancel()
        return Outcome(code, time.time() - started, timed_out=timed_out.is_set())


def _resourceconfig(job: LocalTrainingJob, host: str) -> dict[str, Any]:
    return {"current_host": host, "hosts": list(job.hosts), "current_instance_type":
            job.request["ResourceConfig"]["InstanceType"], "current_group_name": "homogeneousCluster",
            "network_interface_name": "lo"}


def lay_out(job: LocalTrainingJob, job_dir: Path, store: LocalS3) -> Path:
    """The job's /opt/ml as SageMaker writes it before the container starts. Outputs of an
    earlier attempt go; checkpoints stay (like S3 checkpoints of a restarted job)."""
    opt_ml = job_dir / "opt" / "ml"
    for sub in ("model", "output", "input", "code"):
        shutil.rmtree(opt_ml / sub, ignore_errors=True)
    config = opt_ml / "input" / "config"
    for d in (config, opt_ml / "model", opt_ml / "output" / "data", opt_ml / "checkpoints"):
        d.mkdir(parents=True, exist_ok=True)
    (config / "hyperparameters.json").write_text(json.dumps(job.hyperparameters, indent=2, sort_keys=True))
    (config / "resourceconfig.json").write_text(json.dumps(_resourceconfig(job, job.hosts[0]), indent=2))
    (config / "inputdataconfig.json").write_text(json.dumps({
        c["ChannelName"]: {"TrainingInputMode": c.get("InputMode", "File"), "S3DistributionType":
                           c["DataSource"]["S3DataSource"].get("S3DataDistributionType", "FullyReplicated"),
                           "RecordWrapperType": "None"}
        for c in job.request["InputDataConfig"]}, indent=2, sort_keys=True))
    data = opt_ml / "input" / "data"
    for name, uri in job.channels.items():
        data.mkdir(parents=True, exist_ok=True)
        source = store.path(uri)
        if not source.exists():
            raise FileNotFoundError(f"channel {name}: {uri} is not in the local store")
        if source.is_dir():  # an S3 prefix: its objects are the channel
            os.symlink(source, data / name, target_is_directory=True)
        else:  # an S3 prefix that is one object's key: SageMaker puts that object in the channel
            (data / name).mkdir()
            os.symlink(source, data / name / source.name)
    return opt_ml


class JobContainer(Protocol):
    """How a training request's container is run: its `/opt/ml` laid out under `job_dir`, run in
    `process` (each line it prints to `on_line`), its outcome returned. `run_training` runs the
    request's ContainerEntrypoint; the engine's tests pass a torch-free fake (tests/engine/)."""

    def __call__(self, job: LocalTrainingJob, job_dir: Path, store: LocalS3, process: JobProcess,
                 on_line: Callable[[str], None]) -> Outcome: ...


def run_training(job: LocalTrainingJob, job_dir: Path, store: LocalS3, process: JobProcess,
                 on_line: Callable[[str], None]) -> Outcome:
    opt_ml = lay_out(job, job_dir, store)
    env = {**host_environment(), **job.environment}
    if process.warm is not None:
        env.update(process.warm.environment(job.leg, env, len(job.hosts)))
    if len(job.hosts) == 1:
        return process.run(list(job.command), env, opt_ml, job_dir / "stdout.log", job.max_runtime_s, on_line)
    return _run_hosts(job, job_dir, opt_ml, env, on_line)


def _run_hosts(job: LocalTrainingJob, job_dir: Path, opt_ml: Path, env: dict[str, str],
               on_line: Callable[[str], None]) -> Outcome:
    """Several hosts of one job: algo-1..N as processes on this machine, each with its own
    resourceconfig.json (the host map resolves their names to 127.0.0.1)."""
    started, procs, codes = time.time(), [], []
    for i, host in enumerate(job.hosts):
        root = opt_ml if i == 0 else job_dir / "hosts" / host / "opt" / "ml"
        if i:
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(opt_ml / "input", root / "input", symlinks=True)
            (root / "model").mkdir(parents=True)
        (root / "input" / "config" / "resourceconfig.json").write_text(json.dumps(_resourceconfig(job, host)))
        host_env = {**env, contract.ENV["opt_ml"]: str(root)}
        command = [part.replace(str(opt_ml), str(root)) for part in job.command]
        proc = JobProcess()
        log = job_dir / ("stdout.log" if i == 0 else f"stdout-{host}.log")
        thread = threading.Thread(target=lambda p=proc, c=command, e=host_env, r=root, lg=log, first=(i == 0):
                                  codes.append(p.run(c, e, r, lg, job.max_runtime_s, on_line if first else
                                                     (lambda line: None))))
        thread.start()
        procs.append((proc, thread))
    for _, thread in procs:
        thread.join()
    worst = max((o.exit_code or 0 for o in codes), key=abs, default=0)
    return Outcome(worst, time.time() - started, timed_out=any(o.timed_out for o in codes))


def publish_outputs(job_dir: Path, output_uri: str, training_job_name: str, store: LocalS3,
                    platform_record: dict[str, Any]) -> str:
    """output.tar.gz (output/data plus the platform's record of the job, what
    DescribeTrainingJob says on SageMaker, and the job's log, CloudWatch's there, as job.log) under
    S3OutputPath/TrainingJobName/output/. The Evaluate step puts the log on the job's MLflow run."""
    data = job_dir / "opt" / "ml" / "output" / "data"
    uri = f"{output_uri.rstrip('/')}/{training_job_name}/output/output.tar.gz"
    target = store.path(uri)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Written to a file beside the target and renamed over it: the archive holds the job's whole metrics.jsonl
    # (hundreds of megabytes for a chatty script), so it is never held in memory, and a reader never sees half.
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        with tarfile.open(tmp, mode="w:gz") as tar:
            if data.exists():
                for item in sorted(data.rglob("*")):
                    if item.is_file():
                        tar.add(item, arcname=item.relative_to(data).as_posix())
            body = json.dumps(platform_record, indent=2, sort_keys=True).encode()
            info = tarfile.TarInfo("job.json")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
            log = job_dir / "stdout.log"
            if log.is_file() and not log.is_symlink():
                tar.add(log, arcname="job.log")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return uri


class ProcessingRunner(Protocol):
    """How the Evaluate step's processing request is run (default `run_processing`: its own command,
    in a process of its own); the seam the engine's tests use to run the same evaluation in theirs."""

    def __call__(self, job: LocalProcessingJob, eval_dir: Path, store: LocalS3, process: JobProcess,
                 config_override: dict[str, Any] | None = None) -> Outcome: ...


def run_processing(job: LocalProcessingJob, eval_dir: Path, store: LocalS3, process: JobProcess,
                   config_override: dict[str, Any] | None = None) -> Outcome:
    """The Evaluate step: inputs copied from the store, the command run, outputs uploaded."""
    shutil.rmtree(eval_dir / "opt", ignore_errors=True)
    shutil.rmtree(eval_dir / "jobs", ignore_errors=True)
    for name, (uri, local) in job.inputs.items():
        store.copy_prefix(uri, local)
        if name == "config" and config_override is not None:
            # One of the printed substitutions: the local evaluation config.
            for path in local.glob("*.json"):
                path.write_text(json.dumps(config_override, indent=2, sort_keys=True) + "\n")
    for local, _ in job.outputs.values():
        local.mkdir(parents=True, exist_ok=True)
    env = {**host_environment(), **job.environment}
    outcome = process.run(list(job.command), env, eval_dir, eval_dir / "stdout.log", job.max_runtime_s)
    if outcome.exit_code == 0:
        for local, uri in job.outputs.values():
            store.upload_dir(local, uri)
    return outcome
