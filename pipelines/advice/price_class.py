"""Is the baseline of the same price class as the legs it judges?

An honest Trainium test compares against a GPU instance that costs about the same per
instance-hour: against one that costs several times more (or less), "faster" and "cheaper
per step" mostly restate the price gap. `bakeoff validate` warns when a leg's price per
instance-hour is more than PRICE_CLASS_RATIO times the baseline's, or less than its
inverse, and names the catalog GPU instance nearest in price to the leg.
"""
from __future__ import annotations

from dataclasses import dataclass

from bakeoff.pipelines.spec.model import BakeoffSpec

# Why 2: the pair the project exists for, ml.trn1.32xlarge and ml.p4d.24xlarge, differ by
# about 2% in the bundled table; within one family the next size up roughly doubles the price
# (trn1.2xlarge -> trn1.32xlarge is 16x, g5.xlarge -> g5.12xlarge 4x). A ratio above 2 means
# the cheaper leg could run two instances for the price of one of the other: the comparison
# is then between budgets, not chips.
PRICE_CLASS_RATIO = 2.0


@dataclass(frozen=True)
class PricedLeg:
    name: str
    instance_type: str
    usd_per_hour: float
    source: str


def _priced_legs(spec: BakeoffSpec, cached: dict | None) -> dict[str, PricedLeg]:
    from bakeoff.estimators.prices import price_for

    out = {}
    for leg in spec.legs:
        price = price_for(leg.instance_type, leg.price_per_hour, cached)
        if price is not None:
            out[leg.name] = PricedLeg(leg.name, leg.instance_type, price.usd_per_hour,
                                      f"{price.source}, {price.as_of}")
    return out


def nearest_gpu(usd_per_hour: float, cached: dict | None = None, exclude: str | None = None) -> PricedLeg | None:
    """The catalog GPU instance whose on-demand price per instance-hour is nearest (by ratio)."""
    from bakeoff.estimators import all_instance_types, instance_of
    from bakeoff.estimators.prices import price_for

    best: tuple[float, PricedLeg] | None = None
    for name in all_instance_types():
        kind, _inst = instance_of(name)
        if kind.name != "gpu" or name == exclude:
            continue
        price = price_for(name, None, cached)
        if price is None:
            continue
        distance = max(price.usd_per_hour, usd_per_hour) / min(price.usd_per_hour, usd_per_hour)
        if best is None or distance < best[0]:
            best = (distance, PricedLeg(name, name, price.usd_per_hour, f"{price.source}, {price.as_of}"))
    return best[1] if best else None


def price_class_warnings(spec: BakeoffSpec, cached: dict | None = None) -> list[str]:
    """One line per leg whose price per instance-hour is outside [1/R, R] x the baseline's."""
    priced = _priced_legs(spec, cached)
    base = priced.get(spec.baseline)
    if base is None:
        return []
    out = []
    for leg in spec.legs:
        mine = priced.get(leg.name)
        if mine is None or leg.name == spec.baseline:
            continue
        ratio = mine.usd_per_hour / base.usd_per_hour
        if 1 / PRICE_CLASS_RATIO <= ratio <= PRICE_CLASS_RATIO:
            continue
        line = (f"price class: leg {leg.name} ({leg.instance_type}, {mine.usd_per_hour:.4g} USD per instance-hour) "
                f"costs {ratio:.3g}x the baseline {base.name} ({base.instance_type}, {base.usd_per_hour:.4g} USD); "
                f"beyond {PRICE_CLASS_RATIO:g}x either way speed and cost per step mostly restate the price gap")
        # The GPU side is the one to move: suggest the GPU instance priced like the other side.
        gpu_is_base = spec.leg(spec.baseline).kind.name == "gpu"
        anchor, gpu_side = (mine, base) if gpu_is_base else (base, mine)
        suggestion = nearest_gpu(anchor.usd_per_hour, cached, exclude=gpu_side.instance_type)
        if suggestion is not None and (gpu_is_base or leg.kind.name == "gpu"):
            line += (f"; the catalog GPU instance nearest to {anchor.name}'s price is {suggestion.instance_type} "
                     f"({suggestion.usd_per_hour:.4g} USD per instance-hour; {suggestion.source})")
        out.append(line)
    return out
