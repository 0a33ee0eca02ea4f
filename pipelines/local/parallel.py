"""The training jobs of a local run, up to `--jobs` of them at once, decided as if one at a time.

Jobs start in the plan's order (seed-major) whenever a slot is free, except a job that waits
for others to end: those the definition orders it after (`after`: DependsOn among training
steps, as a spot leg's later seeds after its first), and, where its compile cache can warm on
this machine (a `torch.compile` leg's inductor cache; the XLA leg's cannot, pytorch/xla 9094),
the first job of its leg, so that it starts warm as it would one at a time. The jobs behind a
waiting job start meanwhile. Whatever the order in
which they end, their results are read in the plan's order: the doomed-leg rule
(doomed.py), the first seed's metric check and every file and record see the same sequence
as with `--jobs 1`, so the same jobs are run, stopped and decided. Starting a job before
the ones ahead of it have ended is a bet that their results will not stop its leg; when
they do, the job is stopped (or, if it already ended, its result is set aside) and
recorded as doomed, exactly as `--jobs 1` would have recorded it without running it.

All display calls happen on this thread: workers only post events (a step line, an end).
"""
from __future__ import annotations

import json
import queue
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bakeoff.pipelines.errors import RunError
from bakeoff_runtime import contract
from bakeoff_runtime.contract.backend_table import BACKENDS

from .jobs import JobProcess
from .slots import rendezvous_environment, thread_environment, threads_per_process, warms_locally
from .warm import WarmPool, starts_warm_interpreters

if TYPE_CHECKING:
    from .run_state import Engine


@dataclass
class _Slot:
    """One job of the run: where it is, and what its worker left."""

    index: int
    name: str  # step name
    job: Any
    key: str
    weight: int = 1
    gpu: bool = False
    state: str = "waiting"  # waiting | running | ended | fed
    process: JobProcess = field(default_factory=JobProcess)
    thread: threading.Thread | None = None
    result: dict[str, Any] | None = None
    error: BaseException | None = None
    cancelled: bool = False  # stopped because its leg was doomed by a job ahead of it
    feed: bool = True  # read by the doomed-leg rule (jobs that ran or were reused)
    after: set[str] = field(default_factory=set)  # the steps that must end before it starts


class ParallelJobs:
    """Runs the training jobs of `executor`'s run; `run()` returns (executed, skipped) job names."""

    def __init__(self, executor: Engine, order: list[str], jobs: dict[str, Any], keys: dict[str, str], reuse: set[str],
                 stopped: dict[str, str], watch, ctx, store, at_once: int, gpu: bool,
                 after: dict[str, set[str]] | None = None):
        self.x = executor
        self.order, self.jobs, self.keys, self.reuse = order, jobs, keys, reuse
        self.stopped, self.watch, self.ctx, self.store = stopped, watch, ctx, store
        rule = getattr(executor, "rule", None)  # the run's rule (run_rule.py); a test's executor may have none
        if rule is not None:
            watch.judge_by(rule)  # a leg is stopped beyond the margin the verdict decides with
        self.at_once = max(1, at_once)
        seed = executor.spec.seed_list[0]
        self.first_seed = [n for n in order if jobs[n].seed == seed]
        self.events: queue.Queue[tuple[str, str, Any]] = queue.Queue()
        self.interrupting = threading.Event()
        ENV = contract.ENV
        self.slots = {}
        for i, name in enumerate(order, 1):
            job = jobs[name]
            width = len(job.hosts) * max(1, int(job.environment.get(ENV["nproc_per_node"], "1") or 1))
            backend = BACKENDS.get(job.environment.get(ENV["backend"], ""))
            self.slots[name] = _Slot(i, name, job, keys[name], weight=width,
                                     gpu=gpu and backend is not None and backend.local_needs_gpu)
        # A warm interpreter per leg forks its jobs' workers (warm.py); BAKEOFF_WARM_START=0 in the shell, or a
        # brought script: none.
        python = getattr(executor, "python", None) or sys.executable
        self.warm = WarmPool(python, executor.out / "warm") if starts_warm_interpreters(executor.spec) else None
        for slot in self.slots.values():
            slot.process.warm = self.warm
        firsts: dict[str, str] = {}  # leg -> its first job in the plan's order
        for name in order:
            job = jobs[name]
            first = firsts.setdefault(job.leg, name)
            self.slots[name].after = {d for d in (after or {}).get(name, set()) if d in self.slots}
            if first != name and warms_locally(job.environment):
                self.slots[name].after.add(first)  # the step whose end fills the cache it starts from

    # --- what the signal handler and the executor call ---------------------------------------
    def interrupt(self) -> None:
        """`bakeoff run` was signalled: every running job is recorded as interrupted."""
        self.interrupting.set()  # before the jobs end: their workers read it when they do
        self.stop_all()

    def stop_all(self) -> None:
        """SIGTERM to every running job at once, then wait for each (SIGKILL after its grace)."""
        import signal

        running = [s for s in self.slots.values() if s.state == "running"]
        for slot in running:
            slot.process.signal(signal.SIGTERM)
        for slot in running:  # cancel, not stop: a worker that has not started its process yet must not start it
            slot.process.cancel()

    # --- the loop ------------------------------------------------------------------------------
    def run(self) -> tuple[list[str], list[str]]:
        fed = 0
        try:
            while True:
                fed = self._feed(fed)
                if fed == len(self.order):
                    break
                if self._dispatch_one():
                    continue
                if not any(s.state == "running" for s in self.slots.values()):
                    waiting = [s.name for s in self.slots.values() if s.state == "waiting"]
                    raise RunError(f"training steps {', '.join(waiting)} wait for each other in a circle "
                                   "(their DependsOn): none can start")
                self._wait()
        except BaseException:
            self._abandon()
            raise
        finally:
            if self.warm is not None:
                self.warm.close()
        executed = [self.jobs[n].name for n in self.order if n not in self.reuse]
        skipped = [self.jobs[n].name for n in self.order if n in self.reuse]
        return executed, skipped

    def _running_weight(self) -> int:
        return sum(s.weight for s in self.slots.values() if s.state == "running")

    def _dispatch_one(self) -> bool:
        """Start (or settle without running) the next job in order that may start now."""
        slot = next((s for s in (self.slots[n] for n in self.order) if s.state == "waiting" and
                     not self._waiting_for_others(s)), None)
        if slot is None:
            return False
        name, job = slot.name, slot.job
        if name in self.reuse:
            job_dir = self.x.out / "jobs" / job.name
            self.ctx.training_job_names[name] = json.loads((job_dir / "job.json").read_text())["training_job_name"]
            self.x.progress.skipped(slot.index, job.name)
            slot.state = "ended"
            return True
        if job.leg in self.stopped or job.leg in self.watch.doomed:
            self._record_doomed(slot)
            return True
        running = [s for s in self.slots.values() if s.state == "running"]
        if running and (self._running_weight() + slot.weight > self.at_once or
                        (slot.gpu and any(s.gpu for s in running))):
            return False
        self._start(slot)
        return True

    def _waiting_for_others(self, slot: _Slot) -> bool:
        """Whether a job it must start after has still to end (a reused or settled job has ended;
        a doomed or stopped leg's jobs never run, so never wait)."""
        if not slot.after or slot.job.leg in self.stopped or slot.job.leg in self.watch.doomed:
            return False
        return any(self.slots[name].state in ("waiting", "running") for name in slot.after)

    def _record_doomed(self, slot: _Slot) -> None:
        import shutil

        from .artifacts import record_stopped

        job = slot.job
        if slot.thread is not None:  # it ran (set aside): nothing it wrote may be read as its result
            opt_ml = self.x.out / "jobs" / job.name / "opt" / "ml"
            for sub in ("model", "output"):
                shutil.rmtree(opt_ml / sub, ignore_errors=True)
        if job.leg in self.stopped:
            name = record_stopped(self.x, job, slot.key, self.stopped[job.leg], self.store)
        else:
            name = record_stopped(self.x, job, slot.key, self.watch.doomed[job.leg], self.store, kind="doomed")
        self.ctx.training_job_names[slot.name] = name
        slot.state, slot.feed = "ended", False

    def _start(self, slot: _Slot) -> None:
        job = slot.job
        threads = threads_per_process(self.at_once, slot.weight)
        env = {**job.environment, contract.ENV["job_key"]: slot.key,
               **thread_environment(threads, job.environment), **rendezvous_environment(slot.weight, job.environment)}
        slot.job = job = type(job)(**{**job.__dict__, "environment": env})
        total = int(json.loads(job.hyperparameters.get("max_steps", "0")) or 0) or None
        self.x.progress.begin(slot.index, job.name, total)
        slot.state = "running"
        slot.thread = threading.Thread(target=self._work, args=(slot,), name=f"bakeoff-job-{job.name}", daemon=True)
        slot.thread.start()

    def _work(self, slot: _Slot) -> None:
        parse = contract.parse_step_line

        def on_line(line: str) -> None:
            parsed = parse(line)
            if parsed:
                self.events.put(("advance", slot.name, parsed[0] + 1))
            elif (phase := contract.parse_phase_line(line)) is not None:
                self.events.put(("phase", slot.name, phase))

        try:
            slot.result = self.x.train(slot.job, slot.key, self.store, slot.process, on_line,
                                        interrupted=self.interrupting.is_set)
        except BaseException as exc:  # handed to the loop, which stops the others and raises it
            slot.error = exc
        self.events.put(("ended", slot.name, None))

    def _wait(self) -> None:
        kind, name, value = self.events.get()
        slot = self.slots[name]
        if kind == "advance":
            if slot.state == "running" and not slot.cancelled:
                self.x.progress.advance(value, slot.index)
            return
        if kind == "phase":
            if slot.state == "running" and not slot.cancelled:
                self.x.progress.phase(slot.index, value)
            return
        slot.thread.join()  # type: ignore[union-attr]
        slot.state = "ended"
        if slot.error is not None:
            raise slot.error
        if slot.cancelled:
            self._record_doomed(slot)
            return
        r = slot.result or {}
        self.ctx.training_job_names[name] = r["training_job_name"]
        self.x.progress.finish(slot.index, slot.job.name, r["status"], r["wall_s"], r["summary"], r["reason"])

    def _feed(self, fed: int) -> int:
        """Read the ended jobs ahead of every job not yet read, in the plan's order."""
        while fed < len(self.order) and self.slots[self.order[fed]].state == "ended":
            slot = self.slots[self.order[fed]]
            slot.state = "fed"
            fed += 1
            if not slot.feed:
                continue
            job = slot.job
            job_dir = self.x.out / "jobs" / job.name
            if slot.name == self.first_seed[-1]:
                self.x.stop_if_nobody_reports_the_metric([self.x.out / "jobs" / self.jobs[n].name
                                                           for n in self.first_seed])
            why = self.watch.finished(job.leg, job.seed, job_dir)
            if why:
                doomed_leg = next(leg for leg, reason in self.watch.doomed.items() if reason == why)
                self._doom(doomed_leg, why)
        return fed

    def _doom(self, leg: str, why: str) -> None:
        """A leg just shown doomed: its jobs behind the one that showed it do not count."""
        started = [s for s in (self.slots[n] for n in self.order)
                   if s.job.leg == leg and s.state in ("running", "ended") and s.feed and s.name not in self.reuse]
        ahead = [s for s in started if s.state == "running"]
        for slot in started:
            slot.cancelled = True
            slot.feed = False
        for slot in ahead:
            slot.process.cancel()
        for slot in started:
            if slot.state == "ended":  # it ended before the jobs ahead of it: its result is set aside
                self._record_doomed(slot)
        extra = (f"; {len(started)} of them had started beside the jobs ahead and are set aside"
                 if started else "")
        self.x.progress.note(f"leg {leg}: {why}; its remaining seeds are not run (recorded as failed with this "
                             f"reason{extra})")

    def _abandon(self) -> None:
        """Something stopped the run (a signal, an error, a spec problem): end every job still
        running and wait for its worker, which records it (as interrupted on a signal)."""
        self.interrupting.set()
        self.stop_all()
        for slot in self.slots.values():
            if slot.thread is not None:
                slot.thread.join()
