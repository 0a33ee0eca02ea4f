"""Stop a doomed leg early: after each seed a leg and the baseline both finished, compare the
leg's validation curve with the baseline's of the same seed (same eval steps) by the rule in
bakeoff_runtime/verdict/group_sequential.py `doomed`: diverged, or beyond the margin by more than 3 SD of the
eval noise at each of its last two evals. The noise is the SD of the paired end-of-training
differences of the seeds already finished other than the one judged, from at least 3 of them,
and "3 SD" is a t quantile at the same one-sided level (0.00135, or 0.01 over the seeds a run may
judge when that is stricter) on its degrees of freedom; the
divergence rule needs none, and neither does a run the runtime stopped as diverged where the
baseline's run of that seed trained. A doomed leg's remaining seeds are not run: they are recorded as
failed with the reason (`failure_kind: doomed`): the verdict counts them as no evidence either
way (the leg is `inconclusive` with the reason, unless what did run shows it broken), and the
terminal says so. `benchmarks/verdict_oc.py` (cell g) measures how often the rule, with the
noise estimated as here, stops a leg at 0.8x and 1x the margin."""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bakeoff_runtime.contract.documents import summary_or_none

if TYPE_CHECKING:
    from .run_rule import Rule

MIN_NOISE_PAIRS = 3   # finished pairs, besides the seed judged, before the beyond-the-margin rule is on
NOISE_TAIL = 0.00135  # one-sided tail of the stop bar: what 3 SD would be were the noise known
# Each seed judged is another chance of a false stop: at the fixed tail they add up to 2% at 40
# seeds for a leg at the margin (benchmarks/verdict_oc.py, cell g). The tail per seed is the
# budget over the seeds a run may judge, so the rule stops at most about 1% of such legs.
FALSE_STOP_BUDGET = 0.01


MAX_LINE_BYTES = 1 << 20  # a metrics.jsonl line longer than this is no record a job wrote


def stop_tail(planned_seeds: int) -> float:
    """The one-sided tail of the stop bar for one seed, when up to `planned_seeds` are judged."""
    return min(NOISE_TAIL, FALSE_STOP_BUDGET / max(1, planned_seeds))


def _diverged(job_dir: Path) -> str | None:
    summary = summary_or_none(job_dir / "opt" / "ml" / "model" / "summary.json")
    if summary is None:
        return None
    return (summary.get("reason") or "diverged") if summary.get("status") == "diverged" else None


def eval_curve(job_dir: Path, metric: str) -> list[tuple[int, float]]:
    """(step, value) of the parity metric at each evaluation of a finished job, read line by line (a job's
    metrics.jsonl can be hundreds of megabytes); a line that is no record of this shape is passed over."""
    path = job_dir / "opt" / "ml" / "model" / "metrics.jsonl"
    out = []
    try:
        fh = open(path, "rb")  # noqa: SIM115  (closed below)
    except OSError:
        return []
    with fh:
        for line in fh:
            if b'"eval"' not in line or len(line) > MAX_LINE_BYTES:
                continue
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if not isinstance(rec, dict) or rec.get("kind") != "eval" or metric not in rec:
                continue
            step, value = rec.get("step", 0), rec[metric]
            if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step):
                continue
            if value is None:
                out.append((int(step), math.nan))
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append((int(step), float(value)))
    return out


class DoomWatch:
    """Which legs to stop, from the curves of the jobs finished so far."""

    def __init__(self, spec: Any, planned_seeds: int | None = None, rule: Rule | None = None):
        """`planned_seeds`: the most seeds this run may judge (a sequential design's cap). `rule`: the
        run's parity rule (run_rule.py: the spec's with the parameters the run was started with);
        without it, the spec's own, until `judge_by` gives the run's."""
        self.tail = stop_tail(planned_seeds or len(spec.seed_list))
        self.curves: dict[tuple[str, int], list[tuple[int, float]]] = {}
        self.diverged: dict[tuple[str, int], str | None] = {}
        self.doomed: dict[str, str] = {}
        if rule is not None:
            self.judge_by(rule)
        else:
            self.metric, self.direction, self.baseline = spec.parity.metric, spec.parity.direction, spec.baseline
            self.margin = float(spec.parity.margin) if spec.parity.margin_type == "absolute" else None

    def judge_by(self, rule: Rule) -> None:
        """Judge by the run's rule (its metric, direction, baseline and margin), before any job is read:
        a leg is stopped beyond the margin the verdict decides with, never the spec's where a parameter
        (`--param ParityMargin=...`) set another."""
        if self.curves:
            raise RuntimeError("the doomed-leg rule is set before the first job is read")
        self.metric, self.direction, self.baseline = rule.metric, rule.direction, rule.baseline
        self.margin = rule.absolute_margin

    def finished(self, leg: str, seed: int, job_dir: Path) -> str | None:
        """Record a finished job; returns the reason when this makes a leg doomed (once per leg)."""
        self.curves[(leg, seed)] = eval_curve(job_dir, self.metric)
        self.diverged[(leg, seed)] = _diverged(job_dir)
        legs = [leg] if leg != self.baseline else sorted({k[0] for k in self.curves} - {self.baseline})
        for name in legs:
            if name in self.doomed or (name, seed) not in self.curves or (self.baseline, seed) not in self.curves:
                continue
            why = self._judge(name, seed)
            if why:
                self.doomed[name] = f"stopped early after seed {seed}: {why}"
                return self.doomed[name]
        return None

    def _judge(self, leg: str, seed: int) -> str | None:
        # The runtime stops a run whose loss blows up (it has no validation then): broken on this
        # leg where the baseline trained. The verdict does not call one such seed a fail (that takes
        # exact McNemar), but a leg that blows up is not worth its remaining seeds' bill.
        if self.diverged.get((leg, seed)) and not self.diverged.get((self.baseline, seed)):
            return f"it diverged where {self.baseline} did not ({self.diverged[(leg, seed)]})"
        mine, base = dict(self.curves[(leg, seed)]), dict(self.curves[(self.baseline, seed)])
        steps = sorted(set(mine) & set(base))
        if not steps:
            return None
        from bakeoff_runtime.verdict import group_sequential as seq
        from bakeoff_runtime.verdict import stats

        if self.margin is None:  # a relative margin: only divergence is judged here
            return seq.doomed([mine[s] for s in steps], [base[s] for s in steps], math.inf,
                              direction=self.direction)
        noise = self._noise(leg, seed)
        if noise is None:
            return seq.doomed([mine[s] for s in steps], [base[s] for s in steps], self.margin,
                              direction=self.direction)
        sd, df = noise
        # A t quantile at the stop bar's one-sided level (3 normal SDs, or stricter with many seeds):
        # the noise is estimated from a few pairs, and a z of 3 on it stops legs that would pass.
        z = float(stats.t_quantile(1 - self.tail, df))
        return seq.doomed([mine[s] for s in steps], [base[s] for s in steps], self.margin,
                          direction=self.direction, noise_sd=sd, z=z)

    def _noise(self, leg: str, judged: int) -> tuple[float, int] | None:
        """SD of the paired end-of-training differences and its degrees of freedom, from the seeds
        finished so far but the one being judged (its own gap would inflate the noise it is judged
        against), once there are MIN_NOISE_PAIRS of them; else None (the margin rule is off)."""
        diffs = []
        for (name, seed), curve in self.curves.items():
            base = self.curves.get((self.baseline, seed))
            if (name == leg and seed != judged and curve and base and math.isfinite(curve[-1][1])
                    and math.isfinite(base[-1][1])):
                diffs.append(curve[-1][1] - base[-1][1])
        return (statistics.stdev(diffs), len(diffs) - 1) if len(diffs) >= MIN_NOISE_PAIRS else None
