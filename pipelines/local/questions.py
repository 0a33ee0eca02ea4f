"""Attempts are counted per question, not per run directory.

"Decide; if inconclusive, decide again on fresh seeds" is a second test at the full alpha that nobody
counted (false passes and false fails near 0.09 at alpha 0.05; three tries 0.15-0.17), and a new
`--out` used to hide the first attempt altogether. So the attempts at a question are recorded where
every run of it sees them, beside the user's runs rather than inside one: `$BAKEOFF_STATE_DIR`, else
`$XDG_STATE_HOME/bakeoff`, else `~/.local/state/bakeoff` (the XDG Base Directory Specification 0.8's place
for "state data that should persist between (application) restarts", $HOME/.local/state when the variable
is unset or empty: specifications.freedesktop.org/basedir-spec/0.8/ar01s03.html).

The question is what is being asked, not the seeds or where the answer lands: the legs (name, instance
type and count, backend, precision), the parity rule (metric, direction, margin, its type, test, alpha,
baseline, the design) and the training setup (the spec without its seeds, name, description, storage
and MLflow settings, with the code bundle's sha256). Deciding the same jobs again (a re-run, a report)
is the same attempt, and so are the same seeds decided in another --out (the same draws: no new evidence).
After a stage 1 of the two-stage design ended inconclusive, a run of fresh seeds is
its stage 2 (verdict/two_stage.py), decided together with stage 1; any other new attempt at a question
already decided (or whose design has ended) is refused unless started over on purpose with
`--fresh-start REASON`, which the report shows with every attempt before it. On SageMaker the
pipeline's executions are the record (api/aws._check_looks).
"""
from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bakeoff.pipelines.errors import SpecError, words
from bakeoff.pipelines.hashing import digest
from bakeoff.pipelines.params import FRESH_START_REASON
from bakeoff_runtime.contract import STATE_DIR_ENV
from bakeoff_runtime.contract.documents import Attempt, Evaluation
from bakeoff_runtime.report.formatting import seed_span
from bakeoff_runtime.verdict.stage_figures import FIXED, TWO_STAGE, stage_record  # numpy-free: see that module

from .files import write_json_atomically

SCHEMA = "bakeoff.question/1"
SEQUENTIAL = "sequential"
# What the training setup is without: what does not change what a job computes, and the seeds.
_NOT_SETUP = ("seeds", "name", "description", "storage", "mlflow", "parity")


def state_dir() -> Path:
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "bakeoff"


@dataclass(frozen=True)
class Question:
    key: str
    about: dict[str, Any]  # what it asks, for the record and the report

    @classmethod
    def of(cls, spec: Any, code_sha256: str, design: str, rule: dict[str, Any] | None = None) -> Question:
        """`rule`: the run's parity rule (the spec's with the run's parameters); the spec's by default."""
        rule = rule or spec.parity_rule()
        legs = [{"name": leg.name, "instance_type": leg.instance_type, "instance_count": leg.instance_count,
                 "backend": leg.backend, "precision": leg.precision} for leg in spec.legs]
        setup = {k: v for k, v in spec.canonical().items() if k not in _NOT_SETUP}
        about = {"bakeoff": spec.name, "legs": legs, "rule": rule, "design": design,
                 "setup": digest({"spec": setup, "code_sha256": code_sha256})}
        return cls(digest({k: v for k, v in about.items() if k != "bakeoff"}, 32), about)


def _path(question: Question) -> Path:
    return state_dir() / "questions" / f"{question.key}.json"


@contextmanager
def _held(question: Question) -> Iterator[list[dict[str, Any]]]:
    """The question's attempts, under an exclusive lock (two runs of one question decide one at a time);
    written back when the block ends without an error."""
    path = _path(question)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        attempts = _read(path)
        before = json.dumps(attempts, sort_keys=True, default=str)
        yield attempts
        if json.dumps(attempts, sort_keys=True, default=str) != before:
            write_json_atomically(path, {"schema": SCHEMA, "question": question.about, "attempts": attempts},
                                  sort_keys=True, default=str)


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        body = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise SpecError(f"the record of this question's attempts cannot be read ({exc}), so this decision could be "
                        "an attempt nobody counts; move it aside only if you know why it broke",
                        file=str(path)) from None
    attempts = body.get("attempts") if isinstance(body, dict) else None
    if not isinstance(attempts, list) or not all(isinstance(a, dict) and isinstance(a.get("jobs"), dict)
                                                 for a in attempts):
        raise SpecError("not the record of attempts bakeoff writes", file=str(path))
    return attempts


def _summary(a: dict[str, Any]) -> dict[str, Any]:
    return {k: a.get(k) for k in ("number", "stage", "design", "out", "seeds", "verdict", "decided_at",
                                  "fresh_start")}


def _where(a: dict[str, Any]) -> str:
    return (f"attempt {a['number']} (stage {a.get('stage', 1)} of its {a.get('design')} design), seeds "
            f"{seed_span(sorted(a.get('seeds') or []))} in {a.get('out')}")


def begin(question: Question, out: Path, jobs: dict[str, str], seeds: list[int], design: str,
          fresh_start: str | None = None) -> Attempt:
    """This decision's attempt, before any job runs: the same attempt when it decides the seeds an
    attempt already decided (a re-run, `bakeoff report`, the same seeds in another --out: the same draws,
    no new evidence) or is a later round of the same sequential run; stage 2 after an inconclusive stage 1;
    a new attempt for a new question or a fresh start; SpecError for an attempt nobody would count."""
    where = str(Path(out).resolve())
    now = set(seeds)
    with _held(question) as attempts:
        for a in attempts:
            same_run = a.get("out") == where and (a.get("verdict") is None or (
                design == SEQUENTIAL and a.get("design") == SEQUENTIAL and set(a.get("seeds") or []) <= now))
            if (set(a.get("seeds") or []) == now and a.get("design") == design) or same_run:
                if same_run:  # the same run going on (a sequential round, a run interrupted before its decision)
                    a.update(jobs=dict(jobs), seeds=sorted(seeds))
                return _attempt(question, a, attempts)
        decided = [a for a in attempts if a.get("verdict")]
        number = max([int(a["number"]) for a in attempts], default=0) + 1
        fresh = {"number": number, "stage": 1, "design": design, "out": where, "seeds": sorted(seeds),
                 "jobs": dict(jobs), "verdict": None, "decided_at": None, "fresh_start": fresh_start,
                 "started_at": _now()}
        last = decided[-1] if decided else None
        if fresh_start or last is None:
            attempts.append(fresh)
            return _attempt(question, fresh, attempts)
        shared = now & {int(x) for a in decided for x in a.get("seeds") or []}
        if (last["verdict"] == "inconclusive" and last.get("design") == TWO_STAGE and last.get("stage", 1) == 1
                and design == TWO_STAGE and not shared):
            fresh.update(stage=2, continues=last["number"])
            attempts.append(fresh)
            return _attempt(question, fresh, attempts)
        top = max(s for a in attempts for s in (a.get("seeds") or [0]))
        hint = f"seeds: [{top + 1}..{top + len(seeds)}]"
        if last["verdict"] == "inconclusive" and last.get("design") == TWO_STAGE and last.get("stage", 1) == 1:
            raise SpecError(
                f"this question's stage 1 ({_where(last)}) was inconclusive; its stage 2 needs fresh seeds, none of "
                f"them decided before, but these reuse {len(shared)} of its seeds: run fresh seeds (e.g. `{hint}`), or "
                "start the question over with `" + words(FRESH_START_REASON) + "` (recorded in the report)",
                file=str(_path(question)))
        ended = {"pass": "was decided `pass`", "fail": "was decided `fail`"}.get(
            last["verdict"], "ended `inconclusive` with its design spent" + (
                " (both stages run)" if last.get("design") == TWO_STAGE else
                " (a fixed design has no second stage)" if last.get("design") == FIXED else ""))
        raise SpecError(
            f"this question {ended} ({_where(last)}, {last.get('decided_at')}); deciding it again on other seeds is "
            f"an attempt nobody counts (false passes and false fails then exceed alpha): start it over on purpose "
            "with `" + words(FRESH_START_REASON) + f"` (recorded in the report beside attempt {last['number']}), or "
            "change the question (its legs, rule or training setup)", file=str(_path(question)))


def _attempt(question: Question, a: dict[str, Any], attempts: list[dict[str, Any]]) -> Attempt:
    earlier = [_summary(x) for x in attempts if int(x["number"]) < int(a["number"])]
    out: Attempt = {"question": question.key, "number": int(a["number"]), "stage": int(a.get("stage", 1)),
                    "design": str(a.get("design")), "fresh_start": a.get("fresh_start"), "earlier": earlier}
    if out["stage"] == 2:
        first = next((x for x in attempts if x["number"] == a.get("continues")), None)
        if first is None or not first.get("figures"):
            raise SpecError(words("this attempt continues a stage 1 whose figures were not recorded; start the "
                                  "question over with `", FRESH_START_REASON, "`"), file=str(_path(question)))
        out["stage1"] = first["figures"]
    return out


def record(question: Question, attempt: Attempt, evaluation: Evaluation) -> None:
    """The attempt's decision, and at stage 1 what its stage 2 would need (each leg's difference, SE and df,
    each leg's breakage p)."""
    legs: dict[str, Any] = {}
    breakage: dict[str, float] = {}
    for check in evaluation.get("checks") or []:
        name = str(check.get("name", ""))
        if name.startswith("parity:") and (figures := stage_record(dict(check))):
            legs[name.split(":", 1)[1].split("~", 1)[0]] = figures
        elif name.startswith("stability:") and isinstance(check.get("breakage"), dict) \
                and check["breakage"].get("p_value") is not None:
            breakage[name.split(":", 1)[1]] = float(check["breakage"]["p_value"])
    with _held(question) as attempts:
        for a in attempts:
            if a["number"] == attempt["number"]:
                a.update(verdict=evaluation.get("verdict"), decided_at=_now())
                if attempt["stage"] == 1:
                    a["figures"] = {"legs": legs, "breakage": breakage}


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
