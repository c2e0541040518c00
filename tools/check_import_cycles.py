"""Fail on any import circle between the modules of one ember distribution.

The modules of a package should read bottom-up as the packages do: ``ember.tensor._dtype``
below ``_tensor`` below ``_registry`` below the op families, ``ember.autograd.graph`` below
``engine`` below the derivative table. A module that imports one above it, even inside a
function to dodge the import-time error, ties the layers into one knot that can only be read,
tested and changed as a whole.

This check parses every module under ``packages/*/src`` with :mod:`ast`, records each import
of a module of the same distribution (at module level or inside a function, relative or
absolute), and reports every strongly connected group of two or more modules with the import
lines that close it. An import of a package's ``__init__`` from its own submodules counts as
an edge to the ``__init__`` (``from . import _dtype`` is an edge to ``_dtype`` only).

Run ``python tools/check_import_cycles.py [ROOT]`` (default: this checkout); exit status 1
with the circles listed, 0 when there are none. The ``lint`` tox env runs it.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _modules(src: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module under ``src`` (a ``packages/*/src``)."""
    mods = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _target(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _edges(mods: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {imported module of the same distribution: first line that imports it}."""
    edges: dict[str, dict[str, int]] = {m: {} for m in mods}
    for module, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                name = _target(module, path.name == "__init__.py", node)
                subs = [f"{name}.{a.name}" for a in node.names if f"{name}.{a.name}" in mods]
                targets = subs if len(subs) == len(node.names) else [name, *subs]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for t in targets:
                if t in mods and t != module:
                    edges[module].setdefault(t, node.lineno)
    return edges


def _circles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(edges) + 100))
    for v in edges:
        if v not in index:
            visit(v)
    return found


def main(root: Path) -> int:
    failures = []
    for src in sorted(root.glob("packages/*/src")):
        mods = _modules(src)
        edges = _edges(mods)
        for group in _circles(edges):
            members = set(group)
            lines = [f"    {mods[a].relative_to(root)}:{line} imports {b}"
                     for a in group for b, line in sorted(edges[a].items()) if b in members]
            failures.append(f"import circle among {', '.join(group)}:\n" + "\n".join(lines))
    print("\n".join(failures) if failures else "no import circles")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT))
