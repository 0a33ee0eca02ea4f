"""A leg's warm interpreter: one process that has imported torch (and, for an emulated trn leg,
torch_xla) and forks each of the leg's job workers from there, so a job does not pay for
those imports again. Only the local engine starts one (pipelines/local/warm.py), one per leg;
launch.py asks it for its worker through bakeoff_runtime.training.warm_worker and starts one itself
when it gets none. On SageMaker nothing sets the address, and every worker starts cold.

Forking is only safe while this process is single-threaded and before any XLA client exists:
it imports modules, never touches a device, and refuses to fork (the launcher then starts its
worker cold) when /proc/self/task shows a second thread. numpy's OpenBLAS starts a thread pool
at import; it is shut down first (what OpenBLAS's own fork handler would do at fork), and comes
back in the child on its first BLAS call. torch's intra-op pool starts on the first parallel op,
which never runs here.

What torch and torch_xla read from the environment at import (thread counts, PJRT_DEVICE,
XLA_FLAGS, TORCH_* ...) must be what the job would have had: this process starts with the leg's
environment and forks only for a job whose environment is the same but for the variables in
per_job(), which nothing reads at import (the thread counts are set in the child through torch).
Anything else differing, another Python, or another user: refused. What the imports themselves
wrote into the environment (torch_xla: XLA_FLAGS, PJRT_DYNAMIC_PLUGINS, ...) is written into the
child's too, as the job's own imports would have. Fresh per child, as in a fresh interpreter:
numpy's global generator (random's re-seeds itself at fork). Shared, unlike fresh interpreters:
the string-hash seed, and the pages torch's import mapped (so a forked worker's peak RSS is lower;
its summary says how it started).
"""
from __future__ import annotations

import ctypes
import fcntl
import importlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
from pathlib import Path

MAX_FDS = 16
GO = b"g"  # the launcher's word to the forked worker (warm_worker.start)
PR_SET_PDEATHSIG = 1


def per_job() -> frozenset[str]:
    """The variables set per job by the engine or the launcher, read after start-up (or, the thread
    counts, applied here). PWD and OLDPWD: the container command's `cd` into the job's code directory."""
    from bakeoff_runtime import contract  # torch-free; dropped with the rest before a job runs

    return frozenset({contract.ENV["job_key"], contract.ENV["opt_ml"], contract.WORKER_ENV,
                      contract.PROCESS_START_ENV, contract.MLFLOW_CLIENT_ENV, contract.WARM_FORKED_ENV,
                      contract.WARM_WORKER_ENV, *contract.THREAD_ENV, "PWD", "OLDPWD"})


def preload_modules(environ) -> list[str]:
    """What this leg's workers import anyway before their first step. A torch.compile leg gets
    torch alone: torch._dynamo reads inductor's settings from the environment at import, which the
    Runtime sets just before compiling."""
    from bakeoff_runtime.contract import JobEnvironment
    from bakeoff_runtime.contract.backend_table import BACKENDS  # torch-free; dropped with the rest before a job runs

    job = JobEnvironment.from_environ(environ)
    modules = ["torch"]
    if not job.torch_compile:
        modules.append("torch._dynamo")  # torch.optim imports it on a first param group (~0.5 s)
    row = BACKENDS.get(job.backend)
    if row is not None and row.torch_device == "xla" and environ.get("PJRT_DEVICE", "").upper() == "CPU":
        modules += ["torch_xla", "torch_xla.core.xla_model", "torch_xla.debug.metrics"]
    return modules


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def quiet_blas_pools() -> None:
    """Shut down OpenBLAS's worker threads (numpy's), as its pthread_atfork handler does at fork."""
    for path in sorted({line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()
                        if "openblas" in line.split()[-1]}):
        try:
            ctypes.CDLL(path).blas_thread_shutdown_()
        except (OSError, AttributeError):
            pass


def refusal(request: dict, baseline: dict[str, str]) -> str | None:
    """Why the job in `request` must start cold instead, or None."""
    if request.get("executable") != sys.executable:
        return f"another Python ({request.get('executable')}, this interpreter is {sys.executable})"
    env = request.get("env") or {}
    varies = per_job()
    differ = sorted(k for k in set(env) | set(baseline) if k not in varies and env.get(k) != baseline.get(k))
    if differ:
        return "its environment differs from the leg's in " + ", ".join(differ[:8])
    omp, mkl = env.get("OMP_NUM_THREADS"), env.get("MKL_NUM_THREADS")
    if (omp is None and baseline.get("OMP_NUM_THREADS") is not None) or (mkl is not None and mkl != omp):
        return "its thread settings cannot be applied after start-up (OMP_NUM_THREADS/MKL_NUM_THREADS)"
    from bakeoff_runtime.contract import INDUCTOR_THREADS_ENV  # torch-free; dropped with the rest before a job runs

    for name in ("OMP_NUM_THREADS", INDUCTOR_THREADS_ENV):  # the child applies each as an int (_become_worker)
        value = env.get(name)
        if value is not None and not value.isdigit():
            return f"{name}={value!r}"
    return None


def unsafe_to_fork() -> str | None:
    threads = thread_count()
    return f"the warm interpreter has {threads} threads: forking it is not safe" if threads != 1 else None


def serve(address: str) -> None:
    """Listen on `address` (a Unix socket), import, then fork a worker per request until stdin
    ends: the engine holds the pipe's other end, so this process ends with the engine, however
    that ends. (Not PR_SET_PDEATHSIG: its signal is sent "upon subsequent termination of the parent
    thread", PR_SET_PDEATHSIG(2const), CAVEATS, https://man.archlinux.org/man/core/man-pages/PR_SET_PDEATHSIG.2const.en,
    and the engine's thread that starts this process is a job's, which ends long before the engine.)
    On its way out it takes its socket away, and the engine's directory of sockets with the last one."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    server = os.getpid()
    try:
        _serve(address, listener)
    finally:
        if os.getpid() == server:  # never a forked worker (they end by os._exit, but never theirs to remove)
            leave(address)


def leave(address: str) -> None:
    """Remove this interpreter's socket, and its directory once empty (the engine's bakeoff-warm-PID-*
    directory, which the engine removes itself when it ends well: this is for when it was killed)."""
    try:
        os.unlink(address)
        os.rmdir(os.path.dirname(address))  # fails while another leg's interpreter is still there
    except OSError:
        pass


def _serve(address: str, listener: socket.socket) -> None:
    listener.listen(64)  # bound before the imports: a launcher that comes early waits, not fails
    baseline = dict(os.environ)
    broken = None
    watch = _EngineWatch(address)  # the imports take seconds: the engine may end meanwhile
    try:
        for name in preload_modules(baseline):
            importlib.import_module(name)
    except Exception as exc:  # the workers import it themselves and say what is wrong
        broken = f"the warm interpreter could not import it: {type(exc).__name__}: {exc}"
    finally:
        watch.stop()  # single-threaded again before any fork
    # What the imports set in the environment (torch_xla sets XLA_FLAGS, PJRT_DYNAMIC_PLUGINS, ...,
    # which its client reads later): a fresh worker would have it after the same imports.
    imported = {k: os.environ.get(k) for k in set(os.environ) | set(baseline) if os.environ.get(k) != baseline.get(k)}
    varies = per_job()
    if broken is None and varies & set(imported):
        broken = f"the imports set {', '.join(sorted(varies & set(imported)))}, which differs per job"
    quiet_blas_pools()
    print(f"[bakeoff] warm interpreter {os.getpid()} ready ({', '.join(preload_modules(baseline))}); "
          f"threads: {thread_count()}", flush=True)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    sel.register(0, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    while True:
        if os.getppid() != ENGINE[0]:
            return  # the engine is gone although something still holds its end of stdin
        for key, _ in sel.select(0.1):
            if key.fileobj == 0:
                if not os.read(0, 4096):
                    return  # the workers still running get SIGTERM (their PR_SET_PDEATHSIG)
            elif key.fileobj is listener:
                conn, _addr = listener.accept()
                pid = _answer(conn, baseline, imported, broken, listener, sel, children)
                if pid is None:
                    conn.close()
                else:
                    children[pid] = conn
                    sel.register(conn, selectors.EVENT_READ, pid)
            else:
                # The launcher went away (killed) before its worker ended: the worker goes too, as
                # PR_SET_PDEATHSIG would have ended a worker the launcher had started itself.
                conn = key.fileobj  # type: ignore[assignment]
                if not _peek(conn):
                    sel.unregister(conn)
                    try:
                        os.killpg(key.data, signal.SIGTERM)
                    except (ProcessLookupError, PermissionError):
                        pass
        _reap(children, sel)


class _EngineWatch:
    """While the preload imports run (seconds: torch, torch_xla), nothing reads stdin, and an engine
    killed then (kill -9) would be outlived by that long: a thread watches stdin meanwhile and ends this
    process at its end. Stopped (joined, and its task gone from /proc/self/task) before the first fork."""

    def __init__(self, address: str) -> None:
        import threading

        self.address = address
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="bakeoff-engine-watch", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        import select

        while not self._stop.is_set():
            if os.getppid() != ENGINE[0]:
                break  # the engine is gone (see ENGINE)
            try:
                ready, _, _ = select.select([0], [], [], 0.1)
                if ready and not os.read(0, 4096):  # the engine writes nothing: readable is its end
                    break
            except OSError:
                break
        else:
            return
        leave(self.address)
        os._exit(0)

    def stop(self) -> None:
        import time

        self._stop.set()
        self._thread.join()
        deadline = time.monotonic() + 2.0  # the joined thread's task leaves /proc a moment after
        while thread_count() > 1 and time.monotonic() < deadline:
            time.sleep(0.005)


def _peek(conn: socket.socket) -> bool:
    """Whether the launcher's end is still open. Never blocks: the byte that made the socket
    readable may be the launcher's GO, which the child has read meanwhile."""
    try:
        return bool(conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except BlockingIOError:
        return True
    except OSError:
        return False


def _reap(children: dict[int, socket.socket], sel: selectors.BaseSelector) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        if _registered(sel, conn):
            sel.unregister(conn)
        try:
            conn.sendall(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
        except OSError:
            pass
        conn.close()


def _registered(sel: selectors.BaseSelector, conn: socket.socket) -> bool:
    try:
        sel.get_key(conn)
        return True
    except KeyError:
        return False


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    conn.settimeout(30)
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, MAX_FDS)
    if len(data) < 4:
        raise ValueError("short request")
    (size,) = struct.unpack("!I", data[:4])
    body = data[4:]
    while len(body) < size:
        more = conn.recv(size - len(body))
        if not more:
            raise ValueError("truncated request")
        body += more
    conn.settimeout(None)
    return json.loads(body), fds


def _answer(conn: socket.socket, baseline: dict[str, str], imported: dict[str, str | None], broken: str | None,
            listener: socket.socket, sel: selectors.BaseSelector, children: dict[int, socket.socket]) -> int | None:
    """Fork the requested worker (its pid) or say why not (None)."""
    fds: list[int] = []
    try:
        uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
        request, fds = _receive(conn)
        why = (broken or ("another user" if uid != os.getuid() else None) or refusal(request, baseline)
               or unsafe_to_fork())
        if why is None and len(fds) != 3 + len(request.get("pass_fds", [])):
            why = "the request's file descriptors did not arrive"
        if why is not None:
            conn.sendall(json.dumps({"refused": why}).encode() + b"\n")
            return None
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # nothing of this process's output is written again by the child
        pid = os.fork()
        if pid == 0:
            try:
                _become_worker(request, fds, conn, [listener, *children.values()], sel, baseline, imported)
            finally:
                os._exit(70)  # only if setting up the worker itself failed
        try:
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        except OSError:
            pass  # the launcher is gone: the closed socket ends the worker (serve)
        return pid
    except (OSError, ValueError) as exc:
        print(f"[bakeoff] warm interpreter: a request failed: {exc}", file=sys.stderr, flush=True)
        return None
    finally:
        for fd in fds:
            os.close(fd)


def _become_worker(request: dict, fds: list[int], conn: socket.socket, sockets: list[socket.socket],
                   sel: selectors.BaseSelector, baseline: dict[str, str], imported: dict[str, str | None]) -> None:
    """In the child: become the process `python launch.py SCRIPT ARGS` would have started, then run it."""
    zygote = os.getppid()
    os.setsid()  # its own process group, which the launcher signals as one
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != zygote:
            os.kill(os.getpid(), signal.SIGTERM)
    sel.close()
    for sock in sockets:
        sock.close()
    # Nothing runs until the launcher, having got the pid, says go: one that gave up waiting (and
    # started its worker cold) closed the socket, and then this child ends without a trace.
    go = b""
    try:
        go = conn.recv(1)
    except OSError:
        pass
    conn.close()
    if go != GO:
        os._exit(0)
    # stdin, stdout, stderr, then the launcher's pass_fds at their own numbers.
    targets = [0, 1, 2, *request.get("pass_fds", [])]
    floor = max(targets) + 1  # above every target first, so no dup2 overwrites one still to be moved
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor) for fd in fds]
    for fd in fds:
        os.close(fd)
    fds.clear()
    for fd, target in zip(high, targets, strict=True):
        os.dup2(fd, target)  # inheritable, as Popen's pass_fds leaves them
        os.close(fd)
    from bakeoff_runtime.contract import INDUCTOR_THREADS_ENV, MLFLOW_CLIENT_ENV, WARM_FORKED_ENV

    env = dict(request["env"])
    if MLFLOW_CLIENT_ENV in env:
        # The MLflow client's pipes are handed by the process that starts the worker: here, this one.
        parts = env[MLFLOW_CLIENT_ENV].split(",")
        env[MLFLOW_CLIENT_ENV] = ",".join([str(zygote), *parts[1:]])
    for key, value in imported.items():  # the job's environment as its own imports would have left it
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    env[WARM_FORKED_ENV] = "1"  # for the summary: its peak host memory counts only the pages it touched
    os.environ.clear()
    os.environ.update(env)
    os.chdir(request["cwd"])
    _reopen_stdio(bool(env.get("PYTHONUNBUFFERED")))
    if "numpy" in sys.modules:
        # numpy's global generator was seeded from the OS at import: each job's must be its own,
        # as in a fresh interpreter (random's re-seeds itself after a fork).
        sys.modules["numpy"].random.seed()
    omp = env.get("OMP_NUM_THREADS")
    if omp is not None and omp != baseline.get("OMP_NUM_THREADS"):
        import torch

        torch.set_num_threads(int(omp))
    # torch._dynamo, which a leg that does not compile preloads here, imported inductor's config, which read
    # its compile threads then: too early for this job's.
    compile_threads = env.get(INDUCTOR_THREADS_ENV)
    if compile_threads is not None and "torch._inductor.config" in sys.modules:
        setattr(sys.modules["torch._inductor.config"], "compile_threads", int(compile_threads))  # noqa: B010
    run_as_main(request["argv"])


def run_as_main(argv: list[str]) -> None:
    """Run `argv[0]` (launch.py) as `python argv[0] argv[1:]` would, and exit as that would: with
    SystemExit's code, 1 and the traceback on an exception, by SIGINT on a KeyboardInterrupt,
    after waiting for non-daemon threads and running the atexit handlers."""
    import atexit
    import runpy
    import threading

    # Only the job's own code: this module's package came from the installation, the job's from its bundle.
    for name in [m for m in sys.modules if m == "bakeoff_runtime" or m.startswith("bakeoff_runtime.")]:
        del sys.modules[name]
    sys.argv = list(argv)
    sys.path[0] = str(Path(argv[0]).resolve().parent)
    importlib.invalidate_caches()
    code, by_sigint = 0, False
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        by_sigint = True
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    try:
        threading._shutdown()  # type: ignore[attr-defined]  # the interpreter's own exit does this first
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    finally:
        if by_sigint:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(code)


def _reopen_stdio(unbuffered: bool) -> None:
    import io

    streams = []
    for fd, mode in ((0, "r"), (1, "w"), (2, "w")):
        old = (sys.stdin, sys.stdout, sys.stderr)[fd]
        raw = io.FileIO(fd, mode, closefd=False)
        buffered = raw if unbuffered and fd else (io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw))
        streams.append(io.TextIOWrapper(buffered, encoding=getattr(old, "encoding", None) or "utf-8",
                                        errors=getattr(old, "errors", None) or "strict",
                                        line_buffering=fd == 2 or (fd == 1 and raw.isatty()),
                                        write_through=unbuffered and fd != 0))
    sys.stdin, sys.stdout, sys.stderr = streams
    for name, stream in zip(("__stdin__", "__stdout__", "__stderr__"), streams, strict=True):
        setattr(sys, name, stream)  # what a fresh interpreter's would be: these descriptors


def read_address(prefix: str) -> str | None:
    """The socket's address, the first line on stdin. The engine starts this process before it makes its
    directory of sockets and writes the address after: an engine killed in between leaves a directory no
    interpreter knows by its address. Then stdin ends first, and this process removes what its engine may
    have made (`prefix` is the engine's tmp dir and bakeoff-warm-PID-; only an empty directory goes)."""
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 1)  # a byte at a time: what follows the line is only ever stdin's end
        if not chunk:
            _remove_empty(prefix)
            return None
        line += chunk
    return line.decode().strip()


def _remove_empty(prefix: str) -> None:
    folder, name = os.path.split(prefix)
    try:
        names = [n for n in os.listdir(folder) if n.startswith(name)]
    except OSError:
        return
    for n in names:
        try:
            os.rmdir(os.path.join(folder, n))  # an empty directory only; a sibling's sockets keep theirs
        except OSError:
            pass


# The engine that started this process (its parent at start): once this process is reparented, the engine has
# ended, whoever may still hold the engine's end of stdin (a child forked in the moment before the kill).
ENGINE = [os.getppid()]

if __name__ == "__main__":
    # warm_server.py ADDRESS, or warm_server.py --address-on-stdin PREFIX (the local engine: read_address)
    given = read_address(sys.argv[2]) if sys.argv[1] == "--address-on-stdin" else sys.argv[1]
    if given is not None:
        serve(given)
