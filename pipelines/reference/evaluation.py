"""The evaluation.json reference: every key of the evaluation and of the objects inside it, from the TypedDicts
that type it (bakeoff_runtime/contract/documents.py, and decision.py for the projection).

Read from the source rather than the classes: the annotations are strings at run time (NotRequired lives only
under TYPE_CHECKING there), and a key's note is the comment beside it.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from bakeoff.pipelines.reference.markdown import GENERATED, cell, code, table

ROOT = "Evaluation"
_NAMES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "None": "null", "Any": "any",
          "JSON": "object"}


@dataclass(frozen=True)
class Key:
    name: str
    annotation: ast.expr
    required: bool
    note: str


@dataclass(frozen=True)
class Document:
    name: str
    doc: str
    bases: tuple[str, ...]
    keys: tuple[Key, ...]  # its own; a base's come first on the page


def contract_sources() -> list[Path]:
    import bakeoff_runtime.contract

    folder = Path(bakeoff_runtime.contract.__file__).parent
    return [folder / "documents.py", folder / "decision.py"]


def typed_dicts(sources: list[str] | None = None) -> dict[str, Document]:
    """Every TypedDict class of the contract's document modules, by name."""
    texts = [path.read_text() for path in contract_sources()] if sources is None else sources
    found = {}
    for text in texts:
        lines = text.splitlines()
        for node in ast.parse(text).body:
            if not isinstance(node, ast.ClassDef):
                continue
            bases = tuple(b.id for b in node.bases if isinstance(b, ast.Name))
            total = not any(k.arg == "total" and isinstance(k.value, ast.Constant) and k.value.value is False
                            for k in node.keywords)
            keys = []
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    annotation, optional = item.annotation, False
                    if (isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name)
                            and annotation.value.id == "NotRequired"):
                        annotation, optional = annotation.slice, True
                    note = lines[item.lineno - 1].partition("#")[2].strip()
                    keys.append(Key(item.target.id, annotation, total and not optional, note))
            found[node.name] = Document(node.name, ast.get_docstring(node) or "", bases, tuple(keys))
    return {name: d for name, d in found.items() if _is_typed_dict(name, found)}


def _is_typed_dict(name: str, found: dict[str, Document]) -> bool:
    bases = found[name].bases
    return "TypedDict" in bases or any(b in found and _is_typed_dict(b, found) for b in bases)


def all_keys(name: str, docs: dict[str, Document]) -> list[Key]:
    """A document's keys, its bases' first (as TypedDict merges them)."""
    inherited = [k for base in docs[name].bases if base in docs for k in all_keys(base, docs)]
    return inherited + list(docs[name].keys)


def _named(node: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


def reachable(docs: dict[str, Document], root: str = ROOT) -> list[str]:
    """The documents evaluation.json holds, the evaluation first, in the order a reader meets them."""
    order, queue = [root], [root]
    while queue:
        for key in all_keys(queue.pop(0), docs):
            for name in _named(key.annotation):
                if name in docs and name not in order:
                    order.append(name)
                    queue.append(name)
    return order


def type_text(node: ast.expr, docs: dict[str, Document]) -> str:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return f"{type_text(node.left, docs)} or {type_text(node.right, docs)}"
    if isinstance(node, ast.Constant) and node.value is None:
        return "null"
    if isinstance(node, ast.Name):
        return f"[{node.id}](#{node.id.lower()})" if node.id in docs else _NAMES.get(node.id, node.id)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if node.value.id == "list":
            return f"list of {type_text(args[0], docs)}"
        if node.value.id == "dict":
            return f"map of {type_text(args[0], docs)} to {type_text(args[-1], docs)}"
    return code(ast.unparse(node))


def page(docs: dict[str, Document] | None = None) -> str:
    from bakeoff_runtime.contract.documents import EVALUATION_SCHEMA

    docs = typed_dicts() if docs is None else docs
    out = [GENERATED, "# evaluation.json\n\n",
           f"The evaluation step's result: `evaluation/evaluation.json` in a local run directory, the Evaluate "
           f"step's output on SageMaker. Its `schema` key is {code(EVALUATION_SCHEMA)}. `bakeoff report` and "
           f"the Python API's `report` read it. A key marked optional may be absent; besides the keys below, "
           f"each run (`legs.<leg>.runs[]`) carries the parity metric's value under the metric's name, and a "
           f"throughput its `<unit>_per_sec`.\n\n"]
    for name in reachable(docs):
        out.append(f"## {name} {{ #{name.lower()} }}\n\n")
        if docs[name].doc:
            out.append(f"{docs[name].doc}\n\n")
        rows = [(code(k.name), type_text(k.annotation, docs), "always" if k.required else "optional", cell(k.note))
                for k in all_keys(name, docs)]
        out.append(table(("Key", "Type", "Present", "Note"), rows) + "\n")
    return "".join(out)
