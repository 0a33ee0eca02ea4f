"""`bakeoff init DIR`: a bake-off that validates and runs, to start from.

Writes DIR/bakeoff.yaml (a trn1-vs-GPU bake-off), a training script on the Runtime contract in
DIR/src/, the spec's JSON Schema beside it (the YAML's `yaml-language-server` line points there,
so editors check the spec as it is typed) and, for the Hugging Face template, the byte corpus as
data channels. Existing files are never overwritten."""
from __future__ import annotations

import json
import re
from pathlib import Path

from .errors import SpecError

TEMPLATES = {
    "minimal": "your own PyTorch script (a small regression to replace with your model)",
    "hf": "a Hugging Face causal LM built from a config (needs the `hf` extra: transformers)",
}
_TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"


def _name_for(directory: Path) -> str:
    """A spec name from the folder's name: letters, digits and '-', at most 40."""
    name = re.sub(r"[^A-Za-z0-9]+", "-", directory.resolve().name).strip("-")[:40].strip("-")
    return name or "my-bakeoff"


def _files(template: str, name: str) -> dict[str, bytes]:
    from .spec import BakeoffSpec

    here = _TEMPLATE_DIR / template
    spec = (here / "bakeoff.yaml").read_text().replace("__NAME__", name)
    schema = json.dumps(BakeoffSpec.model_json_schema(), indent=2, sort_keys=True) + "\n"
    files = {"bakeoff.yaml": spec.encode(), "bakeoff.schema.json": schema.encode()}
    if template == "hf":
        from .bundle import entrypoints_dir

        # The built-in trainer itself, as an editable script: one source, so the two never drift.
        files["src/train.py"] = (entrypoints_dir() / "hf_causal_lm.py").read_bytes()
    else:
        files["src/train.py"] = (here / "train.py.template").read_bytes()  # not .py: no orchestration code
    return files


def init_project(directory: str | Path, template: str = "minimal") -> list[Path]:
    """Write the template into `directory` (created if missing); return the paths written.
    Refuses, writing nothing, when any of them exists."""
    if template not in TEMPLATES:
        raise SpecError(f"unknown template {template!r}; choose one of {', '.join(TEMPLATES)}", field="--template")
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise SpecError(f"{directory} exists and is not a directory")
    files = _files(template, _name_for(directory))
    data = ("data/train", "data/validation") if template == "hf" else ()
    clash = [rel for rel in (*files, *data) if (directory / rel).exists()]
    if clash:
        raise SpecError(f"{directory / clash[0]} already exists; bakeoff init never overwrites files "
                        "(choose an empty or new directory)")
    written = []
    for rel, body in files.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        written.append(path)
    if data:
        from .data import prepare_corpus

        manifest = prepare_corpus(directory / "data")
        written += [directory / "data" / ch["path"] for ch in manifest["channels"].values()]
    return written


def cmd_init(args) -> int:
    written = init_project(args.dir, args.template)
    root = Path(args.dir)
    for path in written:
        print(f"wrote {path}")
    print(f"next: bakeoff validate {root / 'bakeoff.yaml'}  then  bakeoff run {root / 'bakeoff.yaml'} "
          f"--out {root / 'runs' / 'first'}")
    return 0


def register(sub) -> None:
    """Add `bakeoff init` to the CLI's subcommands."""
    p = sub.add_parser("init", help="write a bake-off to start from: DIR/bakeoff.yaml (trn1 vs GPU), a training "
                                    "script on the Runtime contract and the spec's JSON Schema; never overwrites")
    p.add_argument("dir", help="directory to write into (created if missing)")
    p.add_argument("--template", choices=sorted(TEMPLATES), default="minimal",
                   help="; ".join(f"{k}: {v}" for k, v in TEMPLATES.items()) + " (default minimal)")
    p.set_defaults(func=cmd_init)
