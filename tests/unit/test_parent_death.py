"""A process the local engine starts ends with the engine, even after a `kill -9`, without Python running
between fork and exec in a process that has threads (bakeoff_runtime.process.parent_death.wrapped)."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ENTRYPOINTS

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

# A parent with threads that starts `sleep` wrapped, says its pid, then is killed (-9) by the test.
PARENT = f"""
import os, subprocess, sys, threading, time
sys.path.insert(0, {str(ENTRYPOINTS)!r})
from bakeoff_runtime.process.parent_death import wrapped
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
child = subprocess.Popen(wrapped(["sleep", "60"]), start_new_session=True)
print(child.pid, flush=True)
time.sleep(60)
"""


def _argv(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_text().split("\0")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


@linux_only
def test_a_wrapped_child_is_the_command_itself_and_ends_when_its_parent_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "sleep" not in _argv(pid)[0]:
            time.sleep(0.02)
        assert _argv(pid)[:2] == ["sleep", "60"]  # exec'd: same pid
        parent.kill()
        parent.wait(30)
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), "the child outlived its killed parent"
    finally:
        parent.kill()


@linux_only
def test_a_child_whose_parent_died_before_the_signal_was_armed_ends_too():
    from bakeoff_runtime.process.parent_death import wrapped

    command = wrapped(["sleep", "60"])
    command[command.index(str(os.getpid()))] = "1"  # as if its parent were already gone (reparented)
    proc = subprocess.run(command, timeout=30)
    assert proc.returncode == -15  # SIGTERM, before `sleep` ever ran
