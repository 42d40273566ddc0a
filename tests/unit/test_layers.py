"""The package layers import downward only (import-linter's `layers` contract in
pyproject.toml), and every module imports on its own, first, in a fresh interpreter.

An import that works or fails depending on which module comes first needs a cycle among
module-level imports: `module_graph` reads those statically (imports inside functions and
under `if TYPE_CHECKING:` do not run at import time), and each member of each cycle is
imported first, in a process forked after everything the cycle imports from outside it.
Every other module is then imported once: outside a cycle the order cannot matter. This
checks what importing each of the ~270 modules first in turn checked, at a fifth of its
CPU (3 s, not 15).
"""

from __future__ import annotations

import ast
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module_names(root: Path, package: str) -> dict[str, Path]:
    return {
        ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
        for p in sorted((root / package).rglob("*.py"))
    }


def _runs_at_import(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of `tree` that run when the module is imported."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append(child)
            stack.append(child)
    return found


@functools.cache
def module_graph(root: Path = ROOT, top: str = "rlx") -> tuple[dict[str, set[str]], set[str]]:
    """Each module of package `top` -> the modules of `top` its import runs (parent
    packages included); and the other modules those imports name (some may be names in a
    module, not modules). Cached: do not change what it returns."""
    paths = _module_names(root, top)
    graph: dict[str, set[str]] = {}
    others: set[str] = set()
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = [name]  # its parent packages are imported before it
        for stmt in _runs_at_import(ast.parse(path.read_text(), str(path))):
            if isinstance(stmt, ast.Import):
                targets += [a.name for a in stmt.names]
                continue
            base = stmt.module or ""
            if stmt.level:
                up = package.rsplit(".", stmt.level - 1)[0] if stmt.level > 1 else package
                base = f"{up}.{base}" if base else up
            targets += [base] + [f"{base}.{a.name}" for a in stmt.names]
        deps: set[str] = set()
        others |= {t for t in targets if t.split(".")[0] not in ("", top)}
        for target in targets:
            parts = target.split(".")
            deps |= {q for i in range(1, len(parts) + 1) if (q := ".".join(parts[:i])) in paths}
        graph[name] = deps - {name}
    return graph, others


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of `graph` with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while (u := stack.pop()) != v:
                        on_stack.discard(u)
                        comp.append(u)
                    on_stack.discard(v)
                    if comp:
                        cycles.append(sorted([v, *comp]))
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                on_stack.add(w)
                work.append((w, iter(sorted(graph[w]))))
            elif w in on_stack:
                low[v] = min(low[v], index[w])
    return cycles


def _reach(graph: dict[str, set[str]], start: list[str]) -> set[str]:
    seen, todo = set(start), list(start)
    while todo:
        for w in graph[todo.pop()] - seen:
            seen.add(w)
            todo.append(w)
    return seen


# Other packages first (as when the modules are imported one after another in one process,
# where only the first pays for them); then per cycle a child imports what the cycle needs
# from outside it and forks a grandchild per entry point. Importing a member first runs
# its outermost ancestor package in the cycle first (the packages above are imported), so
# the members under one such package share an entry: it is imported, then each member it
# did not import, in a process of its own. Then this process imports every module.
_EACH_MODULE_FIRST = """
import gc, importlib, json, os, sys
others, plan, every = json.loads(sys.argv[1])
for name in others:
    try:
        importlib.import_module(name)
    except ImportError:
        pass  # not a module, or optional (the module that needs it says so below)

def attempt(name):
    try:
        importlib.import_module(name)
    except Exception as e:
        print(f"{name}: {e!r}", flush=True)
        return False
    return True

def forked(body):
    gc.freeze()  # the collector of a child would touch (and copy) every inherited object
    pid = os.fork()
    if pid == 0:
        os._exit(0 if body() else 1)
    return os.waitpid(pid, 0)[1] == 0

def entry(member, cycle):
    parts = member.split(".")
    return next(q for i in range(1, len(parts) + 1) if (q := ".".join(parts[:i])) in cycle)

def through(first, members):
    return attempt(first) and all(
        [forked(lambda m=m: attempt(m)) for m in members if m not in sys.modules])

def cycle_first(outside, members):
    groups = {}
    for m in members:
        groups.setdefault(entry(m, set(members)), []).append(m)
    return all(attempt(m) for m in outside) and all(
        [forked(lambda e=e, ms=ms: through(e, ms)) for e, ms in groups.items()])

ok = True
for outside, members in plan:
    ok &= forked(lambda: cycle_first(outside, members))
ok &= all([attempt(m) for m in every])
sys.exit(0 if ok else 1)
"""


def test_layers_contract() -> None:
    exe = Path(sys.executable).with_name("lint-imports")
    r = subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def _imports_first(root: Path, top: str) -> subprocess.CompletedProcess[str]:
    graph, others = module_graph(root, top)
    plan = [
        (sorted(_reach(graph, members) - set(members)), members) for members in import_cycles(graph)
    ]
    return subprocess.run(
        [
            sys.executable,
            "-c",
            _EACH_MODULE_FIRST,
            json.dumps([sorted(others), plan, sorted(graph)]),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )


def test_import_cycles_are_found() -> None:
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert import_cycles(g) == [["a", "b", "c"]]
    graph, others = module_graph()
    assert {"numpy", "xdsl.dialects.builtin"} <= others and "__future__" in others
    assert "rlx.dialects" in graph["rlx.dialects.rlx"]  # a parent package
    assert any("rlx.frontends.onnx" in c for c in import_cycles(graph))  # __init__ <-> ops


def test_an_order_dependent_cycle_fails(tmp_path: Path) -> None:
    """`p.a` first fails (`p.b` reads `x` from a half-run `p.a`); `p.b` first works; so
    does `p.c`, whose package imports it, and the function-level import in `p.d`."""
    p = tmp_path / "p"
    p.mkdir()
    (p / "__init__.py").write_text("from p import c\n")
    (p / "a.py").write_text("import p.b\nx = 1\n")
    (p / "b.py").write_text("from p.a import x\n")
    (p / "c.py").write_text("import p\n")
    (p / "d.py").write_text("def f():\n    import p.d\n")
    graph, _ = module_graph(tmp_path, "p")
    assert graph["p.d"] == {"p"} and import_cycles(graph) == [["p", "p.c"], ["p.a", "p.b"]]
    r = _imports_first(tmp_path, "p")
    assert r.returncode == 1
    assert set(r.stdout.splitlines()) == {
        "p.a: ImportError(\"cannot import name 'x' from partially initialized module 'p.a' "
        f'(most likely due to a circular import) ({p / "a.py"})")'
    }


def test_every_module_imports_first() -> None:
    r = _imports_first(ROOT, "rlx")
    assert r.returncode == 0, r.stdout + r.stderr
