"""Live progress for a local bake-off: a bar per running job on a terminal (several when jobs
run side by side), plain lines elsewhere (a line when a job starts and one when it ends)."""
from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING

from bakeoff.pipelines.terminal_text import data
from bakeoff_runtime.contract.step_names import parse_job_name

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

# A job's phase as it reports it (`[bakeoff] phase=NAME`, bakeoff_runtime/contract/phases.py), shown on its
# bar: an XLA leg compiles for half a minute before step 1, and its bar says so instead of sitting at 0 steps.
# Until the job says anything it is starting (its interpreter and imports).
STARTING = "starting"


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.0f}s" if seconds < 120 else f"{seconds / 60:.1f}min"


class Progress:
    def __init__(self, console=None, verbose: bool = False):
        from rich.console import Console

        # Piped or captured, lines stay whole (no wrapping at 80 columns mid-sentence).
        self.console = console or Console(stderr=True, soft_wrap=True, emoji=False)
        self.live = self.console.is_terminal
        self.verbose = verbose  # detail() lines shown (`bakeoff run -v`)
        self._bar: RichProgress | None = None
        self._tasks: dict[int, TaskID] = {}  # job index -> its bar
        self._totals: dict[int, int | None] = {}  # job index -> its steps
        self._last: int | None = None  # the job begun last (advance without an index)
        self._total_jobs = 0
        self._at_once = 1
        self._started = time.time()
        self._run_walls: list[float] = []  # jobs that ran (not skipped): the basis of the bake-off's ETA
        self._ended = 0  # jobs ended or skipped
        self._per_leg: dict[str, int] = {}  # leg -> its jobs in this run (each leg's ETA at its own pace)
        self._leg_walls: dict[str, list[float]] = {}
        self._leg_ended: Counter[str] = Counter()
        self._labels: dict[int, str] = {}  # job index -> its bar's label (its phase is shown after it)
        self._phases: dict[int, str] = {}  # job index -> the phase it last reported
        self._running: dict[int, tuple[str, float]] = {}  # job index -> (its leg, when it began)

    def note(self, message: str) -> None:
        # Notes carry job text (reasons, paths): shown as data, never read as markup.
        self.console.print(f"[bold]bakeoff[/bold] {data(message)}", highlight=False)

    def detail(self, message: str) -> None:
        """A line for `-v`: what the run substituted or decided, in full (its one-line gist was a note)."""
        if self.verbose:
            self.note(message)

    def start(self, total_jobs: int, at_once: int = 1, per_leg: Mapping[str, int] | None = None) -> None:
        """`per_leg`: each leg's jobs in this run, so that the time left is each leg's jobs at its own pace
        (a trn leg emulated on XLA takes several times a CPU leg's time)."""
        self._total_jobs = total_jobs
        self._at_once = max(1, at_once)
        self._started = time.time()
        self._run_walls = []
        self._ended = 0
        self._per_leg = dict(per_leg or {})
        self._leg_walls, self._leg_ended = {}, Counter()
        if self.live:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("steps"), TimeElapsedColumn(), TextColumn("eta"),
                                     TimeRemainingColumn(), console=self.console, transient=True)
            self._bar.start()

    def begin(self, index: int, name: str, total_steps: int | None) -> None:
        label = data(f"[{index}/{self._total_jobs}] {name}")
        self._totals[index] = total_steps
        self._last = index
        self._labels[index] = label
        self._phases[index] = STARTING
        self._running[index] = (_leg(name), time.time())
        if self._bar is not None:
            self._tasks[index] = self._bar.add_task(self._described(index), total=total_steps)
        else:
            self.console.print(f"{label}: running", highlight=False)

    def advance(self, completed_steps: int, index: int | None = None) -> None:
        index = self._last if index is None else index
        total = self._totals.get(index) if index is not None else None
        # Validation lines carry step max_steps (after the last step): never show "201/200".
        if total is not None:
            completed_steps = min(completed_steps, total)
        task = self._tasks.get(index) if index is not None else None
        if completed_steps > 0 and index is not None and self._phases.get(index) in (STARTING, "compiling"):
            # A step is in: it trains, whether or not it said so (a brought script reports what it can).
            self._phases[index] = "training"
            if self._bar is not None and task is not None:
                self._bar.update(task, description=self._described(index))
        if self._bar is not None and task is not None:
            self._bar.update(task, completed=completed_steps)

    def phase(self, index: int, phase: str) -> None:
        """What job `index` says it is doing now (starting, compiling, training, evaluating)."""
        if index not in self._labels or self._phases.get(index) == phase:
            return
        self._phases[index] = phase
        task = self._tasks.get(index)
        if self._bar is not None and task is not None:
            # Drawn now, not at the next tick: a compile on a warm cache may be over before it.
            self._bar.update(task, description=self._described(index), refresh=True)
        elif self._bar is None and phase == "compiling":  # plain lines: the one wait worth a line
            self.console.print(f"{self._labels[index]}: compiling its graphs before the first step", highlight=False)

    def _described(self, index: int) -> str:
        return f"{self._labels[index]} [dim]{data(self._phases.get(index, STARTING))}[/dim]"

    def eta_s(self, done_index: int) -> float | None:
        """Seconds left for the jobs not ended yet, at the mean wall time of the jobs that ran so far
        (skipped jobs cost nothing and are left out of the mean), `at_once` of them at a time.
        `done_index`: how many jobs have ended."""
        left = self._total_jobs - done_index
        if left <= 0 or not self._run_walls:
            return None
        mean = sum(self._run_walls) / len(self._run_walls)
        if not self._per_leg:
            return left * mean / min(self._at_once, left)
        # Each leg's jobs not ended at that leg's own mean, less its first job once a later one has ended:
        # the first starts the leg's warm interpreter and pays the imports its later jobs skip (warm.py).
        # A leg with none ended yet: the mean of all, or, when its running job has already taken longer (a
        # slow XLA leg behind a fast CPU leg), that time. A running job counts for what it has left of that.
        lefts = {leg: max(0, n - self._leg_ended[leg]) for leg, n in self._per_leg.items()}
        remaining = sum(lefts.values())
        if remaining <= 0:
            return None
        now = time.time()
        running: dict[str, list[float]] = {}
        for leg, began in self._running.values():
            running.setdefault(leg, []).append(now - began)
        work = 0.0
        for leg, n in lefts.items():
            taken = running.get(leg, [])[:n]
            walls = self._leg_walls.get(leg, [])[1:] or self._leg_walls.get(leg)
            each = sum(walls) / len(walls) if walls else max([mean, *taken])
            work += each * (n - len(taken)) + sum(max(0.0, each - t) for t in taken)
        return work / min(self._at_once, remaining)

    def finish(self, index: int, name: str, status: str, wall: float, summary: dict, reason: str | None) -> None:
        task = self._tasks.pop(index, None)
        self._totals.pop(index, None)
        self._running.pop(index, None)
        if self._bar is not None and task is not None:
            self._bar.remove_task(task)
        self._run_walls.append(wall)
        self._ended += 1
        leg = _leg(name)
        self._leg_walls.setdefault(leg, []).append(wall)
        self._leg_ended[leg] += 1
        self._labels.pop(index, None)
        self._phases.pop(index, None)
        metric = _number((summary.get("metrics") or {}).get("val_loss"))
        tps = _number((summary.get("throughput") or {}).get("tokens_per_sec"))
        bits = [f"{status}", f"{_fmt_s(wall)}"]
        if metric is not None:
            bits.append(f"val_loss={metric:.4f}")
        if tps:
            bits.append(f"{tps:,.0f} tokens/s")
        if reason and status != "completed":
            bits.append(f"reason: {data(_one_line(reason))}")
        style = "green" if status == "completed" else "red"
        # One at a time, a job's place says how many are behind it; side by side, the count of ended jobs does.
        eta = self.eta_s(index if self._at_once == 1 else self._ended)
        tail = f" (bake-off: about {_fmt_s(eta)} left)" if eta is not None else ""
        head = data(f"[{index}/{self._total_jobs}] {name}")
        self.console.print(f"{head}: [{style}]{', '.join(bits)}[/{style}]{tail}", highlight=False)

    def skipped(self, index: int, name: str) -> None:
        self._ended += 1
        self._leg_ended[_leg(name)] += 1
        self.console.print(data(f"[{index}/{self._total_jobs}] {name}: unchanged, not re-run (use --force to re-run)"),
                           highlight=False)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _leg(job: str) -> str:
    parsed = parse_job_name(job)
    return parsed[0] if parsed else job


def _number(value: object) -> float | None:
    """A figure a job wrote, when it is one: a job's summary is the job's to write (text, a list, a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _one_line(reason: str, limit: int = 300) -> str:
    line = reason.strip().splitlines()[0] if reason.strip() else reason
    return line if len(line) <= limit else line[:limit] + "…"
