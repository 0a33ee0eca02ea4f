"""Container entry: supervise a training script, once per device.

    python launch.py train.py [args...]

SageMaker starts this once per instance (our own ContainerEntrypoint, so nothing of
the SageMaker training toolkit runs). It:

* reads the host list from /opt/ml/input/config/resourceconfig.json and meets the other
  hosts on the first of them (sorted, as the SageMaker SDK's drivers do: algo-1, port
  7777), through torchrun, one process per device;
* installs the MLflow client when the job logs to MLflow and the image lacks it;
* runs the script in a child process and watches it: a script that raises leaves its
  summary and reason; a child killed by a signal is recorded as such (an
  infrastructure loss, not a verdict on the leg); SIGTERM and SIGINT reach the child;
* exits 0 after a script failure when BAKEOFF_CONTINUE_ON_FAILURE=1 (the compiled
  pipeline sets it), so the pipeline goes on to its Evaluate step and a crashed leg
  still gets a verdict. An infrastructure failure (a process killed by a signal, a broken
  collective, a Neuron runtime or hardware error: bakeoff_runtime.training.failure_cause) exits
  non-zero whatever that setting says, so the step fails and is never served from the
  step cache, and a retried execution runs it again.
"""
from __future__ import annotations

import json
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bakeoff_runtime.contract import ENV, PROCESS_START_ENV, WORKER_ENV, JobEnvironment, TrainingEnv  # noqa: E402
from bakeoff_runtime.contract.backend_table import BACKENDS  # noqa: E402

WORKER = WORKER_ENV


def devices_per_host(env: TrainingEnv) -> int:
    job = JobEnvironment.from_environ()
    if job.nproc_per_node is not None:
        return job.nproc_per_node
    # One process per device SageMaker counts for the backend's accelerator.
    row = BACKENDS.get(job.backend)
    accelerator = row.accelerator if row else None
    if accelerator == "neuron" and env.num_neurons:
        return env.num_neurons
    if accelerator == "gpu" and env.num_gpus:
        return env.num_gpus
    return 1


def distributed_environment(env: TrainingEnv) -> dict[str, str]:
    """Per-host settings only known inside the job (the static EFA settings are in the
    job's Environment, from the instance catalog)."""
    out: dict[str, str] = {}
    if env.host_count > 1:
        if env.network_interface:
            # torchrun_driver.py of the SageMaker SDK sets NCCL's interface from resourceconfig too.
            out.setdefault("NCCL_SOCKET_IFNAME", env.network_interface)
            out.setdefault("GLOO_SOCKET_IFNAME", env.network_interface)
        row = BACKENDS.get(JobEnvironment.from_environ().backend)
        if row is not None and row.torch_neuronx:
            # The Neuron runtime's root communicator (rank 0's address). torch-xla would
            # default it to MASTER_ADDR:62182 (torch_xla/_internal/neuron.py); set it
            # explicitly so the job's log shows what the hosts meet on.
            out.setdefault("NEURON_RT_ROOT_COMM_ID", f"{env.master_addr}:62182")
    return {k: v for k, v in out.items() if k not in os.environ}


def worker_command(env: TrainingEnv, script: Path, args: list[str], nproc: int | None = None,
                   torchrun: bool = False) -> list[str]:
    """The command that starts the workers: torchrun with `nproc` (default: one per device) processes per
    host when there are several or `torchrun` asks for it (a distributed script, which reads its variables
    even alone), else the one worker itself."""
    nproc = devices_per_host(env) if nproc is None else nproc
    if nproc > 1 or env.host_count > 1 or torchrun:
        return [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
                f"--nnodes={env.host_count}", f"--node_rank={env.host_rank}", f"--master_addr={env.master_addr}",
                f"--master_port={env.master_port}", str(Path(__file__).resolve()), str(script), *args]
    return [sys.executable, str(Path(__file__).resolve()), str(script), *args]


def under_torchrun(cmd: list[str]) -> bool:
    """Whether worker_command's command starts torchrun (rather than the one worker itself)."""
    return cmd[1:3] == ["-m", "torch.distributed.run"]


def run_worker(env: TrainingEnv, script: Path, args: list[str]) -> int:
    """Inside a worker process: the script itself, with a crash recorded. A script-mode script
    runs behind the step hook (bakeoff_runtime.training.script_probe), which writes what it saw however
    the script ends."""
    from bakeoff_runtime.contract.script_mode import PROBE_FILE, SEED_HP, ScriptSettings

    settings = ScriptSettings.beside(script)
    probe = None
    sys.path.insert(0, str(script.parent))
    sys.argv = [str(script), *args]
    try:
        if settings is not None:
            from bakeoff_runtime.tracking.script_writes import install
            from bakeoff_runtime.training.script_probe import prepare

            install()  # what the script logs to MLflow itself, recorded as its own (when the launcher asked)

            seed = env.hyperparameters.get(SEED_HP)
            probe = prepare(settings, int(seed) if seed is not None else None)
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:
        record_crash(env, exc)
        raise
    finally:
        if probe is not None:
            probe.remove()
            probe.write(env.output_dir / PROBE_FILE)
        from bakeoff_runtime.training.process_group import leave

        leave("the script's")  # many brought scripts never destroy theirs (process_group.py says why)
    return 0


# Scripts of bakeoff's own steps that report in files of their own, not summary.json.
REPORTS_ELSEWHERE = ("collective_check.py",)
NO_REPORT = ("the script exited 0 without reporting anything (no summary.json): it does not use bakeoff_runtime, "
             "or it ended before the Runtime's `with` block (or rt.finish()) did")


def supervise(env: TrainingEnv, cmd: list[str], script: Path | None = None, *,
              extra_env: dict[str, str] | None = None, on_line=None, expects_report: bool = True,
              mlflow_client: bool = False) -> int:
    """Run the workers, pass SIGTERM/SIGINT on, and say how they ended. `on_line`: each line of
    their output (stdout and stderr), which is then passed on to this process's stdout.
    `mlflow_client`: start the worker's MLflow client process first and hand it over
    (bakeoff_runtime.tracking.sink), so mlflow is imported while the worker imports torch."""
    # The workers' output passes through here so that its last lines can say whose failure a
    # failure was (torchrun reports a worker's death by a signal only in its output). Script mode
    # reads metrics from both streams, so there they are one; otherwise each keeps its stream.
    from bakeoff_runtime.process.parent_death import wrapped

    merged = on_line is not None
    client = _start_mlflow_client() if mlflow_client else None
    # This launcher's own processes (the MLflow clients of its sinks, script mode's included): what the
    # script leaves running is ended with the job, these are not.
    own = set(_children(os.getpid()))
    handed, fds = client.hand_over() if client is not None else ({}, ())
    worker_env = {**os.environ, WORKER: "1", **distributed_environment(env), **(extra_env or {}), **handed}
    try:
        child = _warm_worker(cmd, worker_env, merged, fds, script_mode=on_line is not None)
        if child is None:
            # No preexec_fn: this process has threads (parent_death.wrapped says why that matters).
            child = subprocess.Popen(wrapped(cmd), env=worker_env, start_new_session=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT if merged else subprocess.PIPE, pass_fds=fds,
                                     text=True, errors="replace", bufsize=1)
    finally:
        if client is not None:
            client.release()  # the worker holds the pipes now: its end is the client's end
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    errors_reader = None
    if not merged:
        def pass_stderr() -> None:
            assert child.stderr is not None
            for line in child.stderr:
                sys.stderr.write(line)
                sys.stderr.flush()
                tail.append(_bounded(line))

        errors_reader = threading.Thread(target=pass_stderr, daemon=True)
        errors_reader.start()
    stopping: list[int] = []

    def forward(signum, _frame):
        stopping.append(signum)
        try:
            os.killpg(child.pid, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    assert child.stdout is not None

    def pass_stdout() -> None:
        for line in child.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            tail.append(_bounded(line))
            if on_line is not None:
                on_line(line)

    reader = threading.Thread(target=pass_stdout, daemon=True)
    reader.start()
    # The job ends when the worker ends, not when its output closes: a process the script left running
    # (`sleep 600 &`, a server it forgot) holds the pipe open, and the job would run to its max runtime.
    code = child.wait()
    reader.join(timeout=DRAIN_S)
    left = end_leftovers(getattr(child, "pid", None), keep=own | ({client.pid} if client is not None and
                                                                  getattr(client, "pid", None) else set()))
    if left:
        print(f"[bakeoff] the script left {len(left)} process(es) running when it ended; ended with the job: "
              + "; ".join(left[:5]), file=sys.stderr, flush=True)
    reader.join(timeout=DRAIN_S)
    if client is not None:
        # Its stdin ended with the worker; once the run is ended it is gone (one stuck on a
        # tracking server that does not answer is not waited for).
        client.reap(CLIENT_GRACE_S)
    if errors_reader is not None:
        errors_reader.join(timeout=30)
    if stopping:
        name = signal.Signals(stopping[0]).name
        record_failure(env, f"stopped by {name} (the job was stopped from outside)", "interrupted")
        return 128 + stopping[0]
    # A worker under torchrun that dies by a signal comes back as torchrun's exit code 1
    # (it logs "exitcode: -9"); only a direct child's death by a signal is seen as one here.
    if code < 0:
        signum = -code
        name = signal.Signals(signum).name
        hint = " (often the out-of-memory killer)" if signum == signal.SIGKILL else ""
        record_failure(env, f"killed by {name}{hint}", "killed")
        print(f"[bakeoff] the training process was killed by {name}{hint}", file=sys.stderr, flush=True)
    elif code and script is not None and script.name in REPORTS_ELSEWHERE:
        # The collective check failing (a wrong result, or any error before it got one) is the platform's by
        # construction, whatever its text: it says the instances cannot train together. It exits non-zero so
        # the Collective step fails and SageMaker's step cache, which "only considers successful execution"
        # (sagemaker-mlops workflow/steps.py CacheConfig), never serves it after the network is fixed.
        from bakeoff_runtime.contract.inert_text import inert
        from bakeoff_runtime.training.failure_cause import last_words

        words = last_words("".join(tail))
        record_failure(env, inert(f"collective check exited with code {code}" + (f": {words}" if words else ""),
                                  700), COLLECTIVE, overrule_script=True)
    elif code:
        # The reason is what the process said last (its exception, argparse's error), not an exit code,
        # and who must act on it (failure_cause.classify); the platform's when it says so, or when it came
        # before the first optimizer step without the script's mark (failure_cause.before_first_step_cause).
        from bakeoff_runtime.contract.inert_text import inert
        from bakeoff_runtime.training.failure_cause import classify, last_words

        output = "".join(tail)
        cause = _infrastructure_cause(env, output)
        kind, advice = classify(output, _emulated_on()) if cause is None else (INFRASTRUCTURE, None)
        if kind == "script" and script is not None:
            cause = _before_first_step(env, script, output, script_mode=merged)
        if cause:
            record_failure(env, inert(f"infrastructure: {cause}", 700), INFRASTRUCTURE, overrule_script=True)
        else:
            words = last_words(output)
            record_failure(env, inert(f"the training process exited with code {code}"
                                      + (f": {words}" if words else " and said nothing")
                                      + (f" ({advice})" if advice else ""), 700), kind)
    elif (expects_report and script is not None and script.name not in REPORTS_ELSEWHERE and env.host_rank == 0
          and not (env.model_dir / "summary.json").exists()):
        # A clean exit that measured nothing is the script's doing, not the platform's: said so,
        # so the evaluation does not call it an infrastructure loss and advise re-running it.
        record_failure(env, NO_REPORT, "no-report")
        print(f"[bakeoff] {NO_REPORT}", file=sys.stderr, flush=True)
    exit_code = code if code >= 0 else 128 - code
    if code and _recorded_kind(env) in NOT_CACHEABLE:
        print(f"[bakeoff] an infrastructure failure ({_recorded_reason(env)}): exiting {exit_code} so the step "
              "fails, is never served from SageMaker's step cache, and a retried execution runs it again",
              file=sys.stderr, flush=True)
        return exit_code
    if code and _continue_on_failure():
        print("[bakeoff] the failure is recorded in summary.json; exiting 0 so the pipeline's Evaluate step "
              f"decides with it ({ENV['continue_on_failure']}=1)", file=sys.stderr, flush=True)
        return 0
    return exit_code


def _continue_on_failure() -> bool:
    """The compiled pipeline's setting: a script failure exits 0 (recorded) so Evaluate runs."""
    return JobEnvironment.from_environ().continue_on_failure


def _warm_worker(cmd: list[str], worker_env: dict[str, str], merged: bool, fds, script_mode: bool):
    """The worker forked by the leg's warm interpreter (bakeoff_runtime.training.warm_server), where the local
    engine started one; None to start it cold. Only a lone worker of bakeoff's own trainer: torchrun
    starts its workers itself, and a script-mode script is the user's, run as SageMaker runs it."""
    from bakeoff_runtime.training.warm_worker import ADDRESS_ENV, start

    address = os.environ.get(ADDRESS_ENV)
    if not address or script_mode or under_torchrun(cmd):
        return None
    child = start(address, cmd, worker_env, merged=merged, pass_fds=fds)
    if isinstance(child, str):
        print(f"[bakeoff] starting the worker cold: {child}", flush=True)
        return None
    print(f"[bakeoff] the worker (pid {child.pid}) was forked from the leg's warm interpreter", flush=True)
    return child


def _start_mlflow_client():
    from bakeoff_runtime.tracking.sink import Client

    try:
        return Client.start()
    except (OSError, ValueError):
        return None  # the worker's sink starts its own, and says so if it cannot either


TAIL_LINES = 200
TAIL_LINE_CHARS = 4096  # a line kept for the failure's reason: 200 of them bound what the launcher holds
DRAIN_S = 2.0  # after the worker ended: what is left of its output has this long to arrive
CLIENT_GRACE_S = 10


def _bounded(line: str) -> str:
    return line if len(line) <= TAIL_LINE_CHARS else line[:TAIL_LINE_CHARS] + f"... ({len(line):,} characters)\n"


def become_subreaper() -> None:
    """Processes the script starts and orphans (even in a session of their own: `setsid`) become this
    process's children instead of init's, so the job can end them when the script has ended. Linux
    prctl(PR_SET_CHILD_SUBREAPER) (36 in linux/prctl.h): "When a process becomes orphaned ... it will be
    reparented to the nearest still living ancestor subreaper", which can wait(2) on it; not inherited by
    children (man7.org PR_SET_CHILD_SUBREAPER(2const), man-pages 6.9.1). A no-op elsewhere."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _children(pid: int) -> list[int]:
    try:
        found = []
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(c) for c in (task / "children").read_text().split()]
        return found
    except (OSError, ValueError):
        return []


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


def end_leftovers(worker_pid: int | None, keep: set[int], grace_s: float = 5.0) -> list[str]:
    """End what the script left running once it has ended: the worker's process group, and every
    descendant this process inherited as their subreaper. Returns "pid: command" of each one found."""
    found: dict[int, str] = {}
    me = os.getpid()
    _reap()  # what already ended (an exited `setsid`'s zombie) is collected, not counted as left running
    frontier = [c for c in _children(me) if c not in keep]
    while frontier:  # this process's children but the ones it keeps (the MLflow client), and theirs
        pid = frontier.pop()
        if pid in found:
            continue
        if _alive(pid):
            found[pid] = _command(pid)
        frontier += _children(pid)
    groups = {worker_pid} if worker_pid else set()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for group in groups:
            try:
                os.killpg(group, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in found:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(_alive(p) for p in found):
            _reap()
            time.sleep(0.05)
        _reap()
        if not any(_alive(p) for p in found):
            break
    return [f"{pid}: {cmd}" for pid, cmd in found.items()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead, whether or not it was reaped yet
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _reap() -> None:
    """Collect the exit status of orphans this subreaper inherited (no zombies left behind)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


INFRASTRUCTURE = "infrastructure"
COLLECTIVE = "collective"  # the leg's collective check failed, or left no result: its instances cannot train together
# Failure kinds that exit non-zero even with BAKEOFF_CONTINUE_ON_FAILURE: the platform's, not the script's.
NOT_CACHEABLE = (INFRASTRUCTURE, "killed", COLLECTIVE)


def _summary(env: TrainingEnv) -> dict:
    from bakeoff_runtime.contract.documents import summary_or_none

    return dict(summary_or_none(env.model_dir / "summary.json") or {})


def _recorded_kind(env: TrainingEnv) -> str | None:
    return _summary(env).get("failure_kind")


def _recorded_reason(env: TrainingEnv) -> str:
    return str(_summary(env).get("reason") or "see the failure file")[:300]


def _infrastructure_cause(env: TrainingEnv, output_tail: str) -> str | None:
    from bakeoff_runtime.training.failure_cause import infrastructure_cause

    summary = _summary(env)
    if summary.get("failure_kind") in NOT_CACHEABLE:
        return str(summary.get("reason"))
    failure = env.failure_file.read_text() if env.failure_file.exists() else None
    return infrastructure_cause(summary.get("reason"), failure, output_tail)


def _before_first_step(env: TrainingEnv, script: Path, output: str, script_mode: bool) -> str | None:
    """Why a failure is taken as the platform's because it came before the job's first optimizer step
    without the script's mark (failure_cause.before_first_step_cause); None after that step, or with it.
    Script mode reads the step hook's record, a Runtime job its summary."""
    from bakeoff_runtime.training.failure_cause import before_first_step_cause

    if script_mode:
        from bakeoff_runtime.contract.script_mode import PROBE_FILE
        from bakeoff_runtime.training.script_summary import read_probe

        stepped = bool((read_probe(env.output_dir / PROBE_FILE) or {}).get("first_step_at"))
    else:
        stepped = _summary(env).get("time_to_first_step_s") is not None
    if stepped:
        return None
    failure = env.failure_file.read_text(errors="replace") if env.failure_file.exists() else ""
    return before_first_step_cause(f"{failure}\n{output}", str(script.parent))


def main(argv: list[str]) -> int:
    os.environ.setdefault(PROCESS_START_ENV, repr(time.time()))
    if os.environ.get(WORKER) != "1" and "RANK" not in os.environ:
        become_subreaper()  # the supervising process: what the script orphans comes back here to be ended
    if not argv:
        print("usage: launch.py SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    script = Path(argv[0])
    if not script.is_absolute():
        script = Path.cwd() / script
    env = TrainingEnv.from_environ()
    if os.environ.get(WORKER) == "1" or "RANK" in os.environ:
        return run_worker(env, script, argv[1:])
    if not script.exists():
        record_failure(env, f"training script {script.name} not found in the code bundle", "script")
        print(f"[bakeoff] ERROR: training script {script} not found", file=sys.stderr)
        return 0 if _continue_on_failure() else 2
    blocked = collective_gate(env)
    if blocked:
        # Non-zero whatever BAKEOFF_CONTINUE_ON_FAILURE says: a job blocked by its leg's check never ran the
        # script, so no step cache may serve this as its result once the network is fixed.
        record_failure(env, blocked, COLLECTIVE)
        print(f"[bakeoff] {blocked}: exiting 1 so the step fails and a retried execution runs it again",
              file=sys.stderr, flush=True)
        return 1
    from bakeoff_runtime.process.package_install import ensure_packages

    missing = ensure_packages(HERE, os.environ)
    if missing:
        record_failure(env, missing, "script")
        print(f"[bakeoff] {missing}", file=sys.stderr, flush=True)
        return 0 if _continue_on_failure() else 1
    from bakeoff_runtime.contract.script_mode import ScriptSettings
    from bakeoff_runtime.tracking.install import ensure_mlflow, start_install

    settings = ScriptSettings.beside(script)
    if settings is not None:
        ensure_mlflow(HERE)  # before the script: it may import mlflow itself
        return run_script(env, script, argv[1:], settings)
    # A Runtime job's training never imports mlflow: its client is installed beside it, and only the
    # MLflow client processes wait for that (tracking/install.py).
    installer = start_install(HERE)
    try:
        return _launch(env, script, argv)
    finally:
        if installer is not None and installer.poll() is None:  # the job ended first: nothing left to log to
            installer.kill()
            installer.wait()


def _launch(env: TrainingEnv, script: Path, argv: list[str]) -> int:
    cmd = worker_command(env, script, argv[1:])
    if under_torchrun(cmd):
        print(f"[bakeoff] launching {devices_per_host(env)} process(es) per host on {env.host_count} host(s); "
              f"host {env.current_host} is node {env.host_rank}, meeting on {env.master_addr}:{env.master_port}",
              flush=True)
    from bakeoff_runtime.tracking.sink import logs_to_mlflow

    # One worker, started by this process (torchrun's would not inherit the client's pipes).
    client = not under_torchrun(cmd) and script.name not in REPORTS_ELSEWHERE and logs_to_mlflow(os.environ)
    return supervise(env, cmd, script, mlflow_client=client)


def run_script(env: TrainingEnv, script: Path, leg_args: list[str], settings) -> int:
    """Script mode: the script as it is, started the way SageMaker's training toolkit starts it
    (bakeoff_runtime.training.script_launch), its output read for metrics, its summary written after it."""
    from bakeoff_runtime.training import script_launch

    started = time.time()
    job = script_launch.prepare(env, script, leg_args, settings)
    if job.failure:
        record_failure(env, job.failure, job.failure_kind)
        print(f"[bakeoff] {job.failure}", file=sys.stderr, flush=True)
        return 0 if _continue_on_failure() else 1
    # As SageMaker's PyTorch toolkit starts it: once per instance, unless it is distributed, and then
    # through torchrun with one process per device (aws/sagemaker-pytorch-training-toolkit training.py
    # L78-95; sagemaker-training-toolkit torch_distributed.py L107-136). The toolkit sets MASTER_ADDR and
    # MASTER_PORT (7777) for a plain process too (training.py L137-138); torchrun sets them for its workers.
    if settings.distributed:
        cmd = worker_command(env, script, job.arguments, torchrun=True)
        print(f"[bakeoff] script mode: distributed: torchrun, {devices_per_host(env)} process(es) per host on "
              f"{env.host_count} host(s)", flush=True)
    else:
        cmd = worker_command(env, script, job.arguments, nproc=1)
        job.environment.setdefault("MASTER_ADDR", env.master_addr)
        job.environment.setdefault("MASTER_PORT", str(env.master_port))
        print("[bakeoff] script mode: one process (the script is not distributed)", flush=True)
    try:
        code = supervise(env, cmd, script, extra_env=job.environment, on_line=job.metrics.feed, expects_report=False)
    finally:
        job.metrics.close()
    if env.host_rank == 0:
        script_launch.finish(env, settings, job, time.time() - started)
    return code


def collective_gate(env: TrainingEnv) -> str | None:
    """Why this job must not train, when its leg's Collective step found a wrong result (its
    model.tar.gz, or collective.json, arrives in the `collective` channel); None otherwise."""
    import tarfile

    from bakeoff_runtime.contract import COLLECTIVE_CHANNEL, COLLECTIVE_RESULT

    channel = env.channels.get(COLLECTIVE_CHANNEL)
    if channel is None or not channel.exists():
        return None
    result = None
    for path in sorted(channel.rglob("*")):
        try:
            if path.name == COLLECTIVE_RESULT:
                result = json.loads(path.read_text())
            elif path.name.endswith(".tar.gz"):
                with tarfile.open(path) as tar:
                    member = next((m for m in tar.getmembers()
                                   if m.isfile() and Path(m.name).name == COLLECTIVE_RESULT), None)
                    handle = tar.extractfile(member) if member else None
                    result = json.loads(handle.read()) if handle else None
        except (OSError, ValueError, KeyError, tarfile.TarError) as exc:
            return f"collective check result unreadable ({path.name}: {exc}), so the leg did not train"
        if result is not None:
            break
    if result is None:
        return "the collective check left no result, so the leg did not train"
    if result.get("ok"):
        return None
    return f"collective check failed, so the leg did not train: {result.get('reason') or 'no reason given'}"


def record_crash(env: TrainingEnv, exc: BaseException) -> None:
    """A script that dies before (or outside) the runtime still leaves its reason, and who must act on it
    (bakeoff_runtime.training.failure_cause.classify)."""
    import traceback

    from bakeoff_runtime.training.failure_cause import classify

    trace = "".join(traceback.format_exception(exc))
    if not env.failure_file.exists():
        env.write_failure(f"{type(exc).__name__}: {exc}\n\n" + trace[-3000:])
    if isinstance(exc, KeyboardInterrupt):
        record_failure(env, f"{type(exc).__name__}: {exc}", "interrupted")
        return
    kind, advice = classify(f"{type(exc).__name__}: {exc}\n{trace[-3000:]}", _emulated_on())
    message = (str(exc).strip().splitlines() or [""])[0]
    record_failure(env, f"{type(exc).__name__}: {message}" + (f" ({advice})" if advice else ""), kind)


def _emulated_on() -> str | None:
    return JobEnvironment.from_environ().emulated_on or None


def record_failure(env: TrainingEnv, reason: str, kind: str, overrule_script: bool = False) -> None:
    """Write a failed summary.json unless the job already wrote one (rank 0 only), and keep
    a copy of it and of the failure file where the evaluation step finds them.
    `overrule_script`: the launcher knows better than a summary that blamed the script (a
    rank that saw its peer die by a signal reports a broken collective, not the signal)."""
    if int(os.environ.get("RANK", 0)) != 0:
        return
    summary = env.model_dir / "summary.json"
    if overrule_script and summary.exists():
        body = _summary(env)
        if body.get("status") == "failed" and body.get("failure_kind") in (None, "script", "interrupted"):
            body.update(failure_kind=kind, reason=f"{reason} (the script said: {body.get('reason')})"[:500])
            summary.write_text(json.dumps(body, indent=2))
    if not summary.exists():
        from bakeoff_runtime.contract.documents import SUMMARY_SCHEMA

        job = JobEnvironment.from_environ()
        env.model_dir.mkdir(parents=True, exist_ok=True)
        summary.write_text(json.dumps({
            "schema": SUMMARY_SCHEMA, "status": "failed", "reason": reason[:800], "failure_kind": kind,
            # bakeoff_leg/bakeoff_seed: a script-mode job's (its `seed` may be the script's own argument)
            "leg": env.hyperparameters.get("bakeoff_leg", env.hyperparameters.get("leg")),
            "seed": env.hyperparameters.get("bakeoff_seed", env.hyperparameters.get("seed")),
            "backend": job.backend or None, "job_key": job.job_key or None,
        }, indent=2))
    if not env.failure_file.exists():
        env.write_failure(reason)
    env.output_data_dir.mkdir(parents=True, exist_ok=True)
    (env.output_data_dir / "summary.json").write_text(summary.read_text())
    (env.output_data_dir / "failure").write_text(env.failure_file.read_text())
    from bakeoff_runtime.contract.output_digest import record

    for directory in (env.model_dir, env.output_data_dir):  # the Evaluate step checks it
        record(directory)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
