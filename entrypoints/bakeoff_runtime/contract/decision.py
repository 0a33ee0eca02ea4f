"""The decision a bake-off serves, as it crosses from the spec (pipelines/spec/decision.py) into the
Evaluate step's config, and the projection that comes back in evaluation.json (verdict/projection.py):
one definition for the compiler, the container, `bakeoff project`, the report and the API."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:  # annotations stay strings at run time: the container's Python may predate typing.NotRequired
    from typing_extensions import NotRequired

PROJECTION_SCHEMA = "bakeoff.projection/1"
PERIOD_WEEKS = {"week": 1.0, "month": 52.0 / 12, "quarter": 13.0, "year": 52.0}
PURCHASE_OPTIONS = ("on_demand", "spot", "savings_plan", "reserved")


class ProductionRun(TypedDict):
    """The production run's size: `units` of the unit the bake-off measured (tokens or samples), or
    `steps` at the bake-off's batch (or at `batch`, where the bake-off's batch is known)."""
    units: float | None
    unit: str | None
    steps: float | None
    batch: float | None


class Purchase(TypedDict):
    option: str                       # on_demand | spot | savings_plan | reserved
    discount_pct: float               # off the on-demand price: spot's expected discount, a plan's or a reservation's
    interruption_overhead_pct: float  # spot: extra run time lost to interruptions and restarts


class Porting(TypedDict):
    hours_spent: float
    hours_expected: float
    usd_per_hour: float


class DecisionConfig(TypedDict):
    production: ProductionRun
    instances: dict[str, int]         # leg -> instances of a production run; a leg left out: as in the bake-off
    runs_per_period: float
    period: str                       # week | month | quarter | year
    purchase: dict[str, Purchase]     # leg -> how it is bought; a leg left out: on demand
    porting: Porting
    confidence: float                 # the intervals' level
    measured_batch: NotRequired[float | None]  # the bake-off's global batch, where the spec sets it


class Interval(TypedDict):
    mean: float | None
    low: float | None
    high: float | None


class LegProjection(TypedDict):
    instance_type: str | None
    instances: int
    instances_measured: int
    unit: str | None
    seeds: int
    scaling: dict[str, Any]           # basis (as measured | interpolated | extrapolated | assumed linear), factor, note
    throughput: Interval              # units/s of a production run at `instances`
    hours_per_run: Interval           # a warm run (the compile cache kept)
    first_run_extra_hours: float      # the first run's cold compile beyond a warm start
    usd_per_instance_hour: float | None  # after the purchase option
    price: dict[str, Any]             # on-demand price, its source and date, the purchase option
    cost_per_run_usd: Interval
    first_run_cost_usd: float | None  # a warm run's cost plus the cold compile
    amortised_cost_per_run_usd: float | None  # the cold compile shared by one period's runs
    cost_per_period_usd: Interval
    rests_on: list[str]               # the measured quantities each figure comes from
    reason: str | None                # why it could not be projected (then the figures are None)


class Comparison(TypedDict):
    leg: str
    baseline: str
    parity: str                       # the parity check's status
    pairing: str | None               # how the seeds' uncertainty was carried: paired over N seeds, or Welch
    saving_per_run_usd: Interval | None
    saving_pct: Interval | None       # of the baseline's cost per run
    saving_per_period_usd: Interval | None
    porting_usd: float
    break_even_runs: Interval | None  # production runs until the saving covers the porting (None: never)
    break_even_weeks: Interval | None
    never_pays_back: bool
    reason: str | None                # a leg without a saving: why (parity not reached, not projected)


class Projection(TypedDict):
    schema: str
    confidence: float
    emulated: bool
    label: str
    period: str
    runs_per_period: float
    production: dict[str, Any]        # units, unit, and how they were read
    porting_usd: float
    legs: dict[str, LegProjection]
    comparisons: list[Comparison]
    sentence: str
    assumptions: list[str]
    decision: DecisionConfig          # the inputs, defaults filled in: what the projection can be redone from
