"""The embedded default: run a whole bake-off on this machine."""
from .executor import LocalExecutor, RunResult

__all__ = ["LocalExecutor", "RunResult"]
