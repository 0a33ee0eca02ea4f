"""What every façade function shares: the error guard, specs from any source, AWS sessions, progress."""
from __future__ import annotations

import functools
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Union

from bakeoff.pipelines.errors import AwsError, BakeoffError, RunError, SpecError
from bakeoff.pipelines.spec.model import BakeoffSpec, Provenance

from .results import ProgressEvent

if TYPE_CHECKING:
    from bakeoff.pipelines.sagemaker.ops import SageMakerOps

F = TypeVar("F", bound=Callable[..., Any])
Progress = Callable[[ProgressEvent], None]
#: A spec as the verbs take it: a BakeoffSpec, a YAML file's path, or a mapping shaped like the YAML.
SpecLike = Union[BakeoffSpec, str, "os.PathLike[str]", Mapping[str, Any]]


def public(fn: F) -> F:
    """Nothing but a BakeoffError leaves the façade: a stray exception (a bug, the machine)
    becomes a RunError with the original as its `__cause__`."""

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BakeoffError:
            raise
        except Exception as exc:
            if type(exc).__module__.startswith(("botocore", "boto3")):
                raise AwsError(f"AWS: {type(exc).__name__}: {_first_line(exc)}", code=type(exc).__name__) from exc
            raise RunError(f"could not run: {type(exc).__name__}: {_first_line(exc)}") from exc

    return guarded  # type: ignore[return-value]


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300]


def as_spec(spec: SpecLike, overrides: Sequence[str] | None = ()) -> BakeoffSpec:
    """A validated spec from a BakeoffSpec, a YAML file's path, or a mapping shaped like the YAML."""
    from bakeoff.pipelines.spec.loader import load_spec, spec_from_dict

    overrides = overrides or ()
    if isinstance(spec, BakeoffSpec):
        if overrides:
            from bakeoff.pipelines.spec.overrides import apply_overrides

            data, _ = apply_overrides(spec.model_dump(mode="json", exclude_unset=True), list(overrides))
            moved = spec_from_dict(data, "--set")
            return moved.sourced(Provenance(spec.provenance.path))
        return spec
    if isinstance(spec, Mapping):
        data = dict(spec)
        if overrides:
            from bakeoff.pipelines.spec.overrides import apply_overrides

            data, _ = apply_overrides(data, list(overrides))
        return spec_from_dict(data)
    if isinstance(spec, (str, os.PathLike)):
        return load_spec(Path(spec), list(overrides))
    raise SpecError(f"a spec is a BakeoffSpec, a YAML file's path or a mapping, not {type(spec).__name__}")


# --- AWS sessions ------------------------------------------------------------------------
# boto3 sessions are not thread-safe, clients are once made: one SageMakerOps (its two clients)
# per caller's session and region, made under a lock, then shared. Sessions the façade makes
# itself (no session given) are not kept: nothing global outlives the call.
_LOCK = threading.Lock()
_OPS: weakref.WeakKeyDictionary[Any, dict[str | None, SageMakerOps]] = weakref.WeakKeyDictionary()


def ops_for(session: Any = None, region: str | None = None, profile: str | None = None,
            arn: str | None = None) -> SageMakerOps:
    """The SageMaker/S3 operations for a session (or a new session of `profile`) in `region`
    (else the ARN's region, else the session's)."""
    from bakeoff.pipelines.sagemaker.ops import SageMakerOps, region_of

    if session is None:
        return SageMakerOps(region=region, arn=arn, profile=profile)
    if profile:
        raise SpecError("give a boto3 session or a profile, not both (the session has its own profile)",
                        field="profile")
    wanted = region or region_of(arn)
    with _LOCK:
        per_region = _OPS.setdefault(session, {})
        if wanted not in per_region:
            per_region[wanted] = SageMakerOps(region=wanted, session=session)
        return per_region[wanted]


# --- progress ----------------------------------------------------------------------------
class EventProgress:
    """Stands where the local executor's terminal display would (`bakeoff.pipelines.local.progress.Progress`)
    and turns each call into a ProgressEvent for a callback; nothing is printed."""

    def __init__(self, callback: Progress | None):
        self.callback = callback
        self._total: int | None = None

    def _emit(self, kind: str, args: tuple, **fields: Any) -> None:
        if self.callback is not None:
            self.callback(ProgressEvent(kind=kind, args=args, **fields))

    def note(self, message: str, *rest: Any) -> None:
        self._emit("note", (message, *rest), message=message)

    def start(self, total_jobs: int, *rest: Any) -> None:
        self._total = total_jobs
        self._emit("start", (total_jobs, *rest), total=total_jobs, message=f"{total_jobs} jobs")

    def begin(self, index: int, name: str, total_steps: int | None = None, *rest: Any) -> None:
        self._emit("begin", (index, name, total_steps, *rest), index=index, job=name, total=total_steps,
                   message=f"[{index}/{self._total}] {name}: running")

    def advance(self, completed_steps: int, index: int | None = None, *rest: Any) -> None:
        # `index`: which job (several run at once with jobs > 1); events of one job stay in order.
        self._emit("advance", (completed_steps, index, *rest), steps=completed_steps,
                   **({"index": index} if index is not None else {}))

    def finish(self, index: int, name: str, status: str, wall: float, summary: dict, reason: str | None,
               *rest: Any) -> None:
        self._emit("finish", (index, name, status, wall, summary, reason, *rest), index=index, job=name,
                   status=status, message=f"[{index}/{self._total}] {name}: {status}, {wall:.0f}s"
                   + (f", reason: {reason}" if reason and status != "completed" else ""))

    def skipped(self, index: int, name: str, *rest: Any) -> None:
        self._emit("skipped", (index, name, *rest), index=index, job=name,
                   message=f"[{index}/{self._total}] {name}: unchanged, not re-run")

    def stop(self, *rest: Any) -> None:
        self._emit("stop", rest)

    def __getattr__(self, name: str) -> Callable[..., None]:
        # A display call this adaptor does not know yet: passed on as its own kind of event.
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self._emit(name, args)


def note(progress: Progress | None, message: str, kind: str = "note", **fields: Any) -> None:
    if progress is not None:
        progress(ProgressEvent(kind=kind, message=message, **fields))
