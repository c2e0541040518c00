"""Checkpoints of nn objects: Parameters, state dicts and whole Modules."""
from __future__ import annotations

import io
import pickle

import numpy as np
import pytest

import ember.nn as nn
import ember.tensor as et
from ember.tensor import serialization


@pytest.fixture(autouse=True)
def _clean_allowlist():
    serialization.clear_safe_globals()
    yield
    serialization.clear_safe_globals()


def _np(t):
    return t.detach().numpy()


def roundtrip(obj, **kw):
    buf = io.BytesIO()
    et.save(obj, buf)
    buf.seek(0)
    return et.load(buf, **kw)


def _net():
    et.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.BatchNorm1d(4), nn.Linear(4, 2))


@pytest.mark.parametrize("requires_grad", [True, False])
def test_parameter_loads_back_as_a_parameter_by_default(requires_grad):
    p = nn.Parameter(et.randn(2, 3), requires_grad=requires_grad)
    back = roundtrip({"p": p})["p"]  # weights_only=True: Parameter is allowed by default
    assert type(back) is nn.Parameter and back.requires_grad is requires_grad
    np.testing.assert_array_equal(_np(back), _np(p))


def test_state_dict_is_native_and_loads_into_a_fresh_model(tmp_path):
    net = _net()
    net(et.randn(5, 3))  # move the BatchNorm running stats
    et.save(net.state_dict(), tmp_path / "sd")
    sd = et.load(tmp_path / "sd")
    assert serialization.get_unsafe_globals_in_checkpoint(tmp_path / "sd") == []
    fresh = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.BatchNorm1d(4), nn.Linear(4, 2))
    fresh.load_state_dict(sd)
    for (k, v), (k2, v2) in zip(net.state_dict().items(), fresh.state_dict().items()):
        assert k == k2
        np.testing.assert_array_equal(_np(v), _np(v2))


def test_whole_module_round_trip_with_weights_only_false(tmp_path):
    net = _net().eval()
    x = et.randn(4, 3)
    et.save({"model": net, "epoch": 3}, tmp_path / "m")
    with pytest.raises(pickle.UnpicklingError, match="(?s)Weights only load failed.*Sequential"):
        et.load(tmp_path / "m")
    back = et.load(tmp_path / "m", weights_only=False)
    model = back["model"]
    assert type(model) is nn.Sequential and back["epoch"] == 3 and not model.training
    assert all(type(p) is nn.Parameter and p.requires_grad for p in model.parameters())
    np.testing.assert_array_equal(_np(model(x)), _np(net(x)))
    model(x).sum().backward()
    assert model[0].weight.grad is not None


def test_whole_module_with_safe_globals(tmp_path):
    net = _net()
    et.save(net, tmp_path / "m")
    needed = serialization.get_unsafe_globals_in_checkpoint(tmp_path / "m")
    assert set(needed) == {"ember.nn.modules.container.Sequential",
                           "ember.nn.modules.linear.Linear",
                           "ember.nn.modules.activation.ReLU",
                           "ember.nn.modules.normalization.BatchNorm1d"}
    with serialization.safe_globals([nn.Sequential, nn.Linear, nn.ReLU]):
        with pytest.raises(pickle.UnpicklingError, match="BatchNorm1d"):
            et.load(tmp_path / "m")
    with serialization.safe_globals([nn.Sequential, nn.Linear, nn.ReLU, nn.BatchNorm1d]):
        model = et.load(tmp_path / "m")
    x = et.randn(3, 3)
    np.testing.assert_array_equal(_np(model.eval()(x)), _np(net.eval()(x)))


def test_model_and_its_state_dict_in_one_file(tmp_path):
    net = nn.Linear(2, 2)
    et.save({"model": net, "sd": net.state_dict(), "w": net.weight}, tmp_path / "b")
    back = et.load(tmp_path / "b", weights_only=False)
    assert back["w"] is back["model"].weight  # one Parameter object, pickle's memo
    np.testing.assert_array_equal(_np(back["sd"]["weight"]), _np(net.weight))

