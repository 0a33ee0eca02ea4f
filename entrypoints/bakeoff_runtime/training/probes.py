"""Preflight: a few training steps on PyTorch/XLA's CPU device that find what would
cost money on Trainium, each problem named by the operator or Python line to blame.

Collected while the step runs (BAKEOFF_PREFLIGHT=1):
- graphs compiled, and recompilations after warm-up with the model input whose
  shape changed (dynamic shapes recompile on trn1);
- operators that fell back to the CPU (the `.item()` fetch excepted) and where
  they are called;
- float64 tensors (Trainium has no fp64) and where they are made;
- host<->device transfers inside the step (each one is a sync point).
Then a verdict (ready / will recompile / will fall back) with concrete fixes.
"""
from __future__ import annotations

import json
import traceback
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from bakeoff_runtime.contract import JobEnvironment

_HERE = Path(__file__).resolve().parent
_INTERNAL = [str(_HERE / n) for n in ("runtime.py", "telemetry.py", "probes.py", "graph_cache.py", "backends")] + [
    str(_HERE.parent / "tracking" / "sink.py")]
_TRANSFERS = {"item", "cpu", "tolist", "numpy"}
WARMUP_STEPS = 2  # step 0 compiles the forward/backward, step 1 adds the optimizer's state


def _user_frame() -> str | None:
    """The innermost frame that is neither torch nor bakeoff's runtime."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        f = frame.filename
        if "/torch/" in f or "/torch_xla/" in f or "site-packages" in f or f.startswith("<"):
            continue
        if any(f.startswith(p) for p in _INTERNAL):
            continue
        return f"{Path(f).name}:{frame.lineno} ({frame.line.strip() if frame.line else frame.name})"
    return None


def _is_xla(x) -> bool:
    return torch.is_tensor(x) and x.device.type == "xla"


class _Watch(TorchFunctionMode):
    def __init__(self, collector: Preflight):
        super().__init__()
        self.c = collector

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        c = self.c
        if not c.in_step:
            return out
        name = getattr(func, "__name__", str(func))
        if name not in c.calls:
            c.calls[name] = _user_frame()
        if name in _TRANSFERS and args and _is_xla(args[0]):
            where = _user_frame()
            if where is not None:
                c.transfers.setdefault(where, {"op": name, "count": 0})["count"] += 1
        elif name == "to" and args and _is_xla(args[0]) and any(
                (isinstance(a, (str, torch.device)) and str(a).startswith("cpu"))
                for a in (*args[1:], *kwargs.values())):
            where = _user_frame()
            if where is not None:
                c.transfers.setdefault(where, {"op": "to(cpu)", "count": 0})["count"] += 1
        for t in (out if isinstance(out, (tuple, list)) else (out,)):
            if torch.is_tensor(t) and t.dtype in (torch.float64, torch.complex128):
                where = _user_frame() or "?"
                c.fp64.setdefault(where, {"op": name, "dtype": str(t.dtype)})
        return out


class Preflight:
    def __init__(self, backend, model_dir: Path):
        import torch_xla.debug.metrics as met

        self.met = met
        self.backend = backend
        self.model_dir = model_dir
        self.in_step = False
        self.step = -1
        self.calls: dict[str, str | None] = {}
        self.transfers: dict[str, dict] = {}
        self.fp64: dict[str, dict] = {}
        self.fp64_parameters: list[str] = []
        self.compiles_by_step: dict[int, int] = {}
        self.fallbacks_by_step: dict[int, list[str]] = {}
        self.shapes: list[tuple[int, list]] = []
        self._compiles = 0
        self._mode = _Watch(self)
        self._mode.__enter__()

    # --- hooks from the runtime -------------------------------------------------------
    def watch_model(self, model: torch.nn.Module) -> None:
        self.fp64_parameters = [n for n, p in model.named_parameters() if p.dtype == torch.float64]
        self.fp64_parameters += [n for n, b in model.named_buffers() if b.dtype == torch.float64]

        def record(module, args, kwargs=None):
            shapes = [tuple(a.shape) if torch.is_tensor(a) else None for a in args]
            self.shapes.append((self.step, shapes))

        model.register_forward_pre_hook(record)

    def begin_step(self, step: int) -> None:
        self.step = step
        self.in_step = True

    def end_step(self, step: int) -> None:
        """After the step's graph boundary."""
        self.in_step = False
        total = int(self.met.counter_value("UncachedCompile") or 0)
        self.compiles_by_step[step] = total - self._compiles
        self._compiles = total
        self.fallbacks_by_step[step] = sorted(op for op in self.met.executed_fallback_ops()
                                              if op != "aten::_local_scalar_dense")

    # --- the report ---------------------------------------------------------------------
    def _shape_change(self, step: int) -> str | None:
        now = [s for k, s in self.shapes if k == step]
        before = [s for k, s in self.shapes if k == step - 1]
        if not now or not before:
            return None
        for i, (a, b) in enumerate(zip(before[0], now[0], strict=False)):
            if a != b:
                return f"input {i} of the model's forward changed shape {list(a)} -> {list(b)}"
        return None

    def report(self) -> dict[str, Any]:
        self._mode.__exit__(None, None, None)
        problems = []
        steps = sorted(self.compiles_by_step)
        recompiles = [s for s in steps if s >= WARMUP_STEPS and self.compiles_by_step[s] > 0]
        for s in recompiles:
            cause = self._shape_change(s) or "a graph changed (not an input shape): look for Python values " \
                                             "that change every step, e.g. a step counter used in a tensor op"
            problems.append({"kind": "recompilation", "blocker": True, "step": s,
                             "graphs": self.compiles_by_step[s], "cause": cause,
                             "fix": "give every step the same shapes: pad or bucket variable lengths to a few fixed "
                                    "sizes (e.g. pad to sequence_length), and keep Python scalars out of tensor ops"})
        fallback_ops = sorted({op for ops in self.fallbacks_by_step.values() for op in ops})
        for op in fallback_ops:
            fn = op.split("::")[-1].split(".")[0]
            where = self.calls.get(fn) or self.calls.get(fn.rstrip("_"))
            problems.append({"kind": "cpu-fallback", "blocker": True, "op": op, "where": where,
                             "fix": f"{op} has no XLA lowering (often a data-dependent output shape): replace it with "
                                    "a fixed-shape formulation (a boolean mask times the values, torch.where, or "
                                    "topk with a fixed k)"})
        for where, info in self.fp64.items():  # in the order the step met them
            problems.append({"kind": "fp64", "blocker": True, "op": info["op"], "dtype": info["dtype"], "where": where,
                             "fix": "Trainium has no float64: create tensors as float32 (dtype=torch.float32) or "
                                    "cast with .float()"})
        for name in self.fp64_parameters:
            problems.append({"kind": "fp64", "blocker": True, "parameter": name,
                             "fix": "cast the model to float32 (model.float()) before rt.prepare()"})
        for where, info in self.transfers.items():
            problems.append({"kind": "host-transfer", "blocker": False, "op": info["op"], "count": info["count"],
                             "where": where,
                             "fix": "each fetch inside the step is a device sync: drop it, or log through "
                                    "rt.track_step (it syncs only every log_interval steps)"})
        kinds = {p["kind"] for p in problems if p["blocker"]}
        verdict = "will fall back" if kinds & {"cpu-fallback", "fp64"} else \
            ("will recompile" if "recompilation" in kinds else "ready")
        return {
            "schema": "bakeoff.preflight/1",
            "verdict": verdict,
            "blockers": sum(1 for p in problems if p["blocker"]),
            "steps": len(steps),
            "graphs_compiled": sum(self.compiles_by_step.values()),
            "graphs_after_warmup": sum(self.compiles_by_step[s] for s in steps if s >= WARMUP_STEPS),
            "compiles_by_step": {str(k): v for k, v in sorted(self.compiles_by_step.items())},
            "fallback_ops": fallback_ops,
            "problems": problems,
        }

    def write(self) -> dict[str, Any]:
        report = self.report()
        self.model_dir.mkdir(parents=True, exist_ok=True)
        (self.model_dir / "preflight.json").write_text(json.dumps(report, indent=2) + "\n")
        return report


def enabled() -> bool:
    return JobEnvironment.from_environ().preflight
