"""The container contract with real jobs: what a job (a PyTorch script, torchrun, a killed process)
leaves behind when it dies. The rest of the contract: tests/unit/test_contract.py."""
import json
import os
import subprocess
import sys
import textwrap

from jobtree import JobLayout
from sagemaker_shaped import free_port

from conftest import ENTRYPOINTS


def _run_script(tmp_path, body: str, hps=None, extra_env=None, timeout=300):
    src = tmp_path / "code"
    src.mkdir()
    (src / "job.py").write_text(textwrap.dedent(body))
    layout = JobLayout(tmp_path / "job")
    hps = {"seed": 0, "leg": "cpu", "max_steps": 20, "log_interval": 2, **(hps or {})}
    layout.lay_out(hps, {}, "ml.m5.xlarge")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "BAKEOFF_", "MLFLOW_"))}
    env.update(layout.environment({}, hps))
    env.update({"BAKEOFF_BACKEND": "cpu", "BAKEOFF_PRECISION": "fp32", "PYTHONPATH": str(ENTRYPOINTS),
                "BAKEOFF_MASTER_PORT": str(free_port())})  # torchrun's default is shared by tests side by side
    env.update(extra_env or {})
    proc = subprocess.run([sys.executable, str(ENTRYPOINTS / "launch.py"), str(src / "job.py")], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=src)
    summary = layout.model / "summary.json"
    return proc, layout, (json.loads(summary.read_text()) if summary.exists() else None)


TRAIN_LOOP = """
import torch
from bakeoff_runtime import Runtime
with Runtime.from_environment() as rt:
    model = rt.prepare(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(rt.max_steps):
        x = torch.randn(8, 4)
        loss = (model(x) - 1).pow(2).mean() {LOSS}
        loss.backward()
        rt.optimizer_step(opt)
        opt.zero_grad()
        rt.track_step(step, loss, samples=8)
        {HOOK}
    rt.log_validation(rt.max_steps, val_loss=float(loss))
"""


def test_a_job_that_dies_keeps_its_metrics_and_reason(tmp_path):
    body = TRAIN_LOOP.replace("{LOSS}", "").replace(
        "{HOOK}", "if step == 7: raise RuntimeError('out of device memory (planted)')")
    proc, layout, summary = _run_script(tmp_path, body)
    assert proc.returncode != 0
    failure = (layout.output / "failure").read_text()
    assert failure.startswith("RuntimeError: out of device memory (planted)")
    assert summary["status"] == "failed" and "planted" in summary["reason"]
    steps = [json.loads(line)["step"] for line in (layout.model / "metrics.jsonl").read_text().splitlines()]
    assert steps == [0, 2, 4, 6]  # everything logged before the crash is still there


def test_a_script_that_dies_before_the_runtime_still_leaves_a_reason(tmp_path):
    proc, layout, summary = _run_script(tmp_path, "import no_such_module_here\n")
    assert proc.returncode != 0
    assert "ModuleNotFoundError" in (layout.output / "failure").read_text()
    assert summary["status"] == "failed" and "no_such_module_here" in summary["reason"]


def test_nan_stops_early_with_a_clear_reason(tmp_path):
    body = TRAIN_LOOP.replace("{LOSS}", "* (float('nan') if step >= 5 else 1.0)").replace("{HOOK}", "")
    proc, layout, summary = _run_script(tmp_path, body)
    assert proc.returncode == 0, proc.stderr  # a diverged run is a result, reported to the evaluation
    assert summary["status"] == "diverged"
    assert summary["reason"] == "loss is nan at step 5"  # the step it appeared, not the next logged one
    assert summary["steps_completed"] == 6


def test_mlflow_being_down_never_stops_training(tmp_path):
    body = TRAIN_LOOP.replace("{LOSS}", "").replace("{HOOK}", "")
    proc, layout, summary = _run_script(tmp_path, body, extra_env={
        "MLFLOW_TRACKING_URI": "http://127.0.0.1:9", "BAKEOFF_MLFLOW_EXPERIMENT": "down",
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "2"})
    assert proc.returncode == 0, proc.stderr
    assert summary["status"] == "completed" and summary["steps_completed"] == 20
    assert summary["mlflow"]["error"] and "unreachable" in summary["mlflow"]["error"]
    assert "MLflow logging disabled" in proc.stderr


def test_multi_device_job_launches_through_torchrun(tmp_path):
    body = TRAIN_LOOP.replace("{LOSS}", "").replace("{HOOK}", "")
    proc, layout, summary = _run_script(tmp_path, body, extra_env={"BAKEOFF_NPROC_PER_NODE": "2"})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "launching 2 process(es) per host" in proc.stdout
    assert summary["world_size"] == 2 and summary["status"] == "completed"


def test_stdout_lines_match_the_metric_definitions(tmp_path):
    import re

    from bakeoff_runtime.contract import metric_definitions

    proc, layout, summary = _run_script(tmp_path, TRAIN_LOOP.replace("{LOSS}", "").replace("{HOOK}", ""))
    found = {d["Name"]: re.findall(d["Regex"], proc.stdout) for d in metric_definitions()}
    assert len(found["train:loss"]) == 11  # steps 0, 2, ..., 18 and the last step
    assert found["validation:loss"] and found["time_to_first_step"]
    assert abs(float(found["train:loss"][-1]) - summary["final_train_loss"]) < 1e-4


def test_on_sagemaker_a_script_failure_exits_0_so_the_pipeline_reaches_evaluate(tmp_path):
    body = TRAIN_LOOP.replace("{LOSS}", "").replace("{HOOK}", "if step == 3: raise ValueError('bad port (planted)')")
    proc, layout, summary = _run_script(tmp_path, body, extra_env={"BAKEOFF_CONTINUE_ON_FAILURE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert summary["status"] == "failed" and summary["failure_kind"] == "script" and "planted" in summary["reason"]
    assert "exiting 0 so the pipeline's Evaluate step decides with it" in proc.stderr
    # The evaluation step reads output/data (SageMaker's output.tar.gz): the failure is there too.
    assert json.loads((layout.output / "data" / "summary.json").read_text())["status"] == "failed"


def test_on_sagemaker_a_broken_collective_exits_non_zero_so_it_is_never_cached_and_a_retry_runs_it(tmp_path):
    body = TRAIN_LOOP.replace("{LOSS}", "").replace("{HOOK}", """if step == 3:
            import torch.distributed
            raise torch.distributed.DistBackendError('NCCL error in: ProcessGroupNCCL.cpp (planted)')""")
    proc, layout, summary = _run_script(tmp_path, body, extra_env={"BAKEOFF_CONTINUE_ON_FAILURE": "1"})
    assert proc.returncode != 0, proc.stderr
    assert summary["status"] == "failed" and summary["failure_kind"] == "infrastructure"
    assert "never served from SageMaker's step cache" in proc.stderr
    assert json.loads((layout.output / "data" / "summary.json").read_text())["failure_kind"] == "infrastructure"


def test_a_worker_killed_under_torchrun_is_the_platforms_failure_even_where_its_peer_blamed_the_script(tmp_path):
    # Rank 1 dies by SIGKILL; rank 0 is stopped by torchrun. torchrun exits 1 and says why only in its output.
    body = TRAIN_LOOP.replace("{LOSS}", "").replace("{HOOK}", """if step == 3 and rt.rank == 1:
            import os, signal; os.kill(os.getpid(), signal.SIGKILL)""")
    proc, layout, summary = _run_script(tmp_path, body, extra_env={"BAKEOFF_CONTINUE_ON_FAILURE": "1",
                                                                   "BAKEOFF_NPROC_PER_NODE": "2"})
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert summary["status"] == "failed" and summary["failure_kind"] == "infrastructure", summary
    assert "killed by SIGKILL" in summary["reason"]


def test_a_training_process_killed_by_a_signal_is_recorded_as_such(tmp_path):
    body = TRAIN_LOOP.replace("{LOSS}", "").replace(
        "{HOOK}", "if step == 3:\n            import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    proc, layout, summary = _run_script(tmp_path, body)
    assert proc.returncode != 0
    assert summary["status"] == "failed" and summary["failure_kind"] == "killed"
    assert summary["reason"].startswith("killed by SIGKILL")


def test_nan_on_a_lazy_device_is_dated_to_the_step_it_appeared(tmp_path):
    """On XLA the loss is not fetched every step (that would stall it); the step a NaN
    appeared at is still known at the next logged step, and nothing recompiles for it."""
    body = TRAIN_LOOP.replace("{LOSS}", "* (float('nan') if step >= 5 else 1.0)").replace("{HOOK}", "").replace(
        "model(x)", "model(x.to(rt.device))")
    proc, layout, summary = _run_script(tmp_path, body, hps={"log_interval": 4},
                                        extra_env={"BAKEOFF_BACKEND": "neuron", "PJRT_DEVICE": "CPU"})
    assert proc.returncode == 0, proc.stderr
    assert summary["status"] == "diverged"
    assert summary["reason"] == "loss became non-finite at step 5 (noticed at step 8, the next device synchronisation)"
    assert summary["compile"]["compiled_graphs"] <= 6  # step 0, step 1, the checks, the NaN fetch: no per-step graphs


def test_graph_extraction_runs_to_the_end_whatever_the_device_reads_back(tmp_path):
    """Under neuron_parallel_compile graphs are compiled, not run, and read back zeros (the
    "first bad step" marker too): the finite and divergence checks stay off in that run, so it
    reaches the steady-state steps and the final validation and all their graphs are extracted."""
    body = TRAIN_LOOP.replace("{LOSS}", "* (float('nan') if step >= 5 else 1.0)").replace("{HOOK}", "").replace(
        "model(x)", "model(x.to(rt.device))")
    proc, layout, summary = _run_script(tmp_path, body, hps={"log_interval": 4}, extra_env={
        "BAKEOFF_BACKEND": "neuron", "PJRT_DEVICE": "CPU", "BAKEOFF_PRECOMPILE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert summary["status"] == "completed" and summary["steps_completed"] == 20
    assert summary["precompile"] is True  # its figures are not results
    kinds = [json.loads(line)["kind"] for line in (layout.model / "metrics.jsonl").read_text().splitlines()]
    assert kinds[-1] == "eval"
