"""The fake container's job: a torch-free stand-in for a training script on bakeoff's Runtime.

Run by tests/engine/fake_container.py in the job's own process group, as `jobs.run_training` runs the
real ContainerEntrypoint, so the engine's stopping condition, signals and exit codes act on a real
process. It writes what the Runtime writes (bakeoff_runtime/training/runtime.py `finish`, `_publish_outputs`):
metrics.jsonl and the step lines through the Runtime's own Telemetry, summary.json with the fields
the evaluation reads, the copies in output/data, the output digest, output/failure on a failure.
What it trains is the recipe's (FAKE_RECIPE, see fake_container.Recipe): no torch, no MLflow.
"""
import json
import math
import os
import signal
import sys
import time
import traceback

from bakeoff_runtime import contract
from bakeoff_runtime.contract import output_digest
from bakeoff_runtime.training.telemetry import Telemetry, host_environment


class Stopped(KeyboardInterrupt):
    """SIGTERM, as the Runtime turns it into an exception (its `Stopped`)."""


def _stop(signum, frame):
    raise Stopped("stopped by SIGTERM (the job was stopped from outside)")


def _trained_on(backend: str, steps: int) -> dict:
    """Where the Runtime's device watch would say this job trained (training/evidence.py): the
    device of the backend the engine ran it as (an emulated trn leg on XLA, a GPU leg on the CPU)."""
    from bakeoff_runtime.contract.backend_table import BACKENDS

    device = BACKENDS[backend].torch_device if backend in BACKENDS else "cpu"
    evidence = {"optimizer_steps": steps, "training_forwards": steps, "processes": 1}
    if device == "xla":
        evidence["xla"] = {"executions": steps + 2, "graphs_compiled": 2, "graphs_cached": 0,
                           "tensors_created": 10 * steps}
    model = {"parameters": 1000, "tensors": 3, "shapes": {"10x100": 1}, "devices": {device: 3},
             "source": "optimizer parameters at the first optimizer step"}
    return {"model": model if steps else None, "evidence": evidence}


def main() -> int:
    recipe = json.loads(os.environ["FAKE_RECIPE"])
    env = contract.TrainingEnv.from_environ()
    hps = env.hyperparameters
    # Where the Runtime reads them from (Runtime.__init__).
    leg = str(hps.get("leg", os.environ.get(contract.ENV["leg"], "leg")))
    seed = int(hps.get("seed", 0))
    me = f"{leg}/{seed}"
    steps = int(hps.get("max_steps", 40))
    log_interval = max(1, int(hps.get("log_interval", 10)))
    metric = recipe["metric"]
    info = {"bakeoff": os.environ.get(contract.ENV["name"], ""), "leg": leg, "seed": seed,
            "backend": os.environ.get(contract.ENV["backend"]) or "cpu",
            "precision": os.environ.get(contract.ENV["precision"]) or "fp32",
            "instance_type": os.environ.get(contract.ENV["instance_type"]) or env.instance_type,
            "instance_count": env.host_count, "emulated_on": os.environ.get(contract.ENV["emulated_on"]) or None,
            "job_key": os.environ.get(contract.ENV["job_key"]) or None,
            "spec_hash": os.environ.get(contract.ENV["spec_hash"]) or None, "world_size": 1}
    tele = Telemetry(env.model_dir, info)
    done, history, validation, first_loss, last_loss = 0, [], {}, None, None

    def finish(status, reason=None, **extra):
        summary = {"status": status, "reason": reason, "steps_completed": done, "max_steps": steps,
                   "final_train_loss": last_loss, "first_train_loss": first_loss, "metrics": dict(validation),
                   "validation_history": history,
                   # A fixed rate: the engine's figures (cost, billable time) come from the job record.
                   "throughput": {"unit": "samples", "samples_per_sec": 1000.0, "overall_per_sec": 1000.0,
                                  "timing": "fake container (tests/engine)", "steady_state_from_step": 2},
                   "time_to_first_step_s": 0.01, "compile": {}, "peak_device_memory_bytes": None,
                   **_trained_on(info["backend"], done),
                   "environment": {**host_environment(), "backend_device": "fake container (tests/engine)"},
                   **extra}
        tele.write_summary(summary)
        env.output_data_dir.mkdir(parents=True, exist_ok=True)
        for name in output_digest.COVERED:
            src = env.model_dir / name
            if src.exists():
                (env.output_data_dir / name).write_bytes(src.read_bytes())
        for directory in (env.model_dir, env.output_data_dir):
            output_digest.record(directory)
        tele.close()

    signal.signal(signal.SIGTERM, _stop)
    try:
        if me in recipe["sigkill"]:
            os.kill(os.getpid(), signal.SIGKILL)
        if me in recipe["sigkill_once"]:
            marker = env.checkpoint_dir / "killed-once"  # checkpoints outlive a job's attempt, as on S3
            if not marker.exists():
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
                os.kill(os.getpid(), signal.SIGKILL)
        if me in recipe["crash"]:
            raise RuntimeError(recipe["crash"][me])
        final = float(recipe["values"][leg][str(seed)])
        diverges = me in recipe["diverge"] or leg in recipe["diverge"]
        for step in range(steps):
            done = step + 1
            if me in recipe["hang"] and step == 5:
                while True:  # no progress after step 5 until the job is stopped from outside
                    time.sleep(0.05)
            if step % log_interval and step != steps - 1:
                continue
            loss = 1.0 / (1 + step) + final
            if diverges and step > 0:
                loss = 40.0 * (step + 1)  # what 40x the learning rate does to the loss
            if first_loss is None:
                first_loss = loss
            last_loss = loss
            tele.log("train", step, train_loss=loss, samples_per_sec=1000.0)
            if diverges and step > 0:
                # The Runtime's divergence rule: a loss beyond 4x the first one ends the run, as a result.
                tele.say(diverged=1)
                finish("diverged", reason=f"loss {loss:.4g} at step {step} exceeds 4x the initial loss "
                                          f"{first_loss:.4g}")
                return 0
            if step == steps // 2:
                mid = final * 1.5
                history.append({"step": step, metric: mid})
                tele.log("eval", step, **{metric: mid})
        validation = {metric: final}
        history.append({"step": steps, metric: final})
        tele.log("eval", steps, **{metric: final})
        if not math.isfinite(final):
            tele.say(diverged=1)
            finish("diverged", reason=f"validation metric {metric} is {final} at step {steps}")
            return 0
        finish("completed")
        return 0
    except Exception as exc:  # what Runtime.__exit__ does with a script's exception
        reason = f"{type(exc).__name__}: {exc}"[:500]
        env.failure_file.parent.mkdir(parents=True, exist_ok=True)
        env.failure_file.write_text(f"{reason}\n\n{traceback.format_exc()[-3000:]}")
        finish("failed", reason=reason, failure_kind="script")
        return 1
    except KeyboardInterrupt as exc:  # SIGTERM: an interruption, not the script failing
        reason = f"{type(exc).__name__}: {exc}"
        env.failure_file.parent.mkdir(parents=True, exist_ok=True)
        env.failure_file.write_text(reason + "\n")
        finish("failed", reason=reason, failure_kind="interrupted")
        return 143


if __name__ == "__main__":
    sys.exit(main())
