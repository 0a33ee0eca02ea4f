"""The embedded default: run the compiled pipeline on this machine, no AWS needed.

The local executor does not build jobs of its own. It compiles the spec into the very
pipeline definition `bakeoff synth` writes, puts its assets in a local S3 store, and
runs it: each TrainingStep's CreateTrainingJob request as a container would (its
hyperparameters, channels and environment laid out in an `/opt/ml` tree, its
ContainerEntrypoint run), the Evaluate step's CreateProcessingJob from its
ContainerArguments, and the gate from its conditions, PropertyFile and JsonGet. What
must differ here is one printed list (substitutions.py).

Training jobs run up to `jobs` at a time (parallel.py: decided as if one at a time; `--jobs 1`
gives each job the whole machine, for throughput figures not skewed by sharing it). A job
whose substituted request did not change is not run again (like SageMaker's step
cache); `force=True` re-runs everything. A run directory is used by one run at a time.
"""
from __future__ import annotations

import json
import math
import os
import signal
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bakeoff.pipelines.errors import VERDICT_EXIT, Interrupted, RunError, SpecError, words
from bakeoff.pipelines.hashing import digest, file_sha256
from bakeoff.pipelines.names import GATE_STEP, PREFLIGHT_STEP
from bakeoff.pipelines.params import FORCE, OUT_DIR, PARAMETERS, RULE_CHANGE_WHY, run_into
from bakeoff.pipelines.plan.emulation import gpu_available
from bakeoff.pipelines.plan.model import Plan, build_plan
from bakeoff.pipelines.spec.model import BakeoffSpec
from bakeoff_runtime import contract
from bakeoff_runtime.contract.documents import Attempt, Evaluation, summary_or_none
from bakeoff_runtime.tracking import net as mlflow_net

from . import looks, questions, step_graph
from .definition import Context, parameter_values, resolve
from .files import recorded_local, write_json_atomically
from .jobs import JobContainer, JobProcess, Outcome, ProcessingRunner, publish_outputs, run_processing, run_training
from .lock import RunLock
from .progress import Progress
from .questions import Question
from .run_rule import Rule, resolved_rule
from .slots import default_jobs

if TYPE_CHECKING:
    from .parallel import ParallelJobs
from .store import LocalS3
from .substitutions import Substitutions, local_runtime

LOCAL_BUCKET = "bakeoff-local"
SUBSTITUTIONS_FILE = "substitutions.json"  # every way this machine stands in for SageMaker, for this run


@dataclass
class RunResult:
    out_dir: Path
    evaluation: Evaluation
    evaluation_path: Path
    executed: list[str]
    skipped: list[str]
    gate: list[dict[str, str]]

    @property
    def verdict(self) -> str:
        return str(self.evaluation["verdict"])

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.verdict]


class LocalExecutor:
    """Runs the compiled pipeline of a spec on this machine (what `bakeoff run` and `run_local` use)."""

    def __init__(self, spec: BakeoffSpec, out_dir: Path, force: bool = False, console=None,
                 use_gpu: bool | None = None, python: str | None = None, mlflow: bool | None = None,
                 rule_change: str | None = None, parameters: dict[str, str] | None = None, progress=None,
                 sequential: dict[str, Any] | None = None, jobs: int | None = None,
                 container: JobContainer | None = None, processor: ProcessingRunner | None = None,
                 fresh_start: str | None = None):
        """`container`: how each training request's container is run (default `jobs.run_training`, the
        request's own command); the seam the engine's tests use to run a torch-free fake in its place.
        `processor`: how the Evaluate step's request is run (default `jobs.run_processing`).
        `fresh_start`: the reason for starting a question already decided over as a new attempt
        (questions.py); without it such a decision is refused."""
        self.spec = spec
        self.out = Path(out_dir).resolve()
        self.force = force
        # `progress`: anything with Progress's methods (the façade's event adaptor); else the terminal display.
        self.progress = progress if progress is not None else Progress(console)
        self.use_gpu = gpu_available() if use_gpu is None else use_gpu
        self.python = python or sys.executable
        self.mlflow = spec.mlflow.enabled if mlflow is None else mlflow
        self.rule_change = rule_change
        self.parameters = dict(parameters or {})
        self._rule: Rule | None = None  # the run's parity rule, resolved with its parameters (run_rule.py)
        self.sequential = sequential  # a round of `--until-decided`: its looks, for the Evaluate step
        self.container: JobContainer = container if container is not None else run_training
        self.processor: ProcessingRunner = processor if processor is not None else run_processing
        self.process = JobProcess()  # the one-at-a-time steps' (Preflight, collective checks, Evaluate)
        # Training jobs at once (slots.py); 1 is one after another, as before `--jobs`.
        self.jobs = max(1, int(jobs)) if jobs else default_jobs(warm_interpreters=_warm_legs(spec))
        self.parallel: ParallelJobs | None = None  # the training jobs' runner while they run
        self.plan: Plan | None = None
        self.look = 1  # which look at this directory's data the decision is (looks.py)
        # Each job's output.tar.gz as it was when the job ended (path, sha256): what the Evaluate step reads,
        # checked again before it runs (verify_outputs), since every job runs as this same user.
        self._outputs: dict[str, tuple[Path, str]] = {}
        self._look_jobs: dict[str, str] = {}  # step name -> job key of the jobs it decides on
        self.fresh_start = fresh_start
        self._question: Question | None = None  # what this run asks, and its attempt at it (questions.py)
        self._attempt: Attempt | None = None

    # --- set-up ---------------------------------------------------------------------------
    def _mlflow_env(self) -> dict[str, str]:
        ENV = contract.ENV
        if not self.mlflow:
            return {}
        # The spec's server, else the one MLflow's own clients would use (MLFLOW_TRACKING_URI),
        # else a store under the run directory.
        server = self.spec.mlflow.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
        if server:  # a server: it decides where artifacts go
            return {"MLFLOW_TRACKING_URI": server, ENV["mlflow_experiment"]: self.spec.experiment}
        store = self.out / "mlflow"
        store.mkdir(parents=True, exist_ok=True)
        env = {"MLFLOW_TRACKING_URI": f"sqlite:///{store / 'mlflow.db'}",
               ENV["mlflow_experiment"]: self.spec.experiment,
               ENV["mlflow_artifact_location"]: (store / "artifacts").as_uri()}
        if not (store / "mlflow.db").exists():
            # The seconds before the first job of a new run directory (MLflow's imports and its schema): said,
            # so that they do not read as a hang.
            self.progress.note(f"MLflow: creating the run's local store ({store}); the jobs start after")
            self._prepare_mlflow_store(env, store)
        return env

    def _prepare_mlflow_store(self, env: dict[str, str], store: Path) -> None:
        """Create the database here, not inside the first job (whose wall time it would join,
        and whose code directory would become the Default experiment's artifact root)."""
        import subprocess

        from bakeoff.pipelines.plan.bundle import entrypoints_dir

        ENV = contract.ENV
        proc = subprocess.run([self.python, "-m", "bakeoff_runtime.tracking.file_store", env["MLFLOW_TRACKING_URI"],
                               env[ENV["mlflow_experiment"]], env[ENV["mlflow_artifact_location"]]],
                              cwd=store, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(entrypoints_dir())})
        if proc.returncode != 0:
            why = (proc.stderr.strip().splitlines() or ["?"])[-1]
            self.progress.note(f"MLflow: could not create the local store ({why}); the jobs will try themselves")

    def _prepare(self, preflight: tuple[str, int] | None = None):
        from bakeoff.pipelines.sagemaker.compiler import compile_plan

        for leg in self.spec.legs:
            try:
                leg.kind.local_emulation(leg.backend_name, self.use_gpu)
            except ValueError as exc:
                raise SpecError(f"leg {leg.name!r}: {exc}", field="legs") from None
        for name, uri in self.spec.data.channels.items():
            if uri.startswith("s3://"):
                raise SpecError(f"channel {name!r} is {uri}: the local executor reads local paths only; "
                                "download it first or run on SageMaker (`bakeoff deploy`)",
                                field=f"data.channels.{name}")
        plan = build_plan(self.spec, local_gpu=self.use_gpu)
        self.plan = plan
        if plan.script is not None and plan.script.missing_here:
            # The jobs run in this Python: a module it lacks would stop every job at its first line.
            from bakeoff.pipelines.spec.loader import locate

            file, line = locate(self.spec, ("entrypoint", "script"))
            raise SpecError(f"the script imports what this Python lacks: {'; '.join(plan.script.missing_here)}; "
                            "no job was started", file=file, line=line, field="entrypoint.script")
        if plan.script is None:
            _check_runtime_packages(plan, self.python, self.use_gpu)
        compiled = compile_plan(plan, bucket=self.spec.storage.bucket or LOCAL_BUCKET, preflight=preflight)
        store = LocalS3(self.out / "s3")
        for asset in compiled.assets:
            store.put(compiled.bucket, asset.key, asset.body)
        subs = Substitutions(plan, self.out, store, python=self.python, gpu=self.use_gpu, mlflow=self._mlflow_env())
        try:
            params = parameter_values(compiled.definition, self.parameters)
        except KeyError as exc:
            raise SpecError(str(exc.args[0]), field=PARAMETERS) from None
        self._resolve_rule(params)
        return plan, compiled, store, subs, params

    # --- the run's rule -------------------------------------------------------------------
    @property
    def attempt(self) -> Attempt | None:
        """This decision's attempt at its question (questions.py), once the run has begun it."""
        return self._attempt

    @property
    def rule(self) -> Rule:
        """The run's parity rule: the spec's with the parameters the run was started with (`--param
        ParityMargin=...`), resolved once; every reader of the run takes it from here."""
        if self._rule is None:
            raise RuntimeError("the run's rule is read before its parameters were resolved")
        return self._rule

    def _resolve_rule(self, params: dict[str, Any]) -> Rule:
        try:
            self._rule = resolved_rule(self.spec, params)
        except ValueError as exc:
            raise SpecError(str(exc), field=PARAMETERS) from None
        return self._rule

    # --- the run --------------------------------------------------------------------------
    def run(self) -> RunResult:
        from bakeoff.pipelines.plan.builtins import missing_requirement

        missing = missing_requirement(self.spec)  # the jobs run in this Python: say so before any starts
        if missing:
            raise SpecError(missing, field="entrypoint.builtin")
        # `validate` asked with the spec's MLflow; --no-mlflow can take away the one source of the parity
        # metric, which would otherwise show only once the first seed's jobs reported none.
        unreachable = self.spec.parity_metric_problem(mlflow=bool(self.mlflow), mlflow_off="--no-mlflow",
                                                      mlflow_on="run without --no-mlflow")
        if unreachable:
            from bakeoff.pipelines.spec.loader import locate

            file, line = locate(self.spec, ("parity", "metric"))
            raise SpecError(f"{unreachable}; no job was started", file=file, line=line, field="parity.metric")
        self.out.mkdir(parents=True, exist_ok=True)
        with RunLock(self.out), _forward_signals(self):
            result = self._run()
        return result

    def _jobs(self, plan: Plan, steps: dict[str, Any], subs: Substitutions, params) -> tuple[dict, dict]:
        """Each training step's job as run here, and its key."""
        from .artifacts import artifact_uris

        jobs, keys = {}, {}
        runtime = local_runtime()
        for name in (j.step_name for j in plan.seed_major):
            request = resolve(steps[name]["Arguments"], Context(params, "", "", model_artifacts=artifact_uris(steps)))
            job = subs.training(name, request, self.out / "jobs" / _job_dir(plan, name))
            jobs[name] = job
            # Like SageMaker's step cache key: the request as run, not where this directory is.
            # The spec hash is a tag on SageMaker (not a cache key): any spec change, even to the
            # parity rule, would otherwise re-run every job.
            environment = {k: v for k, v in job.environment.items() if k != contract.ENV["spec_hash"]}
            material = json.dumps({"hyperparameters": job.hyperparameters, "environment": environment,
                                   "command": job.command, "channels": job.channels, "hosts": job.hosts,
                                   "runtime": runtime}, sort_keys=True).replace(str(self.out), "$RUN")
            keys[name] = digest(material)
        return jobs, keys

    def _context(self, name: str, params, keys: dict[str, str], steps: dict[str, Any]) -> Context:
        from .artifacts import artifact_uris

        execution_id = "local-" + digest(sorted(keys.values()), 12)
        return Context(params, execution_id, f"arn:aws:sagemaker:local:000000000000:pipeline/{name}/"
                                             f"execution/{execution_id}", model_artifacts=artifact_uris(steps))

    def _warn_if_mlflow_is_down(self, subs: Substitutions) -> None:
        uri = subs.mlflow.get("MLFLOW_TRACKING_URI")
        down = mlflow_net.unreachable(uri) if uri else None
        if down:
            self.progress.note(f"MLflow: the tracking server is unreachable ({down}); training goes on, each job "
                               "gives up on MLflow within seconds, and its metrics stay in metrics.jsonl (the "
                               "evaluation back-fills MLflow runs when the server answers)")

    def reevaluate(self) -> RunResult:
        """Decide again from the jobs this directory holds, running none of them: what
        `bakeoff report DIR` does when the jobs changed after the verdict was written.

        The directory is data. Its pipeline.json and code bundle may come from anyone (a
        colleague's tarball, a CI artifact): they are read, never run. The Evaluate request is
        compiled again from the run's spec.json by this bakeoff, and this bakeoff's evaluate.py
        decides from the job records, summaries and metrics."""
        from bakeoff.pipelines.sagemaker.compiler import compile_plan, pipeline_name

        with RunLock(self.out), _forward_signals(self):
            if recorded_local(self.out).get("mlflow") is False:  # a run made with --no-mlflow logs nothing now
                self.mlflow = False
            named = self.spec.mlflow.tracking_uri
            if self.mlflow and named:
                # The directory's own spec.json names that server: a handed-over directory must not send this
                # machine's requests (or write tables) wherever it says. Where the user's own settings point
                # (MLFLOW_TRACKING_URI), or nowhere.
                self.spec = self.spec.model_copy(update={"mlflow": self.spec.mlflow.model_copy(
                    update={"tracking_uri": None})})
                if not os.environ.get("MLFLOW_TRACKING_URI"):
                    self.mlflow = False
                    self.progress.note(f"MLflow: not logging this decision: the run directory's spec.json names "
                                       f"{named}, and `bakeoff report` sends nothing where only the directory's "
                                       "own files say; set MLFLOW_TRACKING_URI to log it there")
            stored = self._stored_definition()
            store = LocalS3(self.out / "s3")
            plan = build_plan(self.spec, bundle=self._uploaded_bundle(stored, store), local_gpu=self.use_gpu)
            self.plan = plan
            compiled = compile_plan(plan, bucket=self.spec.storage.bucket or LOCAL_BUCKET,
                                    data_channels=_stored_channels(stored))
            definition = compiled.definition
            differs = _first_difference(stored, definition)
            if differs:
                self.progress.note(f"{self.out / 'pipeline.json'} differs from what this bakeoff compiles for the "
                                   f"run's spec.json ({differs}); it is kept as the record of what ran, not run: "
                                   "deciding with this bakeoff's evaluation")
            config = next(a for a in compiled.assets if a.key.endswith("/config.json") and "/eval-config/" in a.key)
            store.put(compiled.bucket, config.key, config.body)  # content-addressed: nothing of the run is replaced
            subs = Substitutions(plan, self.out, store, python=self.python, gpu=self.use_gpu,
                                 mlflow=self._mlflow_env())
            params = _recorded_parameters(self.out) or parameter_values(definition, self.parameters)
            self._resolve_rule(params)  # the rule the run was started with, its recorded parameters applied
            steps = {s["Name"]: s for s in definition["Steps"]}
            jobs, keys = self._jobs(plan, steps, subs, params)
            ctx = self._context(pipeline_name(self.spec), params, keys, steps)
            ran = dict(keys)  # the keys the jobs ran under (this machine's could differ: another torch)
            never: list[str] = []
            for name, job in jobs.items():
                try:
                    meta = json.loads((self.out / "jobs" / job.name / "job.json").read_text())
                    ctx.training_job_names[name] = str(meta["training_job_name"])
                    ran[name] = str(meta.get("job_key") or keys[name])
                except (FileNotFoundError, ValueError, KeyError, TypeError, AttributeError):
                    # Never ran here (the run was stopped first): the Evaluate step's request still names it,
                    # under the name it would have had, and the evaluation counts it as giving no result.
                    ctx.training_job_names[name] = f"{job.step_name}-{keys[name][:10]}"
                    never.append(job.name)
            if never:
                self.progress.note(f"{len(never)} job(s) never ran here ({', '.join(sorted(never)[:6])}"
                                   f"{', ...' if len(never) > 6 else ''}): decided without them; `bakeoff run "
                                   f"SPEC --out {self.out}` runs them")
            rule = self._recorded_rule()
            self.rule_change = rule.get("reason")
            self._look_jobs = ran
            self.sequential = self.sequential or looks.sequential_of(self.out, ran)
            self.look = looks.check(self.out, ran, self.spec.seed_list, self.sequential)
            self._begin_attempt(plan, ran)
            from .kinds import evaluate
            from .kinds import gate as gate_kind

            evaluation, path = evaluate.decide_locally(self, steps, ctx, subs, store, rule.get("original"),
                                                       installed_code=True)
            gate = gate_kind.take(self, steps, GATE_STEP, ctx)
            self._record_look(evaluation)
        return RunResult(self.out, evaluation, path, [], [j.name for j in jobs.values()], gate)

    def _stored_definition(self) -> dict[str, Any]:
        path = self.out / "pipeline.json"
        try:
            definition = json.loads(path.read_text())
            if not isinstance(definition, dict) or not isinstance(definition.get("Steps"), list):
                raise ValueError("it has no Steps")
            return definition
        except (OSError, ValueError) as exc:
            raise RunError(words(f"{path}: not a pipeline definition bakeoff wrote ({exc}); run `", run_into(self.out),
                                 "` to decide it again")) from None

    def _uploaded_bundle(self, definition: dict[str, Any], store: LocalS3):
        """The code bundle the jobs ran, read as data: it tells the plan what the jobs were (their
        script, their cache keys); nothing in it is unpacked to disk or run."""
        from bakeoff.pipelines.plan.bundle import Bundle

        try:
            training = next(s for s in definition["Steps"] if s["Type"] == "Training")
            channel = next(c for c in training["Arguments"]["InputDataConfig"] if c["ChannelName"] == "code")
            script = json.loads((self.out / "plan.json").read_text())["script"]
            return Bundle.from_tar_gz(store.path(channel["DataSource"]["S3DataSource"]["S3Uri"]).read_bytes(),
                                      str(script))
        except (OSError, ValueError, KeyError, TypeError, StopIteration, tarfile.TarError) as exc:
            raise RunError(words(f"{self.out}: the code bundle its jobs ran cannot be read ({type(exc).__name__}: "
                                 f"{exc}); run `", run_into(self.out), "` to decide it again")) from None

    def _run(self) -> RunResult:
        plan, compiled, store, subs, params = self._prepare()
        definition = compiled.definition
        steps = {s["Name"]: s for s in definition["Steps"]}
        order = [j.step_name for j in plan.seed_major]
        jobs, keys = self._jobs(plan, steps, subs, params)
        reuse = {n for n in order if not self.force and _finished(self.out / "jobs" / jobs[n].name, keys[n])}
        for name in sorted(reuse):  # the outputs kept, as they are before any job of this run starts
            job = jobs[name]
            try:
                meta = json.loads((self.out / "jobs" / job.name / "job.json").read_text())
                uri = f"{job.output_path.rstrip('/')}/{meta['training_job_name']}/output/output.tar.gz"
            except (OSError, ValueError, KeyError, TypeError):
                continue
            self._remember_output(job.name, store.path(uri))
        rule_original = self._check_rule(reuse)
        looks.require(self.out, finished=bool(reuse))
        self._look_jobs = dict(keys)
        self.look = looks.check(self.out, keys, self.spec.seed_list, self.sequential)  # before any seed is spent
        self._begin_attempt(plan, keys)  # which attempt at this question, before any seed is spent
        self._warn_if_mlflow_is_down(subs)
        self._write_records(plan, compiled, subs, params)
        described = self.out / SUBSTITUTIONS_FILE
        write_json_atomically(described, {"substitutions": subs.describe()})
        self.progress.note(f"local: {subs.gist()}")
        for line in subs.brief():  # `bakeoff run -v`
            self.progress.detail(f"local: {line}")
        self.progress.detail(f"local: every substitution for this machine (store, /opt/ml, images, batching, "
                             f"evaluation): {described}")
        if self.jobs > 1 and len(order) - len(reuse) > 1:
            from .slots import threads_per_process

            threads = threads_per_process(self.jobs)
            plural = "s" if threads != 1 else ""
            self.progress.note(f"local: up to {self.jobs} jobs at once, {threads} torch thread{plural} each "
                               "(--jobs 1: the whole machine to each)")
            self.progress.detail(f"local: up to {self.jobs} training jobs at once (--jobs), each process with "
                                 f"{threads} torch thread{'s' if threads != 1 else ''}; their throughput figures "
                                 "shared the machine (--jobs 1 gives each job the whole machine)")
        for line in plan.notes:
            self.progress.note(line)
        from bakeoff.pipelines.steps import kind_of, training

        from .kinds import run_step
        from .run_state import LocalRun

        # The definition's own order (step_graph.py), each step run by its kind's local module (kinds/); the
        # training jobs as one batch, ordered among themselves by what the definition says of them.
        run = LocalRun(executor=self, plan=plan, definition=definition, steps=steps, subs=subs, store=store,
                       params=params, ctx=self._context(compiled.name, params, keys, steps), order=order, jobs=jobs,
                       keys=keys, reuse=reuse, pending={jobs[n].leg for n in order if n not in reuse},
                       rule_original=rule_original)
        for node in step_graph.run_order(definition, training.is_step):
            kind = training.KIND if node == step_graph.BATCH else kind_of(steps[node])
            if not run_step(run, kind, node):
                raise RunError(f"step {node} ({steps[node].get('Type')}): the local engine has no way to run a step "
                               "of this kind; deploy the definition to SageMaker to run it")
            while run.branch:  # what a condition's chosen branch holds (kinds/gate.py): never skipped unseen
                name, nested = run.branch.pop(0)
                steps[name] = nested
                if not run_step(run, kind_of(nested), name):
                    raise RunError(f"the parity gate's branch holds step {name} ({nested.get('Type')}), which no "
                                   "step kind of bakeoff runs on this machine: it runs on SageMaker only")
        if run.evaluation is None or run.evaluation_path is None:
            raise RunError("the definition has no Evaluate step: nothing decided the bake-off")
        self._record_look(run.evaluation)
        return RunResult(self.out, run.evaluation, run.evaluation_path, run.executed, run.skipped, run.gate)

    def stop_if_nobody_reports_the_metric(self, job_dirs: list[Path]) -> None:
        from .metric_watch import unreported

        metric = self.rule.metric
        seen = unreported(metric, job_dirs)
        if seen is None:
            return
        from bakeoff.pipelines.spec.loader import locate

        file, line = locate(self.spec, ("parity", "metric"))
        raise SpecError(f"no job of the first seed reported {metric!r} (they reported: {', '.join(seen) or 'none'}); "
                        "set parity.metric to one of those, or log it from the script; the other seeds were not run",
                        file=file, line=line, field="parity.metric")

    # --- training jobs --------------------------------------------------------------------
    def train(self, job, key: str, store: LocalS3, process: JobProcess, on_line,
               interrupted=lambda: False) -> dict[str, Any]:
        """Run one training job to its end and record it (job.json, output.tar.gz); on a worker
        thread of parallel.py. `interrupted()`: whether `bakeoff run` was stopped meanwhile."""
        job_dir = self.out / "jobs" / job.name
        job_dir.mkdir(parents=True, exist_ok=True)
        (job_dir / "job.json").unlink(missing_ok=True)
        (job_dir / "request.json").write_text(json.dumps(job.request, indent=2, sort_keys=True) + "\n")
        (job_dir / "local.json").write_text(json.dumps(
            {"hyperparameters": job.hyperparameters, "environment": job.environment, "command": list(job.command),
             "hosts": list(job.hosts), "channels": job.channels}, indent=2, sort_keys=True) + "\n")
        started = _now()
        try:
            outcome = self.container(job, job_dir, store, process, on_line)
        except FileNotFoundError as exc:
            raise RunError(f"job {job.name}: {exc}") from None
        if interrupted():
            outcome = Outcome(outcome.exit_code, outcome.wall_s, interrupted=True)
        summary = self.record_job(job, job_dir, key, started, outcome, store)
        meta = json.loads((job_dir / "job.json").read_text())
        return {"training_job_name": str(meta["training_job_name"]), "status": meta["status"],
                "wall_s": outcome.wall_s, "summary": summary, "reason": meta["reason"]}

    def record_job(self, job, job_dir: Path, key: str, started: float, outcome: Outcome, store: LocalS3) -> dict:
        """job.json: what the platform knows of the job (DescribeTrainingJob on SageMaker)."""
        model = job_dir / "opt" / "ml" / "model"
        summary: dict = dict(summary_or_none(model / "summary.json") or {})
        status, reason = summary.get("status") or ("completed" if outcome.exit_code == 0 else "failed"), \
            _bounded(summary.get("reason"))
        code = outcome.exit_code
        lost = outcome.timed_out or outcome.interrupted or (code is not None and code < 0)
        if outcome.timed_out:
            reason = (f"stopped at its max runtime ({job.max_runtime_s} s, leg max_runtime_s): the job ran longer "
                      "than allowed" + (f"; last words: {reason}" if reason else ""))
        elif outcome.interrupted:
            reason = "interrupted (bakeoff run was stopped); a re-run resumes it"
        elif code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            reason = f"killed by {name}" + (f" (last words: {reason})" if reason else "")
        elif code and not reason:
            failure = job_dir / "opt" / "ml" / "output" / "failure"
            reason = _first_line(failure) or f"process exited with code {code}"
        if lost:
            status = "failed"
        training_job_name = f"{job.step_name}-{key[:10]}"
        # Waiting for MLflow at the end of a job is not training: keep it out of what is billed.
        wait = (summary.get("mlflow") or {}).get("wait_s")
        mlflow_wait = float(wait) if isinstance(wait, (int, float)) and not isinstance(wait, bool) \
            and math.isfinite(wait) and wait > 0 else 0.0
        meta = {"job_key": key, "name": job.name, "leg": job.leg, "seed": job.seed, "step_name": job.step_name,
                "training_job_name": training_job_name, "status": status, "reason": reason, "exit_code": code,
                "lost": lost, "timed_out": outcome.timed_out,
                "failure_kind": "timeout" if outcome.timed_out else ("interrupted" if outcome.interrupted else None),
                "billable_s": round(max(0.0, outcome.wall_s - mlflow_wait), 3),
                "billable_basis": "local wall time (emulated), less the wait for MLflow", "mlflow_wait_s": mlflow_wait,
                "started": started, "log": str(job_dir / "stdout.log")}
        write_json_atomically(job_dir / "job.json", meta)
        uri = publish_outputs(job_dir, job.output_path, training_job_name, store, meta)
        self._remember_output(job.name, store.path(uri))
        return summary

    def _remember_output(self, name: str, path: Path) -> None:
        try:
            self._outputs[name] = (path, file_sha256(path))
        except OSError:
            pass

    def verify_outputs(self) -> None:
        """Refuse to decide when a job's output changed after it ended: another job (every job runs as this
        user) rewrote what the Evaluate step reads, digest and all. Checked against what this run saw."""
        for name, (path, sha) in sorted(self._outputs.items()):
            try:
                now = file_sha256(path)
            except OSError:
                now = None
            if now != sha:
                raise RunError(words(f"job {name}'s output ({path}) changed after the job ended: a process wrote it "
                                     "during the run; no verdict was written (re-run that job with ", FORCE, ")"))


    # --- the parity rule ------------------------------------------------------------------
    def _check_rule(self, reuse: set[str]) -> dict | None:
        """The parity rule is fixed before the data: the first run into a directory records it (the
        run's rule: the spec's with its parameters, so `--param ParityMargin=...` is a rule like any
        other), and deciding finished jobs under another rule needs `rule_change` (a reason), after
        which the evaluation shows the original rule beside the new one."""
        path = self.out / "parity-rule.json"
        current = self.rule.as_dict()
        recorded, unreadable = None, None
        try:
            body = json.loads(path.read_text())
            recorded = body.get("rule") if isinstance(body, dict) else None
            if not isinstance(recorded, dict):
                recorded, unreadable = None, "holds no rule"
        except FileNotFoundError:
            unreadable = "is missing"
        except (ValueError, OSError):
            unreadable = "is empty or not JSON"
        if not reuse:  # no finished jobs are kept: this rule comes before their data
            write_json_atomically(path, {"rule": current, "note": "fixed before the jobs of this directory ran"},
                                  sort_keys=True)
            return None
        if recorded is None:
            # Finished jobs whose rule cannot be read: a truncated file must not let a rule chosen
            # after the data through unnoticed.
            if not self.rule_change:
                raise SpecError(words(f"finished jobs are kept but the rule they ran under is not recorded "
                                      f"({path.name} {unreadable}), so this rule may have been chosen after seeing "
                                      "them. Run into a new ", OUT_DIR, ", re-run the jobs with ", FORCE, ", or pass ",
                                      RULE_CHANGE_WHY, " to decide under this rule and say why"), file=str(path))
            self.progress.note(f"parity rule not recorded for the finished jobs ({path.name} {unreadable}); "
                               f"deciding under this one: {self.rule_change}")
            write_json_atomically(path, {"rule": None, "note": f"the recorded rule was lost ({path.name} {unreadable})",
                                     "changed_to": current, "reason": self.rule_change}, sort_keys=True)
            return {"unrecorded": f"{path.name} {unreadable}"}
        if recorded == current:
            return None
        changed = ", ".join(f"{k} {recorded.get(k)!r} -> {current.get(k)!r}" for k in current
                            if recorded.get(k) != current.get(k))
        if not self.rule_change:
            raise SpecError(words(f"the parity rule changed after its jobs ran ({changed}); deciding finished runs "
                                  "under a rule chosen after seeing them is not a test. Keep the rule, run into a new ",
                                  OUT_DIR, ", re-run the jobs with ", FORCE, ", or pass ", RULE_CHANGE_WHY,
                                  " to re-decide and show both rules"), file=str(path))
        self.progress.note(f"parity rule changed after the data ({changed}): {self.rule_change}")
        write_json_atomically(path, {"rule": recorded, "note": "fixed before the jobs of this directory ran",
                                 "changed_to": current, "reason": self.rule_change}, sort_keys=True)
        return dict(recorded)

    def _recorded_rule(self) -> dict[str, Any]:
        """The rule the jobs ran under and, where it was changed after them, the change's reason."""
        try:
            body = json.loads((self.out / "parity-rule.json").read_text())
        except (FileNotFoundError, ValueError):
            return {}
        if not isinstance(body, dict) or body.get("changed_to") != self.rule.as_dict():
            return {}
        if body.get("rule") is None:  # decided with --rule-change after the recorded rule was lost
            return {"original": {"unrecorded": body.get("note", "not recorded")}, "reason": body.get("reason")}
        if body.get("rule") != body.get("changed_to"):
            return {"original": body.get("rule"), "reason": body.get("reason")}
        return {}

    def _write_records(self, plan: Plan, compiled, subs: Substitutions, params: dict[str, Any]) -> None:
        (self.out / "spec.json").write_text(json.dumps(self.spec.canonical(), indent=2, sort_keys=True) + "\n")
        # The run's rule, where the plan has the spec's: they differ when a parameter set the margin.
        body = {**plan.to_json(), "parity_rule": self.rule.as_dict(),
                "local": {"substitutions": subs.describe(), "parameters": params, "runtime": local_runtime(),
                          "jobs_at_once": self.jobs, "mlflow": bool(self.mlflow)}}
        (self.out / "plan.json").write_text(json.dumps(body, indent=2, sort_keys=True, default=str) + "\n")
        (self.out / "pipeline.json").write_text(compiled.to_json(indent=2))

    def _record_look(self, evaluation: Evaluation) -> None:
        looks.record(self.out, self.look, self._look_jobs, self.spec.seed_list, self.sequential, evaluation)
        if self._question is not None and self._attempt is not None:
            questions.record(self._question, self._attempt, evaluation)

    def _begin_attempt(self, plan: Plan, jobs: dict[str, str]) -> None:
        """This decision's attempt at its question (questions.py): counted wherever its --out is."""
        design = questions.SEQUENTIAL if self.sequential else self.spec.parity.design
        rule = {**self.spec.parity_rule(), **self.rule.as_dict()}
        self._question = questions.Question.of(self.spec, plan.bundle.sha256, design, rule)
        self._attempt = questions.begin(self._question, self.out, jobs, list(self.spec.seed_list), design,
                                        self.fresh_start)

    # --- preflight: the same executor, the Preflight step's request ------------------------
    def preflight(self, leg: str, steps: int) -> dict[str, Any]:
        """A few steps of `leg`'s job on PyTorch/XLA's CPU device with the preflight probes on:
        the pipeline's Preflight step request, run like any other; returns preflight.json."""
        self.mlflow = False
        self.out.mkdir(parents=True, exist_ok=True)
        plan, compiled, store, subs, params = self._prepare(preflight=(leg, steps))
        step = next(s for s in compiled.definition["Steps"] if s["Name"] == PREFLIGHT_STEP)
        request = resolve(step["Arguments"], Context(params, "", ""))
        job_dir = self.out / "preflight" / leg
        job = subs.training(PREFLIGHT_STEP, request, job_dir)
        job = type(job)(**{**job.__dict__, "environment": {**job.environment,
                                                          contract.ENV["preflight_fail_on_blocker"]: ""}})
        job_dir.mkdir(parents=True, exist_ok=True)
        self.progress.start(1)
        self.progress.begin(1, f"preflight {leg}", steps)
        try:
            outcome = self.container(job, job_dir, store, self.process, lambda line: None)
        finally:
            self.progress.stop()
        report = job_dir / "opt" / "ml" / "model" / "preflight.json"
        if not report.exists():
            failure = job_dir / "opt" / "ml" / "output" / "failure"
            why = _first_line(failure) or f"exit code {outcome.exit_code}"
            raise RunError(f"preflight of leg {leg} did not finish: {why} (see {job_dir / 'stdout.log'})")
        return json.loads(report.read_text())


def _check_runtime_packages(plan: Plan, python: str, gpu: bool) -> None:
    """bakeoff's training runtime trains with torch, and a leg emulated on an XLA device with torch_xla: where
    the jobs' Python lacks them (bakeoff installed without its `local` extra), say so before any job starts,
    rather than let every job fail at its first import and the verdict blame the script."""
    import subprocess

    from bakeoff_runtime.contract.backend_table import row

    wanted = {"torch": "every leg"}
    xla = [leg.name for leg in plan.spec.legs
           if row(leg.kind.local_emulation(leg.backend_name, gpu).backend).torch_device == "xla"]
    if xla:
        wanted["torch_xla"] = f"leg{'s' if len(xla) > 1 else ''} {', '.join(xla)} (PyTorch/XLA's CPU device)"
    # The second line says whether that Python has pip: a virtualenv made by `uv venv`, or a `uv tool install`
    # environment, has none, and `python -m pip install` would fail there.
    probe = ("import importlib.util, sys\n"
             "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))\n"
             "print('pip' if importlib.util.find_spec('pip') else '')")
    try:
        proc = subprocess.run([python, "-c", probe, *wanted], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RunError(f"the jobs' Python ({python}) cannot be started: {exc}") from None
    lines = [*proc.stdout.splitlines(), "", ""]
    missing = lines[0].split() if proc.returncode == 0 else list(wanted)
    if missing:
        install = (f"{python} -m pip install 'bakeoff[local]'" if lines[1].strip() == "pip"
                   else f"uv pip install --python {python} 'bakeoff[local]'")
        # A missing extra is how bakeoff was installed, not a run that failed: bad input's exit code (2).
        raise SpecError(f"the jobs' Python ({python}) lacks {' and '.join(missing)} (for "
                        f"{'; '.join(wanted[m] for m in missing)}): install bakeoff's local extra "
                        f"(`{install}`, or `make setup` in a clone); no job was started")


def _warm_legs(spec: BakeoffSpec) -> int:
    """The warm interpreters this run may start (warm.py): one per leg, its sweep's sizes included,
    unless warm starts are off or the entrypoint is a brought script (its jobs start cold). A leg
    whose jobs cannot be forked (a GPU leg, torchrun) is counted too: the budget errs on the safe side."""
    from bakeoff.pipelines.spec.derived import expand

    from .warm import starts_warm_interpreters

    return len(expand(spec).legs) if starts_warm_interpreters(spec) else 0


def _job_dir(plan: Plan, step_name: str) -> str:
    return next(j.name for j in plan.jobs if j.step_name == step_name)


def _finished(job_dir: Path, key: str) -> bool:
    try:
        meta = json.loads((job_dir / "job.json").read_text())
    except (FileNotFoundError, ValueError):
        return False
    return meta.get("job_key") == key and meta.get("status") in ("completed", "diverged") \
        and (job_dir / "opt" / "ml" / "model" / "summary.json").exists()


def _now() -> float:
    import time

    return time.time()


class _forward_signals:
    """SIGTERM (and SIGINT) to `bakeoff run` stop the running jobs' whole process groups
    first, then end the run: no orphaned training process."""

    def __init__(self, executor: LocalExecutor):
        self.executor = executor
        self.previous: dict[int, Any] = {}

    def _handler(self, signum, frame):
        runner = self.executor.parallel
        if runner is not None:
            runner.interrupt()
        # Never wait in the handler: it may have interrupted the main thread inside that very process's
        # wait (the Evaluate step runs there). `JobProcess.run` stops and reaps it as Interrupted passes.
        self.executor.process.stop_soon()
        raise Interrupted(signum)

    def __enter__(self):
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self.previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        return False


def _stored_channels(definition: dict[str, Any]) -> dict[str, str]:
    """The data channels as the run uploaded them (channel -> S3 URI), from its definition's
    parameters: deciding again must not need the data's folder, which may have moved."""
    defaults = {p.get("Name"): p.get("DefaultValue") for p in definition.get("Parameters", []) if isinstance(p, dict)}
    from bakeoff.pipelines.steps.request import data_parameter_name

    out: dict[str, str] = {}
    for step in definition.get("Steps", []):
        if not isinstance(step, dict) or step.get("Type") != "Training":
            continue
        for channel in step.get("Arguments", {}).get("InputDataConfig", []):
            name = channel.get("ChannelName")
            uri = defaults.get(data_parameter_name(name)) if isinstance(name, str) else None
            if name != "code" and isinstance(uri, str):
                out[name] = uri
    return dict(sorted(out.items()))


def _recorded_parameters(run_dir: Path) -> dict[str, Any] | None:
    params = recorded_local(run_dir).get("parameters")
    return params if isinstance(params, dict) and params else None


def _first_difference(stored: dict[str, Any], compiled: dict[str, Any]) -> str | None:
    """Where a stored definition departs from a compiled one, in a few words, or None."""
    if json.dumps(stored, sort_keys=True) == json.dumps(compiled, sort_keys=True):
        return None
    mine = {s.get("Name"): s for s in stored.get("Steps", []) if isinstance(s, dict)}
    for step in compiled["Steps"]:
        if json.dumps(mine.get(step["Name"]), sort_keys=True) != json.dumps(step, sort_keys=True):
            return f"step {step['Name']}" + ("" if step["Name"] in mine else " is missing")
    extra = sorted(str(n) for n in mine if n not in {s["Name"] for s in compiled["Steps"]})
    return f"step {extra[0]} is not one bakeoff compiles" if extra else "its parameters or metadata"


MAX_REASON_CHARS = 4000  # job.json and the progress line carry a reason; the job's own files keep all of it


def _bounded(reason: str | None) -> str | None:
    if reason is None or len(reason) <= MAX_REASON_CHARS:
        return reason
    return reason[:MAX_REASON_CHARS] + f"… ({len(reason):,} characters; the job's summary.json holds all of it)"


def _first_line(path: Path) -> str | None:
    """The first line of a job's failure file (the job writes it: read no more than a reason needs)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(MAX_REASON_CHARS * 4)
    except OSError:
        return None
    lines = head.decode(errors="replace").splitlines()
    return _bounded(lines[0]) if lines and lines[0].strip() else None
