"""What a script-mode script's source says about how it must be run: read, never run.

The script (and the modules of its source dir it imports, followed from it) is parsed with `ast`,
so a spec can be checked before any job starts (`bakeoff validate`, the start of `bakeoff run`):

* its command-line options (`argparse` `add_argument` calls): flags, action, default, choices;
* whether it is distributed: it initialises a process group or reads torchrun's variables
  (RANK, LOCAL_RANK, WORLD_SIZE, ...), so it expects to be started by torchrun, one process per
  device; or it starts its own processes (`mp.spawn`, `xmp.spawn`), so it must be started once;
* how it picks its device: through `torch.accelerator` (which never reports PyTorch/XLA), a route
  to PyTorch/XLA (it imports torch_xla, names an `xla` device, or uses a framework that picks XLA
  wherever torch_xla imports: transformers' Trainer, accelerate), or CUDA it insists on (a
  `--device` default of `cuda`, `.cuda()`, `torch.device("cuda")` with no availability check);
* the modules it imports (with whether an ImportError is caught), its `--key=value` configurator
  (nanoGPT's `exec(open("configurator.py").read())`), and the format strings it prints (for
  `bakeoff init`'s metric regexes).

A pure function of the bundle's files (passed as they are, so that this module sits below the bundle's
own, which resolves the process model with it); torch-free.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath

# The variables torchrun sets for each worker (torch.distributed.run; torch/distributed/elastic/agent/server/
# api.py, `_get_worker_env`): a script that reads one expects to be one of several processes.
TORCHRUN_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
                      "MASTER_PORT")
# Frameworks that pick PyTorch/XLA's device themselves wherever torch_xla imports, unless told not to
# (transformers and accelerate read USE_TORCH_XLA: research notes, transformers utils/import_utils.py and
# accelerate utils/imports.py).
XLA_PICKING = {"transformers": "transformers' Trainer", "accelerate": "accelerate"}
_RUNTIME_DIRS = ("bakeoff_runtime",)


@dataclass(frozen=True)
class Option:
    """One `add_argument` call of the script's parser."""

    flags: tuple[str, ...]
    dest: str
    action: str | None
    default: str | None  # the default as written in the source (a literal's value, else its text)
    choices: tuple[str, ...]
    line: int
    file: str

    @property
    def takes_no_value(self) -> bool:
        return self.action in ("store_true", "store_false", "store_const", "count", "help", "version")


@dataclass(frozen=True)
class Finding:
    """A line of the source that says something, for a message: `train.py:40 (dist.init_process_group)`."""

    what: str
    file: str
    line: int

    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def __str__(self) -> str:
        return f"{self.what} ({self.where()})"


@dataclass(frozen=True)
class Import:
    module: str  # the top-level name: `torch_xla` for `import torch_xla.core.xla_model`
    full: str  # as written: `torch_xla.core.xla_model`
    file: str
    line: int
    guarded: bool  # inside a try whose handlers catch ImportError (or broader)
    module_level: bool  # run when the file is imported, not inside a function
    conditional: bool = False  # inside an `if` (run on some paths only: a device option's branch, say)


@dataclass(frozen=True)
class ScriptScan:
    script: str
    files: tuple[str, ...]  # the script and the bundle modules it imports, in the order they were read
    options: tuple[Option, ...] = ()
    process_group: tuple[Finding, ...] = ()  # init_process_group, torchrun variables read
    spawns: tuple[Finding, ...] = ()  # mp.spawn / xmp.spawn: the script starts its own processes
    accelerator: tuple[Finding, ...] = ()  # torch.accelerator used
    xla: tuple[Finding, ...] = ()  # a route of its own to PyTorch/XLA
    xla_frameworks: tuple[Finding, ...] = ()  # transformers/accelerate, which pick XLA by themselves
    cuda: tuple[Finding, ...] = ()  # CUDA it insists on
    cuda_checked: bool = False  # it asks torch.cuda.is_available() somewhere
    imports: tuple[Import, ...] = ()
    keyvalue_configurator: tuple[Finding, ...] = ()
    prints: tuple[tuple[str, int], ...] = ()  # (format template with {} for values, line) of the script's prints
    local_modules: tuple[str, ...] = field(default=())  # importable names the bundle itself provides

    @property
    def distributed(self) -> bool:
        """Whether it expects torchrun: a process group or torchrun's variables, and no spawning of its own."""
        return bool(self.process_group) and not self.spawns

    def option(self, *names: str) -> Option | None:
        """The option whose dest or flag is one of `names` (`device`, `--device`)."""
        for opt in self.options:
            if opt.dest in names or any(f.lstrip("-") in names for f in opt.flags):
                return opt
        return None

    def option_for_hyperparameter(self, key: str) -> Option | None:
        """The option a hyperparameter `key` becomes (`--key`, `-k` for one letter), as argparse matches it."""
        flag = f"--{key}" if len(key) > 1 else f"-{key}"
        return next((o for o in self.options if flag in o.flags), None)


# --- reading ------------------------------------------------------------------------------------
def _name(node: ast.AST) -> str:
    """`torch.distributed.init_process_group` for the call's function, as written."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _name(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def _literal(node: ast.AST | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return None if node.value is None else str(node.value)
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001  (a node unparse cannot write: no default worth showing)
        return None


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = [_name(t) for t in (handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type])]
    return any(n.split(".")[-1] in ("ImportError", "ModuleNotFoundError", "Exception", "BaseException") for n in names)


def _template(node: ast.AST) -> str | None:
    """A printed line's text with `{}` where values go: an f-string, "...".format(...), or "..." % (...)."""
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            out.append(part.value if isinstance(part, ast.Constant) else "{}")
        return "".join(str(p) for p in out)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
        import re

        return re.sub(r"\{[^{}]*\}", "{}", node.func.value.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
            and isinstance(node.left.value, str):
        import re

        return re.sub(r"%[-+ #0-9.]*[sdifgeEr]", "{}", node.left.value)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


class _Reader(ast.NodeVisitor):
    def __init__(self, file: str):
        self.file = file
        self.found: dict[str, list] = {k: [] for k in ("options", "process_group", "spawns", "accelerator", "xla",
                                                       "xla_frameworks", "cuda", "imports", "keyvalue", "prints",
                                                       "globals")}
        self.cuda_checked = False
        self._guard = 0
        self._depth = 0
        self._if = 0
        self._in_argument = 0

    def _add(self, kind: str, what: str, node: ast.AST) -> None:
        self.found[kind].append(Finding(what, self.file, getattr(node, "lineno", 0)))

    # structure
    def visit_Try(self, node: ast.Try) -> None:
        guarded = any(_catches_import_error(h) for h in node.handlers)
        self._guard += guarded
        for stmt in node.body:
            self.visit(stmt)
        self._guard -= guarded
        for part in (*node.handlers, *node.orelse, *node.finalbody):
            self.visit(part)

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self._if += 1
        for stmt in (*node.body, *node.orelse):
            self.visit(stmt)
        self._if -= 1

    def _function(self, node) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    # imports
    def _import(self, module: str, node: ast.Import | ast.ImportFrom) -> None:
        top = module.split(".")[0]
        self.found["imports"].append(Import(top, module, self.file, node.lineno, self._guard > 0, self._depth == 0,
                                            self._if > 0))
        if top == "torch_xla":
            self._add("xla", f"imports {module}", node)
        if top in XLA_PICKING:
            self._add("xla_frameworks", f"imports {module} ({XLA_PICKING[top]} picks PyTorch/XLA wherever torch_xla "
                      "imports)", node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            self._import(node.module, node)

    # calls
    def visit_Call(self, node: ast.Call) -> None:
        name = _name(node.func)
        last = name.split(".")[-1]
        if last == "add_argument":
            self._option(node)
            self._in_argument += 1
            self.generic_visit(node)
            self._in_argument -= 1
            return
        if last == "init_process_group":
            self._add("process_group", f"calls {name}", node)
        elif last in ("get", "getenv") and node.args and isinstance(node.args[0], ast.Constant) \
                and node.args[0].value in TORCHRUN_VARIABLES and ("environ" in name or last == "getenv"):
            self._add("process_group", f"reads {node.args[0].value}", node)
        elif last == "spawn" and any(part in name for part in ("mp", "multiprocessing", "xmp")):
            self._add("spawns", f"starts its own processes with {name}", node)
        elif last == "is_available" and "cuda" in name:
            self.cuda_checked = True
        elif last == "cuda" and isinstance(node.func, ast.Attribute) and not node.args and name != "torch":
            self._add("cuda", f"calls {name}()", node)
        elif last in ("device", "to") and node.args and isinstance(node.args[0], ast.Constant) \
                and str(node.args[0].value).split(":")[0] == "cuda":
            self._add("cuda", f"{name}({node.args[0].value!r})", node)
        elif last == "exec" and any(isinstance(n, ast.Constant) and "configurator" in str(n.value)
                                    for n in ast.walk(node)):
            self._add("keyvalue", "exec()s a configurator that reads --key=value", node)
        elif last == "print" and node.args:
            template = _template(node.args[0])
            if template and "{}" in template:
                self.found["prints"].append((template, node.lineno))
        self.generic_visit(node)

    def _option(self, node: ast.Call) -> None:
        flags = tuple(str(a.value) for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
        if not flags:
            return
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        action = kw.get("action")
        choices = kw.get("choices")
        longest = max(flags, key=lambda f: (f.startswith("--"), len(f)))
        dest = _literal(kw.get("dest")) or longest.lstrip("-").replace("-", "_")
        values = tuple(str(e.value) for e in choices.elts if isinstance(e, ast.Constant)) \
            if isinstance(choices, (ast.List, ast.Tuple)) else ()
        how = str(action.value) if isinstance(action, ast.Constant) else None
        self.found["options"].append(Option(flags, dest, how, _literal(kw.get("default")), values, node.lineno,
                                            self.file))
        default = kw.get("default")
        if isinstance(default, ast.Constant) and isinstance(default.value, str):
            if dest == "device" and default.value.split(":")[0] == "cuda":
                self._add("cuda", f"its {longest} option defaults to {default.value!r}", node)
            elif default.value.split(":")[0] == "xla":
                self._add("xla", f"its {longest} option defaults to {default.value!r}", node)

    # module-level settings (what a --key=value configurator overrides)
    def visit_Assign(self, node: ast.Assign) -> None:
        if self._depth == 0 and not self._if and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            self.found["globals"].append(Option((f"--{name}",), name, None, _literal(node.value), (), node.lineno,
                                                self.file))
        self.generic_visit(node)

    # names
    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = _name(node)
        if name.startswith("torch.accelerator.") and name.count(".") == 2:
            self._add("accelerator", f"uses {name}", node)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = node.slice
        if "environ" in _name(node.value) and isinstance(key, ast.Constant) and key.value in TORCHRUN_VARIABLES:
            self._add("process_group", f"reads {key.value}", node)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not self._in_argument and isinstance(node.value, str) and node.value.split(":")[0] == "xla":
            self._add("xla", f"names the {node.value!r} device", node)


Files = tuple[tuple[str, bytes], ...]


def _local_modules(files: Files, shipped: frozenset[str]) -> dict[str, str]:
    """Importable module name -> file, for the user's Python files in the bundle (bakeoff's own left
    out): `model` -> model.py, `utils` -> utils/__init__.py, `utils.data` -> utils/data.py."""
    out: dict[str, str] = {}
    for name, _ in files:
        path = PurePosixPath(name)
        if path.suffix != ".py" or path.parts[0] in _RUNTIME_DIRS or name in shipped:
            continue
        parts = list(path.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            out[".".join(parts)] = name
    return out


@lru_cache(maxsize=16)
def scan(files: Files, script: str, shipped: frozenset[str] = frozenset()) -> ScriptScan:
    """What `script`, and the modules among `files` it imports, say (read, never run). `shipped`:
    bakeoff's own files beside the user's (never the script's modules)."""
    local = _local_modules(files, shipped)
    by_name = dict(files)
    order: list[str] = []
    queue = [script]
    found: dict[str, list] = {k: [] for k in _Reader("").found}
    checked = False
    while queue:
        name = queue.pop(0)
        if name in order or name not in by_name:
            continue
        order.append(name)
        try:
            tree = ast.parse(by_name[name].decode("utf-8", "replace"))
        except SyntaxError:
            continue
        reader = _Reader(PurePosixPath(name).name if name == script else name)
        reader.visit(tree)
        checked = checked or reader.cuda_checked
        for kind, items in reader.found.items():
            found[kind] += items
        for imp in reader.found["imports"]:
            target = local.get(imp.full) or local.get(imp.module)
            if target and target not in order:
                queue.append(target)
    if found["keyvalue"]:  # its module-level settings are its options, `--name=value` (nanoGPT's configurator)
        entry = PurePosixPath(script).name
        found["options"] += [o for o in found["globals"] if o.file == entry and not o.dest.startswith("_")]
    names = {n.split(".")[0] for n in local}
    names |= {PurePosixPath(n).parts[0] for n, _ in files if len(PurePosixPath(n).parts) > 1
              and PurePosixPath(n).parts[0] not in _RUNTIME_DIRS}  # packages without an __init__.py
    return ScriptScan(
        script=script, files=tuple(order), options=tuple(found["options"]),
        process_group=tuple(found["process_group"]), spawns=tuple(found["spawns"]),
        accelerator=tuple(found["accelerator"]), xla=tuple(found["xla"]),
        xla_frameworks=tuple(found["xla_frameworks"]), cuda=tuple(found["cuda"]), cuda_checked=checked,
        imports=tuple(found["imports"]), keyvalue_configurator=tuple(found["keyvalue"]),
        prints=tuple(found["prints"]), local_modules=tuple(sorted(names)))


def process_model(spec, found: ScriptScan) -> tuple[bool, str]:
    """(distributed, why): the spec's `script_mode.distributed` where it says, else what the script shows."""
    distributed = spec.entrypoint.script_mode.distributed
    name = found.script.rsplit("/", 1)[-1]
    if distributed is not None:
        return distributed, f"entrypoint.script_mode.distributed is {str(distributed).lower()}"
    if found.spawns:
        return False, f"{name} {found.spawns[0]}, so it is started once per instance"
    if found.process_group:
        return True, f"{name} {found.process_group[0]}: it is distributed (torchrun, one process per device)"
    return False, f"{name} initialises no process group and reads none of torchrun's variables: it runs as one process"
