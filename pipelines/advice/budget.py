"""`bakeoff plan`: what a verdict will cost before anyone pays for it.

From a previous run's paired spread (`--from RUN`): the seeds per leg for 80% and 95%
power at the declared margin (a fixed design: legs that truly agree pass, and a leg
worse by twice the margin fails, each with that probability), and the expected seeds of
the sequential design (`bakeoff run --until-decided`) at the same spread, each as jobs,
instance-hours and cost at catalog prices. Without data, the pilot it would run.

Job hours come from the run's billed time per job (emulated wall time for a local run,
which says nothing about the target hardware: the plan says so), else from each leg's
`max_runtime_s` as an upper bound.
"""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from bakeoff.pipelines.advice.rounds import check_design, default_cap
from bakeoff.pipelines.errors import Either, SpecError, words
from bakeoff.pipelines.params import FROM_RUN
from bakeoff.pipelines.spec.model import BakeoffSpec
from bakeoff_runtime.contract.documents import DocumentError, Evaluation, read_evaluation

SIM_REPS = 4000  # the sequential design's expected seeds: a fixed-seed simulation (deterministic)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_json(self, indent: int | None = 2) -> str:
        """The plan as `bakeoff plan --json` prints it."""
        import json

        return json.dumps(self.model_dump(mode="json"), indent=indent, ensure_ascii=True)


class LegCost(_Frozen):
    """One leg's price and job hours, as the plan costs it."""

    name: str = Field(description="Leg name.")
    instance_type: str = Field(description="Instance type the leg runs on.")
    instance_count: int = Field(description="Instances per job.")
    usd_per_hour: float | None = Field(description="Catalog price per instance-hour (None: unknown).")
    price_source: str | None = Field(description="Where the price comes from.")
    hours_per_job: float = Field(description="Wall hours of one job.")
    hours_basis: str = Field(description="Where hours_per_job comes from.")
    hours_upper_bound: bool = Field(False, description="True when hours_per_job is the job's runtime cap "
                                                       "(max_runtime_s), not a measured time: its cost is a ceiling.")


class Spend(_Frozen):
    """What a design is expected to spend."""

    seeds_per_leg: float = Field(description="Seeds per leg (expected, for the sequential design).")
    jobs: float = Field(description="Training jobs (legs x seeds).")
    instance_hours: float = Field(description="Instance-hours of those jobs.")
    cost_usd: float | None = Field(description="Their cost at catalog prices (None: a price is unknown).")


class Design(_Frozen):
    """One way to run the bake-off (a fixed number of seeds, or sequential rounds) and its expected spend."""

    name: str = Field(description="fixed_80, fixed_95, sequential_if_equal, sequential_if_2x_margin, ...")
    what: str = Field(description="One sentence on the design and its operating point.")
    spend: Spend | None = Field(description="Its expected spend; None when the seeds needed exceed 100.")


class BudgetPlan(_Frozen):
    """`plan`: seeds per leg for 80% and 95% power, jobs, instance-hours and cost of the fixed and the
    sequential design, before spending (`bakeoff plan --json` prints exactly this)."""

    bakeoff: str = Field(description="Bake-off name.")
    margin: float | None = Field(description="The margin in metric units (None: relative, no run to scale it).")
    alpha: float = Field(description="One-sided alpha of each test.")
    sigma: float | None = Field(description="SD of a per-seed paired difference used for planning (None: no data).")
    sigma_source: str = Field(description="Where sigma comes from.")
    legs: list[LegCost] = Field(description="Per-leg price and job hours.")
    designs: list[Design] = Field(description="The designs compared.")
    pilot: Design | None = Field(description="Without data: the pilot that would measure the spread.")
    spent: Spend | None = Field(description="With --from: what the previous run's verdict cost.")
    max_seeds: int = Field(description="The sequential design's cap on seeds per leg.")
    notes: list[str] = Field(default_factory=list, description="Caveats a reader must see.")


def _evaluation(run: Path) -> Evaluation:
    path = run / "evaluation" / "evaluation.json"
    if not path.exists() and (run / "evaluation.json").exists():
        path = run / "evaluation.json"
    try:
        return read_evaluation(path)
    except FileNotFoundError:
        raise SpecError(words(FROM_RUN.given(run), ": no evaluation.json there (a run directory of ",
                              Either("`run_local`", "`bakeoff run`"), ", or a folder holding evaluation.json)")
                        ) from None
    except DocumentError as exc:  # JSON, but not an evaluation this bakeoff reads
        raise SpecError(str(exc), field=FROM_RUN) from None
    except ValueError as exc:
        raise SpecError(f"{path}: not JSON ({exc})", field=FROM_RUN) from None


def _spread(ev: Evaluation) -> tuple[float | None, int, str]:
    """The largest paired SD across legs (the one that decides the seeds) and its pairs."""
    best: tuple[float | None, int, str] = (None, 0, "no paired comparison in the run")
    for c in ev.get("checks", []):
        sd = c.get("sd")
        if c.get("test") == "paired" and sd is not None and (best[0] is None or sd > best[0]):
            best = (float(sd), int(c["n_pairs"]), f"{c['name']}: paired SD on {c['n_pairs']} seeds")
    return best


def _legs(spec: BakeoffSpec, ev: Evaluation | None) -> tuple[list[LegCost], list[str]]:
    from bakeoff.estimators.prices import price_for
    from bakeoff.pipelines.advice.price_list import cached

    refreshed = cached(spec.storage.region)
    from bakeoff.pipelines.spec.derived import expand

    notes, out = [], []
    # Sweep sizes and ablations are legs that run every seed too: they are part of the bill.
    for leg in expand(spec).legs:
        price = price_for(leg.instance_type, leg.price_per_hour, refreshed)
        figures = (ev.get("legs", {}) if ev else {}).get(leg.name)
        billed = [s for r in (figures.get("runs", []) if figures else []) if (s := r.get("billable_s"))]
        if billed:
            hours = sum(billed) / len(billed) / 3600
            basis = f"mean billed time of {len(billed)} job(s) of the previous run"
            if figures and figures.get("emulated"):
                basis += " (emulated locally: not the target hardware's time)"
        else:
            hours, basis = leg.max_runtime_s / 3600, "max_runtime_s (an upper bound: no run to measure)"
        out.append(LegCost(name=leg.name, instance_type=leg.instance_type, instance_count=leg.instance_count,
                           usd_per_hour=price.usd_per_hour if price else None,
                           price_source=price.source if price else None, hours_per_job=hours, hours_basis=basis,
                           hours_upper_bound=not billed))
    if any(c.hours_basis.endswith("(emulated locally: not the target hardware's time)") for c in out):
        notes.append("job hours come from a local run (CPU emulation): the seeds and jobs hold, the hours and "
                     "cost do not describe the target hardware; plan from a SageMaker run for real figures")
    return out, notes


def _spend(seeds: float, legs: list[LegCost]) -> Spend:
    hours = sum(seeds * leg.hours_per_job * leg.instance_count for leg in legs)
    known = all(leg.usd_per_hour is not None for leg in legs)
    cost = (sum(seeds * leg.hours_per_job * leg.instance_count * (leg.usd_per_hour or 0.0) for leg in legs)
            if known else None)
    return Spend(seeds_per_leg=seeds, jobs=seeds * len(legs), instance_hours=hours, cost_usd=cost)


def plan_budget(spec: BakeoffSpec, from_run: Path | None = None, *, max_seeds: int | None = None) -> BudgetPlan:
    from bakeoff_runtime.verdict import group_sequential as seq
    from bakeoff_runtime.verdict import stats

    ev = _evaluation(Path(from_run)) if from_run else None
    legs, notes = _legs(spec, ev)
    p = spec.parity
    first = len(spec.seed_list)
    cap = max_seeds or default_cap(max(first, 2))
    check_design(max(first, 2), cap)
    margin: float | None = p.margin
    if p.margin_type == "relative":
        base_leg = (ev.get("legs", {}) if ev else {}).get(spec.baseline)
        base = base_leg.get("metric", {}).get("mean") if base_leg else None
        margin = p.margin * abs(base) if base is not None else None
    sigma, pairs, source = _spread(ev) if ev else (None, 0, "no previous run (--from RUN)")
    spent = None
    if ev:
        runs = [(r, leg) for leg in ev.get("legs", {}).values() for r in leg.get("runs", [])]
        hours = sum((r.get("billable_s") or 0) * int(leg.get("instance_count") or 1) for r, leg in runs) / 3600
        costs = [r.get("cost_usd") for r, _ in runs]
        spent = Spend(seeds_per_leg=max((len(leg.get("runs", [])) for leg in ev.get("legs", {}).values()), default=0),
                      jobs=len(runs), instance_hours=hours,
                      cost_usd=sum(c for c in costs if c is not None)
                      if costs and all(c is not None for c in costs) else None)
    designs: list[Design] = []
    pilot = None
    if sigma is None or margin is None:
        n = max(first, 3)
        pilot = Design(name="pilot", what=f"no spread to plan from: a pilot of {n} seeds per leg (`bakeoff run`) "
                       "measures it; then `bakeoff plan --from RUN_DIR`, or run `--until-decided` and let the "
                       "rounds find the seeds", spend=_spend(n, legs))
    else:
        # Several legs are planned jointly, as the evaluation recommends: each at 1 - (1 - power) / K,
        # fails at Holm's strictest level alpha / K, so that all K pass together with `power`.
        compared = max(1, len(spec.legs) - 1)
        jointly = f" (all {compared} legs together)" if compared > 1 else ""
        for power in (0.8, 0.95):
            needed = stats.seeds_for_power(sigma, margin, p.alpha, 1 - (1 - power) / compared, test=p.test,
                                           sigma_df=max(pairs - 1, 1), fail_alpha=p.alpha / compared)
            designs.append(Design(
                name=f"fixed_{int(power * 100)}",
                what=(f"fixed design: {needed} seeds per leg give {power:.0%} probability{jointly} that legs that "
                      f"truly agree pass and that a leg worse by twice the margin fails (planned on the "
                      f"{stats.PLANNING_CONFIDENCE:.0%} upper confidence limit of the SD {sigma:.3g})") if needed
                else f"fixed design: more than 100 seeds per leg for {power:.0%} power",
                spend=_spend(needed, legs) if needed else None))
        for label, delta in (("if_equal", 0.0), ("if_2x_margin", 2 * margin)):
            r = seq.simulate(max(first, 2), cap, sigma, margin, delta, p.alpha, reps=SIM_REPS, test=p.test)
            designs.append(Design(
                name=f"sequential_{label}",
                what=(f"--until-decided, first round {max(first, 2)}, cap {cap}: if the legs "
                      f"{'truly agree' if delta == 0 else 'differ by twice the margin'}, expected "
                      f"{r['mean_seeds']:.1f} seeds per leg; pass {r['pass']:.0%}, fail {r['fail']:.0%}, "
                      f"inconclusive {r['inconclusive']:.0%}"),
                spend=_spend(r["mean_seeds"], legs)))
        designs.append(Design(name="sequential_at_cap", what=f"--until-decided at its cap of {cap} seeds per leg "
                              "(the most it can spend)", spend=_spend(cap, legs)))
    return BudgetPlan(bakeoff=spec.name, margin=margin, alpha=p.alpha, sigma=sigma, sigma_source=source,
                      legs=legs, designs=designs, pilot=pilot, spent=spent, max_seeds=cap, notes=notes)


def render(plan: BudgetPlan) -> list[str]:
    """The plan as lines for a terminal."""
    capped = any(leg.hours_upper_bound for leg in plan.legs)
    ceiling = "at most " if capped else ""

    def count(x: float) -> str:  # a whole count as one; an expected count (the sequential design's) to 0.1
        return f"{x:.0f}" if float(x).is_integer() else f"{x:.1f}"

    def money(s: Spend | None) -> str:
        if s is None:
            return "not affordable (over 100 seeds per leg)"
        cost = "cost unknown (no price)" if s.cost_usd is None else f"{ceiling}${s.cost_usd:,.2f}"
        return (f"{count(s.seeds_per_leg)} seeds/leg, {count(s.jobs)} jobs, {ceiling}{s.instance_hours:,.4g} "
                f"instance-hours, {cost}")

    margin = "relative (unknown without a run)" if plan.margin is None else f"{plan.margin:.4g}"
    lines = [f"bake-off {plan.bakeoff}: margin {margin}, alpha {plan.alpha}",
             f"spread: {'none' if plan.sigma is None else f'{plan.sigma:.4g}'} ({plan.sigma_source})"]
    for leg in plan.legs:
        price = "no price" if leg.usd_per_hour is None else f"${leg.usd_per_hour:,.2f}/h ({leg.price_source})"
        lines.append(f"  leg {leg.name}: {leg.instance_count} x {leg.instance_type}, {price}; "
                     f"{leg.hours_per_job:.3g} h/job ({leg.hours_basis})")
    if plan.spent:
        lines.append(f"the previous run's verdict cost: {money(plan.spent)}")
    if plan.pilot:
        lines.append(f"pilot: {plan.pilot.what}: {money(plan.pilot.spend)}")
    for d in plan.designs:
        lines.append(f"{d.name}: {money(d.spend)}")
        lines.append(f"    {d.what}")
    lines += [f"note: {n}" for n in plan.notes]
    if capped:
        lines.append("note: hours and costs marked 'at most' take every job to its runtime cap (max_runtime_s): "
                     "a ceiling, not an estimate; a pilot run (`bakeoff run`, then `bakeoff plan --from RUN_DIR`) "
                     "measures the time")
    return lines
