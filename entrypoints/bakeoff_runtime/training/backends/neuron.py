"""trn1: PyTorch/XLA as torch-neuronx drives it.

torch-neuronx is PyTorch/XLA with the Neuron PJRT plugin; the training-loop API is
torch_xla's. Off Trainium the same code runs on PyTorch/XLA's CPU device
(PJRT_DEVICE=CPU), which is how bakeoff emulates a trn leg locally.
"""
from __future__ import annotations

import importlib.metadata
import os

import torch

from bakeoff_runtime.training.backends import Backend, BackendUnavailable


class NeuronBackend(Backend):
    name = "neuron"
    autocast_device_type = "xla"
    distributed_backend = "xla"
    lazy = True

    def __init__(self, precision: str = "fp32", local_rank: int = 0):
        super().__init__(precision, local_rank)
        self.emulated = os.environ.get("PJRT_DEVICE", "").upper() == "CPU"
        if not self.emulated:
            try:  # registers the Neuron PJRT plugin; only present in Neuron images
                import torch_neuronx  # noqa: F401
            except ImportError as exc:
                raise BackendUnavailable(
                    "backend 'neuron' needs torch-neuronx (a Neuron training image); "
                    "set PJRT_DEVICE=CPU to emulate it on PyTorch/XLA's CPU device"
                ) from exc
        try:
            import torch_xla
            import torch_xla.core.xla_model as xm
            import torch_xla.debug.metrics as met
        except ImportError as exc:
            raise BackendUnavailable("backend 'neuron' needs torch-xla") from exc
        self._torch_xla, self._xm, self._met = torch_xla, xm, met
        self._device = torch_xla.device()

    def device(self) -> torch.device:
        return self._device

    def reduce_gradients(self, optimizer: torch.optim.Optimizer) -> None:
        # xm.optimizer_step would reduce *and* step, leaving no room to clip the averaged
        # gradient: a rank-local clip is a different algorithm from DDP's. So reduce here
        # (an all-reduce averaging over replicas, pytorch/xla r2.9 xla_model.reduce_gradients),
        # and let the shared optimizer_step clip and step, as AWS's dp_bert sample does
        # ("all-reduce and then clip. Order matters.", aws-neuron-samples).
        self._xm.reduce_gradients(optimizer)

    def mark_step(self) -> None:
        self._torch_xla.sync()

    def synchronize(self) -> None:
        self._xm.wait_device_ops()

    def wrap_model(self, model, world_size):
        return model  # xm.optimizer_step reduces gradients; no DDP wrapper on XLA

    def compile_stats(self):
        met = self._met
        graphs = met.counter_value("UncachedCompile") or 0
        data = met.metric_data("CompileTime")
        # metric_data -> (samples, accumulated nanoseconds, recent samples)
        seconds = (data[1] / 1e9) if data else 0.0
        return {"compiled_graphs": int(graphs), "compile_time_s": round(seconds, 3),
                "cached_compiles": int(met.counter_value("CachedCompile") or 0)}

    def fallback_ops(self) -> list[str]:
        # .item() shows up as _local_scalar_dense: a fetch, not a fallback.
        return sorted(op for op in self._met.executed_fallback_ops() if op != "aten::_local_scalar_dense")

    def peak_device_memory_bytes(self):
        try:
            info = self._xm.get_memory_info(self._device)
        except Exception:  # not reported on every PJRT device (e.g. CPU)
            return None
        for key in ("peak_bytes_used", "bytes_used", "kb_total"):
            if key in info:
                return int(info[key] * (1024 if key.startswith("kb") else 1))
        return None

    def versions(self):
        out = {"torch": torch.__version__, "torch_xla": self._torch_xla.__version__,
               "pjrt_device": os.environ.get("PJRT_DEVICE", ""), "emulated": str(self.emulated).lower()}
        for dist in ("torch-neuronx", "neuronx-cc", "libneuronxla", "neuronx-distributed"):
            try:
                out[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                pass
        if os.environ.get("NEURON_CC_FLAGS"):
            out["neuron_cc_flags"] = os.environ["NEURON_CC_FLAGS"]
        return out

    def describe(self) -> str:
        return "neuron on local xla:cpu (emulated)" if self.emulated else f"neuron on {self._device}"
