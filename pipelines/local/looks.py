"""Every decision taken on a bake-off's data is a look at it, and looks are counted.

Deciding a bake-off, seeing `inconclusive`, adding seeds that include the first ones and deciding
again at the full alpha is optional stopping: in `benchmarks/verdict_oc.py` (cell a) it gives
0.08-0.09 false passes and false fails instead of 0.05. So each decision is recorded (a run
directory's `looks.json`; on SageMaker, the pipeline's executions) with the jobs it was taken
on, and a new decision whose jobs overlap an earlier look's without being the same set is
refused, with the honest ways on: fresh seeds (no job already looked at), or `--until-decided`,
whose group-sequential design spends alpha over its looks.

A look's data is its jobs, each named by its step (`Train-LEG-sSEED`) and identified by its key:
the request as run (locally, the job cache key; on SageMaker, the training step's arguments,
what its step cache keys on). So deciding the same jobs again (a lost job re-run, `--force` on
unchanged jobs, a verdict re-decided after a job changed, a rule changed with --rule-change) is
the same look; a changed training setup is new data, not a second look at the old.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bakeoff.pipelines.errors import SpecError, words
from bakeoff.pipelines.names import definition_training_steps
from bakeoff.pipelines.params import FORCE, OUT_DIR
from bakeoff_runtime.contract.documents import Evaluation, Looks
from bakeoff_runtime.report.formatting import seed_span

from .files import write_json_atomically

LOOKS_FILE = "looks.json"
SCHEMA = "bakeoff.looks/2"
FIXED = "fixed"


def design_of(sequential: dict[str, Any] | None) -> dict[str, Any]:
    """The design a decision belongs to: fixed, or one group-sequential design (its cap and spending)."""
    if not sequential:
        return {"kind": FIXED}
    return {"kind": "sequential", "max_seeds": int(sequential["max_seeds"]),
            "spending": str(sequential.get("spending") or "")}


def read(out: Path) -> list[dict[str, Any]]:
    path = out / LOOKS_FILE
    try:
        body = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise SpecError(words(f"the record of the decisions already taken on this directory cannot be read ({exc}), "
                              "so a new one could be a look nobody counted; run into a new ", OUT_DIR),
                        file=str(path)) from None
    looks = body.get("looks") if isinstance(body, dict) else None
    if not isinstance(looks, list) or not all(isinstance(x, dict) and isinstance(x.get("jobs"), dict)
                                              and isinstance(x.get("seeds"), list) for x in looks):
        raise SpecError(words("not the record of looks bakeoff writes; run into a new ", OUT_DIR), file=str(path))
    return looks


def check(out: Path, jobs: dict[str, str], seeds: list[int], sequential: dict[str, Any] | None) -> int:
    """The number of the look this decision is (an earlier one's when its jobs are the same),
    or SpecError when it would be a look at data already looked at that no design counts.
    `jobs`: step name -> job key of every training job the decision reads."""
    return judge(read(out), jobs, seeds, sequential, "this directory", str(out / LOOKS_FILE))


def judge(looks: list[dict[str, Any]], jobs: dict[str, str], seeds: list[int], sequential: dict[str, Any] | None,
          where: str, file: str | None = None) -> int:
    """`check` on a list of earlier looks (a run directory's, or a SageMaker pipeline's executions):
    `where` names their home in the message."""
    design, current = design_of(sequential), set(jobs.items())
    for look in reversed(looks):
        if set(look["jobs"].items()) == current:
            return int(look["look"])
    for look in looks:
        shared = current & set(look["jobs"].items())
        if not shared:
            continue
        if design["kind"] != FIXED and look.get("design") == design:
            continue  # an earlier look of this same group-sequential design: it counts its own looks
        looked = [int(s) for x in looks for s in x["seeds"]]
        top = max([*seeds, *looked])
        fresh = list(range(top + 1, top + 1 + len(seeds)))
        what = f"look {look['look']}, {look.get('design', {}).get('kind', FIXED)} design"
        if look.get("execution_arn"):
            what += f": {look['execution_arn']}"
        raise SpecError(
            f"{where} was decided `{look.get('verdict')}` on seeds {seed_span(sorted(look['seeds']))} ({what}); "
            f"deciding seeds {seed_span(sorted(seeds))}, which reuse {len(shared)} of its jobs, at the full alpha "
            "would be a second look at the same data that no design counts (its false-pass and false-fail rates would "
            "no longer be alpha). Go on honestly with fresh seeds, none of them looked at (e.g. "
            f"`seeds: {fresh}`): after an inconclusive stage 1 of the two-stage design they are its stage 2, "
            "decided with it; after a decided question or an ended design, a fresh start (`--fresh-start REASON`, "
            "recorded in the report); or with `--until-decided` (a design that spends alpha over its looks)",
            file=file)
    return len(looks) + 1


def training_steps(definition: dict[str, Any]) -> tuple[dict[str, str], list[int]]:
    """A SageMaker pipeline definition's training jobs as a look's data: step name -> a digest of
    the step's arguments without its tags (what SageMaker's step cache keys on; tags carry the
    spec hash, which moves with the seed list), and the seeds they run."""
    from bakeoff.pipelines.hashing import digest

    jobs, seeds = {}, set()
    for name, seed, step in definition_training_steps(definition):
        jobs[name] = digest({k: v for k, v in (step.get("Arguments") or {}).items() if k != "Tags"})
        seeds.add(seed)
    return jobs, sorted(seeds)


def require(out: Path, finished: bool) -> None:
    """The record exists from a directory's first run on: written (empty) before any job when no finished
    job is kept, and required when one is. A record deleted from a directory whose jobs finished would let
    a second look at their data through at the full alpha as look 1 (the way parity-rule.json is kept)."""
    path = out / LOOKS_FILE
    if path.exists():
        return
    if finished:
        raise SpecError(words("the record of the decisions taken on this directory's finished jobs is missing, so a "
                              "decision now could be a look nobody counted; decide in a new ", OUT_DIR, ", or re-run "
                              "the jobs here with ", FORCE, " (fresh data, a first look)"), file=str(path))
    write_json_atomically(path, {"schema": SCHEMA, "looks": []}, sort_keys=True)


def record(out: Path, number: int, jobs: dict[str, str], seeds: list[int], sequential: dict[str, Any] | None,
           evaluation: Evaluation) -> None:
    """Add this decision to the record (or update the look it repeats)."""
    looks = [x for x in read(out) if int(x.get("look", 0)) != number]
    parity = evaluation.get("parity")
    decided = {"look": number, "jobs": dict(sorted(jobs.items())), "seeds": sorted(seeds),
               "design": design_of(sequential), "verdict": evaluation.get("verdict"),
               "alpha": parity.get("alpha") if parity else None,
               "decided_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    seq = evaluation.get("sequential") or {}
    if sequential:
        decided["sequential"] = sequential  # the round's design, so that deciding it again reads the same levels
    if seq.get("alpha_spent"):
        decided["alpha_spent"] = seq["alpha_spent"][-1]
    write_json_atomically(out / LOOKS_FILE, {"schema": SCHEMA, "looks": sorted([*looks, decided],
                                                                              key=lambda x: int(x["look"]))},
                          sort_keys=True)


def sequential_of(out: Path, jobs: dict[str, str]) -> dict[str, Any] | None:
    """The group-sequential round a decision on these jobs was taken in, if it was one."""
    same = [x for x in read(out) if x["jobs"] == jobs]
    return same[-1].get("sequential") if same else None


def for_evaluation(out: Path, number: int) -> Looks:
    """What the evaluation states of the looks: this one's number and the ones before it (without
    their job keys, which say nothing to a reader)."""
    earlier = [{k: v for k, v in x.items() if k != "jobs"} for x in read(out) if int(x.get("look", 0)) < number]
    return {"this_look": number, "earlier": earlier}
