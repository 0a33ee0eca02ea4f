"""Warnings `bakeoff validate` gives about the design, before any compute is spent:
whether the declared seeds can decide the verdict at all."""
from __future__ import annotations

from pathlib import Path

from bakeoff.pipelines.errors import Either, SpecError, words
from bakeoff.pipelines.params import PREVIOUS_RUN
from bakeoff.pipelines.spec.model import BakeoffSpec
from bakeoff_runtime.contract.backend_table import row
from bakeoff_runtime.contract.documents import DocumentError, Evaluation, read_evaluation


def _previous_evaluation(path: Path) -> tuple[Evaluation, Path]:
    candidates = [path] if path.is_file() else [path / "evaluation" / "evaluation.json", path / "evaluation.json"]
    for candidate in candidates:
        if candidate.is_file():
            try:
                return read_evaluation(candidate), candidate
            except DocumentError as exc:  # JSON, but not an evaluation this bakeoff reads
                raise SpecError(str(exc).removeprefix(f"{candidate}: "), file=str(candidate),
                                field=PREVIOUS_RUN) from None
            except ValueError:
                raise SpecError("is not valid JSON; give a run directory or its evaluation.json",
                                file=str(candidate), field=PREVIOUS_RUN) from None
    raise SpecError(words("has no evaluation.json; give the ", Either("out_dir of a previous `run_local`",
                                                                     "--out directory of a previous `bakeoff run`")),
                    file=str(path), field=PREVIOUS_RUN)


def seed_warnings(spec: BakeoffSpec, previous: Path | None = None) -> list[str]:
    """One line per problem with the declared seeds."""
    seeds = len(spec.seed_list)
    out = []
    if seeds < 2:
        out.append(f"seeds: {seeds} cannot decide anything: an equivalence test needs the spread between seeds, "
                   "so every verdict will be inconclusive; declare at least 3")
    if previous is None:
        return out
    evaluation, where = _previous_evaluation(previous)
    from bakeoff_runtime.verdict import stats

    parity = spec.parity
    for check in evaluation.get("checks", []):
        if not check.get("name", "").startswith("parity:") or not check.get("test"):
            continue
        paired = check["test"] == "paired"
        sigma = check.get("sd") if paired else None
        if sigma is None and check.get("se") is not None:
            n_leg, n_base = check.get("n_leg") or 2, check.get("n_baseline") or 2
            sigma = check["se"] / (1 / n_leg + 1 / n_base) ** 0.5
        if sigma is None:
            continue
        margin = parity.margin
        if parity.margin_type == "relative":
            base_leg = evaluation.get("legs", {}).get(spec.baseline)
            base_mean = base_leg["metric"].get("mean") if base_leg and base_leg.get("metric") else None
            if not base_mean:
                continue
            margin *= abs(base_mean)
        chance = stats.outcome_probabilities(seeds, sigma, margin, 0.0, parity.alpha, paired, parity.test)["pass"]
        if chance < parity.power:
            df = (check.get("n_pairs") or 2) - 1 if paired else max(1, (check.get("n_leg") or 2) +
                                                                 (check.get("n_baseline") or 2) - 2)
            need = stats.seeds_for_power(sigma, margin, parity.alpha, parity.power, paired, parity.test,
                                         sigma_df=df)
            advice = (f"{need} seeds would reach {parity.power:.0%}" if need
                      else f"no number of seeds up to {stats.MAX_RECOMMENDED_SEEDS} reaches {parity.power:.0%}: "
                           "widen the margin or reduce run-to-run noise")
            out.append(f"{check['name']}: at the spread measured in {where} (SD {sigma:.3g} "
                       f"{'per seed pair' if paired else 'per seed'}), {seeds} seeds pass legs that truly agree only "
                       f"{chance:.0%} of the time; {advice}")
    return out


def design_warnings(spec: BakeoffSpec) -> list[str]:
    """What is allowed but likely not what was meant."""
    from bakeoff.pipelines.spec.model import DEFAULT_RUNTIME_QUOTA_S

    out = []
    for leg in spec.legs:
        if leg.max_runtime_s > DEFAULT_RUNTIME_QUOTA_S:
            out.append(f"leg {leg.name}: max_runtime_s {leg.max_runtime_s:,} is above SageMaker's default quota for "
                       f"a training job's run time ({DEFAULT_RUNTIME_QUOTA_S:,} s, 5 days); raise the quota first")
        if spec.security.volume_kms_key and leg.instance.local_storage:
            out.append(f"leg {leg.name}: {leg.instance_type} has local NVMe storage, which SageMaker encrypts with "
                       "the instance's hardware key; the volume KMS key is not applied to it")
    cached = [leg.name for leg in spec.legs if row(leg.backend_name).torch_neuronx or leg.compile == "torch_compile"]
    if spec.security.network_isolation and cached:
        out.append(f"security.network_isolation: {', '.join(cached)} cannot reach the S3 compile cache from an "
                   "isolated container, so each of their jobs compiles from scratch (the time shows as compile "
                   "time); without isolation a job after the first starts warm")
    if spec.security.network_isolation and spec.mlflow.enabled and spec.mlflow.tracking_uri:
        out.append("security.network_isolation: the training jobs cannot reach MLflow; their runs are back-filled by "
                   "the Evaluate step from their metrics")
    return out + market_warnings(spec)


def market_warnings(spec: BakeoffSpec) -> list[str]:
    """Price class of the legs against the baseline, and whether the spec's region sells them."""
    from bakeoff.pipelines.advice.price_class import price_class_warnings
    from bakeoff.pipelines.advice.price_list import cached
    from bakeoff.pipelines.advice.regions import region_warnings

    try:
        prices = cached(spec.storage.region)
    except (ValueError, KeyError):  # a damaged cache must not stop validation: the bundled table stands in
        prices = None
    return price_class_warnings(spec, prices) + region_warnings(spec)
