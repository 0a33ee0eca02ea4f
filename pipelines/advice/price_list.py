"""On-demand and spot SageMaker training prices from the AWS Price List API, cached.

`bakeoff prices --refresh` calls pricing:GetProducts (ServiceCode AmazonSageMaker)
for training instances in a region and caches the result; local runs and
`bakeoff report` then cost jobs with it. The pipeline definition never reads the
cache (it must be a pure function of the spec): it carries the bundled price or the
spec's override, and `bakeoff report` re-costs with real billable time.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bakeoff_runtime.contract import CACHE_DIR_ENV

SOURCE = "AWS Price List API (pricing:GetProducts, AmazonSageMaker)"
KINDS = {"Training": "on_demand", "SpotTraining": "spot"}


def cache_path(region: str) -> Path:
    root = Path(os.environ.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "bakeoff")
    return root / f"prices-{region}.json"


def parse_products(price_list: Iterable[str | dict[str, Any]]) -> dict[str, dict[str, float]]:
    """instance type -> {"on_demand": USD/h, "spot": USD/h} from GetProducts' PriceList entries."""
    out: dict[str, dict[str, float]] = {}
    for item in price_list:
        product = json.loads(item) if isinstance(item, str) else item
        attrs = product.get("product", {}).get("attributes", {})
        kind = KINDS.get(attrs.get("platoinstancetype", ""))
        instance = attrs.get("instanceName") or attrs.get("instanceType")
        if not kind or not instance or not instance.startswith("ml."):
            continue
        for term in product.get("terms", {}).get("OnDemand", {}).values():
            for dim in term.get("priceDimensions", {}).values():
                usd = dim.get("pricePerUnit", {}).get("USD")
                if usd is not None and dim.get("unit", "Hrs").lower().startswith("hr") and float(usd) > 0:
                    out.setdefault(instance, {})[kind] = float(usd)
    return dict(sorted(out.items()))


def fetch(region: str, session=None) -> dict[str, dict[str, float]]:
    import boto3
    from botocore.config import Config

    from bakeoff.pipelines.aws_session import aws

    session = session or boto3.session.Session()
    # The Price List API answers from us-east-1 (and a few others) for every region.
    client = session.client("pricing", region_name="us-east-1", config=Config(retries={"mode": "adaptive",
                                                                                       "max_attempts": 10}))
    products: list[str] = []
    for kind in KINDS:
        with aws(f"read SageMaker {kind} prices for {region} (needs pricing:GetProducts)"):
            products += _sagemaker_products(client, regionCode=region, platoinstancetype=kind)
    return parse_products(products)


def _sagemaker_products(client, **terms: str) -> list[str]:
    """Every page of GetProducts for AmazonSageMaker rows matching `terms` (TERM_MATCH filters)."""
    products: list[str] = []
    kw: dict[str, Any] = {"ServiceCode": "AmazonSageMaker", "MaxResults": 100, "FormatVersion": "aws_v1",
                          "Filters": [{"Type": "TERM_MATCH", "Field": field, "Value": value}
                                      for field, value in terms.items()]}
    while True:
        page = client.get_products(**kw)
        products += page.get("PriceList", [])
        if not page.get("NextToken"):
            return products
        kw["NextToken"] = page["NextToken"]


def refresh(region: str, session=None) -> dict[str, Any]:
    prices = fetch(region, session)
    body = {"source": SOURCE, "region": region, "fetched_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "prices": prices}
    path = cache_path(region)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
    try:
        refresh_availability(session=session)
    except Exception as exc:  # the prices are cached; where else the instances run is a bonus
        import sys

        print(f"bakeoff: could not refresh where the catalog's instances are offered ({exc}); "
              "`bakeoff validate` falls back to the bundled snapshot", file=sys.stderr)
    return body


# --- where each instance type is offered for training -----------------------------------
def availability_path() -> Path:
    return cache_path("all").with_name("training-availability.json")


def parse_regions(price_list: Iterable[str | dict[str, Any]]) -> dict[str, list[str]]:
    """instance type -> regions with an on-demand SageMaker Training row, from GetProducts entries."""
    out: dict[str, set[str]] = {}
    for item in price_list:
        product = json.loads(item) if isinstance(item, str) else item
        attrs = product.get("product", {}).get("attributes", {})
        instance = attrs.get("instanceName") or attrs.get("instanceType")
        region = attrs.get("regionCode")
        if attrs.get("platoinstancetype") != "Training" or not instance or not region:
            continue
        priced = any(float(dim.get("pricePerUnit", {}).get("USD") or 0) > 0
                     for term in product.get("terms", {}).get("OnDemand", {}).values()
                     for dim in term.get("priceDimensions", {}).values())
        if priced:
            out.setdefault(instance, set()).add(region)
    return {name: sorted(regions) for name, regions in sorted(out.items())}


def refresh_availability(instance_types: Iterable[str] | None = None, session=None) -> dict[str, Any]:
    """Training rows of each instance type in every region (pricing:GetProducts filtered by
    instanceName and platoinstancetype=Training, no region filter), cached with their date.
    The attribute names are those public SageMaker pricing clients filter on (productFamily
    "ML Instance", regionCode, instanceName, platoinstancetype)."""
    import boto3
    from botocore.config import Config

    from bakeoff.estimators import all_instance_types
    from bakeoff.pipelines.aws_session import aws

    session = session or boto3.session.Session()
    client = session.client("pricing", region_name="us-east-1", config=Config(retries={"mode": "adaptive",
                                                                                       "max_attempts": 10}))
    products: list[str] = []
    for name in instance_types or all_instance_types():
        with aws(f"read the regions offering {name} for training (needs pricing:GetProducts)"):
            products += _sagemaker_products(client, instanceName=name, platoinstancetype="Training")
    body = {"source": SOURCE, "fetched_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "regions": parse_regions(products)}
    path = availability_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
    return body


def cached_availability() -> dict[str, Any] | None:
    try:
        return json.loads(availability_path().read_text())
    except (FileNotFoundError, ValueError):
        return None


def cached(region: str) -> dict[str, dict[str, Any]] | None:
    """The cache in the form bakeoff.estimators.prices.price_for takes (on-demand rows)."""
    path = cache_path(region)
    if not path.exists():
        return None
    body = json.loads(path.read_text())
    return {name: {"usd_per_hour": p["on_demand"], "source": body["source"], "as_of": body["fetched_at"][:10],
                   "region": body["region"], "spot": p.get("spot")}
            for name, p in body["prices"].items() if "on_demand" in p}
