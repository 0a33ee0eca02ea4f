"""The docs build's hook (mkdocs.yml `hooks:`): adds the reference pages, written from the code, to the site's
files before the build reads them, so they are never stale and never committed.

MkDocs hooks are a module's `on_<event>` functions; `on_files` may add files, and `File.generated` makes one
from text (mkdocs 1.6: mkdocs/structure/files.py, File.generated; the event in mkdocs/plugins.py, on_files).
"""
from __future__ import annotations

from typing import Any


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    from bakeoff.pipelines.reference import pages

    for path, write in pages().items():
        if files.get_file_from_path(path) is not None:
            raise RuntimeError(f"docs/{path} is generated at build time: remove the file")
        files.append(File.generated(config, path, content=write()))
    return files
