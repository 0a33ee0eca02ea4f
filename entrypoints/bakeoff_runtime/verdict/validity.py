"""What the verdict measured: checks that a parity verdict is about the target at all.

A pass is worth something only if every leg ran on its own backend, trained the same model,
and was not slowed by what the target does badly. The checks read what each job's summary.json
records: `model` (the parameters' devices, counts and shapes), `evidence` (what ran on the
device, training/evidence.py: PyTorch/XLA's and CUDA's own counters, optimizer steps and
training forward passes, what torch.accelerator answered), `first_train_loss` and `compile`:

* `backend:<leg>`: positive evidence that the leg trained where its backend trains: a neuron
  leg's parameters on the XLA device and XLA graphs executed; a cuda leg on a GPU with CUDA memory
  allocated there. A leg that shows it trained elsewhere fails (the verdict would be about the
  wrong hardware), and so does a GPU leg emulated on this machine's CPU whose parameters lived on
  XLA (a framework chose it). A neuron leg whose jobs showed nothing is undecided: no verdict
  passes on a trn leg that did not show its backend. A GPU leg emulated on the CPU is `unchecked`,
  saying so plainly: CUDA use can only be shown on a GPU.
* `same-model`: parameter count, tensors and shapes agree with the baseline's (else it fails);
  un-tied weights after a move to XLA show as extra tensors. For paired seeds the first logged
  loss should agree within FIRST_LOSS_TOLERANCE: a leg whose first loss is off on every seed is a
  warning (another start, so seeds may not pair).
* `same-computation:<leg>`: a note, only when a leg and the baseline gave bit-identical results
  on every paired seed: the same computation ran on both legs.
* `seeds:<leg>`: seeds that gave bit-identical results (the metric and the training losses) are
  one run counted several times: the script ignores the seed it is given (it seeds itself, or
  reads no seed), so the spread the verdict needs is not there. That fails.
* `blockers:<leg>`: CPU fallbacks, recompilations after warm-up and the Runtime's warnings.
  They do not decide quality, so they never fail the verdict, but the leg's speed and cost
  are marked as not representative of the target.

Each has the statuses passed / failed / warning / unchecked (and `inconclusive` for an unshown
trn backend); `unchecked` says why it could not be made (an emulated GPU leg has no GPU to show;
a job that wrote no record), never in silence. Standard library only: it runs in the Evaluate step.
"""
from __future__ import annotations

import math
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
KINDS = ("backend", "same-model", "same-computation", "seeds", "blockers")


def is_validity_check(check: Mapping[str, Any]) -> bool:
    return check["name"].split(":", 1)[0] in KINDS


def _records(runs: list[dict]) -> list[dict]:
    # The run's state as the evaluation classified it (a summary that says "completed" about a metric that is
    # no number is a failed run), not the summary's own word.
    return [r["summary"] for r in runs if r.get("summary") and r.get("status", r["summary"].get("status"))
            in (COMPLETED, "diverged")]


def _emulated_on(cfg: dict) -> str | None:
    """The device type a leg the local engine emulated ran on here, from its label ("local cpu",
    "local xla:cpu", "local cuda"); None on the target hardware."""
    where = (cfg.get("emulated_on") or "").lower()
    if not where:
        return None
    return "xla" if "xla" in where else "cuda" if ("cuda" in where or "gpu" in where) else "cpu"


# What torch.accelerator is, when a script chose its device through it (training/evidence.py says how
# it was seen): it reports CUDA, MPS, XPU, MTIA, HPU or a PrivateUse1 backend, never PyTorch/XLA
# (pytorch/pytorch docs, "torch.accelerator"; torch 2.9 with torch-xla 2.9 answers is_available() False).
ACCELERATOR_CAUSE = ("the script chose its device through torch.accelerator, which does not see PyTorch/XLA "
                     "(what torch-neuronx on trn1 is)")
ACCELERATOR_FIX = ("make it choose torch_xla.device() where torch_xla imports (e.g. an option the trn leg sets with "
                   "`arguments:`); on trn2, TorchNeuron (backend torchneuron) is a device torch.accelerator reports")


def _object(value: Any) -> dict:
    """A part of a summary read as an object: a job writes its summary, so a part of another type is nothing."""
    return value if isinstance(value, dict) else {}


def _counts(value: Any) -> dict[str, int]:
    """{device type: parameter tensors}, the entries that are whole numbers only."""
    return {str(k): v for k, v in _object(value).items() if isinstance(v, int) and not isinstance(v, bool)}


def _evidence_line(s: dict, want: str) -> tuple[str, list[str], bool]:
    """(where the run trained, in words; what shows it did not train on `want`; whether anything
    was shown at all) for one completed run's summary."""
    model = _object(s.get("model"))
    devices = _counts(model.get("devices"))
    evidence = _object(s.get("evidence"))
    xla = _counts(evidence.get("xla")) if isinstance(evidence.get("xla"), dict) else None
    words = [", ".join(f"{n} parameter tensor{'s' if n != 1 else ''} on {d}" for d, n in sorted(devices.items()))]
    problems = []
    if devices and set(devices) != {want}:
        off = sum(n for d, n in devices.items() if d != want)
        problems.append(f"{off} of {sum(devices.values())} parameter tensors trained on "
                        f"{', '.join(sorted(d for d in devices if d != want))}, not {want}")
    if xla is not None:
        words.append(f"{xla.get('executions', 0)} XLA graph executions")
    shown = bool(devices)
    if want == "xla":
        if xla is not None:
            shown = True
            if not xla.get("executions"):
                problems.append(f"no XLA graph ran (PyTorch/XLA's counters: 0 executions, "
                                f"{xla.get('graphs_compiled', 0)} graphs compiled)")
            elif devices and "xla" not in devices and model.get("source", "").startswith("optimizer"):
                # XLA ran graphs, but the optimizer steps CPU tensors: made before the model moved, it holds
                # parameters the model no longer uses. Moving a module to XLA gives it new Parameter objects:
                # torch 2.9 torch/nn/modules/module.py Module._apply replaces a parameter whose new tensor is
                # not of a shallow-copy-compatible type (`torch._has_compatible_shallow_copy_type`, False from
                # CPU to XLA) instead of setting its `.data` (tried: `m.weight is w0` is False after .to(xla)).
                problems.append(f"{xla['executions']} XLA graphs ran, but the optimizer steps parameters on "
                                f"{', '.join(sorted(devices))}: it was made before the model moved to XLA, whose .to() "
                                "gives the model new parameters; make the optimizer after model.to(device)")
        elif devices:  # a summary from before the counters: the compile stats say whether graphs were made
            compile_ = _object(s.get("compile"))
            if not (compile_.get("compiled_graphs") or 0) + (compile_.get("cached_compiles") or 0):
                problems.append("no XLA graph was compiled or run")
    elif xla and xla.get("executions") and not problems:
        problems.append(f"{xla['executions']} XLA graphs ran on a leg that trains on {want}")
    if want == "cuda":
        cuda = _counts(evidence.get("cuda")) if isinstance(evidence.get("cuda"), dict) else None
        if cuda is not None:
            shown = True
            words.append(f"CUDA memory on {cuda.get('devices_used', 0)} of {cuda.get('visible_devices', 0)} devices")
            if not cuda.get("devices_used"):
                problems.append("no CUDA memory was allocated")
        elif devices and not s.get("peak_device_memory_bytes"):
            problems.append("no CUDA memory was allocated")
    return ("; ".join(w for w in words if w) or "not recorded"), problems, shown


def _by_seed(found: list[tuple[Any, str]]) -> str:
    """"seeds 0, 1: X; Y": what each seed showed, seeds that showed the same named once."""
    per_seed: dict[Any, list[str]] = {}
    for seed, problem in found:
        per_seed.setdefault(seed, []).append(problem)
    groups: dict[tuple[str, ...], list[str]] = {}
    for seed, problems in per_seed.items():
        groups.setdefault(tuple(problems), []).append(str(seed))
    return "; ".join(f"seed{'s' if len(who) > 1 else ''} {', '.join(who)}: {'; '.join(problems)}"
                     for problems, who in groups.items())


def backend_check(leg: str, cfg: dict, runs: list[dict]) -> dict[str, Any]:
    """Whether each completed run of `leg` trained where its backend trains (or, emulated here,
    where its emulation runs), from positive evidence: the parameters' devices and the backends'
    own counters. A leg that shows it trained elsewhere fails; a trn leg whose backend was not
    shown at all is undecided (a verdict never passes on it); a GPU leg emulated on the CPU is
    checked against the CPU, and its CUDA use is said to be unshowable here."""
    name = f"backend:{leg}"
    backend = cfg.get("backend") or "cpu"
    row = BACKENDS.get(backend)
    target = row.torch_device if row else backend  # the device type its parameters train on
    here = _emulated_on(cfg)
    stand_in = row is not None and row.accelerator == "gpu" and here not in (None, "cuda")
    want = here if stand_in and here else target
    records = _records(runs)
    if not records:
        return {"name": name, "status": "unchecked", "passed": False,
                "why": f"{leg}: no run completed, so where it trained cannot be shown"}
    problems: list[tuple[Any, str]] = []
    seen: list[str] = []
    shown = False
    asked: dict[str, str] = {}
    for s in records:
        words, found, any_shown = _evidence_line(s, want)
        seen.append(words)
        problems += [(s.get("seed"), p) for p in found]
        shown = shown or any_shown
        said = _object(_object(s.get("evidence")).get("torch_accelerator"))
        asked = asked or {str(k): str(v) for k, v in said.items()}
    script_mode = any(s.get("mode") == "script" for s in records)
    if problems:
        evidence = _by_seed(problems)
        if stand_in:
            why = (f"{leg} stands for a GPU and ran on this machine's {want}, but did not train there ({evidence}): "
                   "the script chose another device by itself (a framework that picks PyTorch/XLA wherever torch_xla "
                   "imports, say), so this run did not compare the legs it names; tell it to stay off XLA in the "
                   "leg's `local:` block (e.g. environment USE_TORCH_XLA: \"0\")")
        else:
            cause, fix = "", ""
            if asked and target == "xla":
                answers = ", ".join(f"{k}() -> {v}" for k, v in sorted(asked.items()))
                cause = f" because {ACCELERATOR_CAUSE} (it answered {answers})"
                fix = f"; {ACCELERATOR_FIX}"
            elif want != "cpu":
                fix = ("; give the leg the arguments that make the script choose it (legs[].arguments, e.g. "
                       f"[--device, {want}])" if script_mode else
                       "; move the model with rt.prepare(model) and the batches to rt.device")
            why = (f"{leg} did not train on its {backend} backend{cause}, so its verdict says nothing about "
                   f"{cfg.get('instance_type')}: {evidence}{fix}")
        return {"name": name, "status": "failed", "passed": False, "ran_on": seen, "why": why}
    if stand_in:
        return {"name": name, "status": "unchecked", "passed": False, "ran_on": seen[:1],
                "why": f"{leg} stands for a GPU and ran on this machine's {want} as its emulation intends "
                       f"({seen[0]}): that it uses CUDA on {cfg.get('instance_type')} can only be shown on a GPU"}
    if not shown:
        if target == "xla":
            return {"name": name, "status": "inconclusive", "passed": False,
                    "why": f"{leg}: its jobs recorded neither where their parameters lived nor what ran on the XLA "
                           f"device, so that it trained on {backend} is not shown, and a verdict about "
                           f"{cfg.get('instance_type')} cannot pass without it"}
        return {"name": name, "status": "unchecked", "passed": False,
                "why": f"{leg}: its jobs did not record where their parameters lived (no optimizer step or "
                       "training forward pass that bakeoff saw)"}
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


def same_computation_check(leg: str, base: str, legs_cfg: dict, runs_by_leg: dict[str, list[dict]],
                           metric: str, both_shown: bool = False) -> dict[str, Any] | None:
    """A note when `leg` and the baseline gave bit-identical results (the parity metric and the
    first and last training losses) on every seed both completed: the same arithmetic ran on both,
    so the comparison says nothing about the difference between their hardware. Two legs a local
    run emulated on the same device do that by design, and are told so; None when they differ."""
    def results(name):
        return {r["seed"]: ((r["summary"].get("metrics") or {}).get(metric), r["summary"].get("first_train_loss"),
                            r["summary"].get("final_train_loss"))
                for r in runs_by_leg[name]
                if r.get("summary") and r.get("status", r["summary"].get("status")) == COMPLETED}

    mine, theirs = results(leg), results(base)
    paired = sorted(set(mine) & set(theirs), key=str)
    if not paired or any(mine[s] != theirs[s] or mine[s][0] is None for s in paired):
        return None
    where = {n: (legs_cfg.get(n) or {}).get("emulated_on") for n in (leg, base)}
    same_place = where[leg] and where[leg] == where[base]
    agree = (f"{leg} and {base} gave bit-identical results on every paired seed ({', '.join(map(str, paired))}: "
             f"{metric} and training losses)")
    if same_place:
        why = (f"{agree}: the same computation ran on both legs, as it does when a local run emulates both on "
               f"{where[leg]}: this comparison says nothing about their hardware")
    elif both_shown:  # each showed it ran on its own device: they differ below what the script reports
        why = (f"{agree}, though each showed it trained on its own backend: their differences are below the "
               "precision the script reports its numbers at (print more digits to see them)")
    else:
        why = (f"{agree}: the same computation ran on both legs; legs on different hardware cannot agree to the last "
               "bit, so one of them did not run where its backend runs (see its backend check)")
    return {"name": f"same-computation:{leg}", "status": "warning", "passed": False, "seeds_paired": paired, "why": why}


def _texts(value: object) -> list[str]:
    """The text items of a list a job wrote (anything else in it is passed over, bounded in length)."""
    return [v[:500] for v in value if isinstance(v, str)] if isinstance(value, list) else []


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
        compile_ = _object(s.get("compile"))
        fallbacks.update(_texts(compile_.get("fallback_ops")))
        if isinstance(compile_.get("recompiles_after_warmup"), int):
            recompiles.append(compile_["recompiles_after_warmup"])
        warnings.update(_texts(s.get("warnings")))
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
    shown = {c["name"].split(":", 1)[1] for c in out if c["status"] == "passed"}
    out.append(same_model_check(base, legs_cfg, runs_by_leg))
    out += [c for leg in legs_cfg if leg != base
            and (c := same_computation_check(leg, base, legs_cfg, runs_by_leg, metric,
                                             both_shown={leg, base} <= shown)) is not None]
    out += [seeds_check(leg, metric, runs_by_leg[leg]) for leg in legs_cfg]
    out += [blockers_check(leg, legs_cfg[leg], runs_by_leg[leg]) for leg in legs_cfg]
    return out


def section(validity: list[dict[str, Any]]) -> dict[str, Any]:
    """evaluation.json's `measured`: each check's status and why, by kind."""
    out: dict[str, Any] = {"backend": {}, "same_model": None, "same_computation": {}, "seeds": {}, "blockers": {}}
    for c in validity:
        kind, _, leg = c["name"].partition(":")
        brief = {"status": c["status"], "why": c["why"]}
        if kind == "same-model":
            out["same_model"] = {**brief, "tolerance": c.get("tolerance")}
        else:
            out[kind.replace("-", "_")][leg] = brief
    return out
