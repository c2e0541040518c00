"""Example: one data point, with one attribute per field (torchtext's ``data.Example``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["Example", "Tree"]


class Example:
    """A plain object whose attributes are the preprocessed values of each field.

    >>> from ember.data.text import Field
    >>> ex = Example.fromlist(["a b"], [("text", Field())])
    >>> ex.text
    ['a', 'b']
    """

    def __repr__(self) -> str:
        return f"Example({vars(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Example) and vars(self) == vars(other)

    __hash__ = object.__hash__

    @classmethod
    def fromJSON(cls, data: str, fields: dict) -> Example:  # noqa: N802 (torchtext's name)
        return cls.fromdict(json.loads(data), fields)

    @classmethod
    def fromdict(cls, data: dict, fields: dict) -> Example:
        """``fields`` maps a key (dotted for nested objects: ``"a.b"``) to ``(name, field)``
        or a list of such pairs; a value of ``None`` skips the key."""
        ex = cls()
        for key, vals in fields.items():
            if vals is None:
                continue
            if not isinstance(vals, list):
                vals = [vals]
            for name, field in vals:
                value = data
                for part in key.split("."):
                    value = _lookup(value, part)
                if field is not None:
                    setattr(ex, name, field.preprocess(value))
        return ex

    @classmethod
    def fromCSV(
        cls, data: Sequence[str], fields: Any, field_to_index: dict | None = None
    ) -> Example:  # noqa: N802
        if field_to_index is None:
            return cls.fromlist(data, fields)
        if not isinstance(fields, dict):
            raise TypeError("Example.fromCSV: field_to_index needs fields as a dict")
        return cls.fromdict({f: data[idx] for f, idx in field_to_index.items()}, fields)

    @classmethod
    def fromlist(cls, data: Sequence[Any], fields: Sequence[tuple]) -> Example:
        """Pair ``data`` positionally with ``fields``, a list of ``(name, field)`` where a
        ``None`` field skips its column and a tuple of names shares one value."""
        ex = cls()
        for (name, field), val in zip(fields, data):
            if field is None:
                continue
            if isinstance(val, str):
                val = val.rstrip("\n")
            if isinstance(name, tuple):
                for n, f in zip(name, field):
                    setattr(ex, n, f.preprocess(val))
            else:
                setattr(ex, name, field.preprocess(val))
        return ex

    @classmethod
    def fromtree(cls, data: str, fields: Sequence[tuple], subtrees: bool = False) -> Any:
        """Build from a bracketed tree such as ``(3 (2 good) (3 film))``: the text is the
        leaves joined by spaces, the label the root's label; ``subtrees=True`` gives one
        Example per subtree (the Stanford Sentiment Treebank recipe)."""
        tree = Tree.fromstring(data)
        if subtrees:
            return [
                cls.fromlist([" ".join(t.leaves()), t.label()], fields) for t in tree.subtrees()
            ]
        return cls.fromlist([" ".join(tree.leaves()), tree.label()], fields)


def _lookup(obj: Any, key: str) -> Any:
    if isinstance(obj, list):
        return [_lookup(item, key) for item in obj]
    if not isinstance(obj, dict) or key not in obj:
        raise ValueError(f"Specified key {key} was not found in the input data")
    return obj[key]


class Tree:
    """A minimal bracketed-tree reader (the part of nltk.Tree that ``fromtree`` needs)."""

    def __init__(self, label: str, children: list):
        self._label = label
        self.children = children

    def label(self) -> str:
        return self._label

    def leaves(self) -> list[str]:
        out: list[str] = []
        for c in self.children:
            out.extend(c.leaves() if isinstance(c, Tree) else [c])
        return out

    def subtrees(self) -> list[Tree]:
        out = [self]
        for c in self.children:
            if isinstance(c, Tree):
                out.extend(c.subtrees())
        return out

    @classmethod
    def fromstring(cls, s: str) -> Tree:
        tokens = s.replace("(", " ( ").replace(")", " ) ").split()
        if not tokens or tokens[0] != "(":
            raise ValueError(f"Tree.fromstring: expected '(' at the start of {s[:40]!r}")
        stack: list[list] = []
        root = None
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok == "(":
                if i + 1 >= len(tokens) or tokens[i + 1] in "()":
                    label = ""
                else:
                    label = tokens[i + 1]
                    i += 1
                stack.append([label, []])
            elif tok == ")":
                if not stack:
                    raise ValueError(f"Tree.fromstring: unbalanced ')' in {s[:40]!r}")
                label, children = stack.pop()
                node = cls(label, children)
                if stack:
                    stack[-1][1].append(node)
                elif root is None:
                    root = node
                else:
                    raise ValueError(f"Tree.fromstring: trailing text after the tree in {s[:40]!r}")
            else:
                if not stack:
                    raise ValueError(f"Tree.fromstring: text outside brackets in {s[:40]!r}")
                stack[-1][1].append(tok)
            i += 1
        if stack or root is None:
            raise ValueError(f"Tree.fromstring: unbalanced '(' in {s[:40]!r}")
        return root
