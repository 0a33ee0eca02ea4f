"""The MLflow runs that make a bake-off comparable in MLflow's own views, written by the evaluation step.

Jobs run in separate processes (or separate SageMaker jobs), so each child logs its own run;
the evaluation then creates (or finds) one parent per bake-off execution and under it:

- links every job's run (`trn1-s0`, ...) through the `mlflow.parentRunId` tag;
- writes one summary run per leg (`trn1 (summary)`) holding that leg's figures under the same
  metric names on every leg, so MLflow's chart and compare views put the legs side by side;
- pins one colour per leg on all of that leg's runs (the `mlflow.runColor` tag, which the MLflow
  UI's colour picker writes and reads back: useExperimentRunColor.tsx and its integration test
  in mlflow/server/js/src/experiment-tracking/components/experiment-page/hooks/).

The parity metric comes first in the summary runs: MLflow's compare-runs page preselects the first
metric the runs share for its parallel-coordinates plot (`sharedMetricKeys.slice(0, 1)` in
ParallelCoordinatesPlotPanel, `getSharedMetricKeysByRunUuids` in reducers/Reducers), in the order
the store returns them, which is the order they were first logged; and its metrics table sorts
by name, where `parity/...` comes before `summary/...`.
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bakeoff_runtime.contract.documents import Evaluation, LegFigures, MlflowConfig
from bakeoff_runtime.tracking.job_files import attach_job_files
from bakeoff_runtime.tracking.keys import Cleaner, clean_key
from bakeoff_runtime.tracking.parent_extras import attach as attach_parent_extras
from bakeoff_runtime.tracking.saved_view import LEGS_VIEW_ID, LEGS_VIEW_TAG, save_legs_view
from bakeoff_runtime.tracking.sink import CHILD_PARAMS, MAX_TAG_CHARS, SHARED_TAG
from bakeoff_runtime.verdict.validity import is_validity_check

_STATUS = {"completed": "FINISHED", "diverged": "FAILED", "lost": "KILLED"}
# Used when the report's palette cannot be read, so that the two agree when it can.
_FALLBACK_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"]
SUMMARY_ROLE = "summary"
# Without it MLflow 3's UI may infer a GenAI experiment and open on its traces overview rather than
# the runs (the `mlflow.experimentKind` experiment tag and its values: ExperimentKind in
# mlflow/server/js/src/experiment-tracking/constants.ts, written by useUpdateExperimentKind.tsx).
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")
# The experiment's primary metric: the runs page's chart view draws it first (`primaryMetricKey` of
# getBaseChartAndSectionConfigs reads this experiment tag; MLFLOW_EXPERIMENT_PRIMARY_METRIC_NAME in
# mlflow/utils/mlflow_tags.py and in the UI's experiment-tracking/constants.ts).
PRIMARY_METRIC = "mlflow.experiment.primaryMetric.name"
PRIMARY_METRIC_GREATER_IS_BETTER = "mlflow.experiment.primaryMetric.greaterIsBetter"


# The experiment's saved view (its runs table's columns and its charts): tracking/saved_view.py.
__all__ = ["LEGS_VIEW_ID", "LEGS_VIEW_TAG", "save_legs_view", "log_parent"]


def mark_training_experiment(client, exp_id: str, parity: Mapping[str, Any] | None = None) -> None:
    """Say the experiment is model training (unless someone already chose its kind) and, given the
    parity rule, make its metric the one MLflow's charts start with."""
    exp = client.get_experiment(exp_id)
    tags = exp.tags or {}
    if EXPERIMENT_KIND[0] not in tags:
        client.set_experiment_tag(exp_id, *EXPERIMENT_KIND)
    if parity and tags.get(PRIMARY_METRIC) != str(parity["metric"]):
        client.set_experiment_tag(exp_id, PRIMARY_METRIC, str(parity["metric"]))
        client.set_experiment_tag(exp_id, PRIMARY_METRIC_GREATER_IS_BETTER,
                                  str(parity.get("direction") == "maximize").lower())


def palette() -> list[str]:
    """One colour per leg, in spec order: the report's (report/charts.py PALETTE, which its leg_colours
    deals out in the same order), so a leg looks the same in both."""
    try:
        from bakeoff_runtime.report import charts as report

        found = getattr(report, "PALETTE", None)
        if isinstance(found, (list, tuple)) and found and all(isinstance(c, str) for c in found):
            return list(found)
    except Exception:  # the colours are cosmetic; the report module is another helper's
        pass
    return list(_FALLBACK_PALETTE)


def leg_colours(legs: list[str]) -> dict[str, str]:
    colours = palette()
    return {leg: colours[i % len(colours)] for i, leg in enumerate(legs)}


def summary_metrics(parity_metric: str, fig: LegFigures) -> dict[str, float]:
    """A leg's figures under names that are the same on every leg (a missing figure is left out,
    never written as 0: a leg without a compile step has no compile time)."""
    metric = fig.get("metric") or {}
    values = {
        f"parity/{parity_metric}_mean": metric.get("mean"),
        f"parity/{parity_metric}_std": metric.get("std"),
        "summary/throughput": fig.get("throughput_mean"),
        "summary/cost_per_run_usd": fig.get("cost_per_run_usd_mean"),
        "summary/cost_to_target_usd": fig.get("cost_to_target_usd_mean"),
        "summary/compile_time_s": fig.get("compile_time_s_mean"),
        "summary/time_to_first_step_s": fig.get("time_to_first_step_s_mean"),
        "summary/wall_time_s": fig.get("wall_time_s_mean"),
        "summary/completed_runs": fig.get("completed"),
        "summary/reached_target_fraction": fig.get("reached_target_fraction"),
    }
    return {k: float(v) for k, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")}


def _find_child(client, exp_id: str, run: Mapping[str, Any]) -> Any:
    """The job's own MLflow run: by the id its summary names, else by its job key (a job
    killed before it could write its summary still tagged its run with the key)."""
    if run.get("mlflow_run_id"):
        try:
            found = client.get_run(run["mlflow_run_id"])
            if found.info.lifecycle_stage == "active":
                return found
        except Exception:
            pass
    if run.get("job_key"):
        hits = client.search_runs([exp_id], filter_string=f"tags.`bakeoff.job_key` = '{run['job_key']}'",
                                  order_by=["attributes.start_time DESC"], max_results=1)
        if hits:
            return hits[0]
    return None


def _job_hyperparameters(job_dir: Path | None) -> dict[str, Any]:
    for path in sorted(job_dir.rglob("hyperparameters.json")) if job_dir and job_dir.exists() else []:
        try:
            loaded = json.loads(path.read_text())
            return loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            return {}
    return {}


def backfill_child(client, exp_id: str, leg: str, figures: Mapping[str, Any], run: Mapping[str, Any],
                   jobs_dir: Path | None) -> str:
    """Create the MLflow run a job could not log itself (no MLflow in its image, no network,
    the server down), from what the job left: metrics.jsonl and summary.json."""
    from mlflow.entities import Metric, Param, RunTag

    from bakeoff_runtime.verdict.job_outputs import iter_records

    job_dir = (jobs_dir / run["job"]) if (jobs_dir and run.get("job")) else None
    hps = _job_hyperparameters(job_dir)
    known = {"leg": leg, "seed": run["seed"], "backend": figures.get("backend"),
             "instance_type": figures.get("instance_type"), "precision": figures.get("precision"),
             "instance_count": figures.get("instance_count"), "emulated_on": figures.get("emulated_on")}
    params = {k: str(hps.get(k, known.get(k))) for k in CHILD_PARAMS if hps.get(k, known.get(k)) is not None}
    shared = json.dumps({k: v for k, v in sorted(hps.items()) if k not in CHILD_PARAMS}, sort_keys=True)
    tags = {"mlflow.runName": f"{leg}-s{run['seed']}", "bakeoff.leg": leg, "bakeoff.seed": str(run["seed"]),
            "bakeoff.backend": str(figures.get("backend")), "bakeoff.instance_type": str(figures.get("instance_type")),
            "bakeoff.status": str(run["status"]), "bakeoff.backfilled": "true",
            **({"bakeoff.job_key": str(run["job_key"])} if run.get("job_key") else {}),
            **({SHARED_TAG: shared} if hps and len(shared) <= MAX_TAG_CHARS else {})}
    clean = Cleaner(f"back-fill of {leg}-s{run['seed']}")
    run_id = client.create_run(exp_id, run_name=tags["mlflow.runName"], tags=clean.tags(tags)).info.run_id
    client.log_batch(run_id, params=[Param(k, v) for k, v in clean.params(params).items()])
    batch: list = []
    if job_dir is not None and job_dir.exists():
        for record in iter_records(job_dir):
            step, ts = int(record.get("step", 0)), int(1000 * float(record.get("time_s") or 0))
            for key, value in record.items():
                if key in ("kind", "step", "time_s") or isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                if value == value and abs(value) != float("inf"):
                    batch.append(Metric(clean_key(key), float(value), ts, step))
            if len(batch) >= 900:
                client.log_batch(run_id, metrics=batch)
                batch = []
    if batch:
        client.log_batch(run_id, metrics=batch)
    status = _STATUS.get(run["status"], "FAILED")
    client.log_batch(run_id, tags=[RunTag("bakeoff.backfilled_from", str(run.get("job")))])
    client.set_terminated(run_id, status)
    return run_id


def shared_hyperparameters(child_runs: list) -> tuple[dict[str, str], list[str]]:
    """(hyperparameters every job logged with the same value, the keys whose values differ)."""
    seen: dict[str, set[str]] = {}
    for child in child_runs:
        raw = child.data.tags.get(SHARED_TAG)
        try:
            hps = json.loads(raw) if raw else {}
        except ValueError:
            hps = {}
        for key, value in hps.items():
            seen.setdefault(key, set()).add(str(value))
    same = {k: next(iter(v)) for k, v in sorted(seen.items()) if len(v) == 1}
    return same, sorted(k for k, v in seen.items() if len(v) > 1)


def _upsert_summary(client, exp_id: str, key: str, parent_id: str, leg: str, fig: LegFigures, colour: str,
                    parity_metric: str, children: list, verdict: str = "") -> str:
    from mlflow.entities import Metric, Param, RunTag

    name = f"{leg} (summary)"
    found = client.search_runs([exp_id], filter_string=(
        f"tags.`bakeoff.parent_key` = '{key}' and tags.`bakeoff.role` = '{SUMMARY_ROLE}' "
        f"and tags.`bakeoff.leg` = '{leg}'"), max_results=1)
    tags = {"mlflow.parentRunId": parent_id, "mlflow.runColor": colour, "bakeoff.parent_key": key,
            "bakeoff.role": SUMMARY_ROLE, "bakeoff.leg": leg, "mlflow.runName": name, "bakeoff.verdict": verdict,
            "mlflow.note.content": f"Mean over the {len(children)} runs of leg {leg}; the seeds' own runs are "
                                   f"{', '.join(c.info.run_name for c in children) or 'missing'}."}
    starts = [c.info.start_time for c in children if c.info.start_time]
    ends = [c.info.end_time for c in children if c.info.end_time]
    if found:
        run_id, data = found[0].info.run_id, found[0].data
    else:
        run_id = client.create_run(exp_id, run_name=name, tags=Cleaner(name).tags(tags),
                                   start_time=min(starts) if starts else None).info.run_id
        data = client.get_run(run_id).data
    ran = sorted({str(c.data.params["ran_on"]) for c in children if c.data.params.get("ran_on")})
    params = {"leg": leg, "backend": fig.get("backend"), "ran_on": ", ".join(ran) or None,
              "instance_type": fig.get("instance_type"),
              "precision": fig.get("precision"), "seeds": len(fig.get("runs") or []),
              "instance_count": fig.get("instance_count"), "throughput_unit": fig.get("throughput_unit"),
              "emulated_on": fig.get("emulated_on"),
              "speed_and_cost": "emulated" if fig.get("emulated") else "measured"}
    now = int(time.time() * 1000)
    # Written once: a re-evaluation logs only the figures that changed.
    metrics = {k: v for k, v in summary_metrics(parity_metric, fig).items() if data.metrics.get(k) != v}
    clean = Cleaner(name)
    client.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, v in clean.metrics(metrics).items()],
                     params=[Param(k, v) for k, v in clean.params({k: v for k, v in params.items() if v is not None
                                                                    and k not in data.params}).items()],
                     tags=[RunTag(k, v) for k, v in clean.tags(tags).items()])
    client.set_terminated(run_id, "FINISHED", end_time=max(ends) if ends else None)
    return run_id


def compare_path(experiment_id: str, run_ids: list[str]) -> str:
    """The MLflow UI route of the compare-runs page (Routes.getCompareRunPageRoute in
    mlflow/server/js/src/experiment-tracking/routes.tsx: `/compare-runs?runs=[...]&experiments=[...]`)."""
    from urllib.parse import quote

    def enc(values: list[str]) -> str:
        return quote(json.dumps(values, separators=(",", ":")), safe="")

    return f"#/compare-runs?runs={enc(run_ids)}&experiments={enc([str(experiment_id)])}"


def decision_metrics(evaluation: Evaluation) -> dict[str, float]:
    """The projection's figures as the parent run's metrics (verdict/projection.py): each leg's cost of a
    production run, and each compared leg's saving per run with its interval and its break-even."""
    projection = evaluation.get("projection")
    if not projection:
        return {}
    out: dict[str, float] = {}
    for leg, p in projection["legs"].items():
        if p["cost_per_run_usd"]["mean"] is not None:
            out[f"decision.{leg}.cost_per_run_usd"] = float(p["cost_per_run_usd"]["mean"])
    for c in projection["comparisons"]:
        saving = c["saving_per_run_usd"]
        ends = ((saving["mean"], ""), (saving["low"], "_low"), (saving["high"], "_high")) if saving else ()
        for value, suffix in ends:
            if value is not None:
                out[f"decision.{c['leg']}.saving_per_run_usd{suffix}"] = float(value)
        if c["saving_pct"] and c["saving_pct"]["mean"] is not None:
            out[f"decision.{c['leg']}.saving_pct"] = float(c["saving_pct"]["mean"])
        runs = c["break_even_runs"]["mean"] if c["break_even_runs"] else None
        if runs is not None:
            out[f"decision.{c['leg']}.break_even_runs"] = float(runs)
    return out


def log_parent(cfg: MlflowConfig, evaluation: Evaluation, evaluation_path: Path,
               extra_artifacts: tuple[Path, ...] | list[Path] = (), jobs_dir: Path | None = None) -> dict[str, Any]:
    """The bake-off's parent run, its jobs' runs linked under it (or back-filled where a job could not log),
    a summary run per leg, the verdict's tags and figures and the evaluation's files. Never raises: the
    verdict never depends on MLflow."""
    tracking_uri, experiment = cfg.get("tracking_uri"), cfg.get("experiment")
    if not tracking_uri or not experiment:
        return {"enabled": False}
    from bakeoff_runtime.tracking.net import bound_waits, unreachable

    bound_waits()
    down = unreachable(tracking_uri)
    if down:
        print(f"[bakeoff] WARNING: MLflow parent run not logged: the tracking server is unreachable: {down}",
              file=sys.stderr)
        return {"enabled": True, "error": f"unreachable: {down}"}
    try:
        from bakeoff_runtime.tracking.install import use_installed_mlflow
        from bakeoff_runtime.tracking.plugins import quiet_header_provider

        use_installed_mlflow()
        quiet_header_provider(tracking_uri)
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=tracking_uri)
        exp = client.get_experiment_by_name(experiment)
        exp_id = exp.experiment_id if exp else client.create_experiment(
            experiment, artifact_location=cfg.get("artifact_location"))
        key = cfg.get("parent_key") or str(evaluation.get("spec_hash"))
        parity = evaluation["parity"]
        # Cosmetic (the UI's experiment kind, its first chart, a saved view): a role or server that refuses
        # experiment tags must not cost the parent run, its children's back-fill or the verdict's metrics.
        try:
            mark_training_experiment(client, exp_id, parity)
            save_legs_view(client, exp_id, str(parity["metric"]))
        except Exception as exc:
            print(f"[bakeoff] WARNING: MLflow experiment tags not set ({type(exc).__name__}: {exc}); the runs "
                  "are logged regardless", file=sys.stderr)
        colours = leg_colours(list(evaluation["legs"]))
        # The jobs' runs first: the parent starts when the first job did, so MLflow shows
        # the bake-off's real duration rather than the evaluation's.
        by_leg, children, backfilled = _job_runs(client, exp_id, evaluation, jobs_dir)
        child_runs = [c for runs in by_leg.values() for c in runs]
        starts = [c.info.start_time for c in child_runs if c.info.start_time]
        verdict = str(evaluation["verdict"])
        tags = _parent_tags(evaluation, key)
        found = client.search_runs([exp_id], filter_string=f"tags.`bakeoff.parent_key` = '{key}' and "
                                   "tags.`bakeoff.role` = 'parent'", max_results=1)
        if found:
            run_id = found[0].info.run_id
        else:
            run_id = client.create_run(exp_id, run_name=str(evaluation.get("bakeoff")),
                                       tags=Cleaner("parent run").tags(tags),
                                       start_time=min(starts) if starts else None).info.run_id
        _link_children(client, run_id, by_leg, colours, evaluation)
        summaries = {}
        for leg, fig in evaluation["legs"].items():
            try:
                summaries[leg] = _upsert_summary(client, exp_id, key, run_id, leg, fig, colours[leg],
                                                 str(parity["metric"]), by_leg.get(leg, []), verdict)
            except Exception as exc:
                print(f"[bakeoff] WARNING: cannot write the MLflow summary run of {leg}: "
                      f"{exc.__class__.__name__}: {exc}", file=sys.stderr)
        _log_parent_record(client, run_id, evaluation, tags, child_runs, len(children), evaluation_path,
                           extra_artifacts)
        return {"enabled": True, "parent_run_id": run_id, "experiment_id": str(exp_id), "children": children,
                "backfilled": backfilled, "summary_runs": summaries,
                "compare_path": compare_path(str(exp_id), list(summaries.values())),
                "compare_seeds_path": compare_path(str(exp_id), children)}
    except Exception as exc:  # the verdict never depends on MLflow
        print(f"[bakeoff] WARNING: MLflow parent run not logged: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return {"enabled": True, "error": f"{exc.__class__.__name__}: {exc}"}


def _job_runs(client: Any, exp_id: str, evaluation: Evaluation,
              jobs_dir: Path | None) -> tuple[dict[str, list], list[str], list[str]]:
    """Each job's run (found, or back-filled from its files where the job could not log), ended if its
    process died first, with the job's files attached: (leg -> its runs, run ids, back-filled run ids)."""
    children: list[str] = []
    backfilled: list[str] = []
    by_leg: dict[str, list] = {}
    for leg, fig in evaluation["legs"].items():
        for run in fig["runs"]:
            child = _find_child(client, exp_id, run) if run.get("job") else None
            if child is not None:
                run["mlflow_run_id"] = child.info.run_id
                if child.info.status == "RUNNING":  # its process died before it could end the run
                    client.set_terminated(child.info.run_id, _STATUS.get(run["status"], "FAILED"))
            elif run.get("job"):
                try:
                    backfilled_id = backfill_child(client, exp_id, leg, fig, run, jobs_dir)
                    run["mlflow_run_id"] = backfilled_id
                    run["mlflow_backfilled"] = True
                    backfilled.append(backfilled_id)
                except Exception as exc:
                    print(f"[bakeoff] WARNING: cannot back-fill the MLflow run of {leg} seed {run['seed']}: "
                          f"{exc.__class__.__name__}: {exc}", file=sys.stderr)
            child_id = run.get("mlflow_run_id")
            if child_id and run.get("job") and jobs_dir is not None:
                try:  # the job's metrics.jsonl and log on its run: files a run page opens
                    attach_job_files(client, child_id, jobs_dir / str(run["job"]))
                except Exception as exc:
                    print(f"[bakeoff] WARNING: cannot log the files of {run['job']} to its MLflow run: "
                          f"{exc.__class__.__name__}: {exc}", file=sys.stderr)
            if child_id:
                try:
                    by_leg.setdefault(leg, []).append(client.get_run(child_id))
                    children.append(child_id)
                except Exception as exc:  # a child logged to another store
                    print(f"[bakeoff] WARNING: cannot read MLflow run {run['mlflow_run_id']}: {exc}",
                          file=sys.stderr)
    return by_leg, children, backfilled


def _parent_tags(evaluation: Evaluation, key: str) -> dict[str, str]:
    """The parent run's tags: what it is, its verdict and note, and a tag per validity check."""
    parity = evaluation["parity"]
    verdict = str(evaluation["verdict"])
    note = (f"**Verdict: {verdict}** on `{parity['metric']}` (margin {parity['margin']}, baseline "
            f"{parity['baseline']}). {evaluation.get('summary') or ''}\n\n"
            f"Legs side by side: the `(summary)` runs; every seed: the `LEG-sN` runs. "
            f"Speed and cost: {(evaluation.get('speed') or {}).get('label') or 'measured'}.")
    tags = {"bakeoff.parent_key": key, "bakeoff.name": str(evaluation.get("bakeoff")),
            "bakeoff.spec_hash": str(evaluation.get("spec_hash")), "bakeoff.role": "parent",
            "bakeoff.verdict": verdict, "mlflow.runName": f"{evaluation.get('bakeoff')}",
            "bakeoff.failed_checks": str(evaluation.get("failed_checks")),
            "bakeoff.summary": str(evaluation.get("summary") or "")[:MAX_TAG_CHARS],
            "mlflow.note.content": note[:MAX_TAG_CHARS],
            # Throughput and cost are emulated on a local run: say so where they are read.
            "bakeoff.speed_and_cost": str((evaluation.get("speed") or {}).get("label", "")),
            # What was measured, a tag per check: filterable in the runs table (tags.`bakeoff.measured.same-model`).
            **{f"bakeoff.measured.{c['name'].replace(':', '.')}": str(c["status"])
               for c in evaluation.get("checks", []) if is_validity_check(c)}}
    projection = evaluation.get("projection")
    if projection:
        tags["bakeoff.decision"] = str(projection["sentence"])[:MAX_TAG_CHARS]
    return tags


def _link_children(client: Any, run_id: str, by_leg: dict[str, list], colours: dict[str, str],
                   evaluation: Evaluation) -> None:
    """Each job's run under the parent, in its leg's colour, with the verdict (a column of the saved view,
    on every row)."""
    from mlflow.entities import RunTag

    for leg, runs in by_leg.items():
        for child in runs:
            try:
                client.log_batch(child.info.run_id, tags=[
                    RunTag("mlflow.parentRunId", run_id), RunTag("mlflow.runColor", colours[leg]),
                    RunTag("bakeoff.spec_hash", str(evaluation.get("spec_hash"))),
                    RunTag("bakeoff.verdict", str(evaluation["verdict"]))])
            except Exception as exc:
                print(f"[bakeoff] WARNING: cannot link MLflow run {child.info.run_id}: {exc}", file=sys.stderr)


def _log_parent_record(client: Any, run_id: str, evaluation: Evaluation, tags: dict[str, str], child_runs: list,
                       runs: int, evaluation_path: Path, extra_artifacts: tuple[Path, ...] | list[Path]) -> None:
    """The parent's params, metrics, tags and files, then its end (FAILED, never left RUNNING, if they
    cannot be written: the error goes on to the caller)."""
    from mlflow.entities import Metric, Param, RunTag

    parity = evaluation["parity"]
    shared, differing = shared_hyperparameters(child_runs)
    params: dict[str, Any] = {"parity.metric": parity["metric"], "parity.margin": parity["margin"],
                              "parity.alpha": parity["alpha"], "parity.baseline": parity["baseline"],
                              "legs": ",".join(evaluation["legs"]), "runs": runs, **shared}
    if differing:
        tags["bakeoff.hyperparameters_differ"] = ",".join(differing)[:MAX_TAG_CHARS]
    now = int(time.time() * 1000)
    # One metric: each of the parent's metrics is a chart of one bar. The legs' figures are on
    # their summary runs, the checks in tags, the bake-off's duration is the run's own.
    metrics = {"verdict_pass": 1.0 if evaluation["verdict"] == "pass" else 0.0, **decision_metrics(evaluation)}
    data = client.get_run(run_id).data
    # Written once: a re-evaluation logs only the figures that changed.
    metrics = {k: v for k, v in metrics.items() if data.metrics.get(k) != v}
    clean = Cleaner("parent run")
    params = clean.params(params)
    try:
        client.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, v in clean.metrics(metrics).items()],
                         params=[Param(k, v) for k, v in params.items() if k not in data.params],
                         tags=[RunTag(k, v) for k, v in clean.tags(tags).items()])
        client.log_artifact(run_id, str(evaluation_path))
        for path in extra_artifacts:
            if Path(path).exists():
                client.log_artifact(run_id, str(path))
        try:  # the decision as an image, the legs as a table: views of what is already there
            attach_parent_extras(client, run_id, evaluation)
        except Exception as exc:
            print(f"[bakeoff] WARNING: the MLflow parent run has no decision image or legs table: "
                  f"{exc.__class__.__name__}: {exc}", file=sys.stderr)
    except Exception:
        client.set_terminated(run_id, "FAILED")
        raise
    client.set_terminated(run_id, "FINISHED")
