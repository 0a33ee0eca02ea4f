"""The order the local engine runs a definition's steps in, read from the definition itself.

A step runs after every step it names in `DependsOn` and every step whose properties it reads
(`{"Get": "Steps.X...."}`, a JsonGet's property file included), as SageMaker orders them. The
training jobs of the bake-off run as one batch (parallel.py: seed-major, side by side, read in
the plan's order), so they are one node here; what orders them among themselves (a spot leg's
later seeds after its first) is handed to the batch as constraints. Nothing here runs a step:
the executor does, by kind, and refuses a kind it cannot run rather than skip it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bakeoff.pipelines.errors import RunError
from bakeoff.pipelines.sagemaker.expressions import step_dependencies

BATCH = "<training jobs>"


def dependencies(step: dict[str, Any]) -> set[str]:
    """The steps this one waits for, as SageMaker reads them (the quota check reads them the same way)."""
    return step_dependencies(step)


def run_order(definition: dict[str, Any], batched: Callable[[dict[str, Any]], bool]) -> list[str]:
    """The top-level steps in an order that respects every dependency, the `batched` ones as one
    BATCH node (run after everything any of them waits for); among steps ready at once, the
    definition's own order. RunError on a dependency that names no step, or a cycle."""
    steps = {str(s["Name"]): s for s in definition.get("Steps") or []}
    node = {name: BATCH if batched(step) else name for name, step in steps.items()}
    waits: dict[str, set[str]] = {n: set() for n in node.values()}
    for name, step in steps.items():
        for dep in dependencies(step):
            if dep not in steps:
                raise RunError(f"step {name} of the definition waits for {dep}, which is not one of its steps")
            if node[dep] != node[name]:
                waits[node[name]].add(node[dep])
    order: list[str] = []
    candidates = list(dict.fromkeys(node.values()))  # definition order, the batch where its first step is
    while candidates:
        ready = next((n for n in candidates if waits[n] <= set(order)), None)
        if ready is None:
            raise RunError("the definition's steps wait for each other in a circle: " + ", ".join(
                f"{n} waits for {', '.join(sorted(waits[n] - set(order)))}" for n in candidates))
        order.append(ready)
        candidates.remove(ready)
    return order


def batch_constraints(definition: dict[str, Any], batched: Callable[[dict[str, Any]], bool]) -> dict[str, set[str]]:
    """For each batched step, the batched steps it waits for (DependsOn or property reads)."""
    steps = {str(s["Name"]): s for s in definition.get("Steps") or []}
    inside = {name for name, step in steps.items() if batched(step)}
    return {name: dependencies(steps[name]) & inside for name in sorted(inside)}
