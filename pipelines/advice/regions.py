"""Is a leg's instance type offered for SageMaker training in the spec's region?

Trainium is not offered in every region. The answer comes, best first, from:

1. the Price List cache of that region (`bakeoff prices --refresh --region R`): SageMaker
   Training rows exist for exactly the instance types offered there;
2. the availability cache `bakeoff prices --refresh` writes (Training rows of the catalog's
   instance types in every region, from the same Price List API);
3. the snapshot bundled below, which works offline and says where it comes from and when.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from bakeoff.pipelines.spec.model import BakeoffSpec

# EC2 on-demand availability as published in instances.vantage.sh data (generated into
# github.com/tsaol/aws-gpu data/trn1_instances.js 2025-12-21, trn1n_instances.js 2026-01-21,
# p4d_instances.js 2025-11-30 at commit 50d6dce9). The outerbounds/metaflow-trainium
# README agrees for trn1: "AWS Trainium is currently supported in us-east-1, us-east-2, and us-west-2".
# This is where EC2 sells the instance: SageMaker training is offered in the same regions or
# fewer, so a region missing here is missing for SageMaker too, and one listed here should be
# confirmed with `bakeoff prices --refresh` (SageMaker Training rows).
SNAPSHOT_SOURCE = "EC2 on-demand availability, instances.vantage.sh data (via github.com/tsaol/aws-gpu)"
SNAPSHOT: dict[str, tuple[str, tuple[str, ...]]] = {
    "ml.trn1.2xlarge": ("2025-12-21", ("us-east-1", "us-east-2", "us-west-2")),
    "ml.trn1.32xlarge": ("2025-12-21", ("us-east-1", "us-east-2", "us-west-2")),
    "ml.trn1n.32xlarge": ("2026-01-21", ("us-east-1", "us-east-2", "us-west-2")),
    "ml.p4d.24xlarge": ("2025-11-30", ("ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-1",
                                       "ap-southeast-2", "ca-central-1", "eu-central-1", "eu-north-1", "eu-west-1",
                                       "eu-west-2", "sa-east-1", "us-east-1", "us-east-2", "us-west-2")),
}


@dataclass(frozen=True)
class Availability:
    instance_type: str
    regions: tuple[str, ...]
    source: str
    as_of: str


def _region_price_cache(region: str) -> dict | None:
    from bakeoff.pipelines.advice.price_list import cache_path

    path = cache_path(region)
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


def availability(instance_type: str) -> Availability | None:
    """Where `instance_type` is offered, from the availability cache or the bundled snapshot."""
    from bakeoff.pipelines.advice.price_list import cached_availability

    body = cached_availability()
    if body and instance_type in body.get("regions", {}):
        return Availability(instance_type, tuple(body["regions"][instance_type]), body["source"],
                            body["fetched_at"][:10])
    if instance_type in SNAPSHOT:
        as_of, regions = SNAPSHOT[instance_type]
        return Availability(instance_type, regions, SNAPSHOT_SOURCE, as_of)
    return None


def offered(instance_type: str, region: str) -> tuple[bool | None, Availability | None, str]:
    """(offered?, where it is offered, what says so); None when nothing is known."""
    found = availability(instance_type)
    prices = _region_price_cache(region)
    if prices and prices.get("prices"):
        verdict = instance_type in prices["prices"] and "on_demand" in prices["prices"][instance_type]
        return verdict, found, f"{prices.get('source', 'AWS Price List API')} for {region}, " \
                               f"{str(prices.get('fetched_at', ''))[:10]}"
    if found is None:
        return None, None, ""
    return region in found.regions, found, f"{found.source}, {found.as_of}"


def region_warnings(spec: BakeoffSpec) -> list[str]:
    """One line per leg (every size of a sweep included) whose instance type the region does not sell."""
    from bakeoff.pipelines.spec.derived import expand

    region = spec.storage.region
    out = []
    for leg in expand(spec).legs:
        ok, found, basis = offered(leg.instance_type, region)
        if ok is not False:
            continue
        elsewhere = [r for r in (found.regions if found else ()) if r != region]
        where = f"regions that offer it: {', '.join(elsewhere)}" if elsewhere else "no region offering it is known"
        sources = [basis] + ([f"{found.source}, {found.as_of}"] if found and f"{found.source}, {found.as_of}" != basis
                             else [])
        out.append(f"region: leg {leg.name}: {leg.instance_type} is not offered in {region} (storage.region); "
                   f"{where} (per {'; '.join(sources)}). Set storage.region to one of them, or run `bakeoff prices "
                   f"--refresh --region {region}` if this is out of date")
    return out
