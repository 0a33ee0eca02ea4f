"""The Evaluate step on this machine: the compiled request, with this run directory's own record added
to its config (a round's design, the looks before, the rule fixed before the data), which reaches a
SageMaker execution another way. Also what `bakeoff report DIR` decides again with (`decide_locally`)."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bakeoff_runtime.contract.documents import Evaluation, ParityRule, evaluation_config_from, read_evaluation
from estimators.prices import price_for
from pipelines.advice.price_list import cached
from pipelines.errors import RunError
from pipelines.names import EVALUATE_STEP
from pipelines.steps import evaluate as compiled

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
    refreshed = cached(x.spec.storage.region)
    legs = x.plan.spec.legs if x.plan else x.spec.legs  # with a sweep's derived legs
    prices = {leg.name: price_for(leg.instance_type, leg.price_per_hour, refreshed) for leg in legs}
    config_uri = next(uri for name, (uri, _) in job.inputs.items() if name == "config")
    config_path = store.path(config_uri)
    config_file = config_path if config_path.is_file() else next(config_path.rglob("*.json"))
    body = config_file.read_bytes()
    _check_address(config_uri, body, config_file)
    config = evaluation_config_from(json.loads(body), str(config_file))
    config = subs.evaluation_config(config, prices)  # the printed substitution: emulated figures, prices
    # The Preflight step's findings and the collective checks reach the step as its inputs, as
    # on SageMaker (pipelines/steps/evaluate.records). What is added below is this run directory's
    # own record, which reaches a SageMaker execution another way: a round's design (the round's
    # config asset: sagemaker/more_seeds.with_design), the looks taken before (judged before the
    # execution starts: api/aws._check_looks) and the rule fixed before the data (the ParityMargin
    # parameter, in pipelines/steps/evaluate.py). Here that rule is the run's (x.rule: the spec's with
    # the run's parameters, recorded in parity-rule.json before any job ran), the one the doomed-leg
    # watch judged by: the step's `--margin` (the same parameter) then finds nothing to change.
    config["parity"] = cast("ParityRule", {**config["parity"], **x.rule.as_dict()})
    if x.sequential:
        config["sequential"] = x.sequential
    attempt = x.attempt
    if attempt is not None:  # which attempt at the question, and stage 1's figures at stage 2
        config["attempt"] = attempt
    at_once = _jobs_at_once(x, installed_code)
    if at_once > 1:  # the speed figures shared this machine's cores: the report says so
        config["jobs_at_once"] = at_once
    config["looks"] = looks.for_evaluation(x.out, x.look)
    if rule_original and "unrecorded" in rule_original:
        config["rule_unrecorded"] = rule_original["unrecorded"]
        config["rule_change_reason"] = x.rule_change
    elif rule_original is not None:
        config["rule_original"] = rule_original
        config["rule_change_reason"] = x.rule_change
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
    the README's "What protects a verdict".)"""
    address = uri.rstrip("/").split("/")[-2] if uri.endswith(".json") else uri.rstrip("/").split("/")[-1]
    if hashlib.sha256(body).hexdigest() != address:
        raise RunError(f"the Evaluate step's config in the run's store ({path}) does not match its address: it was "
                       "changed after it was compiled (a process wrote to the store during the run); no verdict "
                       "was written")


def _jobs_at_once(x: Engine, deciding_again: bool) -> int:
    """Training jobs at once when the jobs ran: this run's `--jobs`, or, deciding a run
    directory again, what its plan.json recorded (1 where it recorded none)."""
    if not deciding_again:
        return x.jobs
    try:
        return int(recorded_local(x.out).get("jobs_at_once") or 1)
    except (ValueError, TypeError):
        return 1
