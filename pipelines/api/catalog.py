"""The façade's catalogue verbs: instances, images, prices."""
from __future__ import annotations

from typing import Any

from ._support import public
from .results import ImageRow, Images, InstanceInfo, Instances, LegKind, PriceRow, Prices


@public
def instances() -> Instances:
    """Every leg kind (Trainium, GPU, CPU), its backends, instance types and bundled prices (`bakeoff instances`)."""
    from bakeoff.estimators import kinds
    from bakeoff.estimators.prices import BUNDLED

    out = []
    for kind in kinds().values():
        rows = []
        for name, inst in kind.instances.items():
            row = BUNDLED.get(name)
            rows.append(InstanceInfo(name=name, accelerator=inst.accelerator, accelerators=inst.accelerators,
                                     devices=inst.devices, usd_per_hour=row.price.usd_per_hour if row else None,
                                     price_basis=row.basis if row else None,
                                     price_as_of=row.price.as_of if row else None))
        out.append(LegKind(name=kind.name, description=kind.description, backends=tuple(kind.backends),
                           instances=tuple(rows)))
    return Instances(kinds=tuple(out))


@public
def images(region: str = "us-east-1") -> Images:
    """The training image of each backend in `region`, with the source it was looked up in (`bakeoff images`)."""
    import datetime

    from bakeoff.estimators.images import CATALOG, SOURCES, NoDefaultImage
    from bakeoff.pipelines.errors import SpecError

    today = datetime.date.today().isoformat()
    try:
        return _images(region, today, CATALOG, SOURCES)
    except NoDefaultImage:  # an unknown region is the caller's input: SpecError, exit 2
        raise SpecError(f"no training images are known in {region!r}: AWS publishes no Deep Learning Containers "
                        "there, or it is no region's name (e.g. us-east-1)", field="region") from None


def _images(region: str, today: str, catalog: Any, sources: Any) -> Images:
    return Images(tuple(ImageRow(backend=i.backend, default=i.default, uri=i.uri(region), framework=i.framework,
                                 python=i.python, detail=i.detail, source=sources[i.source], note=i.note,
                                 end_of_patch=i.end_of_patch, past_end_of_patch=i.unpatched_on(today))
                        for i in catalog))


@public
def prices(region: str = "us-east-1", *, refresh: bool = False, session: Any = None,
           profile: str | None = None) -> Prices:
    """SageMaker training prices of every known instance type (`bakeoff prices`): the bundled price with its
    source and date, and the AWS Price List's on-demand and spot prices where they were fetched.

    `refresh` calls pricing:GetProducts with `session` (or `profile`) first and caches the answer."""
    from bakeoff.estimators import all_instance_types
    from bakeoff.estimators.prices import BUNDLED
    from bakeoff.pipelines.advice import price_list

    fetched = None
    if refresh:
        if session is None and profile:
            import boto3

            session = boto3.session.Session(profile_name=profile)
        pricing_session = session
        fetched = len(price_list.refresh(region, pricing_session)["prices"])
    live = price_list.cached(region) or {}
    rows = []
    for name in all_instance_types():
        row = BUNDLED.get(name)
        entry = live.get(name) or {}
        rows.append(PriceRow(instance=name, bundled_usd_per_hour=row.price.usd_per_hour if row else None,
                             bundled_basis=row.basis if row else None,
                             bundled_source=f"{row.price.source} ({row.price.as_of})" if row else None,
                             price_list_usd_per_hour=entry.get("usd_per_hour"),
                             price_list_spot_usd_per_hour=entry.get("spot"), price_list_as_of=entry.get("as_of")))
    cache = price_list.cache_path(region)
    return Prices(region=region, cache=str(cache) if cache.exists() else None, refreshed=fetched, rows=tuple(rows))
