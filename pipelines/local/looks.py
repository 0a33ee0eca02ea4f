"""Every decision taken on a run directory is a look at its data, and looks are counted.

Deciding a bake-off, seeing `inconclusive`, adding seeds that include the first ones and deciding
again at the full alpha is optional stopping: in the project's simulation it gives 0.08-0.12
false passes and false fails instead of alpha. So each decision is recorded in `looks.json`
beside the parity rule (the seeds it was taken on, its design, its verdict), and a new decision
on seeds that overlap an earlier look's but are not the same set is refused, with the two
honest ways on: fresh seeds (none of those already looked at), or `--until-decided`, whose
group-sequential design spends alpha over its looks. Deciding the same seeds again (a lost job
re-run, a verdict re-decided after its jobs changed, a rule changed with --rule-change) is the
same look, not a new one.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import SpecError
from .files import write_json_atomically

LOOKS_FILE = "looks.json"
SCHEMA = "bakeoff.looks/1"
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
        raise SpecError(f"the record of the decisions already taken on this directory cannot be read ({exc}), so a "
                        "new one could be a look nobody counted; run into a new --out", file=str(path)) from None
    looks = body.get("looks") if isinstance(body, dict) else None
    if not isinstance(looks, list) or not all(isinstance(x, dict) and isinstance(x.get("seeds"), list)
                                              for x in looks):
        raise SpecError("not the record of looks bakeoff writes; run into a new --out", file=str(path))
    return looks


def _span(seeds: list[int]) -> str:
    return f"{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2 else \
        ", ".join(map(str, seeds))


def check(out: Path, seeds: list[int], sequential: dict[str, Any] | None) -> int:
    """The number of the look this decision is (an earlier one's when its seeds are the same),
    or SpecError when it would be a look at data already looked at that no design counts."""
    return judge(read(out), seeds, sequential, "this directory", str(out / LOOKS_FILE))


def judge(looks: list[dict[str, Any]], seeds: list[int], sequential: dict[str, Any] | None, where: str,
          file: str | None = None) -> int:
    """`check` on a list of earlier looks (a run directory's, or a SageMaker pipeline's executions):
    `where` names their home in the message."""
    design, current = design_of(sequential), sorted(seeds)
    for look in reversed(looks):
        if sorted(look["seeds"]) == current:
            return int(look["look"])
    for look in looks:
        shared = sorted(set(look["seeds"]) & set(current))
        if not shared:
            continue
        if design["kind"] != FIXED and look.get("design") == design:
            continue  # an earlier look of this same group-sequential design: it counts its own looks
        top = max(max(current), *(max(x["seeds"]) for x in looks if x["seeds"]))
        fresh = list(range(top + 1, top + 1 + len(current)))
        what = f"look {look['look']}, {look.get('design', {}).get('kind', FIXED)} design"
        if look.get("execution_arn"):
            what += f": {look['execution_arn']}"
        raise SpecError(
            f"{where} was decided `{look.get('verdict')}` on seeds {_span(sorted(look['seeds']))} ({what}); "
            f"deciding seeds {_span(current)}, which include {len(shared)} of those, at the full alpha would be a "
            "second look at the same data that no design counts (its false-pass and false-fail rates would no "
            "longer be alpha). Go on honestly with fresh seeds, none of them looked at (e.g. "
            f"`seeds: {fresh}`), on their own or with `--until-decided` (a design that spends alpha over its "
            "looks)", file=file)
    return len(looks) + 1


def record(out: Path, number: int, seeds: list[int], sequential: dict[str, Any] | None,
           evaluation: dict[str, Any]) -> None:
    """Add this decision to the record (or update the look it repeats)."""
    looks = [x for x in read(out) if int(x.get("look", 0)) != number]
    decided = {"look": number, "seeds": sorted(seeds), "design": design_of(sequential),
               "verdict": evaluation.get("verdict"), "alpha": (evaluation.get("parity") or {}).get("alpha"),
               "decided_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    seq = evaluation.get("sequential") or {}
    if sequential:
        decided["sequential"] = sequential  # the round's design, so that deciding it again reads the same levels
    if seq.get("alpha_spent"):
        decided["alpha_spent"] = seq["alpha_spent"][-1]
    write_json_atomically(out / LOOKS_FILE, {"schema": SCHEMA, "looks": sorted([*looks, decided],
                                                                              key=lambda x: int(x["look"]))},
                          sort_keys=True)


def sequential_of(out: Path, seeds: list[int]) -> dict[str, Any] | None:
    """The group-sequential round a decision on `seeds` was taken in, if it was one."""
    same = [x for x in read(out) if sorted(x["seeds"]) == sorted(seeds)]
    return same[-1].get("sequential") if same else None


def for_evaluation(out: Path, number: int) -> dict[str, Any]:
    """What the evaluation states of the looks: this one's number and the ones before it."""
    return {"this_look": number, "earlier": [x for x in read(out) if int(x.get("look", 0)) < number]}
