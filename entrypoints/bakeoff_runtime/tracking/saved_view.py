"""The experiment's saved view "Legs side by side (bakeoff)": the runs table with the columns a bake-off is read
by, and its charts, one colour per leg (the report's).

MLflow 3 keeps saved views as experiment tags `mlflow.sharedViewState.<id>` holding {name, createdAt, state}
and opens one with `?viewStateShareKey=<id>` (savedViewEnvelope.ts, useSavedViews.ts,
useSharedExperimentViewState.ts under mlflow/server/js/src/experiment-tracking/components/experiment-page/).
A view keeps only run-independent fields of the page's state (EXPERIMENT_PAGE_UI_STATE_FIELDS less the run
lists, in the UI bundled with mlflow 3.17.2): the table's `selectedColumns`, and the charts
(`compareRunCharts`, `compareRunSections`, `isAccordionReordered`), among others.

- Columns: a column is named `<attributes|params|metrics|tags>.\\`<key>\\`` (makeCanonicalSortKey in the UI's
  experiment-page utils); the Dataset column is the attribute `Dataset`. The view shows the dataset, the leg,
  seed, declared backend and where each job ran, the parity metric (each seed's, and each leg's mean on its
  summary run) and the verdict.
- Charts: grouped by the `bakeoff.leg` tag, because a view cannot expand the parent's nested rows (that is
  run-dependent state) and ungrouped charts draw only the rows shown; with `useGroupedValuesInCharts` off the
  charts still draw every run, each in its own `mlflow.runColor`, the colour the evaluation pins on each leg's
  runs (the report's). Line charts leave their y range to the data (`range` unset: not from 0) with outliers
  trimmed (`ignoreOutliers`), so the seeds' loss curves do not collapse into one line near the top of a
  0-based axis; the legs' parity figures are scatter plots (the leg on x, each run a point), whose axes fit
  the values, where bar charts start at 0 and two means a few percent apart look equal. Short titles
  (`displayName`), so the card does not cut them. The chart fields are those of RunsChartsCardConfig and its
  LINE/SCATTER subclasses (runs-charts/runs-charts.types.ts).
"""
from __future__ import annotations

import json
import time
from typing import Any

LEGS_VIEW_ID = "bakeoff-legs"
LEGS_VIEW_TAG = f"mlflow.sharedViewState.{LEGS_VIEW_ID}"
LEGS_VIEW_NAME = "Legs side by side (bakeoff)"


def column(kind: str, key: str) -> str:
    return f"{kind}.`{key}`"


def _chart(uuid: str, section: str, kind: str, title: str, **fields: Any) -> dict[str, Any]:
    return {"uuid": uuid, "type": kind, "metricSectionId": section, "deleted": False, "isGenerated": False,
            "runsCountToCompare": 100, "displayName": title, **fields}


def _line(uuid: str, section: str, metric: str, title: str) -> dict[str, Any]:
    return _chart(uuid, section, "LINE", title, metricKey=metric, selectedMetricKeys=[metric], lineSmoothness=0,
                  xAxisScaleType="linear", scaleType="linear",
                  range={"xMin": None, "xMax": None, "yMin": None, "yMax": None}, xAxisKey="step",
                  selectedXAxisMetricKey="", yAxisKey="metric", yAxisExpressions=[], ignoreOutliers=True,
                  useGlobalXaxisKey=False, useGlobalLineSmoothing=False)


def _scatter(uuid: str, section: str, metric: str, title: str) -> dict[str, Any]:
    return _chart(uuid, section, "SCATTER", title, xaxis={"key": "leg", "type": "PARAM"},
                  yaxis={"key": metric, "type": "METRIC"})


def legs_view_state(parity_metric: str) -> dict[str, Any]:
    parity, curves, speed = "bakeoff-parity", "bakeoff-curves", "bakeoff-speed"
    return {
        "selectedColumns": [column("attributes", "Dataset"), column("params", "leg"), column("params", "seed"),
                            column("params", "backend"), column("params", "ran_on"),
                            column("metrics", parity_metric), column("metrics", f"parity/{parity_metric}_mean"),
                            column("tags", "bakeoff.verdict")],
        "groupBy": {"aggregateFunction": "average",
                    "groupByKeys": [{"mode": "tag", "groupByData": "bakeoff.leg"}]},
        "runsHiddenMode": "SHOW_ALL", "hideEmptyCharts": True, "useGroupedValuesInCharts": False,
        "runListHidden": True,  # the charts get the page's width: their titles are not cut
        "isAccordionReordered": True,
        "compareRunSections": [
            {"uuid": parity, "name": f"Parity: {parity_metric}", "display": True, "isReordered": True,
             "deleted": False, "isGenerated": False},
            {"uuid": curves, "name": "Curves", "display": True, "isReordered": True, "deleted": False,
             "isGenerated": False},
            {"uuid": speed, "name": "Speed and cost", "display": True, "isReordered": True, "deleted": False,
             "isGenerated": False}],
        "compareRunCharts": [
            _scatter("bakeoff-parity-seeds", parity, parity_metric, f"{parity_metric}, each seed by leg"),
            _scatter("bakeoff-parity-legs", parity, f"parity/{parity_metric}_mean", f"{parity_metric}, mean by leg"),
            _line("bakeoff-val-curve", curves, parity_metric, f"{parity_metric} by step"),
            _line("bakeoff-train-curve", curves, "train_loss", "train_loss by step"),
            _chart("bakeoff-throughput", speed, "BAR", "throughput", metricKey="summary/throughput"),
            _chart("bakeoff-cost", speed, "BAR", "cost per run (USD)", metricKey="summary/cost_per_run_usd"),
        ],
    }


def save_legs_view(client, exp_id: str, parity_metric: str | None = None) -> None:
    """The experiment's "Legs side by side" view in the runs page's Views menu, (re)written when what it shows
    changed (a view the experiment has for another parity metric, or from an older bakeoff)."""
    state = json.dumps(legs_view_state(parity_metric or "val_loss"), sort_keys=True)
    held = (client.get_experiment(exp_id).tags or {}).get(LEGS_VIEW_TAG)
    try:
        if held and json.loads(held).get("state") == state:
            return
    except (ValueError, AttributeError):
        pass
    client.set_experiment_tag(exp_id, LEGS_VIEW_TAG, json.dumps({
        "name": LEGS_VIEW_NAME, "createdAt": int(time.time() * 1000), "state": state}))
