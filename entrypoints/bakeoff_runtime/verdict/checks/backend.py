"""`backend:<leg>`: positive evidence that the leg trained where its backend trains: a neuron
leg's parameters on the XLA device and XLA graphs executed; a cuda leg on a GPU with CUDA memory
allocated there. A leg that shows it trained elsewhere fails (the verdict would be about the
wrong hardware), and so does a GPU leg emulated on this machine's CPU whose parameters lived on
XLA (a framework chose it). A neuron leg whose jobs showed nothing is undecided: no verdict
passes on a trn leg that did not show its backend. A GPU leg emulated on the CPU is `unchecked`,
saying so plainly: CUDA use can only be shown on a GPU.
"""
from __future__ import annotations

from typing import Any, TypedDict

from bakeoff_runtime.contract.backend_table import BACKENDS
from bakeoff_runtime.verdict.checks._summary import _object, _records
from bakeoff_runtime.verdict.checks.registry import CheckKind, Inputs


class Details(TypedDict, total=False):
    """A backend check's own keys (beyond name, status, passed, why)."""
    ran_on: list[str]   # where its runs trained, in words


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


def run(inputs: Inputs) -> list[dict[str, Any]]:
    return [backend_check(leg, inputs.legs[leg], inputs.runs_by_leg[leg]) for leg in inputs.legs]


KIND = CheckKind("backend", run, section="backend", details=Details)
