"""`--set key.path=value` overrides, applied to the raw spec before validation.

A path names fields with dots; a leg is selected by index (`legs.1.x`, `legs[1].x`) or by
name (`legs.trn1.x`). Every problem is blamed on the `--set` argument, in one line.

The value is read as the spec file is (core YAML tags only, bounded depth, size and alias
expansion), and the path is as bounded. The code lives beside that reader in
pipelines/spec/loader.py (which applies the overrides while loading a spec, and whose reader they
use: one module, no import circle); this is their name for the API and the CLI.
"""
from __future__ import annotations

from bakeoff.pipelines.spec.loader import apply_overrides

__all__ = ["apply_overrides"]
