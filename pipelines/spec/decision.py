"""The spec's `decision:` section: the production run a bake-off is meant to decide, how each leg is
bought, and what porting costs. It changes no job (it is left out of the spec's hash): only the
projection the Evaluate step, `bakeoff project` and the report compute from it
(bakeoff_runtime.verdict.projection)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from bakeoff.pipelines.spec.fields import Float, Int, _Model
from bakeoff_runtime.contract.decision import DecisionConfig


class ProductionRun(_Model):
    """The production run's size: units (tokens or samples, as the bake-off measures them) or steps."""

    tokens: Float | None = Field(None, gt=0, le=1e18, description="Tokens one production run trains on (for a "
                                 "bake-off whose throughput is in tokens/s).")
    samples: Float | None = Field(None, gt=0, le=1e15, description="Samples one production run trains on (for a "
                                  "bake-off whose throughput is in samples/s).")
    steps: Float | None = Field(None, gt=0, le=1e12, description="Optimizer steps of one production run, at the "
                                "bake-off's global batch unless `batch` is given.")
    batch: Float | None = Field(None, gt=0, le=1e9, description="Global batch of the production run's steps, when "
                                "it differs from the bake-off's (Runtime mode only: a script's batch is its own).")

    @model_validator(mode="after")
    def _one_size(self) -> ProductionRun:
        given = [n for n in ("tokens", "samples", "steps") if getattr(self, n) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of tokens, samples or steps (found {', '.join(given)})")
        if self.batch is not None and self.steps is None:
            raise ValueError("batch goes with steps: give steps at that batch, or tokens/samples instead")
        return self


class Purchase(_Model):
    """How a leg's instances are bought for the production runs."""

    option: Literal["on_demand", "spot", "savings_plan", "reserved"] = Field(
        "on_demand", description="How the instances are bought: on demand, managed spot, or under a savings plan "
        "or reservation.")
    discount_pct: Float = Field(0.0, ge=0, lt=100, description="Percent off the on-demand price: spot's expected "
                                "discount, or the plan's or reservation's.")
    interruption_overhead_pct: Float = Field(0.0, ge=0, le=500, description="Spot: percent more run time lost to "
                                             "interruptions and restarts from the last checkpoint.")

    @model_validator(mode="after")
    def _spot_discount(self) -> Purchase:
        if self.option != "on_demand" and self.discount_pct == 0:
            raise ValueError(f"option {self.option} needs its discount_pct (percent off on demand): bakeoff has "
                             "no spot or plan prices of its own")
        if self.option == "on_demand" and (self.discount_pct or self.interruption_overhead_pct):
            raise ValueError("on_demand takes no discount_pct or interruption_overhead_pct: choose spot, "
                             "savings_plan or reserved")
        return self


class PortingEffort(_Model):
    """Engineering time the move costs."""

    hours_spent: Float = Field(0.0, ge=0, le=1e6, description="Engineer-hours already spent porting.")
    hours_expected: Float = Field(0.0, ge=0, le=1e6, description="Engineer-hours still expected.")
    usd_per_hour: Float = Field(0.0, ge=0, le=1e5, description="Loaded cost of an engineer-hour, USD.")


class Decision(_Model):
    """The decision the bake-off serves: projected to the production run, with intervals and break-even."""

    production: ProductionRun = Field(default_factory=ProductionRun, description="One production run's size. "
                                      "Default: the bake-off's own run.")
    instances: dict[str, Int] = Field(default_factory=dict, description="Leg name -> instances of a production "
                                      "run on it. A leg left out: as many as in the bake-off.")
    runs_per_period: Float = Field(1.0, gt=0, le=10000, description="Production runs per period.")
    period: Literal["week", "month", "quarter", "year"] = Field("quarter", description="The period of "
                                                                "`runs_per_period`.")
    purchase: dict[str, Purchase] = Field(default_factory=dict, description="Leg name -> how it is bought. A leg "
                                          "left out: on demand.")
    porting: PortingEffort = Field(default_factory=PortingEffort, description="What the port costs in "
                                   "engineering time.")
    confidence: Float = Field(0.9, ge=0.5, le=0.99, description="Level of the projection's intervals.")

    @model_validator(mode="after")
    def _counts(self) -> Decision:
        for leg, n in self.instances.items():
            if not 1 <= n <= 10000:
                raise ValueError(f"instances.{leg} is {n}: give 1-10000 instances")
        return self

    def to_config(self, measured_batch: float | None = None) -> DecisionConfig:
        """What the projection reads (contract/decision.py)."""
        run = self.production
        units, unit = (run.tokens, "tokens") if run.tokens else (run.samples, "samples") if run.samples else (None,
                                                                                                            None)
        return {"production": {"units": units, "unit": unit, "steps": run.steps, "batch": run.batch},
                "instances": dict(self.instances), "runs_per_period": self.runs_per_period, "period": self.period,
                "purchase": {k: {"option": v.option, "discount_pct": v.discount_pct,
                                 "interruption_overhead_pct": v.interruption_overhead_pct}
                             for k, v in self.purchase.items()},
                "porting": {"hours_spent": self.porting.hours_spent, "hours_expected": self.porting.hours_expected,
                            "usd_per_hour": self.porting.usd_per_hour},
                "confidence": self.confidence, "measured_batch": measured_batch}
