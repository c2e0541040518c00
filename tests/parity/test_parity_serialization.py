"""Parity with PyTorch 2.13 for checkpoints: which objects ``load`` admits under
``weights_only=True``, what the safe-globals allowlist changes, the exception type refusals
raise, and that whole objects come back with ``weights_only=False``.

The file formats differ on purpose (ember writes safetensors + JSON, with a pickled section
only for what is not plain data), so only behaviour is compared. One deliberate difference is
not tested here: ember stores NumPy arrays natively, so they load under ``weights_only=True``
without allowlisting NumPy's globals.
"""
from __future__ import annotations

import argparse
import collections
import io
import os
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.nn as enn  # noqa: E402
import ember.tensor as et  # noqa: E402
from ember.tensor import serialization as eser  # noqa: E402


class Holder:
    def __init__(self, x):
        self.x = x


class Inner:
    def __init__(self, v):
        self.v = v


class Outer:
    def __init__(self, inner):
        self.inner = inner


Pair = collections.namedtuple("Pair", "a b")


class Evil:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


@pytest.fixture(autouse=True)
def _clean():
    torch.serialization.clear_safe_globals()
    eser.clear_safe_globals()
    yield
    torch.serialization.clear_safe_globals()
    eser.clear_safe_globals()


class Side:
    """One framework's save / load / tensor / allowlist, so cases are written once."""

    def __init__(self, lib):
        self.lib = lib
        self.torch = lib == "torch"
        self.ser = torch.serialization if self.torch else eser

    def tensor(self, values):
        return torch.tensor(values) if self.torch else et.tensor(values)

    def parameter(self, values, requires_grad):
        mod = torch.nn if self.torch else enn
        return mod.Parameter(self.tensor(values), requires_grad=requires_grad)

    def linear(self):
        return (torch.nn if self.torch else enn).Linear(2, 3)

    def outcome(self, obj, allow=(), **load_kw):
        """'ok' with the loaded object, or the exception type with its message."""
        buf = io.BytesIO()
        (torch.save if self.torch else et.save)(obj, buf)
        buf.seek(0)
        load = torch.load if self.torch else et.load
        try:
            with self.ser.safe_globals(list(allow)):
                return "ok", load(buf, **load_kw)
        except Exception as exc:  # noqa: BLE001 - the exception type is what is compared
            return type(exc), str(exc)


SIDES = [Side("torch"), Side("ember")]


def both(fn):
    return [fn(s) for s in SIDES]


def _np(t):
    return t.detach().numpy()


# (id, builder(side), allowlist, weights_only, expected outcome)
CASES = [
    ("plain", lambda s: {"w": s.tensor([1.0, 2.0]), "n": 3, "l": [1, "a", None, (2.5,)],
                         "od": collections.OrderedDict(a=1)}, [], True, "ok"),
    ("set", lambda s: {"s": {1, 2}}, [], True, "ok"),
    ("custom_default", lambda s: {"h": Holder(1)}, [], True, pickle.UnpicklingError),
    ("custom_allowed", lambda s: {"h": Holder(1)}, [Holder], True, "ok"),
    ("custom_trusted", lambda s: {"h": Holder(s.tensor([3]))}, [], False, "ok"),
    ("namespace_default", lambda s: argparse.Namespace(lr=0.1), [], True,
     pickle.UnpicklingError),
    ("namespace_allowed", lambda s: argparse.Namespace(lr=0.1), [argparse.Namespace], True,
     "ok"),
    ("namedtuple_default", lambda s: Pair(1, 2), [], True, pickle.UnpicklingError),
    ("namedtuple_allowed", lambda s: Pair(1, 2), [Pair], True, "ok"),
    ("nested_outer_only", lambda s: Outer(Inner(1)), [Outer], True, pickle.UnpicklingError),
    ("nested_both", lambda s: Outer(Inner(1)), [Outer, Inner], True, "ok"),
    ("module_default", lambda s: s.linear(), [], True, pickle.UnpicklingError),
    ("module_trusted", lambda s: s.linear(), [], False, "ok"),
    ("parameter", lambda s: {"p": s.parameter([1.0], True)}, [], True, "ok"),
]


@pytest.mark.parametrize("name,build,allow,weights_only,expected", CASES,
                         ids=[c[0] for c in CASES])
def test_load_outcomes_match(name, build, allow, weights_only, expected):
    results = [s.outcome(build(s), allow, weights_only=weights_only) for s in SIDES]
    kinds = [r[0] for r in results]
    assert kinds == [expected, expected], results
    if expected is pickle.UnpicklingError:
        for _, msg in results:
            assert msg.startswith("Weights only load failed"), msg
            assert "weights_only" in msg and "safe_globals" in msg, msg


def test_refusal_names_the_same_global():
    (_, tmsg), (_, emsg) = both(lambda s: s.outcome(Outer(Inner(1)), [Outer]))
    name = f"{__name__}.Inner"
    assert name in tmsg and name in emsg


def test_loaded_values_match():
    (_, t), (_, e) = both(lambda s: s.outcome({"h": Holder(s.tensor([3.0, 4.0])), "n": 2},
                                              weights_only=False))
    np.testing.assert_array_equal(_np(t["h"].x), _np(e["h"].x))
    assert t["n"] == e["n"] == 2


@pytest.mark.parametrize("requires_grad", [True, False])
def test_parameter_type_and_requires_grad_match(requires_grad):
    (_, t), (_, e) = both(lambda s: s.outcome({"p": s.parameter([1.0, 2.0], requires_grad)}))
    assert isinstance(t["p"], torch.nn.Parameter) and isinstance(e["p"], enn.Parameter)
    assert t["p"].requires_grad is e["p"].requires_grad is requires_grad


def test_whole_module_with_copied_weights_gives_the_same_output():
    tm = torch.nn.Linear(2, 3).double()
    em = enn.Linear(2, 3).double()
    em.load_state_dict({k: et.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    (_, t), (_, e) = SIDES[0].outcome(tm, weights_only=False), \
        SIDES[1].outcome(em, weights_only=False)
    x = np.arange(4.0).reshape(2, 2)
    np.testing.assert_allclose(_np(e(et.tensor(x))), _np(t(torch.tensor(x))), rtol=1e-12)


@pytest.mark.parametrize("allow", [[], [Evil]], ids=["default", "evil_allowed"])
def test_malicious_pickle_refused_by_both(tmp_path, allow):
    marker = tmp_path / "pwned"
    results = both(lambda s: s.outcome({"x": Evil(marker)}, allow))
    assert [r[0] for r in results] == [pickle.UnpicklingError] * 2, results
    assert not marker.exists()


def test_unsafe_globals_listing_matches():
    lists = []
    for s in SIDES:
        buf = io.BytesIO()
        (torch.save if s.torch else et.save)({"o": Outer(Inner(1)), "w": s.tensor([1])}, buf)
        buf.seek(0)
        lists.append(sorted(s.ser.get_unsafe_globals_in_checkpoint(buf)))
    assert lists[0] == lists[1] == sorted([f"{__name__}.Outer", f"{__name__}.Inner"])


def test_allowlist_api_matches():
    """Membership, not order: PyTorch's list comes from a set and holds its own entries too."""
    for s in SIDES:
        s.ser.add_safe_globals([Holder])
        with s.ser.safe_globals([Inner]):
            assert {Holder, Inner} <= set(s.ser.get_safe_globals())
        assert Holder in s.ser.get_safe_globals() and Inner not in s.ser.get_safe_globals()
        s.ser.clear_safe_globals()
        assert Holder not in s.ser.get_safe_globals()
