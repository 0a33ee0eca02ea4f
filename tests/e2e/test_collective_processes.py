"""The collective check with real torch.distributed processes over gloo: it passes on a healthy group,
fails clearly on a planted fault, and a local run stops only the leg whose check fails."""
import json
import os
import socket
import subprocess
import sys

import pytest

from conftest import ENTRYPOINTS

SCRIPT = ENTRYPOINTS / "collective_check.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(out, **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("BAKEOFF_", "SM_", "RANK", "WORLD_SIZE"))}
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                           f"--master_port={_free_port()}", str(SCRIPT), "--out", str(out), "--bytes", "65536",
                           "--iters", "2"],
                          capture_output=True, text=True, timeout=300, env={**clean, **env})


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    out = tmp_path_factory.mktemp("ok")
    return _run(out, BAKEOFF_NETWORK_GBPS="800"), json.loads((out / "collective.json").read_text())


# slow: spawns torch.distributed processes
def test_healthy_group_passes_with_exact_results_and_bus_bandwidth(healthy):
    proc, result = healthy
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert result["ok"] is True and result["world_size"] == 2 and result["backend"] == "gloo"
    for op in ("all_reduce", "all_gather"):
        bw = result["bandwidth"][op]
        assert bw["time_s"] > 0 and bw["algbw_GBps"] > 0
    # nccl-tests' factors at n=2: all-reduce 2(n-1)/n = 1, all-gather (n-1)/n = 1/2.
    ar, ag = result["bandwidth"]["all_reduce"], result["bandwidth"]["all_gather"]
    assert ar["busbw_GBps"] == pytest.approx(ar["algbw_GBps"])
    assert ag["busbw_GBps"] == pytest.approx(ag["algbw_GBps"] / 2)
    # One host: the network figure is recorded but not used as a yardstick.
    assert result["comparison"]["network_gbps"] == 800 and "fraction_of_network" not in result["comparison"]


# slow: spawns torch.distributed processes
def test_planted_fault_fails_clearly(tmp_path):
    proc = _run(tmp_path, BAKEOFF_COLLECTIVE_FAULT_RANK="1")
    assert proc.returncode != 0
    result = json.loads((tmp_path / "collective.json").read_text())
    assert result["ok"] is False and result["planted_fault_rank"] == 1
    # 2 ranks send 1x and 2x the base (1 at element 0): the sum is 3; rank 1's extra 1 makes it 4.
    assert "all_reduce (sum over 2 ranks)" in result["reason"] and "element 0 is 4, expected 3" in result["reason"]
    assert "all_gather (chunk from rank 1 of 2)" in result["reason"]
    assert "collective check failed" in proc.stderr


# --- locally, through the compiled pipeline ---------------------------------------------
def test_local_run_stops_only_the_leg_whose_check_fails(tmp_path):
    from bakeoff.pipelines.local.executor import LocalExecutor
    from bakeoff.pipelines.spec.loader import load_spec
    from conftest import tiny_spec, write_spec

    data = tiny_spec(mlflow={"enabled": False}, seeds=2)
    data["training"]["max_steps"] = 4
    data["legs"][0].update(collective_check=True, environment={"BAKEOFF_COLLECTIVE_FAULT_RANK": "1"})
    data["legs"][1].update(collective_check=True)
    spec = load_spec(write_spec(tmp_path / "spec.yaml", data))
    result = LocalExecutor(spec, tmp_path / "run", use_gpu=False).run()

    bad = json.loads((tmp_path / "run" / "collective" / "trn1" / "collective.json").read_text())
    good = json.loads((tmp_path / "run" / "collective" / "p4d" / "collective.json").read_text())
    assert bad["ok"] is False and "element 0 is 4, expected 3" in bad["reason"]
    assert good["ok"] is True and good["processes"] == 2 and good["leg_world_size"] == 8
    for seed in (0, 1):
        trn = json.loads((tmp_path / "run" / "jobs" / f"trn1-s{seed}" / "job.json").read_text())
        p4d = json.loads((tmp_path / "run" / "jobs" / f"p4d-s{seed}" / "job.json").read_text())
        assert trn["status"] == "failed" and trn["reason"].startswith("collective check failed")
        assert p4d["status"] == "completed"  # the other leg trained
    assert result.verdict == "fail"  # a leg that cannot all-reduce is not at parity
    # The report's "what porting cost" section carries each leg's check: what the Collective step
    # itself left in its model artifacts, an input of the Evaluate step as on SageMaker (not the
    # local record beside it, whose `processes` no SageMaker execution has).
    porting = result.evaluation["porting"]["legs"]["trn1"]["collective"]
    check = {k: v for k, v in bad.items() if k not in ("processes", "leg_world_size", "exit_code")}
    assert porting == check and porting["ok"] is False and porting["world_size"] == 2
    request = json.loads((tmp_path / "run" / "evaluation" / "request.json").read_text())
    assert {i["InputName"] for i in request["ProcessingInputs"]} >= {"collective-trn1", "collective-p4d"}
    assert "collective check" in (tmp_path / "run" / "evaluation" / "report.md").read_text()
