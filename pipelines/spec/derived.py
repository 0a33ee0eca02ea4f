"""Scaling sweeps and the precision ablation: the derived legs that a leg's `scaling:` and
`ablation:` declare, and how many processes stand for a size's devices on this machine.

A derived leg is a leg like any other (every seed, its own step names, its own parity
check), so the plan, the compiler, the local executor and the evaluation need nothing
special: `expand()` returns the spec with the derived legs appended. What is hashed and
recorded as the spec stays the spec as declared.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from bakeoff.pipelines.names import STEP_NAME_RE, precompile_step, step_name
from bakeoff.pipelines.spec.fields import MAX_GLOBAL_BATCH, SpecFieldError
from bakeoff.pipelines.spec.legs import Leg, ScalingSize
from bakeoff_runtime.contract.backend_table import row

if TYPE_CHECKING:  # the spec's validator calls check_derived: this module sits below bakeoff.pipelines.spec.model
    from bakeoff.pipelines.spec.model import BakeoffSpec

SCALING: Literal["scaling"] = "scaling"
ABLATION: Literal["ablation"] = "ablation"


@dataclass(frozen=True)
class Derivation:
    """Where a derived leg comes from."""

    name: str
    source: str  # the declared leg
    kind: Literal["scaling", "ablation"]
    mode: Literal["strong", "weak"] | None  # scaling only
    global_batch_size: int  # the job's global batch (differs from the spec's only under weak scaling)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def other_precision(precision: str) -> str:
    return "fp32" if precision == "bf16" else "bf16"


def size_name(leg: Leg, size: ScalingSize) -> str:
    """`trn1-x2` (same instance type), `trn1-32xlarge` (same family), `trn1-trn1n-32xlarge-x2`:
    deterministic, and only characters SageMaker step names take (no `@` or `.`)."""
    if size.name:
        return size.name
    if size.instance_type == leg.instance_type:
        return f"{leg.name}-x{size.instance_count}"
    family, _, rest = size.instance_type.removeprefix("ml.").partition(".")
    same = leg.instance_type.removeprefix("ml.").partition(".")[0] == family
    short = rest if same else f"{family}-{rest}"
    return f"{leg.name}-{short}" + (f"-x{size.instance_count}" if size.instance_count > 1 else "")


def _weak_global_batch(spec: BakeoffSpec, leg: Leg, devices: int) -> int:
    # The source leg's per-device batch x accumulation (one rank's share) is held.
    return spec.training.global_batch_size // leg.devices * devices


def _derived_data(spec: BakeoffSpec):
    """(derivation, the derived leg's fields, the spec field it comes from), in declaration order."""
    for i, leg in enumerate(spec.legs):
        base = leg.model_dump(exclude={"scaling", "scaling_mode", "ablation"})
        for j, size in enumerate(leg.scaling):
            data = {**base, "name": size_name(leg, size), "instance_type": size.instance_type,
                    "instance_count": size.instance_count}
            if size.instance_type != leg.instance_type:
                data["price_per_hour"] = None  # the override is a price of the leg's own instance type
            devices = None
            try:
                devices = Leg.model_validate(data).devices
            except ValidationError:
                pass  # check_derived says why
            gb = spec.training.global_batch_size
            if leg.scaling_mode == "weak" and devices:
                gb = _weak_global_batch(spec, leg, devices)
            yield (Derivation(data["name"], leg.name, SCALING, leg.scaling_mode, gb), data,
                   ("legs", i, "scaling", j))
        if leg.ablation == "precision":
            data = {**base, "name": f"{leg.name}-{other_precision(leg.precision)}",
                    "precision": other_precision(leg.precision)}
            yield (Derivation(data["name"], leg.name, ABLATION, None, spec.training.global_batch_size), data,
                   ("legs", i, "ablation"))


def declared(spec: BakeoffSpec) -> BakeoffSpec:
    """The spec as the user wrote it (an expanded spec remembers it)."""
    return spec._declared or spec


def derivations(spec: BakeoffSpec) -> dict[str, Derivation]:
    """Derived leg name -> where it comes from (for a declared or an expanded spec)."""
    return {d.name: d for d, _, _ in _derived_data(declared(spec))}


def check_derived(spec: BakeoffSpec) -> None:
    """Every derived leg is a valid leg with a unique name, valid step names and a batch
    that splits over its devices; a problem is blamed on the `scaling`/`ablation` entry."""
    names = {leg.name: ("legs", i, "name") for i, leg in enumerate(spec.legs)}
    for d, data, where in _derived_data(spec):
        at_size = where[2] == "scaling"
        try:
            leg = Leg.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = tuple(err["loc"])
            cause = (err.get("ctx") or {}).get("error")
            field: tuple = getattr(cause, "field", loc)
            msg = str(cause) if cause is not None else err["msg"]
            if at_size:
                sub = {"instance_count": "instance_count", "name": "name"}.get(str(field[0]) if field else "",
                                                                                 "instance_type")
                raise SpecFieldError(where + (sub,), f"size {d.name!r}: {msg}") from None
            raise SpecFieldError(where, f"the {data['precision']} ablation of {d.source!r}: {msg}") from None
        source = spec.leg(d.source)
        if at_size and (leg.instance_type, leg.instance_count) == (source.instance_type, source.instance_count):
            raise SpecFieldError(where + ("instance_type",), f"size {leg.instance_count} x {leg.instance_type} is "
                                 f"leg {d.source!r}'s own size; list only the other sizes")
        if d.name in names:
            field = where + ("name",) if at_size else where
            raise SpecFieldError(field, f"derived leg name {d.name!r} is taken (also {_dotted(names[d.name])}); "
                                 + ("give this size a `name:`" if at_size else "rename the leg"))
        names[d.name] = where
        for seed in spec.seed_list:
            for step in (step_name(d.name, seed), precompile_step(d.name)):
                if not STEP_NAME_RE.match(step):
                    raise SpecFieldError(where + (("name",) if at_size else ()), f"step name {step!r} of derived "
                                         f"leg {d.name!r} does not match ^[A-Za-z0-9-_]{{1,64}}$; "
                                         + ("give this size a shorter `name:`" if at_size else
                                            "shorten the leg name"))
        if d.mode == "weak" and d.global_batch_size > MAX_GLOBAL_BATCH:
            raise SpecFieldError(where, f"weak scaling to {leg.devices} devices makes the global batch "
                                 f"{d.global_batch_size}, above {MAX_GLOBAL_BATCH}")
        if d.global_batch_size % leg.devices:
            raise SpecFieldError(where + ("instance_type",) if at_size else ("training", "global_batch_size"),
                                 f"global_batch_size={d.global_batch_size} is not divisible by the {leg.devices} "
                                 f"devices of {d.name!r} ({leg.instance_count} x {leg.instance_type}); use a "
                                 f"multiple of {leg.devices} or scaling_mode: weak")


def _dotted(loc: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(loc))


def expand(spec: BakeoffSpec) -> BakeoffSpec:
    """The spec with its derived legs appended after the declared ones (`scaling`/`ablation`
    cleared on every leg); the spec itself when it declares none. Idempotent."""
    if spec._declared is not None or not any(leg.scaling or leg.ablation for leg in spec.legs):
        return spec
    legs = [leg.model_copy(update={"scaling": [], "ablation": None}) for leg in spec.legs]
    legs += [Leg.model_validate(data) for _, data, _ in _derived_data(spec)]
    # Each part was validated (the declared spec checked its derived legs); a weak sweep's
    # legs carry their own global batch, which the spec-wide divisibility check cannot know.
    expanded = spec.model_copy(update={"legs": legs})
    expanded.sourced(spec.provenance)._declared = spec
    return expanded


def sweeps(spec: BakeoffSpec) -> dict[str, list[str]]:
    """Declared leg -> its sweep's legs (itself first, then its sizes in declared order)."""
    out: dict[str, list[str]] = {}
    for d in derivations(spec).values():
        if d.kind == SCALING:
            out.setdefault(d.source, [d.source]).append(d.name)
    return out


def in_sweep(spec: BakeoffSpec, leg: str) -> bool:
    """A leg of a scaling sweep, or the ablation of one (run like it, to compare like with like)."""
    groups = sweeps(spec)
    d = derivations(spec).get(leg)
    return leg in groups or (d is not None and d.source in groups)


def machine_processes() -> int:
    """How many training processes this machine takes at once (jobs run one at a time)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def local_processes(spec: BakeoffSpec, leg: str, devices: int, global_batch: int, emulation_backend: str,
                    capacity: int | None = None) -> tuple[int, str]:
    """(processes, why) that stand for `devices` on this machine. Legs outside a sweep keep
    one process; a sweep's legs run as many gloo processes as the machine takes (and the
    global batch splits over), on backends whose local emulation can run collectives."""
    if devices <= 1 or not in_sweep(spec, leg):
        return 1, "one process (global batch kept)"
    emulation = row(emulation_backend)  # whether it runs collectives across processes, and why not
    if not emulation.local_multi_process:
        return 1, emulation.local_one_process_why.format(devices=devices)
    cap = min(devices, capacity or machine_processes())
    n = next(k for k in range(cap, 0, -1) if global_batch % k == 0)
    why = (f"{n} gloo processes stand for the {devices} devices" if n == devices else
           f"{n} gloo processes stand for the {devices} devices (as many as this machine takes"
           + (" and the global batch splits over" if n < cap else "") + ")")
    return n, why
