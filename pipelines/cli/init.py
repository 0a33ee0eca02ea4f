"""`bakeoff init DIR`: a bake-off that validates and runs, to start from.

Writes DIR/bakeoff.yaml (a trn1-vs-GPU bake-off), a training script on the Runtime contract in
DIR/src/, the spec's JSON Schema beside it (the YAML's `yaml-language-server` line points there,
so editors check the spec as it is typed) and, for the Hugging Face template, the byte corpus as
data channels. Existing files are never overwritten."""
from __future__ import annotations

import json
import re
from pathlib import Path

from bakeoff.pipelines.errors import SpecError

TEMPLATES = {
    "minimal": "your own PyTorch script (a small regression to replace with your model)",
    "hf": "a Hugging Face causal LM built from a config (needs the `hf` extra: transformers)",
    "script": "a script-mode spec around an existing training script (--script PATH), run as it is",
}
_TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"


def _name_for(directory: Path) -> str:
    """A spec name from the folder's name: letters, digits and '-', at most 40."""
    name = re.sub(r"[^A-Za-z0-9]+", "-", directory.resolve().name).strip("-")[:40].strip("-")
    return name or "my-bakeoff"


def _scan_script(script: Path):
    """What the script's source says (pipelines/plan/script_scan.py), with the Python files beside it."""
    from bakeoff.pipelines.plan.script_scan import scan

    folder = script.resolve().parent
    files = tuple((p.relative_to(folder).as_posix(), p.read_bytes()) for p in sorted(folder.rglob("*.py"))[:500]
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    return scan(files, script.name)


def _yaml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def _script_spec(text: str, directory: Path, script: Path) -> str:
    """The script template filled in for `script`: its folder relative to the spec's, and what its source
    shows: a `--seed` option, a `--device` option for the per-leg arguments (and the `local:` block a
    CUDA default needs here), a `--key=value` configurator, and metric regexes written from its own
    print statements (pipelines/cli/script_regexes.py)."""
    import os

    from bakeoff.pipelines.cli.script_regexes import metric_regexes

    rel = Path(os.path.relpath(script.resolve().parent, directory.resolve())).as_posix()
    found = _scan_script(script)
    seed = found.option("seed")
    device = found.option("device")
    outside = rel == ".." or rel.startswith("../")
    metrics = metric_regexes(list(found.prints))
    # From its own prints where they name both losses; else the template's generic lines, to adjust.
    metric_lines = [f"- {{name: {m.name}, regex: {_yaml_string(m.regex)}}}   # {script.name}:{m.line}"
                    for m in metrics] if {m.name for m in metrics} == {"train_loss", "val_loss"} else None
    cuda_default = device is not None and str(device.default or "").split(":")[0] == "cuda"
    equals = bool(found.keyvalue_configurator)

    def given(option, value: str) -> str:  # how the script takes it: `--key value` or `--key=value`
        return f"{option.flags[-1]}={value}" if equals else f"{option.flags[-1]}, {value}"
    lines = {
        "__OUTSIDE__": "allow_outside_spec_dir: true   # the script lives outside this folder" if outside else None,
        "__STYLE__": (f"argument_style: equals       # {found.keyvalue_configurator[0]}: --key=value"
                      if found.keyvalue_configurator else None),

        "__SEED__": (f"seed: {{argument: {seed.dest}}}      # the job's seed reaches the script as "
                     f"{seed.flags[-1]}{'=' if equals else ' '}N" if seed else
                     "# seed: {argument: seed}     # how the seed reaches the script, if it takes one"),
        "__TRN_ARGS__": (f"arguments: [{given(device, 'xla')}]   # only this leg's; the porting cost" if device
                         else "# arguments: [--device, xla]   # what only this leg's script gets"),
        "__G5_LOCAL__": (f"local: {{arguments: [{given(device, 'cpu')}]}}   # `bakeoff run` here only (the script "
                         "defaults to cuda); never deployed" if cuda_default else None),
    }
    out: list[str] = []
    for line in text.splitlines():
        if line.endswith("#__METRICS__"):
            generic = line[:-len("#__METRICS__")].rstrip()
            if metric_lines is None:
                out.append(generic + ("   # adjust to the lines your script prints" if "train_loss" in line else ""))
            elif "train_loss" in line:
                out += [line[:len(line) - len(line.lstrip())] + m for m in metric_lines]
            continue
        key = line.strip().lstrip("#")
        if key in lines:
            fill = lines[key]
            indent = line[:len(line) - len(line.lstrip())]
            for part in ([fill] if isinstance(fill, str) else fill or []):
                out.append(indent + part)
            continue
        out.append(line.replace("__SOURCE_DIR__", rel).replace("__SCRIPT__", script.name))
    return "\n".join(out) + "\n"


def _files(template: str, name: str, directory: Path | None = None, script: Path | None = None) -> dict[str, bytes]:
    from bakeoff.pipelines.spec.model import BakeoffSpec

    here = _TEMPLATE_DIR / template
    spec = (here / "bakeoff.yaml").read_text().replace("__NAME__", name)
    if template == "script":
        assert directory is not None and script is not None
        spec = _script_spec(spec, directory, script)
    schema = json.dumps(BakeoffSpec.model_json_schema(), indent=2, sort_keys=True) + "\n"
    files = {"bakeoff.yaml": spec.encode(), "bakeoff.schema.json": schema.encode()}
    if template == "hf":
        from bakeoff.pipelines.plan.bundle import entrypoints_dir

        # The built-in trainer itself, as an editable script: one source, so the two never drift.
        files["src/train.py"] = (entrypoints_dir() / "hf_causal_lm.py").read_bytes()
    elif template == "script":
        pass  # the user's own script, where it is
    else:
        files["src/train.py"] = (here / "train.py.template").read_bytes()  # not .py: no orchestration code
    return files


def init_project(directory: str | Path, template: str = "minimal", script: str | Path | None = None) -> list[Path]:
    """Write the template into `directory` (created if missing); return the paths written.
    Refuses, writing nothing, when any of them exists. `script`: the existing training script a
    `script` template is written around."""
    if template not in TEMPLATES:
        raise SpecError(f"unknown template {template!r}; choose one of {', '.join(TEMPLATES)}", field="--template")
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise SpecError(f"{directory} exists and is not a directory")
    if (template == "script") != (script is not None):
        raise SpecError("--template script needs --script PATH (the training script to run as it is)"
                        if template == "script" else "--script is for --template script", field="--script")
    if script is not None:
        script = Path(script)
        if not script.is_file():
            raise SpecError(f"--script {script}: no such file; give the path of your training script",
                            field="--script")
    files = _files(template, _name_for(directory), directory, Path(script) if script else None)
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
        from bakeoff.pipelines.plan.corpus import prepare_corpus

        manifest = prepare_corpus(directory / "data")
        written += [directory / "data" / ch["path"] for ch in manifest["channels"].values()]
    return written


def cmd_init(args) -> int:
    written = init_project(args.dir, args.template, args.script)
    root = Path(args.dir)
    for path in written:
        print(f"wrote {path}")
    if args.template == "script":  # what validate says of it, before any job: a leg with no route to XLA...
        from bakeoff.pipelines import api
        from bakeoff.pipelines.errors import SpecError

        try:
            for warning in api.validate(root / "bakeoff.yaml").warnings:
                print(f"  warning: {warning}")
        except SpecError as exc:
            print(f"  to fix before it runs: {exc}")
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
    p.add_argument("--script", help="--template script: your existing training script (e.g. train.py)")
    p.set_defaults(func=cmd_init)
