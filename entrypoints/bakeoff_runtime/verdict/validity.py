"""What the verdict measured: checks that a parity verdict is about the target at all.

A pass is worth something only if every leg ran on its own backend, trained the same model,
and was not slowed by what the target does badly. Three checks, from what each job's
summary.json records (the Runtime writes `model`, `first_train_loss` and `compile`):

* `backend:<leg>`: a neuron leg compiled or ran XLA graphs and trained its parameters on the
  XLA device; a cuda leg on a GPU allocated CUDA memory with its parameters there. A leg that
  trained elsewhere fails: the verdict would be about the wrong hardware.
* `same-model`: parameter count, tensors and shapes (from the optimizer's parameters) agree
  with the baseline's (else it fails); un-tied weights after a move to XLA show as extra
  tensors. For paired seeds the first logged loss should agree within FIRST_LOSS_TOLERANCE: a
  leg whose first loss is off on every seed is a warning (another start, so seeds may not pair).
* `seeds:<leg>`: seeds that gave bit-identical results (the metric and the training losses) are
  one run counted several times: the script ignores the seed it is given (it seeds itself, or
  reads no seed), so the spread the verdict needs is not there. That fails.
* `blockers:<leg>`: CPU fallbacks, recompilations after warm-up and the Runtime's warnings.
  They do not decide quality, so they never fail the verdict, but the leg's speed and cost
  are marked as not representative of the target.

Each has the statuses passed / failed / warning / unchecked; `unchecked` says why it could not
be made (an emulated GPU leg has no GPU to show; a job that wrote no record), never in silence.
Standard library only: it runs in the Evaluate step.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bakeoff_runtime.contract.backend_table import BACKENDS

# The first logged loss (step 0, before any update) of a seed on two legs: the same model,
# weights and batch give the same value up to precision; bf16 autocast moves it by well
# under 1% on the built-in LM. 5% relative leaves room for that and catches a different model.
FIRST_LOSS_TOLERANCE = 0.05
COMPLETED = "completed"
# Graphs that may first compile after warm-up in a healthy run: the last step's (always synced)
# and a logging step's. More than this is a shape or value that changes from step to step.
RECOMPILE_ALLOWANCE = 2
PREFLIGHT_HINT = "run `bakeoff preflight SPEC` to see where and how to fix them"
# Script mode has no preflight probes: PyTorch/XLA's own debugging output (PT_XLA_DEBUG_LEVEL, read by
# torch-xla 2.9's _XLAC; docs.pytorch.org/xla "Troubleshoot") says where each compile and transfer comes from.
SCRIPT_HINT = ("give the leg `environment: {PT_XLA_DEBUG_LEVEL: \"1\"}` to have PyTorch/XLA print where each "
               "compilation and transfer comes from")

# The kinds of check this module makes: the prefix of each check's name ("backend:trn1").
KINDS = ("backend", "same-model", "seeds", "blockers")


def is_validity_check(check: Mapping[str, Any]) -> bool:
    return check["name"].split(":", 1)[0] in KINDS


def _records(runs: list[dict]) -> list[dict]:
    return [r["summary"] for r in runs if r.get("summary") and r["summary"].get("status") in (COMPLETED, "diverged")]


def _emulated_cpu(cfg: dict) -> bool:
    """A leg that stands for a GPU but ran on this machine's CPU (the local engine's emulation)."""
    where = (cfg.get("emulated_on") or "").lower()
    return bool(where) and "cuda" not in where and "gpu" not in where and "xla" not in where


def backend_check(leg: str, cfg: dict, runs: list[dict]) -> dict[str, Any]:
    name = f"backend:{leg}"
    backend = cfg.get("backend") or "cpu"
    row = BACKENDS.get(backend)
    device = row.torch_device if row else None  # the device type its parameters must be on
    want = device or backend
    records = _records(runs)
    if not records:
        return {"name": name, "status": "unchecked", "passed": False,
                "why": f"{leg}: no run completed, so where it trained cannot be shown"}
    if row is not None and row.accelerator == "gpu" and _emulated_cpu(cfg):
        return {"name": name, "status": "unchecked", "passed": False,
                "why": f"{leg} stands for a GPU but ran on {cfg.get('emulated_on')} here: CUDA use can only be "
                       "shown on a GPU"}
    problems, seen = [], []
    for s in records:
        model = s.get("model") or {}
        devices = model.get("devices") or {}
        where = ", ".join(f"{n} on {d}" for d, n in sorted(devices.items())) or "not recorded"
        seen.append(where)
        if not devices:
            continue
        if set(devices) != {want}:
            off = sum(n for d, n in devices.items() if d != want)
            problems.append(f"seed {s.get('seed')}: {off} of {sum(devices.values())} parameter tensors trained on "
                            f"{', '.join(sorted(d for d in devices if d != want))}, not {want}")
        compile_ = s.get("compile") or {}
        graphs = (compile_.get("compiled_graphs") or 0) + (compile_.get("cached_compiles") or 0)
        if device == "xla" and not graphs:
            problems.append(f"seed {s.get('seed')}: no XLA graph was compiled or run")
        if device == "cuda" and not s.get("peak_device_memory_bytes"):
            problems.append(f"seed {s.get('seed')}: no CUDA memory was allocated")
    if not any((s.get("model") or {}).get("devices") for s in records):
        return {"name": name, "status": "unchecked", "passed": False,
                "why": f"{leg}: its jobs did not record where their parameters lived (no optimizer step that "
                       "bakeoff saw)"}
    if problems:
        script_mode = any(s.get("mode") == "script" for s in records)
        # How to put the parameters on their device (no such fix when that device is the CPU).
        fix = ("; give the leg the arguments that make the script choose it (legs[].arguments, e.g. "
               f"[--device, {want}])" if script_mode else "; move the model and batches to rt.device")
        return {"name": name, "status": "failed", "passed": False, "ran_on": seen,
                "why": f"{leg} did not train on its {backend} backend, so its verdict says nothing about "
                       f"{cfg.get('instance_type')}: " + "; ".join(problems[:3]) + (fix if want != "cpu" else "")}
    return {"name": name, "status": "passed", "passed": True, "ran_on": seen[:1],
            "why": f"{leg} trained on {want} ({seen[0]})"}


def _shape_difference(mine: dict[str, int], base: dict[str, int]) -> str:
    parts = []
    for shape in sorted(set(mine) | set(base)):
        extra = mine.get(shape, 0) - base.get(shape, 0)
        if extra:
            parts.append(f"{abs(extra)} {'more' if extra > 0 else 'fewer'} tensor{'s' if abs(extra) > 1 else ''} "
                         f"of shape {shape}")
    return ", ".join(parts)


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
            tied = (f" (shared weights un-tied: {fix})"
                    if diff > 0 and (m.get("tensors") or 0) > (b.get("tensors") or 0) else "")
            problems.append(f"{leg} has {abs(diff):,} {'more' if diff >= 0 else 'fewer'} parameters than {base} "
                            f"({m.get('parameters'):,} vs {b.get('parameters'):,}; {what or 'same shapes'}){tied}")
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


def seeds_check(leg: str, metric: str, runs: list[dict]) -> dict[str, Any]:
    name = f"seeds:{leg}"
    done = [r for r in runs if r.get("summary") and r["summary"].get("status") == COMPLETED]
    if len(done) < 2:
        return {"name": name, "status": "unchecked", "passed": False,
                "why": f"{leg}: fewer than 2 completed seeds, so whether they differ cannot be shown"}

    def result(s: dict) -> tuple:
        return ((s.get("metrics") or {}).get(metric), s.get("first_train_loss"), s.get("final_train_loss"))

    results = {result(r["summary"]) for r in done}
    seeds = ", ".join(str(r["seed"]) for r in sorted(done, key=lambda r: r["seed"]))
    if len(results) == 1:
        value = next(iter(results))[0]
        return {"name": name, "status": "failed", "passed": False,
                "why": f"{leg}: the script ignores its seed: seeds {seeds} gave bit-identical results ({metric} "
                       f"{value}, the same training losses), so there is one run, not {len(done)}, and no spread "
                       "to test; let the seed reach the script (entrypoint.script_mode.seed) or stop it seeding "
                       "itself with a constant"}
    return {"name": name, "status": "passed", "passed": True,
            "why": f"{leg}: seeds {seeds} gave different results"}


def blockers_check(leg: str, cfg: dict, runs: list[dict]) -> dict[str, Any]:
    name = f"blockers:{leg}"
    records = _records(runs)
    if not records:
        return {"name": name, "status": "unchecked", "passed": False,
                "why": f"{leg}: no run completed, so there is nothing to look for blockers in"}
    fallbacks: set[str] = set()
    recompiles: list[int] = []
    warnings: set[str] = set()
    for s in records:
        compile_ = s.get("compile") or {}
        fallbacks.update(compile_.get("fallback_ops") or [])
        if isinstance(compile_.get("recompiles_after_warmup"), int):
            recompiles.append(compile_["recompiles_after_warmup"])
        warnings.update(s.get("warnings") or [])
    found = []
    if fallbacks:
        found.append(f"CPU fallbacks of {', '.join(sorted(fallbacks)[:5])}")
    if recompiles and max(recompiles) > RECOMPILE_ALLOWANCE:
        found.append(f"up to {max(recompiles)} graph recompilations after warm-up")
    found += sorted(warnings)
    out = {"name": name, "fallback_ops": sorted(fallbacks),
           "recompiles_after_warmup": max(recompiles) if recompiles else None, "warnings": sorted(warnings)}
    if found:
        hint = SCRIPT_HINT if any(s.get("mode") == "script" for s in records) else PREFLIGHT_HINT
        return {**out, "status": "warning", "passed": False, "speed_representative": False,
                "why": f"{leg}: " + "; ".join(found) + f". Its speed and cost are not representative of "
                       f"{cfg.get('instance_type')}; {hint}"}
    basis = (f"no CPU fallbacks, {max(recompiles)} graphs compiled after warm-up (at most {RECOMPILE_ALLOWANCE} "
             "expected)" if recompiles else "no CPU fallbacks")
    return {**out, "status": "passed", "passed": True, "speed_representative": True, "why": f"{leg}: {basis}"}


def checks(base: str, legs_cfg: dict, runs_by_leg: dict[str, list[dict]],
           metric: str = "val_loss") -> list[dict[str, Any]]:
    """The validity checks of a bake-off, in the order they are shown."""
    out = [backend_check(leg, legs_cfg[leg], runs_by_leg[leg]) for leg in legs_cfg]
    out.append(same_model_check(base, legs_cfg, runs_by_leg))
    out += [seeds_check(leg, metric, runs_by_leg[leg]) for leg in legs_cfg]
    out += [blockers_check(leg, legs_cfg[leg], runs_by_leg[leg]) for leg in legs_cfg]
    return out


def section(validity: list[dict[str, Any]]) -> dict[str, Any]:
    """evaluation.json's `measured`: each check's status and why, by kind."""
    out: dict[str, Any] = {"backend": {}, "same_model": None, "seeds": {}, "blockers": {}}
    for c in validity:
        kind, _, leg = c["name"].partition(":")
        brief = {"status": c["status"], "why": c["why"]}
        if kind == "same-model":
            out["same_model"] = {**brief, "tolerance": c.get("tolerance")}
        else:
            out[kind][leg] = brief
    return out
