"""Memory of a training job's telemetry as it logs more steps: flat, not growing with the steps.

One process logs N steps through bakeoff's Telemetry (to a metrics.jsonl file and a discarded
stdout) and, as the baseline in the same run, through the same Telemetry with every record also
kept in a list (what telemetry.py did before). tracemalloc's peak is read at 10% of the steps and
at the end: the figure is the growth between the two, per step logged.
Goal: bakeoff's growth under 1 byte per step (flat), against the baseline's hundreds.

    .venv/bin/python benchmarks/telemetry_memory.py [--steps 200000]
"""
from __future__ import annotations

import argparse
import io
import sys
import tempfile
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "entrypoints"))

from bakeoff_runtime.training.telemetry import Telemetry  # noqa: E402


class KeepingTelemetry(Telemetry):
    """The baseline: every record also held in memory, as before."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kept: list[dict] = []

    def log(self, kind: str, step: int, **values) -> None:
        super().log(kind, step, **values)
        self.kept.append({"kind": kind, "step": step, **values})


def growth(cls, steps: int, tmp: Path) -> tuple[int, int]:
    """tracemalloc peak after 10% of `steps` and after all of them (bytes)."""
    tel = cls(tmp / cls.__name__, {"leg": "bench", "seed": 0}, stdout=_Discard())
    tracemalloc.start()
    early = 0
    for step in range(steps):
        tel.log("train", step, train_loss=1.0 / (step + 1), lr=3e-4, tokens_per_sec=50_000.0)
        if step == steps // 10:
            early = tracemalloc.get_traced_memory()[1]
    late = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    tel.close()
    return early, late


class _Discard(io.TextIOBase):
    def write(self, s: str) -> int:
        return len(s)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200_000)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        rows = {name: growth(cls, args.steps, Path(tmp)) for name, cls in
                (("bakeoff", Telemetry), ("baseline (records kept)", KeepingTelemetry))}
    span = args.steps - args.steps // 10
    for name, (early, late) in rows.items():
        print(f"{name:24s} peak {early / 2**20:8.2f} MiB at {args.steps // 10:,} steps, {late / 2**20:8.2f} MiB at "
              f"{args.steps:,}: {(late - early) / span:8.2f} bytes per step")
    ours = (rows["bakeoff"][1] - rows["bakeoff"][0]) / span
    print(f"goal (growth under 1 byte per step): {'met' if ours < 1 else 'NOT met'} ({ours:.2f})")
    return 0 if ours < 1 else 1


if __name__ == "__main__":
    sys.exit(main())
