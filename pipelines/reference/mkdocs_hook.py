"""The docs build's hook (mkdocs.yml `hooks:`): adds the reference pages, written from the code, to the site's
files before the build reads them, so they are never stale and never committed.

MkDocs hooks are a module's `on_<event>` functions; `on_files` may add files, and `File.generated` makes one
from text (mkdocs 1.6: mkdocs/structure/files.py, File.generated; the event in mkdocs/plugins.py, on_files).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# The packages by their installed names, as links to the checkout's folders (the same tree `make lint` makes for
# mypy): mkdocstrings reads source files by module path (mkdocs.yml `paths:`), and the editable install's import
# hook, which maps bakeoff.pipelines to pipelines/, is invisible to it.
NAMES_TREE = ("build", "typecheck", "bakeoff")
LINKS = {"__init__.py": "src/bakeoff/__init__.py", "py.typed": "src/bakeoff/py.typed", "pipelines": "pipelines",
         "estimators": "estimators"}


def link_names_tree() -> Path:
    """Make (or mend) build/typecheck/bakeoff in the checkout this module is in; returns it. `make lint` calls
    it for mypy (`python -m bakeoff.pipelines.reference.mkdocs_hook`), the docs build through `on_config`."""
    root = Path(__file__).resolve().parents[2]  # the checkout this hook is in (pipelines/reference/)
    tree = root.joinpath(*NAMES_TREE)
    tree.mkdir(parents=True, exist_ok=True)
    for name, target in LINKS.items():
        link, wanted = tree / name, os.path.relpath(root / target, tree)
        if link.is_symlink() and os.readlink(link) == wanted:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(wanted)
    return tree


def on_config(config: Any) -> Any:
    link_names_tree()
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    from bakeoff.pipelines.reference import pages

    for path, write in pages().items():
        if files.get_file_from_path(path) is not None:
            raise RuntimeError(f"docs/{path} is generated at build time: remove the file")
        files.append(File.generated(config, path, content=write()))
    return files


if __name__ == "__main__":
    link_names_tree()
