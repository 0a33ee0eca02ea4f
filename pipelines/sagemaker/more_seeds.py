"""`--until-decided` on SageMaker: each round is the same pipeline upserted with more seeds
and started again, so that the step cache serves the seeds already run.

That works only if a finished seed's training step keeps its name and every attribute the
step cache keys on when the seed list grows. For a training step those are
AlgorithmSpecification, CheckpointConfig, DebugHookConfig, DebugRuleConfigurations,
Environment, HyperParameters and InputDataConfig (AWS docs, "Default cache key attributes
by pipeline step type": https://docs.aws.amazon.com/sagemaker/latest/dg/pipelines-default-keys.html);
Tags are not among them, so the spec-hash tag may change. `reuse_problems` checks it on
two definitions; the round's design (its looks) travels in the Evaluate step's config
asset only, never in a training step.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bakeoff.pipelines.advice.rounds import check_design, default_cap, grow, next_size, with_seeds
from bakeoff.pipelines.errors import RunError
from bakeoff.pipelines.names import definition_training_steps, parse_step_name
from bakeoff.pipelines.spec.model import BakeoffSpec
from bakeoff_runtime.contract.documents import Evaluation

from .compiler import CompiledPipeline, compile_pipeline

# The CreateTrainingJob attributes SageMaker's step cache keys a training step on (source above).
TRAINING_CACHE_KEYS = ("AlgorithmSpecification", "CheckpointConfig", "DebugHookConfig", "DebugRuleConfigurations",
                       "Environment", "HyperParameters", "InputDataConfig")


def reuse_problems(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Why a training step of `before` would not be served from the cache in `after` (empty: all would)."""
    later = {s["Name"]: s for s in after["Steps"]}
    problems = []
    for step in before["Steps"]:
        if step["Type"] != "Training":  # every seed's step, and each leg's Precompile and the Preflight
            continue
        other = later.get(step["Name"])
        if other is None:
            problems.append(f"{step['Name']}: gone from the grown pipeline")
            continue
        if not (other.get("CacheConfig") or {}).get("Enabled"):
            problems.append(f"{step['Name']}: step caching is off")
        for key in TRAINING_CACHE_KEYS:
            if step["Arguments"].get(key) != other["Arguments"].get(key):
                problems.append(f"{step['Name']}: {key} changed")
    return problems


def round_pipeline(spec: BakeoffSpec, seeds: list[int], looks: list[int], max_seeds: int, spending: str,
                   **compile_kwargs: Any) -> CompiledPipeline:
    """The pipeline of one round: the spec with these seeds, and the design's looks so far."""
    return compile_pipeline(with_seeds(spec, seeds), design={"looks": list(looks), "max_seeds": max_seeds,
                                                             "spending": spending}, **compile_kwargs)


def run_until_decided(spec: BakeoffSpec, *, run_round: Callable[[CompiledPipeline], Evaluation],
                      max_seeds: int | None = None, spending: str | None = None,
                      **compile_kwargs: Any) -> tuple[Evaluation, list[dict[str, Any]]]:
    """Rounds until pass, fail or the cap. `run_round(compiled)` upserts the pipeline, starts an
    execution, waits for it and returns its evaluation.json (ops.py's deploy/start/wait do that).
    Returns the last evaluation and one record per round."""
    from bakeoff_runtime.verdict import group_sequential as seq

    spending = spending or seq.POCOCK
    first = len(spec.seed_list)
    max_seeds = max_seeds or default_cap(first)
    check_design(first, max_seeds)
    seeds, looks, rounds = list(spec.seed_list), [], []
    previous: dict[str, Any] | None = None
    while True:
        looks.append(len(seeds))
        compiled = round_pipeline(spec, seeds, looks, max_seeds, spending, **compile_kwargs)
        if previous is not None:
            problems = reuse_problems(previous, compiled.definition)
            if problems:  # a bug in the compiler, not the user's: never pay twice silently
                raise RuntimeError("growing the seeds would re-run finished steps: " + "; ".join(problems[:3]))
        evaluation = run_round(compiled)
        rounds.append({"round": len(looks), "seeds": list(seeds), "verdict": evaluation.get("verdict")})
        if evaluation.get("verdict") in ("pass", "fail") or len(seeds) >= max_seeds:
            return evaluation, rounds
        previous = compiled.definition
        seeds = grow(seeds, next_size(len(seeds), first, max_seeds))


# How often a round's execution is retried when training steps failed. A job fails its step only
# for an infrastructure failure (a script failure exits 0 and Evaluate names it:
# entrypoints/bakeoff_runtime/training/failure_cause.py), so a retry runs only those seeds again.
ROUND_RETRIES = 2


def seeds_of(definition: dict[str, Any]) -> list[int]:
    """The seeds a pipeline definition's training steps run."""
    return sorted({seed for _, seed, _ in definition_training_steps(definition)})


def ops_round(ops: Any, parameters: dict[str, str] | None = None,
              progress: Callable[[str], None] = lambda m: None, retries: int = ROUND_RETRIES, *,
              poll_s: float = 30.0, timeout_s: float = 7 * 86400,
              started: Callable[[str], None] = lambda arn: None) -> Callable[[CompiledPipeline], Evaluation]:
    """A `run_round` from SageMakerOps (or anything with its deploy/start/wait/status/retry/
    fetch_evaluation): upsert the grown pipeline, start it as round-N-seeds-A-B, wait for it (retrying an
    execution whose training steps failed), and read its evaluation.json costed by each job's billed time.
    `started(arn)` hears of each round's execution."""
    from .billable import apply_billable_time
    from .execution_labels import round_label

    rounds = 0

    def run_round(compiled: CompiledPipeline) -> Evaluation:
        nonlocal rounds
        rounds += 1
        name, description = round_label(rounds, seeds_of(compiled.definition))
        ops.deploy(compiled, progress=progress)
        arn = ops.start(compiled.name, parameters, display_name=name, description=description)
        started(arn)
        progress(f"round {rounds} started ({name}): {arn}")
        ended = ops.wait(arn, poll_s=poll_s, timeout_s=timeout_s)
        for attempt in range(1, retries + 1):
            if (ended or {}).get("status") != "Failed":
                break
            failed = [s for s in ops.status(arn)["steps"] if s["status"] == "Failed"]
            if not failed or any(parse_step_name(s["name"]) is None for s in failed):
                break  # not a lost seed: nothing a retry would change
            progress(f"round {rounds} execution failed in {', '.join(s['name'] for s in failed)} "
                     f"({failed[0].get('failure_reason') or 'no reason given'}); retry {attempt} of {retries} "
                     "runs only those again")
            arn = ops.retry(arn, attempt)
            ended = ops.wait(arn, poll_s=poll_s, timeout_s=timeout_s)
        if (ended or {}).get("status") not in (None, "Succeeded"):
            raise RunError(f"round {rounds} execution {arn} ended {ended['status']}: "
                           f"{ended.get('failure_reason') or ''} (`bakeoff status` shows its steps; "
                           "`bakeoff retry` runs its failed steps again)")
        evaluation, billable = ops.fetch_evaluation(arn)
        return apply_billable_time(evaluation, billable) if billable else evaluation
    return run_round
