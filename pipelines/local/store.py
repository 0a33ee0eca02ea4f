"""S3 on this machine: s3://BUCKET/KEY lives at RUN/s3/BUCKET/KEY.

The local executor runs the compiled pipeline, whose requests name S3 URIs; this is
the one place they become paths.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path


class LocalS3:
    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, uri: str) -> Path:
        if not uri.startswith("s3://"):
            raise ValueError(f"not an S3 URI: {uri!r}")
        bucket, _, key = uri[len("s3://"):].partition("/")
        # S3 keys are names, not paths: a URI read from a run directory (which may come from
        # anyone) must not reach a file outside the store with `..` or an absolute key.
        parts = [p for p in f"{bucket}/{key}".split("/") if p]
        if not bucket or any(p in (".", "..") for p in parts) or key.startswith("/"):
            raise ValueError(f"not an S3 URI this store holds: {uri!r}")
        return self.root / bucket / key

    def put(self, bucket: str, key: str, body: bytes) -> bool:
        """Store `body` unless the same bytes are there already (assets are content-addressed)."""
        target = self.root / bucket / key
        if target.exists() and target.stat().st_size == len(body) and target.read_bytes() == body:
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        tmp.write_bytes(body)
        tmp.replace(target)
        return True

    def copy_prefix(self, uri: str, destination: Path) -> None:
        """Like SageMaker's S3Prefix download: every object under the prefix, into `destination`."""
        source = self.path(uri)
        destination.mkdir(parents=True, exist_ok=True)
        if source.is_file():
            shutil.copy2(source, destination / source.name)
            return
        if not source.exists():
            raise FileNotFoundError(f"{uri} has nothing in the local store ({source})")
        for item in sorted(source.rglob("*")):
            if item.is_file():
                target = destination / item.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(item, target)

    def upload_dir(self, directory: Path, uri: str) -> None:
        """Like a ProcessingOutput (EndOfJob): the directory's files under the URI."""
        target = self.path(uri)
        for item in sorted(Path(directory).rglob("*")):
            if item.is_file():
                dest = target / item.relative_to(directory)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(item, dest)
