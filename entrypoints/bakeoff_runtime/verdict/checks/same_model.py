"""`same-model`: parameter count, tensors and shapes agree with the baseline's (else it fails);
un-tied weights after a move to XLA show as extra tensors. For paired seeds the first logged
loss should agree within FIRST_LOSS_TOLERANCE: a leg whose first loss is off on every seed is a
warning (another start, so seeds may not pair).
"""
from __future__ import annotations

from typing import Any, TypedDict

from bakeoff_runtime.verdict.checks._summary import _records
from bakeoff_runtime.verdict.checks.registry import CheckKind, Inputs


class Details(TypedDict, total=False):
    """The same-model check's own keys."""
    tolerance: float                   # FIRST_LOSS_TOLERANCE
    models: dict[str, Any]             # per leg, the model its first completed run recorded
    first_losses: dict[str, Any]       # per leg, its first logged losses beside the baseline's


# The first logged loss (step 0, before any update) of a seed on two legs: the same model,
# weights and batch give the same value up to precision; bf16 autocast moves it by well
# under 1% on the built-in LM. 5% relative leaves room for that and catches a different model.
FIRST_LOSS_TOLERANCE = 0.05


def _shape_difference(mine: dict[str, int], base: dict[str, int]) -> str:
    parts = []
    for shape in sorted(set(mine) | set(base)):
        extra = mine.get(shape, 0) - base.get(shape, 0)
        if extra:
            parts.append(f"{abs(extra)} {'more' if extra > 0 else 'fewer'} tensor{'s' if abs(extra) > 1 else ''} "
                         f"of shape {shape}")
    return ", ".join(parts)


def _count(value) -> str:
    """A parameter count as the text says it (a model record without one says so, not a crash)."""
    return f"{value:,}" if isinstance(value, int) else "not recorded"


def _untied(mine: dict[str, int], base: dict[str, int]) -> bool:
    """Whether `mine` is `base` with some tensors repeated: extra tensors only of shapes the baseline has,
    none missing. What a move to XLA that un-ties shared weights leaves; a model of another size has
    shapes of its own."""
    extra = {k: mine.get(k, 0) - base.get(k, 0) for k in set(mine) | set(base)}
    return any(v > 0 for v in extra.values()) and all(v >= 0 and (v == 0 or k in base) for k, v in extra.items())


def _own_settings(cfg: dict) -> str:
    per_leg = cfg.get("per_leg") or {}
    parts = []
    if per_leg.get("hyperparameters"):
        parts.append("hyperparameters " + ", ".join(f"{k}={v}" for k, v in sorted(per_leg["hyperparameters"].items())))
    if per_leg.get("arguments"):
        parts.append("arguments " + " ".join(per_leg["arguments"]))
    return " and ".join(parts)


def same_model_check(base: str, legs_cfg: dict, runs_by_leg: dict[str, list[dict]]) -> dict[str, Any]:
    name = "same-model"
    models = {leg: next(((s.get("model") or None) for s in _records(runs) if s.get("model")), None)
              for leg, runs in runs_by_leg.items()}
    b = models.get(base)
    if b is None:
        return {"name": name, "status": "unchecked", "passed": False,
                "why": f"the baseline {base} recorded no model (no completed run reached an optimizer "
                       "step that bakeoff saw), so the legs cannot be compared"}
    problems, unchecked = [], []
    for leg, m in models.items():
        if leg == base:
            continue
        if m is None:
            unchecked.append(leg)
            continue
        if (m.get("parameters"), m.get("tensors"), m.get("shapes")) != (b.get("parameters"), b.get("tensors"),
                                                                        b.get("shapes")):
            diff = (m.get("parameters") or 0) - (b.get("parameters") or 0)
            what = _shape_difference(m.get("shapes") or {}, b.get("shapes") or {})
            script_mode = any(s.get("mode") == "script" for s in _records(runs_by_leg[leg]))
            fix = ("re-tie them after `model.to(device)` in the script (PyTorch/XLA's .to() copies each shared "
                   "parameter separately), or tie them in a tie_weights() the script calls after the move"
                   if script_mode else "give the model a tie_weights() method, or re-tie after moving it")
            untied = _untied(m.get("shapes") or {}, b.get("shapes") or {})
            own = _own_settings(legs_cfg.get(leg) or {})
            if own:  # a model of another size may be what the spec asks this leg for
                tied = (f" (the spec gives {leg} {own} of its own, which may build another model; if they should "
                        f"not, make them the same on every leg" + (f"; or shared weights were un-tied: {fix})"
                                                                    if untied else ")"))
            else:
                tied = f" (shared weights un-tied: {fix})" if untied else ""
            problems.append(f"{leg} has {abs(diff):,} {'more' if diff >= 0 else 'fewer'} parameters than {base} "
                            f"({_count(m.get('parameters'))} vs {_count(b.get('parameters'))}; "
                            f"{what or 'same shapes'}){tied}")
    first = _first_losses(base, legs_cfg, runs_by_leg)
    notes = []
    for leg, rows in first.items():
        off = [r for r in rows if r["relative"] > FIRST_LOSS_TOLERANCE]
        if rows and len(off) == len(rows):
            worst = max(off, key=lambda r: r["relative"])
            notes.append(f"{leg}'s first logged loss differs from {base}'s on every paired seed (seed "
                            f"{worst['seed']}: {worst['leg']:.4g} vs {worst['baseline']:.4g}, "
                            f"{worst['relative']:.0%} > {FIRST_LOSS_TOLERANCE:.0%}): a different model, "
                            "initialisation or first batch, so the seeds may not pair")
    out: dict[str, Any] = {"name": name, "tolerance": FIRST_LOSS_TOLERANCE, "models": models,
                           "first_losses": first}
    if problems:
        return {**out, "status": "failed", "passed": False,
                "why": "the legs did not train the same model: " + "; ".join(problems + notes)}
    if notes:
        # The same parameters but another start: device-dependent data order or dropout RNG can do
        # that legitimately, so it is shown, not failed (the parity test still decides quality).
        return {**out, "status": "warning", "passed": False, "why": "; ".join(notes)}
    compared = [leg for leg in models if leg != base and leg not in unchecked]
    tensors = f"{b.get('tensors')} tensor{'s' if b.get('tensors') != 1 else ''}"
    why = (f"{', '.join(compared)} trained the model {base} trained ({b.get('parameters'):,} parameters in "
           f"{tensors})" + (f"; first losses within {FIRST_LOSS_TOLERANCE:.0%}" if first else ""))
    if unchecked:
        why += f"; {', '.join(unchecked)} recorded no model"
    if not compared:
        return {**out, "status": "unchecked", "passed": False,
                "why": f"{', '.join(unchecked)} recorded no model, so it cannot be compared with {base}"}
    return {**out, "status": "passed", "passed": True, "why": why}


def _first_losses(base: str, legs_cfg: dict, runs_by_leg: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Per leg, its first logged loss beside the baseline's for each seed both logged one at the
    same global batch (a weak-scaling size trains on a bigger first batch)."""
    def first(leg):
        return {s.get("seed"): s["first_train_loss"] for s in _records(runs_by_leg[leg])
                if isinstance(s.get("first_train_loss"), (int, float))}

    batch = legs_cfg.get(base, {}).get("global_batch_size")
    b = first(base)
    out = {}
    for leg in runs_by_leg:
        if leg == base or legs_cfg.get(leg, {}).get("global_batch_size") != batch:
            continue
        mine = first(leg)
        rows = [{"seed": seed, "leg": mine[seed], "baseline": b[seed],
                 "relative": abs(mine[seed] - b[seed]) / max(abs(b[seed]), 1e-8)}
                for seed in sorted(set(mine) & set(b), key=str)]
        if rows:
            out[leg] = rows
    return out


def run(inputs: Inputs) -> list[dict[str, Any]]:
    return [same_model_check(inputs.base, inputs.legs, inputs.runs_by_leg)]


# One check for the bake-off, not one per leg: its `measured` entry carries the tolerance.
KIND = CheckKind("same-model", run, section="same_model", per_leg=False, brief=("tolerance",), details=Details)
