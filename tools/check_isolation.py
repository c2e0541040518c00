"""Prove that installing one ember distribution never pulls a layer above it.

Usage: python tools/check_isolation.py <layer>. Imports the layer and its declared
dependencies, and checks that every other ember layer is absent from the environment.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys

BELOW = {
    "tensor": [],
    "autograd": ["tensor"],
    "nn": ["tensor", "autograd"],
    "optim": ["tensor", "autograd"],
    "data": ["tensor"],
    "distributions": ["tensor", "autograd"],
    "distributed": ["tensor", "autograd", "nn"],
    "onnx": ["tensor", "autograd", "nn"],
}


def main(layer: str) -> int:
    allowed = {layer, *BELOW[layer]}
    for name in sorted(BELOW):
        present = importlib.util.find_spec(f"ember.{name}") is not None
        if name in allowed:
            importlib.import_module(f"ember.{name}")
            print(f"ok: ember.{name} imports")
        elif present:
            print(f"error: ember.{name} is installed beside ember.{layer}", file=sys.stderr)
            return 1
        else:
            print(f"ok: ember.{name} is absent")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
