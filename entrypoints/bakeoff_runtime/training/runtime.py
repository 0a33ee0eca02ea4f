"""The runtime helper: what a training script needs to be a bake-off leg.

The built-in trainer uses it, and so can a user's own script, in a few lines:

    from bakeoff_runtime import Runtime
    with Runtime.from_environment() as rt:
        model = rt.prepare(MyModel())
        opt = torch.optim.AdamW(model.parameters(), lr=rt.hp("lr", 1e-3))
        for step in range(rt.max_steps):
            x, y = next(batches)
            with rt.autocast():
                loss = loss_fn(model(x.to(rt.device)), y.to(rt.device))
            loss.backward()
            rt.optimizer_step(opt, clip_grad_norm=1.0)
            opt.zero_grad(set_to_none=True)
            rt.track_step(step, loss, samples=len(x))
        rt.log_validation(step, val_loss=evaluate(model))

It reads the SageMaker container contract, picks the backend the leg declares,
seeds everything, times steps honestly (warm-up excluded), stops a run that
goes NaN or diverges, and writes metrics.jsonl/summary.json/the failure file.
"""
from __future__ import annotations

import json
import math
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, cast

import torch

from bakeoff_runtime.contract import WARM_FORKED_ENV, JobEnvironment, TrainingEnv
from bakeoff_runtime.contract.backend_table import BACKENDS
from bakeoff_runtime.tracking.sink import MlflowSink
from bakeoff_runtime.training.backends import get_backend
from bakeoff_runtime.training.fingerprint import model_record, seed_everything  # noqa: F401  (re-exported)
from bakeoff_runtime.training.telemetry import Telemetry, host_environment


class Diverged(RuntimeError):
    """The loss became non-finite or grew past the divergence limit."""


def _to_cpu(obj):
    if torch.is_tensor(obj):
        return obj.detach().to("cpu")
    if isinstance(obj, dict):
        return {k: _to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_cpu(v) for v in obj)
    return obj


def _unique_parameters(model: torch.nn.Module) -> int:
    return len({id(p) for p in model.parameters()})


class Runtime:
    def __init__(self, env: TrainingEnv, started_at: float | None = None, environ=None):
        environ = os.environ if environ is None else environ
        self.env = env
        self.started_at = started_at if started_at is not None else time.time()
        hps = env.hyperparameters
        self.hps = hps
        job = JobEnvironment.from_environ(environ)
        self.backend_name = job.backend or hps.get("backend") or "cpu"
        self.precision = job.precision or hps.get("precision") or "fp32"
        self.seed = int(hps.get("seed", 0))
        self.leg = str(hps.get("leg", job.leg or "leg"))
        self.log_interval = max(1, int(hps.get("log_interval", 10)))
        self.max_steps = int(hps["max_steps"]) if "max_steps" in hps else None
        self.divergence_factor = float(hps.get("divergence_factor", 4.0))
        # Under neuron_parallel_compile every graph is traced, compiled into the cache and not run:
        # what a device tensor reads back is 0 (the "first bad step" marker too, which starts at
        # -1), so the finite and divergence checks would end the run at step 0 before the
        # steady-state and validation graphs are ever extracted. Their raising is off in that run;
        # what they put in a step's graph is not (_watch_finite), or the graphs it leaves in the
        # cache are not the ones the training jobs look up (tests/e2e/test_precompile_graphs.py).
        self.extracting_graphs = job.precompile

        self.world_size = int(environ.get("WORLD_SIZE", 1))
        self.rank = int(environ.get("RANK", 0))
        self.local_rank = int(environ.get("LOCAL_RANK", 0))
        self.cache_location = job.compile_cache or None
        self.torch_compile = job.torch_compile
        info = {
            "bakeoff": job.name,
            "leg": self.leg,
            "seed": self.seed,
            "backend": self.backend_name,
            "precision": self.precision,
            "instance_type": job.instance_type or env.instance_type,
            "instance_count": env.host_count,
            "emulated_on": job.emulated_on or None,
            "job_key": job.job_key or None,
            "spec_hash": job.spec_hash or None,
            "compile_cache": job.compile_cache or None,
            "world_size": self.world_size,
        }
        if job.precompile:
            info["precompile"] = True  # neuron_parallel_compile's run: its figures are not results
        self.info = info
        from bakeoff_runtime.tracking.identity import mlflow_identity

        tags = {f"bakeoff.{k}": str(v) for k, v in mlflow_identity(info, job.leg_backend).items()
                if v not in (None, "")}
        tags["mlflow.runName"] = f"{self.leg}-s{self.seed}"
        self.sink = None
        if self.rank == 0:
            # Before the backend: a client process it starts is started before torch_xla makes a
            # client (no fork after that). The run is made once the backend is there, as it was.
            self.sink = MlflowSink(
                tracking_uri=environ.get("MLFLOW_TRACKING_URI"),
                experiment=job.mlflow_experiment or environ.get("MLFLOW_EXPERIMENT_NAME"),
                run_name=f"{self.leg}-s{self.seed}", tags=tags,
                params=dict(sorted(hps.items())),
                artifact_location=job.mlflow_artifact_location or None,
                job_key=job.job_key or None, begin=False,
                datasets={name: str(path) for name, path in env.channels.items() if name != "code"},
            )
        try:
            self._start_backend(env, environ)
        except BaseException as exc:
            if self.sink is not None:
                self.sink.abandon()
            if isinstance(exc, Exception):
                # Whatever it says (a PJRT INTERNAL status, a provider error, no driver), a backend that does not
                # start is the platform's: the job exits non-zero and is never served from the step cache.
                from bakeoff_runtime.training.failure_cause import BackendStartError

                raise BackendStartError(f"the {self.backend_name} backend did not start on this instance: "
                                        f"{type(exc).__name__}: {exc}") from exc
            raise
        if self.sink is not None:
            self.sink.begin()

        self.telemetry = Telemetry(env.model_dir, info, sink=self.sink, rank=self.rank, started_at=self.started_at)
        self.telemetry.phase("starting")

        self._loop_started: float | None = None
        self._first_step_done: float | None = None
        self._first_loss: float | None = None
        self._window: tuple[int, float, float] | None = None  # (step, time, units so far)
        self._units = 0.0
        # (step, synced time, units so far, validation seconds so far)
        self._steady: tuple[int, float, float, float] | None = None
        self._last: tuple[int, float, float, float] | None = None
        self._validation_time = 0.0
        self._validation_compile = 0.0
        # What the verdict must be able to show it measured (validity.py reads these).
        self._model_record: dict[str, Any] | None = None
        # Whatever the script does beside the Runtime (its own optimizer.step(), a model it never
        # gave to rt.prepare, a device of its own choosing): training/evidence.py.
        from bakeoff_runtime.training.evidence import DeviceWatch

        self._device_watch = DeviceWatch()
        self._device_watch.install()
        self._graphs_at_steady: int | None = None
        self._validation_graphs_after_steady = 0
        # Non-finite losses on lazy/async devices: see _watch_finite.
        self._first_bad: torch.Tensor | None = None  # device tensor: first step with a non-finite loss, or -1
        self._step_t: torch.Tensor | None = None  # device tensor: steps watched so far, minus one
        self._watch_offset = 0  # the step number of the first watched step (resumed runs start later)
        self._pending_loss: tuple[int, torch.Tensor] | None = None
        self._step_t_started: int | None = None
        self.steps_completed = 0
        self.last_train_loss: float | None = None
        self.validation: dict[str, float] = {}
        self.validation_history: list[dict[str, Any]] = []
        self.unit = "tokens"
        self.extra: dict[str, Any] = {}
        warm = hps.get("warmup_exclude_steps")
        self.warmup_exclude = int(warm) if warm is not None else max(2, min(10, (self.max_steps or 20) // 10))
        self._finished = False
        self._previous_sigterm: Callable[[int, FrameType | None], Any] | int | None = None

    def _start_backend(self, env: TrainingEnv, environ) -> None:
        self._xla_cache = None
        row = BACKENDS.get(self.backend_name)
        self._torch_device = row.torch_device if row else "cpu"
        self._torch_neuronx = bool(row and row.torch_neuronx)
        # PyTorch/XLA on the CPU (an emulated trn leg, the Preflight step): its own persistent cache.
        if self._torch_device == "xla" and environ.get("PJRT_DEVICE", "").upper() == "CPU" and self.rank == 0:
            from bakeoff_runtime.training.graph_cache import xla_persistent_cache

            self._xla_cache = xla_persistent_cache(self.cache_location)  # before anything compiles
        self.backend = get_backend(self.backend_name, self.precision, self.local_rank)
        self.preflight = None
        # The probes read PyTorch/XLA's metrics (bakeoff_runtime/training/probes.py).
        if JobEnvironment.from_environ(environ).preflight and self._torch_device == "xla" and self.rank == 0:
            from bakeoff_runtime.training.probes import Preflight

            self.preflight = Preflight(self.backend, env.model_dir)
        self._step_index = 0
        self._joined_process_group = False
        if self.world_size > 1 and not torch.distributed.is_initialized():
            self._joined_process_group = True
            if self.backend.distributed_backend == "xla":
                import torch_xla.distributed.xla_backend  # noqa: F401  (registers "xla")

                torch.distributed.init_process_group("xla", init_method="xla://")
            else:
                torch.distributed.init_process_group(self.backend.distributed_backend)
        self.device = self.backend.device()
        seed_everything(self.seed)

    # --- construction ---------------------------------------------------------------
    @classmethod
    def from_environment(cls, started_at: float | None = None) -> Runtime:
        return cls(TrainingEnv.from_environ(), started_at=started_at)

    def hp(self, name: str, default: Any = None) -> Any:
        return self.hps.get(name, default)

    def prepare(self, model: torch.nn.Module) -> torch.nn.Module:
        """Move to the device (re-tying shared weights) and wrap for data parallelism."""
        before = _unique_parameters(model)
        model = model.to(self.device)
        if _unique_parameters(model) != before:
            # PyTorch/XLA's .to() un-ties shared parameters (e.g. tied embeddings):
            # the leg would silently train a bigger model. Re-tie or say so.
            tie_weights: Callable[[], object] | None = getattr(model, "tie_weights", None)
            if tie_weights is not None:
                tie_weights()
            if _unique_parameters(model) != before:
                self.extra.setdefault("warnings", []).append(
                    f"moving the model to {self.device} changed its parameter count; shared weights were "
                    "un-tied (give the model a tie_weights() method)")
                print(f"[bakeoff] WARNING: {self.extra['warnings'][-1]}", flush=True)
        if self.preflight is not None:
            self.preflight.watch_model(model)
        if self.device.type != "cpu" and self._first_bad is None:
            self._init_watch(self.device)  # before the loop, so no step's graph creates them
        model = self.backend.wrap_model(model, self.world_size)
        if self.torch_compile:
            model = self._compile(model)
        return model

    def _compile(self, model: torch.nn.Module) -> torch.nn.Module:
        """torch.compile with the inductor cache at the job's compile-cache location."""
        from bakeoff_runtime.training.graph_cache import local_dir, restore

        location = self.cache_location or str(self.env.output_dir / "inductor-cache")
        self._inductor_location = location
        self._inductor_dir, self._inductor_sync = local_dir(location, Path("/tmp/bakeoff-inductor-cache"))
        self._inductor_restore = restore(location, self._inductor_dir)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(self._inductor_dir)
        self._isa_replayed = False
        if self._torch_device == "cpu":  # inductor's CPU code generation probes the vector ISA
            from bakeoff_runtime.training.graph_cache import remember_vec_isa_probe

            self._isa_replayed = remember_vec_isa_probe(self._inductor_dir)
        os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
        os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "1")
        # torch's annotation is compile(Callable) -> Callable; a Module comes back as a Module (OptimizedModule).
        return cast(torch.nn.Module, torch.compile(model))

    def _cache_outcome(self) -> dict[str, Any] | None:
        if self.torch_compile and hasattr(self, "_inductor_dir"):  # prepare() compiled the model
            from bakeoff_runtime.training.graph_cache import inductor_counters, save

            counts = inductor_counters()
            sync = self._inductor_sync and self.rank == 0
            saved = save(self._inductor_dir, self._inductor_location) if sync else None
            return {"kind": "inductor", "location": self.cache_location, "restored": self._inductor_restore,
                    **counts, "state": "warm" if counts.get("hits") else "cold", "saved": saved,
                    "vec_isa_probe_replayed": self._isa_replayed}
        if self._xla_cache is not None:
            from bakeoff_runtime.training.graph_cache import xla_cache_outcome

            out = xla_cache_outcome(self._xla_cache) or {}  # a state in, a state out
            return {"kind": "xla-persistent", **out,
                    "state": "warm" if out.get("hits") else "cold"}
        if self._torch_neuronx and self.cache_location:
            return {"kind": "neuron", "location": self.cache_location, "state": "unknown",
                    "note": "the Neuron compiler's cache (NEURON_COMPILE_CACHE_URL); hits are in its log"}
        return None

    def _mark_loop_start(self) -> None:
        if self._loop_started is None:
            self._loop_started = time.time()
            # A torch.compile'd model compiles on its first call, which is this step's forward pass
            # (torch.compile only wraps the model, which is compiled when it is first invoked: PyTorch forum,
            # "Multiple compiled versions of the same model"; PyTorch's torch.compile tutorial); a lazy
            # device compiles at the step's sync (optimizer_step); an eager one has nothing to compile.
            if self.torch_compile:
                self.telemetry.phase("compiling")
            elif not self.backend.lazy:
                self.telemetry.phase("training")

    def autocast(self):
        self._mark_loop_start()
        if self.preflight is not None and not self.preflight.in_step and (
                self.max_steps is None or self._step_index < self.max_steps):
            self.preflight.begin_step(self._step_index)
        return self.backend.autocast()

    def optimizer_step(self, optimizer: torch.optim.Optimizer, clip_grad_norm: float = 0.0) -> None:
        """Average gradients across ranks, clip their global norm (0 = off), step, end the step.
        The same order on every backend, so the legs run one algorithm."""
        self._mark_loop_start()
        if self._model_record is None:
            self._model_record = model_record(optimizer)
        if self.backend.lazy and self._step_index == 0:
            # Until this sync the step's ops are only traced; the sync compiles the graph and runs it
            # (contract/phases.py), the half minute an emulated trn leg spends before its first step.
            self.telemetry.phase("compiling")
        self._record_watch()  # the previous step's loss check, inside this step's graph
        self.backend.optimizer_step(optimizer, clip_grad_norm)
        self.backend.mark_step()
        if self.preflight is not None:
            self.preflight.end_step(self._step_index)
        self._step_index += 1

    # --- telemetry ------------------------------------------------------------------
    def _needs_sync(self, step: int) -> bool:
        last = self.max_steps is not None and step == self.max_steps - 1
        return step == 0 or step == self.warmup_exclude or step % self.log_interval == 0 or last

    def _watch_finite(self, step: int, loss) -> None:
        """Note the first step whose loss was not finite, without a device sync.

        On the host CPU the check is immediate. On lazy and asynchronous devices fetching
        every loss would stall the step, so the loss is kept and the next optimizer step
        records, inside its own graph, a tiny device-side update of "first bad step"
        (device tensors created before the loop, so the step's graph is the same every
        step and nothing recompiles); it is read at the next logged step.

        Under neuron_parallel_compile (`extracting_graphs`) the loss is watched all the same, only
        never raised on: the watch's ops are part of every training step's graph, and the
        Neuron cache is looked up per compiled graph (aws-neuron-sdk neuron-caching.rst), so a
        step graph extracted without them would be a miss in every training job."""
        if not torch.is_tensor(loss):
            if not math.isfinite(float(loss)) and not self.extracting_graphs:
                raise Diverged(f"loss is {float(loss)} at step {step}")
            return
        if loss.device.type == "cpu":
            value = float(loss.detach())
            if not math.isfinite(value) and not self.extracting_graphs:
                raise Diverged(f"loss is {value} at step {step}")
            return
        self._pending_loss = (step, loss.detach())

    def _init_watch(self, device) -> tuple[torch.Tensor, torch.Tensor]:
        """(first bad step, steps watched - 1), the watch's two device tensors."""
        self._first_bad = first_bad = torch.full((), -1, dtype=torch.int64, device=device)
        self._step_t = step_t = torch.full((), -1, dtype=torch.int64, device=device)
        self.backend.mark_step()  # materialise them now, not inside the first step's graph
        return first_bad, step_t

    def _record_watch(self) -> None:
        if self._pending_loss is None:
            return
        step, loss = self._pending_loss
        self._pending_loss = None
        if self._first_bad is None or self._step_t is None:  # set together, by _init_watch
            first_bad, step_t = self._init_watch(loss.device)
        else:
            first_bad, step_t = self._first_bad, self._step_t
        if self._step_t_started is None:
            self._step_t_started = self._watch_offset = step
        self._step_t = step_t = step_t + 1
        bad = ~torch.isfinite(loss.float())
        self._first_bad = torch.where((first_bad < 0) & bad, step_t + self._watch_offset, first_bad)

    def _raise_if_went_bad(self, noticed_at: int) -> None:
        if self._first_bad is None or self.extracting_graphs:
            return
        first = int(self._first_bad.item())
        if first >= 0:
            raise Diverged(f"loss became non-finite at step {first} (noticed at step {noticed_at}, the next "
                           "device synchronisation)")

    def _sync_now(self) -> float:
        """A device-synchronised timestamp: queued device work is done when it is taken."""
        self.backend.synchronize()
        return time.time()

    @contextmanager
    def validating(self):
        """Wrap validation in this: its time (between two device syncs) is kept out of
        the training throughput, and reported as validation time."""
        start = self._sync_now()
        before = self.backend.compile_stats()
        compiled = before.get("compile_time_s") or 0.0
        self.telemetry.phase("evaluating")
        try:
            yield
        finally:
            self._validation_time += self._sync_now() - start
            after = self.backend.compile_stats()
            if self._graphs_at_steady is not None and after.get("compiled_graphs") is not None:
                self._validation_graphs_after_steady += after["compiled_graphs"] - (before.get("compiled_graphs") or 0)
            # Graphs compiled for validation are inside its time already: keep them out of
            # the compile time the throughput cross-check subtracts from the training loop.
            self._validation_compile += (after.get("compile_time_s") or 0.0) - compiled
            if self.max_steps is None or self.steps_completed < self.max_steps:  # steps left: back to them
                self.telemetry.phase("training")

    def track_step(self, step: int, loss: torch.Tensor | float, tokens: int | None = None,
                   samples: int | None = None, **values: float) -> None:
        """Call once per optimizer step. Cheap except every `log_interval` steps,
        where it synchronises the device, fetches the loss and logs a line."""
        self._mark_loop_start()
        if tokens is not None:
            self.unit = "tokens"
        elif samples is not None:
            self.unit = "samples"
        self._units += float(tokens if tokens is not None else (samples or 0))
        self.steps_completed = step + 1
        self._watch_finite(step, loss)
        if not self._needs_sync(step):
            return
        value = float(loss.detach().float().item()) if torch.is_tensor(loss) else float(loss)
        now = self._sync_now()  # the step's work is done on the device
        self.telemetry.phase("training")  # a step is done (its graph compiled, if it had one to compile)
        self._raise_if_went_bad(step)
        self.last_train_loss = value
        record: dict[str, Any] = {"train_loss": value}
        if step == 0:
            self._first_step_done = now
            self._first_loss = value
            self.telemetry.say(time_to_first_step_s=round(now - self.started_at, 3))
        if step >= self.warmup_exclude and self._steady is None:
            self._steady = (step, now, self._units, self._validation_time)
            self._graphs_at_steady = self.backend.compile_stats().get("compiled_graphs")
        if self._last is not None and step > self._last[0]:
            dt = now - self._last[1] - (self._validation_time - self._last[3])
            if dt > 0:
                record[f"{self.unit}_per_sec"] = (self._units - self._last[2]) / dt
                record["step_time_s"] = dt / (step - self._last[0])
        self._last = (step, now, self._units, self._validation_time)
        record.update({k: float(v) for k, v in values.items()})
        self.telemetry.log("train", step, **record)
        self._check_divergence(step, value)

    def _check_divergence(self, step: int, value: float) -> None:
        if self.extracting_graphs:
            return
        if not math.isfinite(value):
            raise Diverged(f"loss is {value} at step {step}")
        if self._first_loss is not None and step > 0 and value > self.divergence_factor * max(self._first_loss, 1e-8):
            raise Diverged(f"loss {value:.4g} at step {step} exceeds {self.divergence_factor:g}x "
                           f"the initial loss {self._first_loss:.4g}")

    def log_validation(self, step: int, **metrics: float) -> None:
        metrics = {k: float(v) for k, v in metrics.items()}
        self.validation = metrics
        self.validation_history.append({"step": step, **metrics})
        self.telemetry.log("eval", step, **metrics)
        if self.extracting_graphs:
            return
        for k, v in metrics.items():
            if not math.isfinite(v):
                raise Diverged(f"validation metric {k} is {v} at step {step}")

    # --- checkpoints (managed spot, restarts) ---------------------------------------
    def _inputs_fingerprint(self) -> str:
        import hashlib
        import json

        files = []
        for name, path in sorted(self.env.channels.items()):
            if name == "code" or not path.exists():
                continue
            for f in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
                files.append((name, f.name, f.stat().st_size))
        blob = json.dumps({"hps": self.hps, "data": files, "backend": self.backend_name,
                           "world_size": self.world_size}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def save_checkpoint(self, state: dict[str, Any], step: int, final: bool = False) -> None:
        if self.rank != 0:
            return
        self.env.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.env.checkpoint_dir / "checkpoint.pt.tmp"
        torch.save({"step": step, "state": _to_cpu(state), "fingerprint": self._inputs_fingerprint(),
                    "final": final}, tmp)
        os.replace(tmp, self.env.checkpoint_dir / "checkpoint.pt")

    def load_checkpoint(self) -> tuple[int, dict[str, Any]] | None:
        """The checkpoint to resume from: only one written by this same job's inputs,
        and never a finished run's (a re-run must train, not replay)."""
        path = self.env.checkpoint_dir / "checkpoint.pt"
        if not path.exists():
            return None
        blob = torch.load(path, map_location="cpu", weights_only=False)
        if blob.get("final") or blob.get("fingerprint") != self._inputs_fingerprint():
            why = "a finished run's" if blob.get("final") else "written by different inputs"
            print(f"[bakeoff] ignoring checkpoint at step {blob.get('step')}: {why}", flush=True)
            return None
        return int(blob["step"]), blob["state"]

    # --- the end --------------------------------------------------------------------
    def throughput(self, compile_time_s: float | None = None) -> dict[str, Any]:
        """Steady-state rate between two device-synchronised steps after warm-up, validation
        time excluded; and, as a cross-check, units over the whole loop (to the last synced
        step) less compile and validation time."""
        out: dict[str, Any] = {"unit": self.unit, "steady_state_from_step": self.warmup_exclude,
                               "units_processed": self._units,
                               "timing": f"device-synchronised ({self.backend.name}.synchronize) at logged steps; "
                                         "validation time excluded"}
        if self._steady and self._last and self._last[0] > self._steady[0]:
            dt = self._last[1] - self._steady[1] - (self._last[3] - self._steady[3])
            rate = (self._last[2] - self._steady[2]) / dt if dt > 0 else None
            out[f"{self.unit}_per_sec"] = rate
            out["step_time_s"] = dt / (self._last[0] - self._steady[0])
            out["measured_steps"] = self._last[0] - self._steady[0]
            out["window_s"] = round(dt, 4)
        else:
            out[f"{self.unit}_per_sec"] = None
            out["note"] = "too few steps after warm-up to measure a steady state"
        if self._last and self._loop_started:
            training_compile = max(0.0, (compile_time_s or 0.0) - self._validation_compile)
            busy = self._last[1] - self._loop_started - self._last[3] - training_compile
            out["overall_per_sec"] = self._last[2] / busy if busy > 0 else None
        return out

    def finish(self, status: str = "completed", reason: str | None = None, **extra: Any) -> dict[str, Any]:
        if self._finished:
            return {}
        self._finished = True
        self._device_watch.remove()
        try:
            self.backend.synchronize()
        except Exception:
            pass
        stats = self.backend.compile_stats()
        preflight = self.preflight.write() if self.preflight is not None else None
        cache = self._cache_outcome()
        if cache is not None:
            stats["cache"] = cache
        if self.torch_compile and self._first_step_done and self._loop_started:
            # inductor does not report its compile time: first step minus a steady step, labelled.
            steady = self.throughput().get("step_time_s") or 0.0
            stats["compile_time_s"] = round(max(0.0, self._first_step_done - self._loop_started - steady), 3)
            stats["compile_time_basis"] = "first step minus a steady-state step (torch.compile)"
        fallbacks = getattr(self.backend, "fallback_ops", None)
        if self._graphs_at_steady is not None and stats.get("compiled_graphs") is not None:
            # Graphs compiled in the steady state, outside validation: a shape or a value
            # that changes from step to step (each recompile is a stall on Trainium).
            stats["recompiles_after_warmup"] = max(
                0, stats["compiled_graphs"] - self._graphs_at_steady - self._validation_graphs_after_steady)
        summary = {
            "status": status,
            "reason": reason,
            "steps_completed": self.steps_completed,
            "max_steps": self.max_steps,
            "final_train_loss": self.last_train_loss,
            "metrics": dict(self.validation),
            "validation_history": self.validation_history,
            "throughput": self.throughput(stats.get("compile_time_s")),
            "validation_time_s": round(self._validation_time, 3),
            "time_to_first_step_s": (round(self._first_step_done - self.started_at, 3)
                                     if self._first_step_done else None),
            "first_step_s": (round(self._first_step_done - self._loop_started, 3)
                             if self._first_step_done and self._loop_started else None),
            "training_time_s": (round(time.time() - self._loop_started, 3) if self._loop_started else None),
            "compile": {**stats, **({"fallback_ops": fallbacks()} if fallbacks else {})},
            "peak_device_memory_bytes": self.backend.peak_device_memory_bytes(),
            "first_train_loss": self._first_loss,
            "model": self._model_record or self._device_watch.model,
            "evidence": self._device_watch.record(),
            "environment": {**host_environment(), **self.backend.versions(),
                            "backend_device": self.backend.describe(), **_worker_start()},
            **self.extra,
            **extra,
        }
        if preflight is not None:
            summary["preflight"] = {"verdict": preflight["verdict"], "blockers": preflight["blockers"]}
        mlflow_status = "FINISHED" if status == "completed" else \
            "KILLED" if extra.get("failure_kind") == "interrupted" else "FAILED"
        if self.sink is not None:
            summary["mlflow"] = {"run_id": self.sink.run_id}
            self.sink.set_tags({"bakeoff.status": status})
        body = self.telemetry.write_summary(summary)
        self._publish_outputs()
        if self.sink is not None:
            self.sink.log_artifact(str(self.env.model_dir / "summary.json"))
            result = self.sink.close(mlflow_status)
            # The run id is known only once the sink's thread has started, the wait only now.
            body = self.telemetry.write_summary({**summary, "mlflow": result})
        self._publish_outputs()
        self.telemetry.close()
        return body

    def _publish_outputs(self) -> None:
        # Copies in output/data become SageMaker's small output.tar.gz, which the
        # evaluation step fetches instead of the (possibly large) model.tar.gz.
        if self.rank != 0:
            return
        import shutil

        self.env.output_data_dir.mkdir(parents=True, exist_ok=True)
        for name in ("summary.json", "metrics.jsonl"):
            src = self.env.model_dir / name
            if src.exists():
                shutil.copyfile(src, self.env.output_data_dir / name)
        from bakeoff_runtime.contract.output_digest import record

        for directory in (self.env.model_dir, self.env.output_data_dir):  # the Evaluate step checks it
            record(directory)

    def __enter__(self) -> Runtime:
        # SIGTERM is how a job is stopped (StopTrainingJob, max runtime, `bakeoff run` being
        # stopped): turned into an exception so the summary, the failure file and the MLflow
        # run's KILLED status are written on the way out. A script's own handler is left alone.
        self._previous_sigterm = None
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            self._previous_sigterm = signal.signal(signal.SIGTERM, _stop_on_sigterm)
        return self

    def _final_finite_check(self) -> None:
        """The last steps' losses, which no later logged step has looked at."""
        if self.extracting_graphs:
            return
        if self._pending_loss is not None:
            step, loss = self._pending_loss
            self._pending_loss = None
            value = float(loss.float().item())
            if not math.isfinite(value):
                raise Diverged(f"loss is {value} at step {step}")
        self._raise_if_went_bad(self.steps_completed - 1)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None
        try:
            return self._end(exc_type, exc, tb)
        finally:
            self._leave_process_group()

    def _leave_process_group(self) -> None:
        """While the interpreter is whole, not at its exit (training/process_group.py says why)."""
        if self._joined_process_group:
            self._joined_process_group = False
            from bakeoff_runtime.training.process_group import leave

            leave("the Runtime's")

    def _end(self, exc_type, exc, tb) -> bool:
        if exc is None:
            try:
                self._final_finite_check()
            except Diverged as late:
                self.telemetry.say(diverged=1)
                self.finish("diverged", reason=str(late))
                if _fail_on_blocker():
                    self.env.write_failure(f"preflight: the run diverged: {late}")
                    raise SystemExit(1) from None
                return False
            body = self.finish("completed")
            blockers = (body.get("preflight") or {}).get("blockers")
            if blockers and _fail_on_blocker():
                # As a pipeline step: fail before any Trainium job is started.
                report = json.loads((self.env.model_dir / "preflight.json").read_text())
                lines = [f"{p['kind']}: {p.get('op') or p.get('cause') or p.get('parameter')} "
                         f"at {p.get('where') or '-'}" for p in report["problems"] if p["blocker"]]
                self.env.write_failure(f"preflight: {report['verdict']}: " + "; ".join(lines))
                raise SystemExit(1)
            return False
        if isinstance(exc, Diverged):
            # A diverged run is a result, not a crash: it is reported and counted
            # as unstable by the evaluation, so the job itself succeeds (except as the pipeline's
            # Preflight step, whose gate stops the trn jobs on anything but a completed run).
            self.telemetry.say(diverged=1)
            self.finish("diverged", reason=str(exc))
            if _fail_on_blocker():
                self.env.write_failure(f"preflight: the run diverged: {exc}")
                raise SystemExit(1)
            return True
        first_line = (str(exc).strip().splitlines() or [""])[0]
        reason = f"{exc_type.__name__}: {first_line}"[:500]
        trace = "".join(traceback.format_exception(exc_type, exc, tb))[-3000:]
        self.env.write_failure(f"{exc_type.__name__}: {exc}\n\n{trace}")
        # An interrupt is the operator or the platform stopping the job, not the script failing;
        # a broken collective or a Neuron hardware error is the platform's too (failure_cause.py).
        from bakeoff_runtime.training.failure_cause import INFRASTRUCTURE, infrastructure_cause

        kind = "interrupted" if isinstance(exc, KeyboardInterrupt) else \
            (INFRASTRUCTURE if infrastructure_cause(reason, str(exc)) else "script")
        try:
            self.finish("failed", reason=reason, failure_kind=kind)
        except Exception:
            pass
        return False


def _fail_on_blocker() -> bool:
    """As the pipeline's Preflight step: a blocker (or a diverged run) fails the job."""
    return JobEnvironment.from_environ().preflight_fail_on_blocker


def _worker_start() -> dict[str, str]:
    """How this process started, where that changes a figure: a worker forked from a leg's warm
    interpreter (local runs, bakeoff_runtime.training.warm_server) shares the pages torch's import mapped,
    and its peak host memory counts only those it touched."""
    if os.environ.get(WARM_FORKED_ENV) != "1":
        return {}
    return {"worker_start": "forked from the leg's warm interpreter (peak host memory: only the pages it touched)"}


class Stopped(KeyboardInterrupt):
    """The job was stopped from outside (SIGTERM): an interruption, not a script failure."""


def _stop_on_sigterm(signum, frame):
    raise Stopped("stopped by SIGTERM (the job was stopped from outside)")
