"""Run every leg x seed of a bake-off as a separate local process, then the
evaluation step, then the parity gate: the embedded default, no AWS needed.

Jobs run one at a time by default so throughput figures are not skewed by
sharing cores. A finished job whose inputs did not change is not run again
(content-keyed, like SageMaker step caching); `force=True` re-runs everything.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bundle import EVALUATE_SCRIPT, LAUNCHER, bundle_for
from ..data import prepare_corpus
from ..errors import VERDICT_EXIT, RunError, SpecError
from ..hashing import digest, file_sha256
from ..loader import spec_base_dir
from ..plan import JobPlan, derive_batching, evaluation_config, plan_jobs, spec_hash
from ..spec import BakeoffSpec
from .layout import JobLayout
from .progress import Progress

_STEP_RE = re.compile(r"^\[bakeoff\] step=(\d+)")


@dataclass
class RunResult:
    out_dir: Path
    evaluation: dict[str, Any]
    evaluation_path: Path
    executed: list[str]
    skipped: list[str]

    @property
    def verdict(self) -> str:
        return self.evaluation["verdict"]

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.verdict]


def gpu_available() -> bool:
    # Decided without importing torch: the orchestrator stays light.
    return bool(shutil.which("nvidia-smi")) and Path("/dev/nvidia0").exists()


def _channel_fingerprint(path: Path) -> str:
    manifest = path.parent / "manifest.json"
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    if manifest.exists():
        shas = {c["path"]: c["sha256"] for c in json.loads(manifest.read_text())["channels"].values()}
        rel = [f.relative_to(path.parent).as_posix() for f in files]
        if all(r in shas for r in rel):
            return digest(sorted(shas[r] for r in rel))
    return digest([(f.name, file_sha256(f)) for f in files])


class LocalExecutor:
    def __init__(self, spec: BakeoffSpec, out_dir: Path, force: bool = False, console=None,
                 use_gpu: bool | None = None, python: str | None = None, mlflow: bool | None = None,
                 rule_change: str | None = None):
        self.spec = spec
        self.rule_change = rule_change
        self._rule_original: dict | None = None
        self.out = Path(out_dir).resolve()
        self.force = force
        self.progress = Progress(console)
        self.use_gpu = gpu_available() if use_gpu is None else use_gpu
        self.python = python or sys.executable
        self.mlflow = spec.mlflow.enabled if mlflow is None else mlflow
        self.base_dir = spec_base_dir(spec)

    # --- inputs ---------------------------------------------------------------------
    def _channels(self) -> tuple[dict[str, Path], dict[str, Any]]:
        if not self.spec.data.channels:
            if not self.spec.entrypoint.builtin:
                return {}, {}  # a custom script may make its own data
            manifest = prepare_corpus(self.out / "data")
            return {n: self.out / "data" / n for n in manifest["channels"]}, manifest
        channels = {}
        for name, uri in self.spec.data.channels.items():
            if uri.startswith("s3://"):
                raise SpecError(f"channel {name!r} is {uri}: the local executor reads local paths only; "
                                "download it first or run on SageMaker (`bakeoff deploy`)",
                                field=f"data.channels.{name}")
            path = (self.base_dir / uri).resolve()
            if not path.exists():
                raise SpecError(f"channel {name!r}: {path} does not exist (`bakeoff data DIR` makes the "
                                "built-in corpus)", field=f"data.channels.{name}")
            channels[name] = path
        return channels, {}

    def _mlflow_env(self) -> dict[str, str]:
        if not self.mlflow:
            return {}
        if self.spec.mlflow.tracking_uri:  # a server: it decides where artifacts go
            return {"MLFLOW_TRACKING_URI": self.spec.mlflow.tracking_uri,
                    "BAKEOFF_MLFLOW_EXPERIMENT": self.spec.experiment, "BAKEOFF_MLFLOW_ARTIFACT_LOCATION": ""}
        (self.out / "mlflow").mkdir(parents=True, exist_ok=True)
        return {"MLFLOW_TRACKING_URI": f"sqlite:///{self.out / 'mlflow' / 'mlflow.db'}",
                "BAKEOFF_MLFLOW_EXPERIMENT": self.spec.experiment,
                "BAKEOFF_MLFLOW_ARTIFACT_LOCATION": (self.out / "mlflow" / "artifacts").as_uri()}

    # --- the run --------------------------------------------------------------------
    def run(self) -> RunResult:
        spec = self.spec
        self.out.mkdir(parents=True, exist_ok=True)
        emulations = {}
        for leg in spec.legs:
            try:
                emulations[leg.name] = leg.kind.local_emulation(leg.backend, self.use_gpu)
            except ValueError as exc:
                raise SpecError(f"leg {leg.name!r}: {exc}", field="legs") from None
        bundle = bundle_for(spec, self.base_dir)
        channels, manifest = self._channels()
        data_fp = {name: _channel_fingerprint(path) for name, path in sorted(channels.items())}
        jobs = plan_jobs(spec, world_size_of=lambda leg: 1)
        mlflow_env = self._mlflow_env()

        # Seed-major order: an interrupted run still has every leg represented.
        legs = [leg.name for leg in spec.legs]
        ordered = sorted(jobs, key=lambda j: (spec.seed_list.index(j.seed), legs.index(j.leg.name)))
        keys = {job.name: digest({"hps": job.hyperparameters, "env": job.environment, "code": bundle.sha256,
                                  "data": data_fp, "backend": emulations[job.leg.name].backend,
                                  "emu": emulations[job.leg.name].environment,
                                  "device": emulations[job.leg.name].device_label, "mlflow": bool(mlflow_env)})
                for job in ordered}
        reuse = {job.name for job in ordered
                 if not self.force and self._is_done(JobLayout(self.out / "jobs" / job.name), keys[job.name])}
        self._rule_original = self._check_rule(reuse)
        (self.out / "spec.json").write_text(json.dumps(spec.canonical(), indent=2, sort_keys=True) + "\n")
        self._write_plan(jobs, emulations, bundle.sha256, data_fp, manifest)
        for leg in spec.legs:
            emu = emulations[leg.name]
            self.progress.note(f"leg {leg.name}: {leg.instance_type}/{leg.backend} -> {emu.device_label}")
            if leg.precompile:
                self.progress.note(f"leg {leg.name}: precompile skipped locally (neuron_parallel_compile exists "
                                   "only in Neuron images, and PyTorch/XLA on CPU cannot load cached executables)")

        executed, skipped = [], []
        self.progress.start(len(ordered))
        try:
            for i, job in enumerate(ordered, 1):
                emu = emulations[job.leg.name]
                layout = JobLayout(self.out / "jobs" / job.name)
                if job.name in reuse:
                    skipped.append(job.name)
                    self.progress.skipped(i, job.name)
                    continue
                self._run_job(i, job, layout, keys[job.name], bundle, channels, emu, mlflow_env)
                executed.append(job.name)
        finally:
            self.progress.stop()

        evaluation, path = self._evaluate(jobs, emulations, bundle, mlflow_env)
        return RunResult(self.out, evaluation, path, executed, skipped)

    def _check_rule(self, reuse: set[str]) -> dict | None:
        """The parity rule is fixed before the data: the first run into a directory records it,
        and deciding finished jobs under another rule needs `rule_change` (a reason), after
        which the evaluation shows the original rule beside the new one."""
        path = self.out / "parity-rule.json"
        current = self.spec.parity_rule()
        try:
            recorded = json.loads(path.read_text()).get("rule")
        except (FileNotFoundError, ValueError, AttributeError):
            recorded = None
        if recorded is None or not reuse:  # no finished jobs are kept: this rule comes before their data
            path.write_text(json.dumps({"rule": current, "note": "fixed before the jobs of this directory ran"},
                                       indent=2, sort_keys=True) + "\n")
            return None
        if recorded == current:
            return None
        changed = ", ".join(f"{k} {recorded.get(k)!r} -> {current.get(k)!r}" for k in current
                            if recorded.get(k) != current.get(k))
        if not self.rule_change:
            raise SpecError(f"the parity rule changed after its jobs ran ({changed}); deciding finished runs under "
                            f"a rule chosen after seeing them is not a test. Keep the rule, run into a new --out, "
                            f"re-run the jobs with --force, or pass --rule-change 'WHY' to re-decide and show both "
                            f"rules", file=str(path))
        self.progress.note(f"parity rule changed after the data ({changed}): {self.rule_change}")
        return recorded

    def _write_plan(self, jobs: list[JobPlan], emulations, bundle_sha: str, data_fp, manifest) -> None:
        spec = self.spec
        legs = {}
        for leg in spec.legs:
            target = derive_batching(spec.training.global_batch_size, leg.devices,
                                     spec.training.max_per_device_batch_size)
            local = next(j.batching for j in jobs if j.leg.name == leg.name)
            legs[leg.name] = {"instance_type": leg.instance_type, "instance_count": leg.instance_count,
                              "backend": leg.backend, "precision": leg.precision,
                              "emulated_on": emulations[leg.name].device_label,
                              "local_backend": emulations[leg.name].backend,
                              "batching": {"target": target.as_dict(), "local": local.as_dict()}}
        plan = {"bakeoff": spec.name, "spec_hash": spec_hash(spec), "code_sha256": bundle_sha,
                "data": {"fingerprints": data_fp, "manifest": manifest}, "legs": legs,
                "jobs": [j.name for j in jobs]}
        (self.out / "plan.json").write_text(json.dumps(plan, indent=2, sort_keys=True) + "\n")

    @staticmethod
    def _is_done(layout: JobLayout, key: str) -> bool:
        try:
            meta = json.loads(layout.meta.read_text())
        except (FileNotFoundError, ValueError):
            return False
        return meta.get("job_key") == key and meta.get("status") in ("completed", "diverged") \
            and (layout.model / "summary.json").exists()

    def _run_job(self, index: int, job: JobPlan, layout: JobLayout, key: str, bundle, channels, emu,
                 mlflow_env) -> None:
        layout.reset()
        layout.lay_out(job.hyperparameters, channels, job.leg.instance_type, hosts=1)
        bundle.write_to(layout.code)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "BAKEOFF_", "PJRT_", "MLFLOW_"))}
        env.update(job.environment)
        env.update(emu.environment)
        env.update(layout.environment(channels, job.hyperparameters))
        env.update(mlflow_env)
        env.update({"BAKEOFF_BACKEND": emu.backend, "BAKEOFF_EMULATED_ON": emu.device_label,
                    "BAKEOFF_SPEC_HASH": spec_hash(self.spec),
                    "BAKEOFF_JOB_KEY": key, "BAKEOFF_NPROC_PER_NODE": "1", "PYTHONUNBUFFERED": "1",
                    "SM_CURRENT_INSTANCE_TYPE": job.leg.instance_type})
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        cache = self._compile_cache(job, emu)
        if cache:
            env["BAKEOFF_COMPILE_CACHE"] = str(cache)
        cmd = [self.python, str(layout.code / LAUNCHER), str(layout.code / bundle.script)]
        total = int(job.hyperparameters.get("max_steps", 0)) or None
        self.progress.begin(index, job.name, total)
        started = time.time()
        with open(layout.log, "w") as log:
            proc = subprocess.Popen(cmd, cwd=layout.code, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, bufsize=1)
            try:
                for line in proc.stdout:
                    log.write(line)
                    m = _STEP_RE.match(line)
                    if m:
                        self.progress.advance(int(m.group(1)) + 1)
                code = proc.wait()
            except BaseException:
                proc.kill()
                proc.wait()
                raise
        wall = time.time() - started
        summary_path = layout.model / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
        status = summary.get("status") or ("failed" if code else "completed")
        reason = summary.get("reason")
        failure = layout.output / "failure"
        lost = code < 0  # killed by a signal: the machine or an operator stopped it, not the script
        if lost:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            status, reason = "failed", f"killed by {name}" + (f" (last words: {reason})" if reason else "")
        elif code and not reason:
            reason = failure.read_text().splitlines()[0] if failure.exists() else f"process exited with code {code}"
        meta = {"job_key": key, "name": job.name, "leg": job.leg.name, "seed": job.seed, "status": status,
                "reason": reason, "exit_code": code, "lost": lost, "billable_s": round(wall, 3),
                "billable_basis": "local wall time (estimate)", "started": started, "log": str(layout.log)}
        layout.meta.write_text(json.dumps(meta, indent=2) + "\n")
        self.progress.finish(index, job.name, status, wall, summary, reason)

    def run_preflight(self, leg_name: str, steps: int) -> dict[str, Any]:
        """A few steps of `leg_name`'s job on PyTorch/XLA's CPU device with the
        preflight probes on; returns the report (preflight.json)."""
        spec = self.spec
        self.out.mkdir(parents=True, exist_ok=True)
        bundle = bundle_for(spec, self.base_dir)
        channels, _ = self._channels()
        job = next(j for j in plan_jobs(spec, world_size_of=lambda leg: 1)
                   if j.leg.name == leg_name and j.seed == spec.seed_list[0])
        job.hyperparameters.update(max_steps=steps, log_interval=1, eval_interval=0, warmup_exclude_steps=1,
                                   checkpoint_interval=0)
        layout = JobLayout(self.out / "preflight" / leg_name)
        from estimators.base import LocalEmulation

        emu = LocalEmulation("neuron", "local xla:cpu", {"PJRT_DEVICE": "CPU", "BAKEOFF_PREFLIGHT": "1"})
        self.mlflow = False
        self.progress.start(1)
        try:
            self._run_job(1, job, layout, "preflight", bundle, channels, emu, {})
        finally:
            self.progress.stop()
        report_path = layout.model / "preflight.json"
        if not report_path.exists():
            meta = json.loads(layout.meta.read_text())
            raise RunError(f"preflight of leg {leg_name} did not finish: {meta.get('reason')} "
                               f"(see {layout.log})")
        return json.loads(report_path.read_text())

    def _compile_cache(self, job: JobPlan, emu) -> Path | None:
        """The local compile cache, under the same key scheme as the S3 one."""
        if emu.backend != "neuron" and job.leg.compile != "torch_compile":
            return None
        from importlib.metadata import PackageNotFoundError, version

        from estimators.compile_cache import cache_key

        versions = []
        for dist in ("torch", "torch-xla"):
            try:
                versions.append(f"{dist}=={version(dist)}")
            except PackageNotFoundError:
                pass
        key = cache_key(backend=emu.backend, image="local:" + ",".join(versions), precision=job.leg.precision,
                        environment={**job.environment, **emu.environment}, hyperparameters=job.hyperparameters,
                        world_size=job.batching.world_size)
        return self.out / "compile-cache" / emu.backend / key

    def _evaluate(self, jobs: list[JobPlan], emulations, bundle, mlflow_env) -> tuple[dict, Path]:
        from estimators.prices import price_for

        from ..prices import cached

        spec = self.spec
        refreshed = cached(spec.storage.region)
        eval_dir = self.out / "evaluation"
        eval_dir.mkdir(parents=True, exist_ok=True)
        job_keys = sorted(json.loads((self.out / "jobs" / j.name / "job.json").read_text()).get("job_key", "")
                          for j in jobs if (self.out / "jobs" / j.name / "job.json").exists())
        config = evaluation_config(
            spec, prices={leg.name: price_for(leg.instance_type, leg.price_per_hour, refreshed) for leg in spec.legs},
            images={}, emulated_on={name: emu.device_label for name, emu in emulations.items()},
            cost_basis="emulated: local wall time x on-demand price of the instance the leg stands for; "
                       "not indicative of the target hardware",
            mlflow=({"tracking_uri": mlflow_env["MLFLOW_TRACKING_URI"], "experiment": spec.experiment,
                     "artifact_location": mlflow_env["BAKEOFF_MLFLOW_ARTIFACT_LOCATION"] or None,
                     "parent_key": digest(job_keys)} if mlflow_env else {}))
        config["emulated"] = True
        if self._rule_original is not None:
            config["rule_original"] = self._rule_original
            config["rule_change_reason"] = self.rule_change
        config_path = eval_dir / "config.json"
        config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        code_dir = self.out / "code"
        bundle.write_to(code_dir)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "BAKEOFF_", "PJRT_"))}
        env["PYTHONUNBUFFERED"] = "1"
        self.progress.note("evaluation: deciding parity")
        proc = subprocess.run([self.python, str(code_dir / EVALUATE_SCRIPT), "--jobs", str(self.out / "jobs"),
                               "--config", str(config_path), "--out", str(eval_dir)],
                              env=env, capture_output=True, text=True)
        (eval_dir / "stdout.log").write_text(proc.stdout + proc.stderr)
        path = eval_dir / "evaluation.json"
        if proc.returncode != 0 or not path.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise RunError(f"the evaluation step failed: {tail[0]} (see {eval_dir / 'stdout.log'})")
        return json.loads(path.read_text()), path
