"""`seeds:<leg>`: seeds that gave bit-identical results (the metric and the training losses) are
one run counted several times: the script ignores the seed it is given (it seeds itself, or
reads no seed), so the spread the verdict needs is not there. That leaves the verdict undecided.
"""
from __future__ import annotations

import math
from typing import Any, TypedDict

from bakeoff_runtime.verdict.checks._summary import COMPLETED, _object
from bakeoff_runtime.verdict.checks.registry import CheckKind, Inputs


class Details(TypedDict, total=False):
    """A seeds check's own keys."""
    evidence: list[str]                # the TRAINING_EVIDENCE kinds that were bit-identical on every seed
    recommendation: dict[str, Any]


# What a job logs of its training, in the order the seeds check names them: each is continuous (a float
# loss, or a validation curve's values at several steps), so bit-identical values on every seed are not
# chance. The parity metric alone is not among them: a metric that moves in steps (accuracy on 1,000
# examples) ties across seeds by chance, and so does one that is 0 on every run.
TRAINING_EVIDENCE = ("first training loss", "final training loss", "training-loss curve", "validation history")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _training_evidence(run: dict, metric: str) -> dict[str, tuple]:
    """What one completed run logged of its training, by TRAINING_EVIDENCE kind; a kind it did not log is
    absent. The validation history leaves the parity metric out (its values tie by chance like the final one)."""
    s = run["summary"]
    out: dict[str, tuple] = {}
    for kind, key in (("first training loss", "first_train_loss"), ("final training loss", "final_train_loss")):
        if _number(s.get(key)):
            out[kind] = (repr(float(s[key])),)
    curve = _object(run.get("digest")).get("train_curve")
    points = tuple(repr(float(p[1])) for p in curve if isinstance(p, (list, tuple)) and len(p) == 2
                   and _number(p[1])) if isinstance(curve, list) else ()
    if points:
        out["training-loss curve"] = points
    history = s.get("validation_history")
    values = tuple((str(k), repr(float(v))) for rec in (history if isinstance(history, list) else [])
                   if isinstance(rec, dict) for k, v in sorted(rec.items(), key=lambda kv: str(kv[0]))
                   if k not in ("step", metric) and _number(v))
    if values:
        out["validation history"] = values
    return out


def seeds_check(leg: str, metric: str, runs: list[dict]) -> dict[str, Any]:
    """Whether the seeds of `leg` were different runs. Evidence about the harness (does the seed reach the
    script?), never about the legs, so it never fails a verdict: seeds whose parity metric and every logged
    training loss and curve are bit-identical make it inconclusive (one run counted several times, so no
    spread to test); a tie of the parity metric alone proves nothing (a metric that moves in steps ties by
    chance), and without training losses to compare the check is unchecked, saying what would let it check."""
    name = f"seeds:{leg}"
    done = sorted((r for r in runs if r.get("summary") and r.get("status", r["summary"].get("status")) == COMPLETED),
                  key=lambda r: r["seed"])
    if len(done) < 2:
        return {"name": name, "status": "unchecked", "passed": False,
                "why": f"{leg}: fewer than 2 completed seeds, so whether they differ cannot be shown"}
    seeds = ", ".join(str(r["seed"]) for r in done)
    values = {repr((r["summary"].get("metrics") or {}).get(metric)) for r in done}
    if len(values) > 1:
        return {"name": name, "status": "passed", "passed": True,
                "why": f"{leg}: seeds {seeds} gave different {metric}"}
    value = next(iter(values))
    logged = [_training_evidence(r, metric) for r in done]
    common = [k for k in TRAINING_EVIDENCE if all(k in e for e in logged)]
    differ = [k for k in common if len({e[k] for e in logged}) > 1]
    if differ:
        return {"name": name, "status": "passed", "passed": True,
                "why": f"{leg}: seeds {seeds} gave the same {metric} ({value}), a tie a metric that moves in steps "
                       f"gives by chance, but different {' and '.join(differ)}: they are different runs"}
    if not common:
        return {"name": name, "status": "unchecked", "passed": False,
                "why": f"{leg}: seeds {seeds} gave the same {metric} ({value}), which a metric that moves in steps "
                       "(or is the same on every run) does by chance, and not every job logged a training loss to "
                       "tell a chance tie from a script that ignores its seed; log the training loss (script mode: "
                       "a regex in entrypoint.script_mode.metrics named as its loss_metric, `train_loss` by default; "
                       "the Runtime: rt.track_step) to have it checked"}
    fix = ("let the seed reach the script (entrypoint.script_mode.seed) or stop it seeding itself with a constant, "
           "then run again")
    return {"name": name, "status": "inconclusive", "passed": False, "evidence": common,
            "why": f"{leg}: the script seems to ignore its seed: seeds {seeds} gave bit-identical results ({metric} "
                   f"{value} and the same {' and '.join(common)}), so there is one run, not {len(done)}, and no "
                   "spread to test",
            "recommendation": {"seeds": None, "why": f"{leg}'s seeds gave bit-identical training: {fix}; more "
                                                     "seeds of the same script will not help"}}


def run(inputs: Inputs) -> list[dict[str, Any]]:
    return [seeds_check(leg, inputs.metric, inputs.runs_by_leg[leg]) for leg in inputs.legs]


KIND = CheckKind("seeds", run, section="seeds", details=Details)
