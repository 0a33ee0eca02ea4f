"""A command run in a pseudo-terminal, read as a person at that terminal reads it.

The command's stdin, stdout and stderr are the terminal (os.openpty), of a set size, so rich draws live
bars as it would for a person; every byte is kept with the time it arrived. `lines()` is what was
written, escape sequences out, a row per carriage return or newline (a redrawn bar is one row per
frame). Shared by the terminal tests (tests/e2e/test_terminal_progress.py) and benchmarks/first_output.py.
"""
from __future__ import annotations

import codecs
import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Sequence

# CSI (colours, cursor moves, erase line), OSC (titles, links) and the two-byte escapes rich writes.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>]")


class TerminalRun:
    def __init__(self, argv: Sequence[str], *, columns: int = 100, rows: int = 30,
                 env: dict[str, str] | None = None, cwd: str | None = None):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        full = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
        full.update({"TERM": "xterm-256color", **(env or {})})
        self.columns = columns
        self.started = time.monotonic()
        self.proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave, env=full, cwd=cwd,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self._master: int | None = master
        self.chunks: list[tuple[float, bytes]] = []  # (seconds since the spawn, bytes)

    # --- reading ---------------------------------------------------------------------------------
    def _read_once(self, wait_s: float) -> bool:
        """One read of what the terminal has; False once it is closed (the command and its children ended)."""
        if self._master is None:
            return False
        ready, _, _ = select.select([self._master], [], [], wait_s)
        if not ready:
            return True
        try:
            data = os.read(self._master, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            data = b""
        if not data:
            os.close(self._master)
            self._master = None
            return False
        self.chunks.append((time.monotonic() - self.started, data))
        return True

    def read_until(self, seen: Callable[[str], bool], limit_s: float) -> bool:
        """Read until `seen(text so far)` holds (True), or the terminal closes or `limit_s` passes (False).
        The limit only keeps a broken command from hanging its caller; nothing is asserted on it."""
        end = time.monotonic() + limit_s
        while not seen(self.text()):
            if time.monotonic() > end or not self._read_once(min(0.5, max(0.0, end - time.monotonic()))):
                return seen(self.text())
        return True

    def wait(self, limit_s: float) -> int:
        """Read to the end; the command's exit status."""
        end = time.monotonic() + limit_s
        while time.monotonic() < end and self._read_once(0.5):
            pass
        try:
            return self.proc.wait(timeout=max(1.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        if self._master is not None:
            os.close(self._master)
            self._master = None

    # --- what a person sees ------------------------------------------------------------------------
    def text(self) -> str:
        return b"".join(c for _, c in self.chunks).decode("utf-8", "replace")

    def first_byte_s(self) -> float | None:
        return self.chunks[0][0] if self.chunks else None

    def lines(self) -> list[str]:
        return [row for row in _rows(self.text()) if row.strip()]

    def timed_lines(self) -> list[tuple[float, str]]:
        """Each whole line (ended by a newline) with the time its last byte arrived."""
        out, pending = [], ""
        decode = codecs.getincrementaldecoder("utf-8")("replace").decode  # a character may span two reads
        for at, chunk in self.chunks:
            pending += decode(chunk)
            *done, pending = pending.split("\n")
            out += [(at, row) for line in done for row in _rows(line) if row.strip()]
        return out


def _rows(text: str) -> list[str]:
    return re.split(r"[\r\n]+", _ESCAPES.sub("", text))
