"""What the parent run shows beside its metrics and the report files: the decision figure as an image and the
legs as an MLflow table.

- decision.svg: the report's figure of the decision (report/decision_section.py, the cumulative net saving
  against production runs), drawn by the same code, as a standalone SVG image (its caption drawn in it, a white
  ground). MLflow's artifact browser previews .svg files as images (IMAGE_EXTENSIONS in the UI's
  common/utils/FileUtils, `svg` among them).
- bakeoff_legs.json: one row per leg (its backend, instance, seeds, the parity metric's mean and spread,
  throughput and cost, the verdict) through `MlflowClient.log_table` (mlflow/tracking/client.py: a JSON
  artifact in pandas' "split" layout, recorded in the run's `mlflow.loggedArtifacts` tag, which the UI's
  evaluation/artifact views read as a table). log_table appends to a table the run already has, so a
  re-evaluation of the same parent leaves the table as it is.
"""
from __future__ import annotations

import re
import tempfile
from html import escape
from pathlib import Path
from typing import Any

from bakeoff_runtime.contract.documents import Evaluation

DECISION_IMAGE = "decision.svg"
LEGS_TABLE = "bakeoff_legs.json"
CAPTION_H = 44


def decision_svg(ev: Evaluation) -> str | None:
    """The report's decision figure as a standalone SVG document, or None when there is no decision to draw."""
    from bakeoff_runtime.report import decision_section as section

    p = section.projection_of(ev)
    if p is None:
        return None
    figure, _notes = section._chart(ev, p)
    found = re.search(r'<svg class="chart" viewBox="0 0 (\d+) (\d+)"([^>]*)>(.*)</svg>', figure, re.S)
    if not found:
        return None
    w, h, attrs, body = int(found[1]), int(found[2]), found[3], found[4]
    title = section.FIGURE_TITLE + (f" ({section.FIGURE_EMULATED})" if p.get("emulated") else "")
    sentence = str(p.get("sentence") or "")
    cut = sentence if len(sentence) <= 110 else sentence[:109] + "\u2026"
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h + CAPTION_H}" width="{w * 2}" '
            f'height="{(h + CAPTION_H) * 2}"><rect width="100%" height="100%" fill="#ffffff"/>'
            f'<text x="8" y="18" font-size="15" font-weight="bold" fill="#1f2328">{escape(title)}</text>'
            f'<text x="8" y="36" font-size="10" fill="#57606a">{escape(cut)}</text>'
            f'<g transform="translate(0 {CAPTION_H})"><svg viewBox="0 0 {w} {h}" width="{w}" height="{h}"{attrs}>'
            f"{body}</svg></g></svg>")


def legs_table(ev: Evaluation) -> dict[str, list[Any]]:
    """The legs, a column per figure (pandas' dict-of-columns, what log_table takes)."""
    metric = str(ev["parity"]["metric"])
    rows = []
    for name, fig in ev["legs"].items():
        m = fig.get("metric") or {}
        rows.append({"leg": name, "backend": fig.get("backend"), "instance_type": fig.get("instance_type"),
                     "seeds": len(fig.get("runs") or []), "completed": fig.get("completed"),
                     f"{metric} mean": m.get("mean"), f"{metric} std": m.get("std"),
                     "throughput": fig.get("throughput_mean"), "throughput_unit": fig.get("throughput_unit"),
                     "cost_per_run_usd": fig.get("cost_per_run_usd_mean"),
                     "baseline": name == ev["parity"].get("baseline"), "verdict": str(ev.get("verdict"))})
    return {key: [row[key] for row in rows] for key in (rows[0] if rows else {})}


def attach(client, run_id: str, ev: Evaluation) -> list[str]:
    """Log the decision image and the legs table to the parent run; the artifact paths logged."""
    logged = []
    svg = decision_svg(ev)
    with tempfile.TemporaryDirectory(prefix="bakeoff-parent-") as tmp:
        if svg is not None:
            path = Path(tmp) / DECISION_IMAGE
            path.write_text(svg, encoding="utf-8")
            client.log_artifact(run_id, str(path))
            logged.append(DECISION_IMAGE)
    if LEGS_TABLE not in {a.path for a in client.list_artifacts(run_id)}:
        client.log_table(run_id, data=legs_table(ev), artifact_file=LEGS_TABLE)
        logged.append(LEGS_TABLE)
    return logged
