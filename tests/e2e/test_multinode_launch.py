"""Multi-node jobs: the launch path meets as two hosts (two real processes on 127.0.0.1)."""
import json
import os
import socket
import subprocess
import sys

from conftest import ENTRYPOINTS, ROOT


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_launch_path_meets_as_two_hosts(tmp_path):
    """launch.py twice, as algo-1 and algo-2 of one job, each reading only resourceconfig.json;
    the host map resolves both names to this machine."""
    procs, port = [], _free_port()
    for host in ("algo-1", "algo-2"):
        root = tmp_path / host / "opt" / "ml"
        config = root / "input" / "config"
        config.mkdir(parents=True)
        (config / "resourceconfig.json").write_text(json.dumps(
            {"current_host": host, "hosts": ["algo-1", "algo-2"], "network_interface_name": "lo"}))
        (config / "hyperparameters.json").write_text(json.dumps({"seed": "0", "leg": "cpu", "max_steps": "1"}))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "BAKEOFF_", "MASTER_", "RANK"))}
        env.update({"SM_INPUT_DIR": str(root / "input"), "SM_MODEL_DIR": str(root / "model"),
                    "SM_OUTPUT_DIR": str(root / "output"), "SM_OUTPUT_DATA_DIR": str(root / "output" / "data"),
                    "BAKEOFF_BACKEND": "cpu", "BAKEOFF_NPROC_PER_NODE": "1", "BAKEOFF_MASTER_PORT": str(port),
                    "BAKEOFF_HOST_MAP": json.dumps({"algo-1": "127.0.0.1", "algo-2": "127.0.0.1"}),
                    "PYTHONUNBUFFERED": "1"})
        procs.append(subprocess.Popen([sys.executable, str(ENTRYPOINTS / "launch.py"),
                                       str(ROOT / "tests" / "assets" / "multinode" / "meet.py")],
                                      cwd=ENTRYPOINTS, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    outs = [p.communicate(timeout=180)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert "host algo-2 is node 1, meeting on 127.0.0.1" in outs[1]
    seen = json.loads((tmp_path / "algo-1" / "opt" / "ml" / "output" / "data" / "meet-rank0.json").read_text())
    assert seen == {"rank": 0, "world_size": 2, "sum": 3.0, "master": "127.0.0.1", "node_rank": "0"}
    for rank, host in enumerate(("algo-1", "algo-2")):  # each rank destroyed its process group on the way out
        left = tmp_path / host / "opt" / "ml" / "output" / "data" / f"left-rank{rank}.json"
        assert json.loads(left.read_text()) == {"initialized": False}, host
    summary = json.loads((tmp_path / "algo-1" / "opt" / "ml" / "model" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["world_size"] == 2


def test_a_script_that_never_leaves_its_process_group_is_left_before_interpreter_exit(tmp_path):
    """The worker destroys a group the script left behind (bakeoff_runtime.training.process_group), so gloo's
    teardown does not run after the interpreter's."""
    out = tmp_path / "output" / "data"
    out.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "BAKEOFF_", "MASTER_", "RANK"))}
    env.update({"SM_OUTPUT_DATA_DIR": str(out), "SM_OUTPUT_DIR": str(tmp_path / "output"),
                "SM_MODEL_DIR": str(tmp_path / "model"), "SM_INPUT_DIR": str(tmp_path / "input")})
    script = ROOT / "tests" / "assets" / "multinode" / "leaves_group.py"
    code = ("import sys; from pathlib import Path; import launch; "
            "from bakeoff_runtime.contract import TrainingEnv; "
            f"sys.exit(launch.run_worker(TrainingEnv.from_environ(), Path({str(script)!r}), []))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ENTRYPOINTS, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "joined 1" in proc.stderr
    assert json.loads((out / "at-exit.json").read_text()) == {"initialized": False}
