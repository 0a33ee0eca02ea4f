"""The docs site's reference pages, written from the code that holds each fact (the docs build calls
`pages()`; tests/unit/test_docs_reference.py checks that nothing is left out).

One module per page, each a function returning Markdown: the CLI from the argparse parser, the spec's fields
from its JSON Schema (the pydantic models), the Python API as mkdocstrings directives for every name the
package exports, the exit codes, the environment variables a user sets, and evaluation.json's keys from its
TypedDicts. Nothing here imports torch, mlflow or the SageMaker SDK.
"""
from __future__ import annotations

from collections.abc import Callable


def pages() -> dict[str, Callable[[], str]]:
    """Each generated page's path under docs/, with the function that writes it."""
    from bakeoff.pipelines.reference import api, cli, environment, evaluation, exit_codes, spec

    return {
        "reference/cli.md": cli.page,
        "reference/spec.md": spec.page,
        "reference/python-api.md": api.page,
        "reference/exit-codes.md": exit_codes.page,
        "reference/environment.md": environment.page,
        "reference/evaluation-json.md": evaluation.page,
    }
