"""What porting cost: per leg against the baseline, what it took to run the same model there.

- lines of training code that differ: 0 when one script ran on every leg (bakeoff's spec has
  no per-leg script today, so that is always the case and the section says so); a unified
  diff when a leg's config carries its own script (`script_source`), ready for such an override;
- the preflight's findings and their fixes, where a preflight ran (the pipeline's Preflight
  step, whose model artifacts reach the Evaluate step as an input: read_records);
- compile time, and what a warm compile cache saved against a cold start (the evaluation's
  per-leg cold/warm split);
- the numerics settings that differ: autocast, master weights, stochastic rounding and
  compiler flags, from the precision and the job environment the pipeline compiled
  (config legs[].numerics_environment) or the runs' recorded environment;
- the collective check's outcome, where one ran (each leg's Collective step, whose model
  artifacts reach the Evaluate step as an input too: read_records).

Runs in the Evaluate step: standard library only.
"""
from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bakeoff_runtime.contract import ENV_PREFIX
from bakeoff_runtime.contract.backend_table import BACKENDS
from bakeoff_runtime.contract.documents import summary_from

# Job environment that changes numerics (what the evaluation config carries per leg).
NUMERICS_ENV = ("NEURON_CC_FLAGS", "NEURON_RT_STOCHASTIC_ROUNDING_EN", "XLA_USE_BF16", "XLA_DOWNCAST_BF16",
                "NVIDIA_TF32_OVERRIDE")
# Environment values the report shows: the compiler, runtime and library settings a port changes.
# Any other variable's value is left out (it may be a credential under an innocent name); its name
# and that it differs are shown.
SHOWN_ENV_PREFIXES = ("NEURON_", "XLA_", "PJRT_", "TORCH", "PYTORCH_", "USE_TORCH", "OMP_", "MKL_", "CUDA_", "NCCL_",
                      "FI_", "NVIDIA_", "TF_", ENV_PREFIX, "MALLOC_", "TOKENIZERS_")
NUMERICS_FIELDS = ("autocast", "master_weights", "stochastic_rounding", "compiler_flags")


def code_difference(baseline: str | None, leg: str | None, names: tuple[str, str] = ("baseline", "leg")
                    ) -> dict[str, Any]:
    """Lines that differ between two training scripts (added + removed), with the unified diff."""
    if baseline is None or leg is None or baseline == leg:
        return {"lines_differ": 0, "diff": None}
    diff = list(difflib.unified_diff(baseline.splitlines(), leg.splitlines(), *names, lineterm=""))
    changed = sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))
    return {"lines_differ": changed, "diff": "\n".join(diff)}


def spec_difference(base: dict[str, Any], mine: dict[str, Any]) -> list[str]:
    """What the spec gives a leg and its baseline differently, one line each: the porting cost
    when one script runs unchanged everywhere."""
    out = []
    args, base_args = list(mine.get("arguments") or []), list(base.get("arguments") or [])
    if args != base_args:
        out.append(f"arguments: {' '.join(args) or '(none)'} (baseline: {' '.join(base_args) or '(none)'})")
    for kind in ("hyperparameters", "environment"):
        a, b = dict(mine.get(kind) or {}), dict(base.get(kind) or {})
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                shown = kind == "hyperparameters" or key.startswith(SHOWN_ENV_PREFIXES)
                mine_v, base_v = ((a.get(key, "(unset)"), b.get(key, "(unset)")) if shown else
                                  ("(set; value not shown)" if key in a else "(unset)",
                                   "(set; value not shown)" if key in b else "(unset)"))
                out.append(f"{kind[:-1] if kind == 'hyperparameters' else kind} {key}: {mine_v} (baseline: {base_v})")
    return out


def numerics(leg_cfg: Mapping[str, Any], figures: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The settings that decide a leg's arithmetic, each with where it comes from."""
    env = dict(leg_cfg.get("numerics_environment") or {})
    runs = (figures or {}).get("runs", [])
    recorded: dict[str, Any] = next((dict(r["environment"]) for r in runs if r.get("environment")), {})
    backend, precision = leg_cfg.get("backend"), leg_cfg.get("precision")
    row = BACKENDS.get(backend or "")
    flags = env.get("NEURON_CC_FLAGS") or recorded.get("neuron_cc_flags")
    rounding = env.get("NEURON_RT_STOCHASTIC_ROUNDING_EN")
    if rounding is not None:
        sr = "on" if rounding == "1" else "off"
    else:
        sr = "runtime default" if row and row.accelerator == "neuron" else "n/a (not Neuron)"
    return {
        # bakeoff's runtime autocasts the forward pass only and keeps fp32 parameters and optimizer state.
        "autocast": ("bf16 (forward pass)" if precision == "bf16" else "off (fp32)" if precision == "fp32"
                     else "as the script sets it"),
        "master_weights": "fp32" if precision in ("bf16", "fp32") else "as the script sets it",
        "stochastic_rounding": sr,
        "compiler_flags": flags or ("none (eager)" if row and row.eager else "default"),
        "environment": {k: env[k] for k in sorted(env) if k in NUMERICS_ENV},
    }


def _cache_saving(f: Mapping[str, Any]) -> dict[str, Any]:
    split = f.get("compile_cache") or {}
    row = BACKENDS.get(f.get("backend") or "")
    cold, warm = split.get("time_to_first_step_s_cold"), split.get("time_to_first_step_s_warm")
    out = {"compile_time_s": f.get("compile_time_s_mean"), "cold_runs": split.get("cold_runs", 0),
           "warm_runs": split.get("warm_runs", 0), "time_to_first_step_s_cold": cold,
           "time_to_first_step_s_warm": warm, "saved_s": None, "saved_fraction": None}
    if cold is not None and warm is not None:
        out["saved_s"] = cold - warm
        out["saved_fraction"] = (cold - warm) / cold if cold else None
        out["note"] = "time to first step, cold start minus warm start"
    elif f.get("emulated") and row is not None and row.torch_device == "xla":
        # On PyTorch/XLA's CPU device the persistent cache keeps stable keys but cannot load them
        # (pytorch/xla issue 9094): a local run cannot show Neuron's saving.
        out["note"] = "emulated on XLA's CPU device, which cannot load cached executables: the saving shows on trn1"
    elif not split:
        out["note"] = "no compile cache in play for this leg"
    else:
        out["note"] = ("only cold starts so far: a second run with the same inputs shows what the warm cache saves"
                       if cold is not None else "only warm starts: no cold start to compare with")
    return out


MAX_RECORD_BYTES = 16 * 2**20  # a step's record file (a preflight's report is kilobytes): read no more of it


def _members(directory: Path) -> dict[str, bytes]:
    """The files of a step's model artifacts as the Evaluate step receives them: model.tar.gz
    (SageMaker) or the files themselves."""
    import tarfile

    out: dict[str, bytes] = {}
    for path in sorted(directory.rglob("*")) if directory.is_dir() else []:
        if path.name.endswith(".tar.gz"):
            try:
                with tarfile.open(path) as tar:
                    for m in tar.getmembers():
                        handle = tar.extractfile(m) if m.isfile() else None
                        if handle is not None:
                            out.setdefault(Path(m.name).name, handle.read(MAX_RECORD_BYTES))
            except (OSError, tarfile.TarError):
                continue
        elif path.is_file():
            with open(path, "rb") as fh:
                out.setdefault(path.name, fh.read(MAX_RECORD_BYTES))
    return out


def read_records(records: Path) -> dict[str, Any]:
    """The model artifacts of the run's own non-training steps, keyed as the evaluation config
    holds them: what the Preflight step found (`<records>/preflight`) as {"preflight":
    {...preflight.json, "leg": the leg it ran}}, and each leg's collective check
    (`<records>/collective/<leg>`) as {"collective": {leg: collective.json}}; {} without any."""
    out: dict[str, Any] = {}
    preflight = _preflight_record(_members(records / "preflight"))
    if preflight is not None:
        out["preflight"] = preflight
    checks = {leg.name: _collective_record(_members(leg))
              for leg in (sorted((records / "collective").iterdir()) if (records / "collective").is_dir() else [])
              if leg.is_dir()}
    if checks:
        out["collective"] = checks
    return out


def _preflight_record(files: dict[str, bytes]) -> dict[str, Any] | None:
    if "preflight.json" not in files:
        return None
    try:
        found = json.loads(files["preflight.json"])
        leg = summary_from(json.loads(files["summary.json"])).get("leg") if "summary.json" in files else None
    except ValueError:
        return None
    return {**found, "leg": leg}


def _collective_record(files: dict[str, bytes]) -> dict[str, Any]:
    """A leg's check as its step left it. The step ran (its artifacts are an input of the
    Evaluate step only when it is a step of this pipeline), so a missing or unreadable result
    is a failed check, as the leg's training jobs (launch.py's collective gate) record it too."""
    if "collective.json" not in files:
        return {"ok": False, "reason": "the collective check left no result"}
    try:
        result = json.loads(files["collective.json"])
    except ValueError as exc:
        return {"ok": False, "reason": f"collective check result unreadable (collective.json: {exc})"}
    return result if isinstance(result, dict) else {"ok": False, "reason": "collective check result unreadable "
                                                                           "(collective.json holds no object)"}


def _preflight(config: Mapping[str, Any], leg: str) -> dict[str, Any] | None:
    found = config.get("preflight")
    if not found or found.get("leg") != leg:
        return None
    problems = found.get("problems") or []
    return {"verdict": found.get("verdict"), "blockers": found.get("blockers", 0),
            "findings": [{"kind": p.get("kind"), "blocker": bool(p.get("blocker")),
                          "where": p.get("where") or p.get("op") or p.get("parameter") or p.get("cause"),
                          "fix": p.get("fix")} for p in problems]}


def section(config: Mapping[str, Any], figures: Mapping[str, Mapping[str, Any]], baseline: str) -> dict[str, Any]:
    """evaluation.json's `porting`: one entry per leg other than the baseline."""
    legs_cfg = config.get("legs", {})
    base_cfg = legs_cfg.get(baseline, {})
    base_numerics = numerics(base_cfg, figures.get(baseline))
    out: dict[str, Any] = {"baseline": baseline, "legs": {}}
    per_leg_scripts = any("script_source" in c for c in legs_cfg.values())
    if per_leg_scripts:
        out["code_note"] = "per-leg scripts given: lines that differ are counted against the baseline's"
    elif config.get("entrypoint_mode") == "script":
        out["code_note"] = ("one training script ran unchanged on every leg (script mode): no line of it differs; "
                            "what differs is what the spec gives each leg (its arguments, hyperparameters and "
                            "environment, below)")
    else:
        out["code_note"] = ("one training script ran on every leg (the spec has no per-leg script), so no line "
                            "of training code differs; the port is in the backend bakeoff's runtime chose")
    if config.get("entrypoint_mode") == "script":  # what the report may suggest where no preflight ran
        out["preflight_note"] = ("not available in script mode (`bakeoff preflight` probes a Runtime script); the "
                                 "leg's `environment: {PT_XLA_DEBUG_LEVEL: \"1\"}` has PyTorch/XLA say where each "
                                 "graph compiles and what falls back")
    for name, cfg in legs_cfg.items():
        if name == baseline:
            continue
        mine = numerics(cfg, figures.get(name))
        differ = [k for k in NUMERICS_FIELDS if mine[k] != base_numerics[k]]
        entry = {
            "backend": cfg.get("backend"), "baseline_backend": base_cfg.get("backend"),
            "code": code_difference(base_cfg.get("script_source"), cfg.get("script_source"), (baseline, name)),
            "preflight": _preflight(config, name),
            "compile": _cache_saving(figures.get(name) or {}),
            "baseline_compile": _cache_saving(figures.get(baseline) or {}),
            "numerics": mine, "baseline_numerics": base_numerics, "numerics_differ": differ,
            "collective": (config.get("collective") or {}).get(name),
            "spec_lines": spec_difference(base_cfg.get("per_leg") or {}, cfg.get("per_leg") or {}),
        }
        out["legs"][name] = entry
    return out
