"""The built-in corpus: English text that ships with Python (pydoc's topic help),
split into train/validation byte files. No download, same bytes for the same
Python release, and every file's sha256 recorded.
"""
from __future__ import annotations

import json
import platform
from pathlib import Path

from bakeoff.pipelines.hashing import file_sha256

MANIFEST = "manifest.json"
CORPUS_NAME = "python-pydoc-topics"


def _corpus_text() -> tuple[str, str]:
    from pydoc_data.topics import topics

    names = sorted(topics)
    # Every 10th topic is held out whole, so validation text is unseen text.
    train = "\n\n".join(topics[n] for i, n in enumerate(names) if i % 10 != 3)
    val = "\n\n".join(topics[n] for i, n in enumerate(names) if i % 10 == 3)
    return train, val


def prepare_corpus(out_dir: Path) -> dict:
    """Write train/ and validation/ channels under `out_dir`; return the manifest."""
    out_dir = Path(out_dir)
    manifest_path = out_dir / MANIFEST
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if all((out_dir / ch["path"]).exists() and file_sha256(out_dir / ch["path"]) == ch["sha256"]
               for ch in manifest["channels"].values()):
            return manifest
    train, val = _corpus_text()
    channels = {}
    for name, text in (("train", train), ("validation", val)):
        path = out_dir / name / f"{name}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        channels[name] = {"path": f"{name}/{name}.bin", "bytes": path.stat().st_size, "sha256": file_sha256(path)}
    manifest = {"corpus": CORPUS_NAME, "python": platform.python_version(), "channels": channels,
                "tokenizer": "bytes (vocabulary 256)"}
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest
