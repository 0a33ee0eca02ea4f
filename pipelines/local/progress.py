"""Live progress for a local bake-off: a bar per job on a terminal, plain lines elsewhere."""
from __future__ import annotations

import time

from ..terminal_text import data


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.0f}s" if seconds < 120 else f"{seconds / 60:.1f}min"


class Progress:
    def __init__(self, console=None):
        from rich.console import Console

        # Piped or captured, lines stay whole (no wrapping at 80 columns mid-sentence).
        self.console = console or Console(stderr=True, soft_wrap=True)
        self.live = self.console.is_terminal
        self._bar = None
        self._task = None
        self._total: int | None = None
        self._total_jobs = 0
        self._started = time.time()
        self._run_walls: list[float] = []  # jobs that ran (not skipped): the basis of the bake-off's ETA

    def note(self, message: str) -> None:
        # Notes carry job text (reasons, paths): shown as data, never read as markup.
        self.console.print(f"[bold]bakeoff[/bold] {data(message)}", highlight=False)

    def start(self, total_jobs: int) -> None:
        self._total_jobs = total_jobs
        self._started = time.time()
        self._run_walls = []
        if self.live:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("steps"), TimeElapsedColumn(), TextColumn("eta"),
                                     TimeRemainingColumn(), console=self.console, transient=True)
            self._bar.start()

    def begin(self, index: int, name: str, total_steps: int | None) -> None:
        label = data(f"[{index}/{self._total_jobs}] {name}")
        self._total = total_steps
        if self._bar is not None:
            self._task = self._bar.add_task(label, total=total_steps)
        else:
            self.console.print(f"{label}: running", highlight=False)

    def advance(self, completed_steps: int) -> None:
        # Validation lines carry step max_steps (after the last step): never show "201/200".
        if self._total is not None:
            completed_steps = min(completed_steps, self._total)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=completed_steps)

    def eta_s(self, done_index: int) -> float | None:
        """Seconds left for the jobs after `done_index`, at the mean wall time of the jobs that ran
        so far (skipped jobs cost nothing and are left out of the mean)."""
        left = self._total_jobs - done_index
        if left <= 0 or not self._run_walls:
            return None
        return left * sum(self._run_walls) / len(self._run_walls)

    def finish(self, index: int, name: str, status: str, wall: float, summary: dict, reason: str | None) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.remove_task(self._task)
            self._task = None
        self._run_walls.append(wall)
        metric = (summary.get("metrics") or {}).get("val_loss")
        tps = (summary.get("throughput") or {}).get("tokens_per_sec")
        bits = [f"{status}", f"{_fmt_s(wall)}"]
        if metric is not None:
            bits.append(f"val_loss={metric:.4f}")
        if tps:
            bits.append(f"{tps:,.0f} tokens/s")
        if reason and status != "completed":
            bits.append(f"reason: {data(reason)}")
        style = "green" if status == "completed" else "red"
        eta = self.eta_s(index)
        tail = f" (bake-off: about {_fmt_s(eta)} left)" if eta is not None else ""
        head = data(f"[{index}/{self._total_jobs}] {name}")
        self.console.print(f"{head}: [{style}]{', '.join(bits)}[/{style}]{tail}", highlight=False)

    def skipped(self, index: int, name: str) -> None:
        self.console.print(data(f"[{index}/{self._total_jobs}] {name}: unchanged, not re-run (use --force to re-run)"),
                           highlight=False)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
