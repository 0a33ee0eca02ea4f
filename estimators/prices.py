"""The bundled on-demand price table (USD per instance-hour, us-east-1).

Every row names its source and date. Where a SageMaker *training* price could not
be confirmed from a public source, the row carries the EC2 on-demand price of the
same instance instead and says so (`basis="ec2-on-demand"`): SageMaker training
is usually priced above EC2, so such costs are lower bounds. For real figures run
`bakeoff prices --refresh` (AWS Price List API) or set `price_per_hour` on a leg.
"""
from __future__ import annotations

from dataclasses import dataclass

from .base import Price

SM_BULK = "AWS AmazonSageMaker price list (bulk file), as quoted in public cost notes"
VANTAGE = "EC2 on-demand list price, instances.vantage.sh data"
EC2_NOTE = "SageMaker training price not confirmed; EC2 on-demand price of the same instance (a lower bound)"


@dataclass(frozen=True)
class PriceRow:
    price: Price
    basis: str  # "sagemaker-training" | "ec2-on-demand"


def _sm(usd, as_of):
    return PriceRow(Price(usd, SM_BULK, as_of), "sagemaker-training")


def _ec2(usd, as_of):
    return PriceRow(Price(usd, VANTAGE, as_of, note=EC2_NOTE), "ec2-on-demand")


BUNDLED: dict[str, PriceRow] = {
    "ml.trn1.2xlarge": _ec2(1.34375, "2025-12-21"),
    "ml.trn1.32xlarge": _ec2(21.50, "2025-12-21"),
    "ml.trn1n.32xlarge": _ec2(24.78, "2026-01-21"),
    "ml.p4d.24xlarge": _ec2(21.957642, "2026-08-26"),
    "ml.p4de.24xlarge": _ec2(27.44705, "2026-08-26"),
    "ml.p5.48xlarge": _ec2(55.04, "2026-08-26"),
    "ml.g5.xlarge": _sm(1.408, "2026-09-24"),
    "ml.g5.12xlarge": _ec2(5.672, "2026-08-26"),
    "ml.g6.xlarge": _sm(1.127, "2026-09-24"),
    "ml.m5.xlarge": _sm(0.23, "2026-09-24"),
    "ml.m5.4xlarge": _sm(0.922, "2026-09-24"),
}


def bundled_price(instance_type: str) -> Price | None:
    row = BUNDLED.get(instance_type)
    return row.price if row else None


def price_for(instance_type: str, override: float | None = None, cached: dict | None = None) -> Price | None:
    """The price a leg is costed at: the spec's override, a refreshed Price List
    entry, else the bundled row (None when nothing is known)."""
    if override is not None:
        return Price(override, "spec override (legs[].price_per_hour)", "as declared")
    if cached and instance_type in cached:
        c = cached[instance_type]
        return Price(c["usd_per_hour"], c.get("source", "AWS Price List API"), c.get("as_of", ""),
                     region=c.get("region", "us-east-1"),
                     note=f"spot {c['spot']:.4g} USD/h" if c.get("spot") else "")
    return bundled_price(instance_type)
