"""The environment variables a user sets, from the contract that declares every BAKEOFF_* name
(bakeoff_runtime/contract/environment.py).

The contract says of each `*_ENV` constant who sets it and who reads it, in the comment above it
("set by -> read by: what it does"). The ones "the user's shell" sets are for users; the rest (a job's
configuration, `JobEnvironment`, and the plumbing between bakeoff's own processes) bakeoff sets itself. Read
from the source, since comments are not kept at run time.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from bakeoff.pipelines.reference.markdown import GENERATED, cell, code, table
from bakeoff_runtime.contract.environment import ENV_PREFIX

USER = "The user's shell"


def contract_source() -> Path:
    import bakeoff_runtime.contract

    return Path(bakeoff_runtime.contract.__file__).with_name("environment.py")


@dataclass(frozen=True)
class Variable:
    name: str       # BAKEOFF_DEBUG
    constant: str   # DEBUG_ENV
    set_by: str     # the comment's part before "->"
    read_by: str    # between "->" and the first ": "
    what: str       # the rest


def declared(source: str | None = None) -> list[Variable]:
    """Every module-level `NAME_ENV = "BAKEOFF_..."` of the contract, with the comment above it split into
    who sets it, who reads it and what it does (empty where the comment does not say)."""
    text = contract_source().read_text() if source is None else source
    lines = text.splitlines()
    found = []
    for node in ast.parse(text).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.endswith("_ENV") and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str) and node.value.value.startswith(ENV_PREFIX)):
            continue
        above: list[str] = []
        for line in reversed(lines[:node.lineno - 1]):
            if not line.startswith("#"):
                break
            above.insert(0, line.lstrip("#").strip())
        # The comment block may open with a section's heading: the variable's own comment starts at its "->" line.
        starts = [i for i, line in enumerate(above) if "->" in line]
        comment = " ".join(above[starts[-1]:] if starts else above)
        set_by, _, rest = comment.partition("->")
        read_by, _, what = rest.partition(": ")
        found.append(Variable(node.value.value, node.targets[0].id, set_by.strip(), read_by.strip(), what.strip()))
    return found


def user_facing(variables: list[Variable] | None = None) -> list[Variable]:
    """The variables for users to set: those the contract says the user's shell sets."""
    return [v for v in (declared() if variables is None else variables) if v.set_by.startswith(USER)]


def _sentence(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text[:1].upper() + text[1:]


def page() -> str:
    rows = [(code(v.name), cell(_sentence(v.what)), cell(v.read_by)) for v in user_facing()]
    return (GENERATED + "# Environment variables\n\n"
            "The variables a user may set in the shell that runs `bakeoff`. Every other `" + ENV_PREFIX + "*` variable "
            "is set by bakeoff itself, for a training job or between its own processes, and is not for users "
            "to set.\n\n"
            + table(("Variable", "What it does", "Read by"), rows)
            + "\nA training script reads the job's own settings through `bakeoff_runtime`, not these.\n")
