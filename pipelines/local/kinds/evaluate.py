"""The Evaluate step on this machine: the compiled request, with this run directory's own record added
to its config (a round's design, the looks before, the rule fixed before the data), which reaches a
SageMaker execution another way. Also what `bakeoff report DIR` decides again with (`decide_locally`)."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bakeoff.estimators.prices import price_for
from bakeoff.pipelines.advice.price_list import cached
from bakeoff.pipelines.errors import RunError
from bakeoff.pipelines.names import EVALUATE_STEP
from bakeoff.pipelines.plan.evaluation_config import EMULATED_COST_BASIS, RunRecord, evaluation_config
from bakeoff.pipelines.steps import evaluate as compiled
from bakeoff_runtime.contract.documents import Evaluation, read_evaluation

from .. import looks
from ..definition import Context, resolve
from ..files import recorded_local, write_json_atomically
from ..verdict_inputs import input_fingerprint

if TYPE_CHECKING:
    from ..run_state import Engine, LocalRun
    from ..store import LocalS3
    from ..substitutions import Substitutions

KIND = compiled.KIND


def run_local(run: LocalRun, node: str) -> None:
    run.evaluation, run.evaluation_path = decide_locally(run.executor, run.steps, run.ctx, run.subs, run.store,
                                                         run.rule_original)


def decide_locally(x: Engine, steps: dict[str, Any], ctx: Context, subs: Substitutions, store: LocalS3,
                   rule_original: dict | None, *, installed_code: bool = False) -> tuple[Evaluation, Path]:
    """`installed_code`: run this bakeoff's evaluate.py, not the one in the run's code bundle
    (deciding a run directory again: its bundle is data, never run)."""
    eval_dir = x.out / "evaluation"
    eval_dir.mkdir(parents=True, exist_ok=True)
    # A verdict of an earlier run must never outlive a failed evaluation of this one.
    for stale in ("evaluation.json", "report.html", "report.md", "gate.json", "inputs.json"):
        (eval_dir / stale).unlink(missing_ok=True)
    fingerprint = input_fingerprint(x.out)
    step = steps[EVALUATE_STEP]
    request = resolve(step["Arguments"], ctx)
    (eval_dir / "request.json").write_text(json.dumps(request, indent=2, sort_keys=True) + "\n")
    steps_file = eval_dir / "execution-steps.json"
    steps_file.write_text(json.dumps({"PipelineExecutionSteps": [
        {"StepName": name, "Metadata": {"TrainingJob": {"Arn": f"arn:aws:sagemaker:local:000000000000:"
                                                               f"training-job/{job}"}}}
        for name, job in sorted(ctx.training_job_names.items())]}, indent=2))
    job = subs.processing(request, eval_dir, steps_file)
    if installed_code:
        job = subs.installed_evaluation(job)
    if x.plan is None:
        raise RuntimeError("the Evaluate step runs after the run's plan is built")
    config_uri = next(uri for name, (uri, _) in job.inputs.items() if name == "config")
    config_path = store.path(config_uri)
    config_file = config_path if config_path.is_file() else next(config_path.rglob("*.json"))
    _check_address(config_uri, body=config_file.read_bytes(), path=config_file)
    # What decides is built from the plan and this run's record (pipelines/plan/evaluation_config.py), the
    # builder the compiled asset came from: the asset in the store is checked above (a job that rewrote it is
    # named) and replaced by this one, which adds what only this machine knows (emulation, local prices
    # and MLflow store) and what this run directory records (a round's design, the looks taken before, the
    # rule fixed before the data: on SageMaker the round's asset, `api/aws._check_looks` and the ParityMargin
    # parameter carry these). The rule is the run's (x.rule: the spec's with the run's parameters, recorded in
    # parity-rule.json before any job ran), the one the doomed-leg watch judged by: the step's `--margin` (the
    # same parameter) then finds nothing to change.
    config = evaluation_config(x.plan, _record(x, subs, rule_original, installed_code))
    x.verify_outputs()  # what the jobs left is what they left, not what one of them rewrote later
    x.progress.note("evaluation: deciding parity (the Evaluate step)")
    outcome = x.processor(job, eval_dir, store, x.process,
                             config_override=cast("dict[str, Any]", config))  # written as JSON
    out_dir = job.outputs["evaluation"][0]
    produced = out_dir / step["PropertyFiles"][0]["FilePath"]
    if outcome.exit_code != 0 or not produced.exists():
        log = (eval_dir / "stdout.log").read_text(errors="replace").strip().splitlines() or ["no output"]
        raise RunError(f"the evaluation step failed: {log[-1][:300]} (see {eval_dir / 'stdout.log'}); no verdict "
                       "was written")
    for item in out_dir.iterdir():  # beside the run, where people look for them (whole, or not at all)
        if item.is_file():
            tmp = eval_dir / f".{item.name}.tmp"
            shutil.copy2(item, tmp)
            tmp.replace(eval_dir / item.name)
    write_json_atomically(eval_dir / "inputs.json", {"fingerprint": fingerprint})
    for pf in step.get("PropertyFiles", []):
        local = job.outputs[pf["OutputName"]][0]
        ctx.property_files[(EVALUATE_STEP, pf["PropertyFileName"])] = local / pf["FilePath"]
    path = eval_dir / "evaluation.json"
    return read_evaluation(path), path


def _check_address(uri: str, body: bytes, path: Path) -> None:
    """The config asset is content-addressed (`.../eval-config/<sha256>/config.json`, compile_step): a body
    that does not hash to its address was written after it was compiled. A training job runs as the same
    user as `bakeoff run` and can write the run's local store, so what decides the verdict is checked
    against its address, not trusted. (On SageMaker the training jobs' role must not write this prefix:
    docs/concepts/parity-rule.md, "What protects a verdict".)"""
    address = uri.rstrip("/").split("/")[-2] if uri.endswith(".json") else uri.rstrip("/").split("/")[-1]
    if hashlib.sha256(body).hexdigest() != address:
        raise RunError(f"the Evaluate step's config in the run's store ({path}) does not match its address: it was "
                       "changed after it was compiled (a process wrote to the store during the run); no verdict "
                       "was written")


def _record(x: Engine, subs: Substitutions, rule_original: dict | None, deciding_again: bool) -> RunRecord:
    """What this machine and this run directory know of the run that its plan does not."""
    refreshed = cached(x.spec.storage.region)
    legs = x.plan.spec.legs if x.plan else x.spec.legs  # with a sweep's derived legs
    change: dict[str, Any] | None = None
    if rule_original and "unrecorded" in rule_original:
        change = {"rule_unrecorded": rule_original["unrecorded"], "rule_change_reason": x.rule_change}
    elif rule_original is not None:
        change = {"rule_original": rule_original, "rule_change_reason": x.rule_change}
    return RunRecord(cost_basis=EMULATED_COST_BASIS, mlflow=subs.mlflow_config(), emulated_on=subs.emulated_on(),
                     prices={leg.name: price_for(leg.instance_type, leg.price_per_hour, refreshed) for leg in legs},
                     rule=x.rule.as_dict(), rule_change=change, design=x.sequential or None, attempt=x.attempt,
                     jobs_at_once=_jobs_at_once(x, deciding_again), looks=looks.for_evaluation(x.out, x.look))


def _jobs_at_once(x: Engine, deciding_again: bool) -> int:
    """Training jobs at once when the jobs ran: this run's `--jobs`, or, deciding a run
    directory again, what its plan.json recorded (1 where it recorded none)."""
    if not deciding_again:
        return x.jobs
    try:
        return int(recorded_local(x.out).get("jobs_at_once") or 1)
    except (ValueError, TypeError):
        return 1
