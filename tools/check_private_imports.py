"""Fail on any use of another ember distribution's private names.

ember-tensor publishes an extension API (:mod:`ember.tensor.extension`) for the layers above
it; everything else whose name starts with ``_`` is private to the distribution that defines it
and may change in any release. This check walks ``packages/*/src`` and ``packages/*/tests``
(``examples/`` and ``benchmarks/`` are exempt), parses each file with :mod:`ast`, and reports
``file:line`` for:

* an import of a private name of ANOTHER distribution: a module path component or an imported
  name that starts with a single ``_`` (dunders such as ``__version__`` are public), in
  ``import ember.tensor._tensor``, ``from ember.tensor._registry import x``,
  ``from ember.tensor import _x``, ``importlib.import_module("ember.tensor._x")``;
* a private attribute reached through a name bound to another distribution by an import
  (``import ember.tensor as et`` ... ``et._dtype._FROM_NP``, ``Tensor._make``);
* in code of every distribution but ember-tensor, attribute access to the tensor internals
  ``._data``, ``._make``, ``._bump``, ``._view_of``, ``._vc`` (use ``ember.tensor.extension``:
  ``unwrap``, ``wrap``, ``bump_version``, ...).

Private names of the file's OWN distribution are fine, and so are relative imports.

Run ``python tools/check_private_imports.py [ROOT]`` (default: this checkout); exit status 1
with one line per finding, 0 when clean. The ``lint`` tox env runs it.
"""
from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: ``ember.<sub>`` -> the distribution (folder under packages/) that ships it.
DISTRIBUTIONS = {
    "tensor": "tensor", "autograd": "autograd", "nn": "nn", "optim": "optim", "data": "data",
    "distributions": "distributions", "distributed": "distributed", "onnx": "onnx",
}

#: Tensor internals that only ember-tensor may touch.
TENSOR_INTERNALS = frozenset({"_data", "_make", "_bump", "_view_of", "_vc"})


def is_private(name: str) -> bool:
    """``_x`` is private; ``__x__`` (a dunder) and ``x`` are not."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def distribution_of(module: str) -> str | None:
    """The distribution of a dotted module path (``ember.data.text`` -> ``data``), or None."""
    parts = module.split(".")
    if len(parts) >= 2 and parts[0] == "ember":
        return DISTRIBUTIONS.get(parts[1])
    return None


def _private_part(dotted: str) -> str | None:
    """The first private component after ``ember.<dist>`` in a dotted path, or None."""
    for part in dotted.split(".")[2:]:
        if is_private(part):
            return part
    return None


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of Attribute nodes over a Name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _Checker(ast.NodeVisitor):
    def __init__(self, own: str) -> None:
        self.own = own
        self.findings: list[tuple[int, str]] = []
        self.bindings: dict[str, str] = {}  # local name -> dotted ember path it is bound to

    def report(self, node: ast.AST, message: str) -> None:
        self.findings.append((node.lineno, message))

    def foreign(self, module: str) -> str | None:
        dist = distribution_of(module)
        return dist if dist is not None and dist != self.own else None

    # ----------------------------------------------------------------------------- imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            dist = self.foreign(alias.name)
            if dist is not None:
                part = _private_part(alias.name)
                if part is not None:
                    self.report(node, f"imports {alias.name} (private {part!r} of ember-{dist})")
            if alias.asname:
                self.bindings[alias.asname] = alias.name
            else:
                self.bindings[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return  # a relative import stays inside its own distribution
        module = node.module
        for alias in node.names:
            full = f"{module}.{alias.name}"
            dist = self.foreign(full)
            if dist is not None:
                part = _private_part(full)
                if part is not None:
                    self.report(node, f"imports {alias.name} from {module} "
                                      f"(private {part!r} of ember-{dist})")
            self.bindings[alias.asname or alias.name] = full

    def visit_Call(self, node: ast.Call) -> None:
        func = _dotted(node.func)
        if (func in ("importlib.import_module", "import_module", "__import__") and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            name = node.args[0].value
            dist = self.foreign(name)
            part = _private_part(name) if dist is not None else None
            if part is not None:
                self.report(node, f"imports {name} (private {part!r} of ember-{dist})")
        self.generic_visit(node)

    # ----------------------------------------------------------------------------- attributes
    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self.own != "tensor" and node.attr in TENSOR_INTERNALS:
            self.report(node, f"reaches into tensor internals: .{node.attr} "
                              "(use ember.tensor.extension)")
            self.generic_visit(node)
            return
        dotted = _dotted(node)
        if dotted is not None:
            root, _, rest = dotted.partition(".")
            bound = self.bindings.get(root)
            if bound is not None:
                full = f"{bound}.{rest}" if rest else bound
                dist = self.foreign(full)
                # a private component of the binding itself was reported at its import
                part = next((p for p in rest.split(".") if is_private(p)), None) \
                    if dist is not None and rest else None
                if part is not None:
                    self.report(node, f"uses {dotted} (private {part!r} of ember-{dist})")
                    return  # one finding per chain
        self.generic_visit(node)


def check_file(path: Path, own: str) -> list[tuple[int, str]]:
    """The findings ``(line, message)`` in one file of distribution ``own``."""
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        return [(exc.lineno or 0, f"cannot parse: {exc.msg}")]
    checker = _Checker(own)
    # bindings first, so that a use above a function-local import is still resolved
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            checker.visit(node)
    checker.findings.clear()
    checker.visit(tree)
    return sorted(set(checker.findings))


def iter_files(root: Path) -> Iterator[tuple[Path, str]]:
    """``(file, distribution)`` for every Python file under packages/*/src and */tests."""
    for pkg in sorted((root / "packages").iterdir()):
        if not pkg.is_dir():
            continue
        for sub in ("src", "tests"):
            base = pkg / sub
            if base.is_dir():
                for path in sorted(base.rglob("*.py")):
                    yield path, pkg.name


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = Path(argv[0]).resolve() if argv else ROOT
    findings = []
    for path, own in iter_files(root):
        for line, message in check_file(path, own):
            findings.append(f"{path.relative_to(root)}:{line}: {message}")
    for f in findings:
        print(f)
    if findings:
        print(f"{len(findings)} use(s) of another distribution's private names", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
