"""Where a job's model trained and what ran on its device, whatever the script does.

A script may never call an optimizer (a hand-written update, `p.data.add_(...)`), may step its own
optimizer beside the Runtime, may pick its device through `torch.accelerator`, or may let a
framework pick it. So the evidence comes from what no script goes around:

* a global optimizer step post-hook (`torch.optim.optimizer.register_optimizer_step_post_hook`):
  the optimizer's parameters at its first step, and the steps of every optimizer;
* global module forward hooks (`torch.nn.modules.module.register_module_forward_pre_hook` and
  `register_module_forward_hook(always_call=True)`): the parameters of the outermost module run in
  training mode with gradients on, taken at its first such forward pass. Once that module is known
  the global hooks give way to a hook on it alone, which counts its training forward passes (the
  steps of a script that updates its weights by hand);
* the backends' own counters at the end, read wherever the backend was imported, whichever leg
  this is: PyTorch/XLA's `ExecuteComputation` (graphs run), `UncachedCompile` and `CachedCompile`
  counters (`torch_xla.debug.metrics`), and CUDA's peak allocated memory per device
  (`torch.cuda.max_memory_allocated`), read only if CUDA was initialised (reading it does not
  initialise it).

And what `torch.accelerator` answered when the script asked it for a device: it reports CUDA,
MPS, XPU, MTIA, HPU or a PrivateUse1 backend, never PyTorch/XLA (pytorch/pytorch docs,
"torch.accelerator"; tried with torch 2.9.0 and torch-xla 2.9.0: `is_available()` is False after
a model has moved to `xla`), so on a trn1 leg such a script trains on the host CPU.

Observing never changes what the script does: every hook swallows its own errors, and the
`torch.accelerator` functions are wrapped, not replaced (same results, same signature).
"""
from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.hooks import RemovableHandle

FROM_OPTIMIZER = "optimizer parameters at the first optimizer step"
FROM_FORWARD = ("parameters of the outermost module at its first training forward pass (no optimizer step "
                "had been seen)")
# torch.accelerator's answers worth keeping: how the script chose (or failed to choose) its device.
ACCELERATOR_CALLS = ("is_available", "current_accelerator", "device_count")


def parameter_record(parameters, source: str) -> dict[str, Any]:
    """What was trained: how many parameters, their shapes and the device types they lived on.
    Legs that train the same model agree on all but the device; weights un-tied by a move to XLA
    show as extra tensors of the tied shape."""
    seen: dict[int, torch.Tensor] = {}
    for p in parameters:
        seen.setdefault(id(p), p)
    shapes: dict[str, int] = {}
    devices: dict[str, int] = {}
    for p in seen.values():
        key = "x".join(map(str, p.shape)) or "scalar"
        shapes[key] = shapes.get(key, 0) + 1
        devices[p.device.type] = devices.get(p.device.type, 0) + 1
    return {"parameters": int(sum(p.numel() for p in seen.values())), "tensors": len(seen),
            "shapes": dict(sorted(shapes.items())), "devices": dict(sorted(devices.items())), "source": source}


def optimizer_parameters(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"]]


class DeviceWatch:
    """The hooks above, and what they saw. `install()` before the script (or the loop) starts,
    `record()` when it has ended, however it ended."""

    def __init__(self, on_training_forward: Callable[[int], None] | None = None) -> None:
        """`on_training_forward(n)`: called before the model's n-th training forward pass."""
        self.on_training_forward = on_training_forward
        self.model: dict[str, Any] | None = None
        self.optimizer_steps = 0
        self.training_forwards = 0
        self.accelerator: dict[str, str] = {}
        self._root: torch.nn.Module | None = None
        self._depth = threading.local()
        self._handles: list[RemovableHandle] = []
        self._global: list[RemovableHandle] = []
        self._wrapped: dict[str, Any] = {}

    # --- the hooks ------------------------------------------------------------------------------
    def install(self) -> None:
        self._handles.append(register_optimizer_step_post_hook(self._after_optimizer_step))
        self._global = [register_module_forward_pre_hook(self._before_forward),
                        register_module_forward_hook(self._after_forward, always_call=True)]
        self._watch_accelerator()

    def remove(self) -> None:
        for handle in self._handles + self._global:
            handle.remove()
        self._handles, self._global = [], []
        accelerator = getattr(torch, "accelerator", None)
        for name, original in self._wrapped.items():
            setattr(accelerator, name, original)
        self._wrapped = {}

    def _after_optimizer_step(self, optimizer, _args, _kwargs) -> None:
        try:
            self.optimizer_steps += 1
            if self.optimizer_steps == 1:
                # The optimizer says what trains better than a forward pass does: it replaces a
                # record taken from a module, and the module hooks are no longer needed.
                self.model = parameter_record(optimizer_parameters(optimizer), FROM_OPTIMIZER)
                self._drop_global_hooks()
        except Exception:
            pass

    def _before_forward(self, module, _args) -> None:
        try:
            depth = getattr(self._depth, "n", 0)
            self._depth.n = depth + 1
            if depth or not module.training or not torch.is_grad_enabled():
                return
            trained = [p for p in module.parameters() if p.requires_grad]
            if not trained:
                return
            self._root = module
            self.training_forwards += 1
            if self.model is None:
                self.model = parameter_record(trained, FROM_FORWARD)
            # From here on a hook on this module alone counts its passes: the global hooks run for
            # every module call of every model, which a long run should not pay for.
            self._drop_global_hooks()
            self._handles.append(module.register_forward_pre_hook(self._count_forward))
            self._forwarded()
        except Exception:
            pass

    def _after_forward(self, _module, _args, _output) -> None:
        try:
            self._depth.n = max(0, getattr(self._depth, "n", 1) - 1)
        except Exception:
            pass

    def _count_forward(self, module, _args) -> None:
        if module.training and torch.is_grad_enabled():
            self.training_forwards += 1
            self._forwarded()

    def _forwarded(self) -> None:
        if self.on_training_forward is not None:
            try:
                self.on_training_forward(self.training_forwards)
            except Exception:
                pass

    def _drop_global_hooks(self) -> None:
        for handle in self._global:
            handle.remove()
        self._global = []
        self._depth = threading.local()  # counted by the global hooks only

    def _watch_accelerator(self) -> None:
        accelerator = getattr(torch, "accelerator", None)
        for name in ACCELERATOR_CALLS:
            original = getattr(accelerator, name, None)
            if original is None:
                continue

            @functools.wraps(original)
            def wrapper(*args, _original=original, _name=name, **kwargs):
                result = _original(*args, **kwargs)
                try:
                    self.accelerator.setdefault(_name, str(result))
                except Exception:
                    pass
                return result

            self._wrapped[name] = original
            setattr(accelerator, name, wrapper)

    # --- the record -----------------------------------------------------------------------------
    def record(self) -> dict[str, Any]:
        """`evidence` of summary.json (contract.documents.DeviceEvidence)."""
        out: dict[str, Any] = {"optimizer_steps": self.optimizer_steps, "training_forwards": self.training_forwards,
                               "processes": int(os.environ.get("WORLD_SIZE", 1) or 1)}
        if self.accelerator:
            out["torch_accelerator"] = dict(self.accelerator)
        xla = xla_counters()
        if xla is not None:
            out["xla"] = xla
        cuda = cuda_usage()
        if cuda is not None:
            out["cuda"] = cuda
        return out


def xla_counters() -> dict[str, int] | None:
    """PyTorch/XLA's own counts, if torch_xla was imported in this process (None otherwise): what
    ran on the XLA device, whoever chose it."""
    if "torch_xla" not in sys.modules:
        return None
    try:
        import torch_xla.debug.metrics as met

        return {"executions": int(met.counter_value("ExecuteComputation") or 0),
                "graphs_compiled": int(met.counter_value("UncachedCompile") or 0),
                "graphs_cached": int(met.counter_value("CachedCompile") or 0),
                "tensors_created": int(met.counter_value("CreateXlaTensor") or 0)}
    except Exception:
        return None


def cuda_usage() -> dict[str, Any] | None:
    """Peak memory this process allocated on each CUDA device, if CUDA was initialised here."""
    try:
        if not torch.cuda.is_initialized():
            return None
        peaks = [int(torch.cuda.max_memory_allocated(i)) for i in range(torch.cuda.device_count())]
    except Exception:
        return None
    return {"devices_used": sum(1 for p in peaks if p > 0), "visible_devices": len(peaks),
            "peak_bytes": max(peaks, default=0)}
