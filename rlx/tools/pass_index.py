"""A static index of the registered passes: summary and options, without importing them.

`rlx-opt --list-passes` and `--help` describe ~150 passes; importing every pass module to
read its docstring takes seconds. The facts stay declared once, on the pass classes (the
class docstring's first line; the dataclass fields with their types, defaults and
attribute docstrings); `pass_index_data.py` is generated from them by

    python -m rlx.tools.pass_index --write

and `tests/unit/test_pass_index.py` fails when the file no longer matches the classes.
Passes not in the index (plugins, test passes) are described by importing them.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import sys
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rlx.tools.pass_flags import first_doc_line

DATA_FILE = Path(__file__).with_name("pass_index_data.py")

PassInfo = dict[str, Any]
"""{"summary": str, "options": [{"name", "type", "default", "help"}, ...]}"""


@functools.cache
def _module_tree(path: str) -> ast.Module | None:
    """The parsed source file `path`, once per file (None if unreadable)."""
    try:
        return ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


def _class_node(klass: type) -> ast.ClassDef | None:
    """The class statement of `klass` in its source file: the first class whose qualified
    name is `klass.__qualname__` (what `inspect.getsource` finds), from one cached parse
    per file: `inspect.getsource` parses the whole file again for every class, which made
    indexing ~160 passes (~800 classes with their bases) cost seconds."""
    try:
        path = inspect.getsourcefile(klass)
    except TypeError:  # built-in
        return None
    tree = _module_tree(path) if path else None
    if tree is None:
        return None
    stack: list[tuple[ast.AST, tuple[str, ...]]] = [(tree, ())]
    while stack:  # depth first, in source order
        node, scope = stack.pop()
        children: list[tuple[ast.AST, tuple[str, ...]]] = []
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                if ".".join((*scope, child.name)) == klass.__qualname__:
                    return child
                children.append((child, (*scope, child.name)))
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                children.append((child, (*scope, child.name, "<locals>")))
            else:
                children.append((child, scope))
        stack.extend(reversed(children))
    return None


def _field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings (`x: int = 1` followed by a string literal) of `cls` and bases."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        node = _class_node(klass)
        body = node.body if node is not None else []
        for stmt, nxt in zip(body, body[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[stmt.target.id] = " ".join(nxt.value.value.split())
    return docs


def _type_name(typ: Any) -> str:
    if isinstance(typ, type) and typ.__module__ == "builtins":
        return typ.__name__
    return str(typ).replace("typing.", "")


def _default(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "required"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value) if not isinstance(value, str) else repr(value)


def describe(pass_cls: type) -> PassInfo:
    """Summary and options of a pass class (what the index stores)."""
    options: list[dict[str, str]] = []
    if dataclasses.is_dataclass(pass_cls):
        try:
            hints = typing.get_type_hints(pass_cls)
        except Exception:
            hints = {}
        docs = _field_docs(pass_cls)
        for f in dataclasses.fields(pass_cls):
            if not f.init or f.name == "name":
                continue
            options.append(
                {
                    "name": f.name.replace("_", "-"),
                    "type": _type_name(hints.get(f.name, f.type)),
                    "default": _default(f),
                    "help": str(f.metadata.get("help", docs.get(f.name, ""))),
                }
            )
    return {"summary": summary_of(pass_cls), "options": options}


SUMMARIES = {
    "cse": "Eliminate common subexpressions (pure ops with equal operands and attributes).",
    "lower-affine": "Lower the affine dialect to scf and arith.",
    "reconcile-unrealized-casts": "Remove pairs of builtin.unrealized_conversion_cast that cancel.",
    "printf-to-llvm": "Lower printf.print_format to llvm calls of printf.",
    "frontend-desymrefy": "Replace symref declare/fetch/update ops with SSA values.",
}
"""Summaries of upstream passes whose class and module have no docstring."""


def summary_of(pass_cls: type) -> str:
    """The class docstring's first line, else a known summary, else the module's."""
    summary = first_doc_line(pass_cls) or SUMMARIES.get(getattr(pass_cls, "name", ""), "")
    if summary:
        return summary
    module = sys.modules.get(pass_cls.__module__)
    doc = (getattr(module, "__doc__", None) or "").strip()
    if doc:
        return doc.splitlines()[0].strip()
    return f"(no description; defined in {pass_cls.__module__})"


def load_index() -> dict[str, PassInfo]:
    """The generated index ({} if the data file is missing)."""
    try:
        from rlx.tools.pass_index_data import PASSES
    except ImportError:
        return {}
    return PASSES


def pass_info(name: str, factory: Callable[[], type], index: Mapping[str, PassInfo]) -> PassInfo:
    """The index entry of `name`, or a description built by importing the pass."""
    if name in index:
        return index[name]
    try:
        return describe(factory())
    except Exception as e:  # a broken pass must not break the listing
        return {"summary": f"<failed to load: {type(e).__name__}: {e}>", "options": []}


def pass_summaries(registry: Mapping[str, Callable[[], type]], imported: bool) -> dict[str, str]:
    """Pass name -> summary: from the index, else (if `imported`) by importing the pass."""
    index = load_index()
    return {
        name: pass_info(name, factory, index)["summary"] if imported or name in index else ""
        for name, factory in registry.items()
    }


def build_index() -> dict[str, PassInfo]:
    """Describe every upstream xDSL and rlx pass (imports all of them)."""
    from rlx.runtime.pipeline_passes import pass_registry

    return {name: describe(factory()) for name, factory in sorted(pass_registry().items())}


def render_index(index: Mapping[str, PassInfo]) -> str:
    """The text of `pass_index_data.py`."""
    lines = [
        '"""GENERATED by `python -m rlx.tools.pass_index --write`: do not edit."""',
        "",
        "from typing import Any",
        "",
        "# fmt: off",
        "PASSES: dict[str, dict[str, Any]] = {",
    ]
    lines += [f"    {name!r}: {info!r}," for name, info in sorted(index.items())]
    lines += ["}", "# fmt: on", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = render_index(build_index())
    if "--write" in argv:
        DATA_FILE.write_text(text)
        return 0
    if DATA_FILE.exists() and DATA_FILE.read_text() == text:
        return 0
    sys.stderr.write(f"{DATA_FILE} is stale: run python -m rlx.tools.pass_index --write\n")
    return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
