"""MLflow logging that never stops or slows training.

The MLflow client lives in a process of its own (`serve`, below). Importing mlflow and opening its
store cost about as much CPU as importing torch; in a thread of the training process they held the
GIL the job's own start-up needed: a CPU job took 1.8 times as long to reach its first step as
without MLflow (benchmarks/time_to_first_step.py). launch.py starts that process before the
training process, which inherits its pipes (CLIENT_ENV), so mlflow is imported while torch is; a
sink that finds none starts its own. The training loop only puts records on a bounded queue
(dropping, and counting, when it is full); a daemon thread cleans their names and passes them on
through a pipe, another reads what the client process answers (the run's id, an error). If mlflow
is missing, the tracking server is down or the client process dies, the sink says so once and
training carries on; metrics.jsonl and summary.json remain the record of truth.

One MLflow run per job: a job that runs again under the same job key (a re-run, a
retry) replaces the runs of its earlier attempts, which are closed (KILLED if they
were left RUNNING by a killed process) and moved to MLflow's trash, so the experiment
shows one child per job and no curve is drawn twice.

Params: a job's run carries only what identifies it or differs between legs (CHILD_PARAMS), so
MLflow's compare view is not a table of identical rows; the hyperparameters every job shares
go into one `bakeoff.hyperparameters` tag, which the evaluation logs as params of the parent.
"""
from __future__ import annotations

import json
import os
import queue
import select
import signal
import stat
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, Any

from bakeoff_runtime.contract import MLFLOW_CLIENT_ENV, MLFLOW_FLUSH_TIMEOUT_ENV, JobEnvironment

_STOP = object()
BATCH = 500  # metric values per log_batch at most: one round trip per burst, not per value
# "launcher pid,client pid,stdin fd,stdout fd": the client process launch.py started for its worker.
CLIENT_ENV = MLFLOW_CLIENT_ENV

# What identifies a job or differs between legs by design (the batch split follows the devices).
# `backend` is the leg's declared backend, `ran_on` the adapter and machine that ran the job (tracking/identity.py).
CHILD_PARAMS = ("leg", "backend", "ran_on", "instance_type", "precision", "seed", "instance_count", "world_size",
                "per_device_batch_size", "gradient_accumulation_steps", "emulated_on")
SHARED_TAG = "bakeoff.hyperparameters"
MAX_TAG_CHARS = 8000  # MLflow's limit on a tag value (mlflow/utils/validation.py MAX_TAG_VAL_LENGTH)


def split_params(params: dict[str, Any], tags: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the child's params, the shared hyperparameters as one tag): identifying values come from
    the run's `bakeoff.*` tags when the hyperparameters do not hold them (backend, instance type)."""
    child = {}
    for key in CHILD_PARAMS:
        value = params.get(key, tags.get(f"bakeoff.{key}"))
        if value not in (None, ""):
            child[key] = str(value)
    shared = {k: v for k, v in sorted(params.items()) if k not in CHILD_PARAMS}
    body = json.dumps(shared, sort_keys=True, default=str)
    return child, ({SHARED_TAG: body} if shared and len(body) <= MAX_TAG_CHARS else {})


def logs_to_mlflow(environ) -> bool:
    """Whether a job with this environment logs to MLflow (the Runtime's settings)."""
    return bool(environ.get("MLFLOW_TRACKING_URI")) and bool(
        JobEnvironment.from_environ(environ).mlflow_experiment or environ.get("MLFLOW_EXPERIMENT_NAME"))


class Client:
    """One MLflow client process (`serve`): the pipe to its stdin and the one from its stdout."""

    def __init__(self, pid: int, stdin: IO[str], stdout: IO[str], popen: subprocess.Popen | None = None):
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self._popen = popen

    @classmethod
    def start(cls) -> Client:
        """A new one, this process's child (OSError when it cannot be started)."""
        root = str(Path(__file__).resolve().parent.parent)
        code = f"import sys; sys.path.insert(0, {root!r}); from bakeoff_runtime.tracking.sink import main; main()"
        popen = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True, encoding="utf-8", bufsize=1)
        assert popen.stdin is not None and popen.stdout is not None
        return cls(popen.pid, popen.stdin, popen.stdout, popen)

    @classmethod
    def adopt(cls, environ) -> Client | None:
        """The one launch.py started for this process, if there is one and no sink took it yet."""
        value = environ.pop(CLIENT_ENV, None)
        try:
            launcher, pid, to_client, from_client = (int(part) for part in (value or "").split(","))
            # Only the process launch.py started holds these pipes: in any other the numbers are
            # whatever that process opened.
            if launcher != os.getppid() or not all(stat.S_ISFIFO(os.fstat(fd).st_mode)
                                                   for fd in (to_client, from_client)):
                return None
        except (ValueError, OSError):
            return None
        for fd in (to_client, from_client):
            os.set_inheritable(fd, False)
        return cls(pid, os.fdopen(to_client, "w", encoding="utf-8", buffering=1),
                   os.fdopen(from_client, "r", encoding="utf-8"))

    def hand_over(self) -> tuple[dict[str, str], tuple[int, int]]:
        """(environment, fds) for the process this one starts next, which is to use this client;
        then call `release`."""
        fds = (self.stdin.fileno(), self.stdout.fileno())
        return {CLIENT_ENV: f"{os.getpid()},{self.pid},{fds[0]},{fds[1]}"}, fds

    def release(self) -> None:
        """Close this process's ends of the pipes: the client's stdin ends when its user's copy does."""
        for pipe in (self.stdin, self.stdout):
            try:
                pipe.close()
            except OSError:
                pass

    def kill(self) -> None:
        if self._popen is not None:
            if self._popen.poll() is None:
                self._popen.kill()
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def reap(self, timeout: float) -> None:
        """Wait a while for the client (its user gone) to end, then end it."""
        if self._popen is None:
            return
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self._popen.kill()
            self._popen.wait()

    def exit_code(self) -> int | None:
        """How it ended (known for a child of this process only)."""
        return self._popen.wait() if self._popen is not None else None


class MlflowSink:
    def __init__(self, tracking_uri: str | None, experiment: str | None, run_name: str,
                 tags: dict[str, str], params: dict[str, Any], artifact_location: str | None = None,
                 maxsize: int = 10_000, job_key: str | None = None, begin: bool = True,
                 datasets: dict[str, str] | None = None):
        """`begin=False`: the run is made only on `begin()` (or not at all, on `abandon()`); the client
        process starts now either way. `datasets`: the job's data channels (name -> directory), logged as the
        run's dataset inputs (tracking/run_inputs.py)."""
        self.enabled = bool(tracking_uri) and bool(experiment)
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.run_name = run_name
        self.tags = tags
        self.params = params
        self.artifact_location = artifact_location
        self.job_key = job_key
        self.datasets = dict(datasets or {})
        self.replaced: list[str] = []
        self.wait_s = 0.0
        self.run_id: str | None = None
        self.error: str | None = None
        self.dropped = 0
        # The MLflow client's install, when the job runs one beside its training (tracking/install.py).
        self.install: dict | None = None
        self._installing = False
        from bakeoff_runtime.tracking.keys import Cleaner

        self._clean = Cleaner(run_name)
        self._q: queue.Queue = queue.Queue(maxsize=maxsize)
        self._ready = threading.Event()
        self._go = threading.Event()
        self._abandoned = False
        self._ended = False
        self._thread: threading.Thread | None = None
        self._answers: threading.Thread | None = None
        self._client = self._connect() if self.enabled else None
        if begin:
            self._go.set()
        if self._client is not None:
            self._answers = threading.Thread(target=self._read_answers, name="bakeoff-mlflow-answers", daemon=True)
            self._answers.start()
            self._thread = threading.Thread(target=self._run, name="bakeoff-mlflow", daemon=True)
            self._thread.start()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the run exists (or the sink gave up): its id is known only then."""
        return self._ready.wait(timeout)

    # --- called from the training loop -------------------------------------------------
    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        # Stamped when measured: the client may still be starting, or waiting on a slow server.
        self._put(("metrics", metrics, step, int(time.time() * 1000)))

    def set_tags(self, tags: dict[str, str]) -> None:
        self._put(("tags", tags, None, None))

    def log_artifact(self, path: str) -> None:
        self._put(("artifact", path, None, None))

    def _put(self, item) -> None:
        if not self.enabled or self.error:
            return
        try:
            self._q.put_nowait(item)
        except queue.Full:
            self.dropped += 1

    def begin(self) -> None:
        """Make the run (a sink made with `begin=False`)."""
        self._go.set()

    def abandon(self) -> None:
        """Give up before `begin`, the job having failed before it trained: the client process ends
        without a run."""
        self._abandoned = True
        self._go.set()

    def close(self, status: str = "FINISHED", timeout: float | None = None) -> dict[str, Any]:
        """Flush what is queued (bounded by `timeout`) and end the run. The time spent here is
        `wait_s`: MLflow's, not training's (the local executor keeps it out of billable time)."""
        if timeout is None:
            timeout = float(os.environ.get(MLFLOW_FLUSH_TIMEOUT_ENV, 30))
        started = time.time()
        self._go.set()
        if self._thread is not None:
            try:
                self._q.put(("end", status, None, None), timeout=5)
                self._q.put(_STOP, timeout=5)
            except queue.Full:
                pass
            self._thread.join(timeout)
            # A job shorter than its client's install (which runs beside the training) waits for the install,
            # which is bounded itself, rather than lose its run.
            from bakeoff_runtime.tracking.install import INSTALL_TIMEOUT_S

            while self._thread.is_alive() and self._installing and time.time() - started < INSTALL_TIMEOUT_S + 60:
                self._thread.join(1.0)
            if self._thread.is_alive():
                self.error = self.error or f"MLflow did not finish within {timeout:.0f}s; gave up"
                if self._client is not None and self._answers is not None and self._answers.is_alive():
                    self._client.kill()
        self.wait_s = round(time.time() - started, 3)
        return {"enabled": self.enabled, "run_id": self.run_id, "error": self.error, "dropped": self.dropped,
                "wait_s": self.wait_s, **({"replaced": self.replaced} if self.replaced else {}),
                **({"install": self.install} if self.install else {})}

    # --- this process's side of the client ----------------------------------------------
    def _warn(self, msg: str) -> None:
        self.error = msg
        print(f"[bakeoff] WARNING: MLflow logging disabled: {msg} (training continues)", file=sys.stderr, flush=True)

    def _connect(self) -> Client | None:
        client = Client.adopt(os.environ)
        if client is not None:
            return client
        try:
            # Started at once, on the caller's thread: the Runtime makes its sink before its backend,
            # so this process never forks once an XLA client exists.
            return Client.start()
        except (OSError, ValueError) as exc:
            self._warn(f"cannot start the MLflow client process ({exc.__class__.__name__}: {exc})")
            self._ready.set()
            return None

    def _run(self) -> None:
        """Pass the run's set-up, then each record, to the client process; stdin's end ends it."""
        assert self._client is not None
        stdin = self._client.stdin
        broken = False

        def send(message) -> None:
            nonlocal broken
            try:
                stdin.write(json.dumps(message) + "\n")
            except Exception as exc:  # the client is gone (_read_answers says why), or a record would not encode
                broken = True
                if not isinstance(exc, OSError):
                    self._warn(f"logging to {self.tracking_uri!r} failed ({exc.__class__.__name__}: {exc})")

        self._go.wait()
        if self._abandoned:
            self._end_client()
            return
        child_params, shared_tag = split_params(self.params, self.tags)
        send({"tracking_uri": self.tracking_uri, "experiment": self.experiment, "run_name": self.run_name,
              "artifact_location": self.artifact_location, "job_key": self.job_key, "datasets": self.datasets,
              "tags": self._clean.tags({**self.tags, **shared_tag}), "params": self._clean.params(child_params)})
        pending: list = []
        while True:
            item = self._q.get()
            if item is _STOP:
                break
            if broken or self.error:
                continue  # drained, so close() never waits on a full queue
            kind, payload, step, ts = item
            if kind == "metrics":
                pending.extend([k, float(v), ts, step] for k, v in self._clean.metrics(payload).items()
                               if v is not None)
                # Batch while more is queued: one round trip per burst, not per value.
                if self._q.empty() or len(pending) >= BATCH:
                    send(["metrics", pending])
                    pending = []
                continue
            if pending:
                send(["metrics", pending])
                pending = []
            send([kind, self._clean.tags(payload) if kind == "tags" else payload])
        self._end_client()

    def _end_client(self) -> None:
        assert self._client is not None
        try:
            self._client.stdin.close()  # its end: it answers what it still has to, and exits
        except OSError:
            pass
        if self._answers is not None:
            self._answers.join()

    def _read_answers(self) -> None:
        assert self._client is not None
        for line in self._client.stdout:
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            if "run_id" in answer:
                self.run_id = answer["run_id"]
            if answer.get("installing"):
                self._installing = True
            if "installed" in answer:
                self._installing, self.install = False, answer["installed"]
            self.replaced.extend(answer.get("replaced", []))
            if "error" in answer:
                self._warn(answer["error"])
            if answer.get("ready") or "error" in answer:
                self._ready.set()
            self._ended = self._ended or bool(answer.get("ended"))
        self._client.stdout.close()
        code = self._client.exit_code()
        if self.error is None and not self._ended:
            why = "" if code is None else f" (exit code {code})"
            if code is not None and code < 0:
                try:
                    why = f" (killed by {signal.Signals(-code).name})"
                except ValueError:
                    pass
            self._warn(f"the MLflow client process ended{why}"
                       + ("" if self._ready.is_set() else " before the run was made"))
        self._ready.set()


class _Pipe:
    """Lines from a pipe, with a look at whether more are there already (to batch a burst)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.partial = b""
        self.lines: deque[bytes] = deque()
        self.ended = False

    def _read(self, block: bool) -> None:
        if not block and not select.select([self.fd], [], [], 0)[0]:
            return
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.ended = True
            return
        *lines, self.partial = (self.partial + chunk).split(b"\n")
        self.lines.extend(lines)

    def next(self) -> bytes | None:
        while not self.lines and not self.ended:
            self._read(block=True)
        return self.lines.popleft() if self.lines else None

    def more(self) -> bool:
        if not self.lines and not self.ended:
            self._read(block=False)
        return bool(self.lines)


def main() -> None:
    """The client process's entry."""
    serve()
    # Every call was answered, so what mlflow leaves for the interpreter's exit (unloading its
    # two thousand modules, stopping its telemetry's threads) is skipped: most of a second per job.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _open(uri: str | None, experiment: str | None) -> Any:
    """An MlflowClient for `uri`, its store opened by looking `experiment` up; or, as a string, why
    there is none."""
    from bakeoff_runtime.tracking.net import unreachable

    down = unreachable(uri)
    if down:
        return f"tracking server {uri!r} is unreachable: {down}"
    try:
        from bakeoff_runtime.tracking.install import use_installed_mlflow
        from bakeoff_runtime.tracking.plugins import quiet_header_provider

        use_installed_mlflow()
        quiet_header_provider(uri)
        from mlflow.entities import Metric, Param, RunTag  # noqa: F401  (what serve logs with)
        from mlflow.tracking import MlflowClient
    except Exception as exc:  # mlflow is optional inside training images
        return f"mlflow not importable ({exc.__class__.__name__}: {exc})"
    try:
        client = MlflowClient(tracking_uri=uri)
    except Exception as exc:
        return f"cannot reach tracking store {uri!r} ({exc.__class__.__name__}: {exc})"
    if experiment:
        try:
            client.get_experiment_by_name(experiment)  # opens the store now, while nothing waits on it
        except Exception:
            pass  # said, if it lasts, by the calls that need the store
    return client


def serve() -> None:
    """The MLflow client process: the run made from stdin's first line, each later line logged to
    it, until stdin ends. Answers go to stdout, one JSON object a line; whatever else prints here
    goes to stderr, which is the training process's."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        # Stopping a job signals its process group: the training process then ends the run
        # (KILLED) through this one, so it stays until its stdin ends (the training process
        # closed it, or died).
        signal.signal(signum, signal.SIG_IGN)
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)

    def answer(**values: Any) -> None:
        try:
            answers.write(json.dumps(values) + "\n")
            answers.flush()
        except OSError:
            pass  # the training process is gone: nobody to tell

    from bakeoff_runtime.tracking.net import bound_waits

    # A dead tracking server must cost seconds, not MLflow's default minutes of retries.
    bound_waits()
    # The client the job installs beside its training (tracking/install.py start_install): waited for
    # here, in this process only; what the training loop sends meanwhile waits in the pipe and the
    # sink's queue. The training process is told, so that its flush at the end waits for the install.
    from bakeoff_runtime.tracking.install import MARKER_ENV, wait_for_install

    if os.environ.get(MARKER_ENV):
        answer(installing=True)
        answer(installed=wait_for_install(os.environ))
    # The job's own settings first, before the training process sends its run's: started by
    # launch.py, this process imports mlflow and opens the store while that one imports torch.
    early_uri = os.environ.get("MLFLOW_TRACKING_URI")
    early: Any = _open(early_uri, JobEnvironment.from_environ().mlflow_experiment or
                       os.environ.get("MLFLOW_EXPERIMENT_NAME")) if early_uri else None
    pipe = _Pipe(sys.stdin.fileno())
    first = pipe.next()
    if not first:
        return answer(ended=True)  # the job gave up, or did not use a Runtime, before it had a run
    config = json.loads(first)
    uri = config["tracking_uri"]
    client = early if early is not None and uri == early_uri else _open(uri, None)
    if isinstance(client, str):
        return answer(error=client)
    if not pipe.more() and pipe.ended:
        return answer(ended=True)  # the training process died while this one started: no run for it
    from mlflow.entities import Metric, Param, RunTag

    try:
        exp = client.get_experiment_by_name(config["experiment"])
        if exp is None:
            try:
                exp_id = client.create_experiment(config["experiment"],
                                                  artifact_location=config["artifact_location"])
            except Exception:  # created concurrently by another job
                concurrent = client.get_experiment_by_name(config["experiment"])
                if concurrent is None:
                    raise
                exp_id = concurrent.experiment_id
        else:
            exp_id = exp.experiment_id
        earlier = _earlier_attempts(client, exp_id, config["job_key"])
        run = client.create_run(exp_id, run_name=config["run_name"], tags=config["tags"])
        run_id = run.info.run_id
        answer(run_id=run_id)
        _replace(client, earlier, run_id, lambda old: answer(replaced=[old]))
        params = [Param(k, v) for k, v in config["params"].items()]
        for i in range(0, len(params), 100):
            client.log_batch(run_id, params=params[i:i + 100])
    except Exception as exc:
        return answer(error=f"cannot reach tracking store {uri!r} ({exc.__class__.__name__}: {exc})")
    answer(ready=True)
    monitor = _record_inputs(client, run_id, uri, config.get("datasets") or {})

    pending: list = []
    while (line := pipe.next()) is not None:
        if not line.strip():
            continue
        kind, payload = json.loads(line)
        try:
            if kind == "metrics":
                pending.extend(Metric(k, v, ts, step) for k, v, ts, step in payload)
                if not pipe.more() or len(pending) >= BATCH:
                    client.log_batch(run_id, metrics=pending)
                    pending = []
                continue
            if pending:
                client.log_batch(run_id, metrics=pending)
                pending = []
            if kind == "tags":
                client.log_batch(run_id, tags=[RunTag(k, v) for k, v in payload.items()])
            elif kind == "artifact":
                if os.path.exists(payload):
                    client.log_artifact(run_id, payload)
            elif kind == "end":
                from bakeoff_runtime.tracking.run_inputs import finish_system_metrics

                finish_system_metrics(monitor)
                monitor = None
                client.set_terminated(run_id, status=payload)
        except Exception as exc:
            return answer(error=f"logging to {uri!r} failed ({exc.__class__.__name__}: {exc})")
    answer(ended=True)


def _record_inputs(client, run_id: str, uri: str, datasets: dict[str, str]) -> Any:
    """The run's dataset inputs and its system-metrics monitor (returned): extras, so never an error answer."""
    from bakeoff_runtime.tracking.run_inputs import log_datasets, start_system_metrics

    try:
        log_datasets(client, run_id, datasets)
    except Exception as exc:
        print(f"[bakeoff] MLflow: the run's datasets were not logged ({type(exc).__name__}: {exc})",
              file=sys.stderr, flush=True)
    return start_system_metrics(run_id, uri)


def _earlier_attempts(client, exp_id: str, job_key: str | None) -> list:
    if not job_key:
        return []
    return list(client.search_runs([exp_id], filter_string=f"tags.`bakeoff.job_key` = '{job_key}'",
                                   max_results=100))


def _replace(client, earlier: list, run_id: str, replaced) -> None:
    for old in earlier:
        if old.info.status == "RUNNING":  # its process was killed before it could end the run
            client.set_terminated(old.info.run_id, status="KILLED")
        client.set_tag(old.info.run_id, "bakeoff.replaced_by", run_id)
        client.delete_run(old.info.run_id)
        replaced(old.info.run_id)
