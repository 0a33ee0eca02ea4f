"""The launcher's side of a leg's warm interpreter (bakeoff_runtime.training.warm_server): ask it to fork
this job's worker, and watch that worker as a Popen would be watched.

The worker is the warm interpreter's child, not the launcher's, so what Popen gets from the
kernel comes over the socket instead: the worker's pid once forked, its exit status once reaped.
Its stdout and stderr are pipes the launcher made and handed over (SCM_RIGHTS), so its output
passes through the launcher as a cold worker's does. It is a session leader as with
start_new_session, so the launcher's os.killpg(pid, ...) reaches it; if the launcher dies, the
warm interpreter sees the socket close and sends it SIGTERM, as PR_SET_PDEATHSIG would have.
Torch-free: the launcher imports no torch.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
from collections.abc import Mapping, Sequence

from bakeoff_runtime.contract import WARM_WORKER_ENV

# The warm interpreter's socket, set in the job's environment by the local engine only.
ADDRESS_ENV = WARM_WORKER_ENV
GO = b"g"  # bakeoff_runtime.training.warm_server.GO
CONNECT_TIMEOUT_S = 120  # the warm interpreter may still be importing torch for a leg's first job


class WarmWorker:
    """What launch.supervise needs of a Popen: pid, stdout, stderr, wait()."""

    def __init__(self, conn: socket.socket, answers, pid: int, stdout, stderr) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._conn = conn
        self._answers = answers  # the socket's lines: the pid was one, the exit status is the next

    def wait(self) -> int:
        if self.returncode is None:
            try:
                line = self._answers.readline()
                self.returncode = int(json.loads(line)["returncode"])
            except (OSError, ValueError, KeyError, TypeError):
                # The warm interpreter died before reporting: its worker was sent SIGTERM with it.
                print("[bakeoff] the warm interpreter ended before the worker's exit status reached the launcher",
                      file=sys.stderr, flush=True)
                self.returncode = -signal.SIGTERM
            self._answers.close()
            self._conn.close()
        return self.returncode


def start(address: str, argv: Sequence[str], env: Mapping[str, str], *, merged: bool,
          pass_fds: Sequence[int] = ()) -> WarmWorker | str:
    """Have the warm interpreter at `address` run `python argv...` with `env` in this directory;
    the worker, or why it was not started (then start it cold)."""
    out_r, out_w = os.pipe()
    err_r, err_w = (out_r, out_w) if merged else os.pipe()
    request = {"executable": argv[0], "argv": list(argv[1:]), "env": dict(env), "cwd": os.getcwd(),
               "pass_fds": list(pass_fds)}
    body = json.dumps(request).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    answers = conn.makefile("r", encoding="utf-8")
    mine = {out_r, err_r}
    try:
        conn.settimeout(CONNECT_TIMEOUT_S)
        conn.connect(address)
        payload = struct.pack("!I", len(body)) + body
        sent = socket.send_fds(conn, [payload], [0, out_w, err_w, *pass_fds])
        if sent < len(payload):  # not an empty send: a refusal may have closed the socket already
            conn.sendall(payload[sent:])
        answer = json.loads(answers.readline() or "{}")
        if "pid" in answer:
            conn.sendall(GO)  # the forked worker waits for this before it runs anything
    except (OSError, ValueError) as exc:
        answer = {"refused": f"the warm interpreter did not answer ({exc})"}
    finally:
        for fd in {out_w, err_w}:
            os.close(fd)  # the worker holds them now: its end is the pipes' end
    if "pid" not in answer:
        answers.close()
        conn.close()
        for fd in mine:
            os.close(fd)
        return str(answer.get("refused") or "no answer")
    conn.settimeout(None)
    stdout = os.fdopen(out_r, "r", errors="replace", buffering=1)
    stderr = None if merged else os.fdopen(err_r, "r", errors="replace", buffering=1)
    return WarmWorker(conn, answers, int(answer["pid"]), stdout, stderr)
