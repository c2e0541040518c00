"""``foreach``, ``fused``, ``capturable``, ``differentiable``: each is honored or refused, never
accepted and ignored (see the docstring of ``ember.optim.optimizer``)."""
from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest

import ember.tensor as et
from ember import optim

#: The implementation flags of each torch.optim optimizer (PyTorch 2.13 signatures).
TORCH_FLAGS = {
    "SGD": {"foreach", "differentiable", "fused"},
    "Adam": {"foreach", "capturable", "differentiable", "fused"},
    "AdamW": {"foreach", "capturable", "differentiable", "fused"},
    "Adagrad": {"foreach", "differentiable", "fused"},
    "Adadelta": {"foreach", "capturable", "differentiable"},
    "Adamax": {"foreach", "capturable", "differentiable"},
    "NAdam": {"foreach", "capturable", "differentiable"},
    "RAdam": {"foreach", "capturable", "differentiable"},
    "RMSprop": {"foreach", "capturable", "differentiable"},
    "ASGD": {"foreach", "capturable", "differentiable"},
    "Rprop": {"foreach", "capturable", "differentiable"},
    "Adafactor": {"foreach"},
    "Muon": set(),
    "LBFGS": set(),
}
FLAGS = ("foreach", "fused", "capturable", "differentiable")
WITH_KERNELS = {"SGD", "Adam", "AdamW"}
WITHOUT_KERNELS = sorted(set(TORCH_FLAGS) - WITH_KERNELS - {"LBFGS", "Muon"})


def _param(dtype=et.float64):
    p = et.ones(4, 3, dtype=dtype)
    p.grad = et.full((4, 3), 0.5, dtype=dtype)
    return p


def _flags(name):
    return set(inspect.signature(getattr(optim, name)).parameters) & set(FLAGS)


@pytest.mark.parametrize("name", sorted(TORCH_FLAGS))
def test_signature_has_pytorchs_flags(name):
    assert _flags(name) == TORCH_FLAGS[name]


@pytest.mark.parametrize("flag", ["capturable", "differentiable"])
@pytest.mark.parametrize("name", sorted(TORCH_FLAGS))
def test_capturable_and_differentiable_raise_at_construction(name, flag):
    if flag not in TORCH_FLAGS[name]:
        with pytest.raises(TypeError):
            getattr(optim, name)([_param()], **{flag: True})
        return
    with pytest.raises(NotImplementedError, match=rf"{name}\({flag}=True\)"):
        getattr(optim, name)([_param()], **{flag: True})
    getattr(optim, name)([_param()], **{flag: False})  # the default is accepted


@pytest.mark.parametrize("flag", ["capturable", "differentiable", "foreach"])
def test_a_param_group_cannot_smuggle_a_flag_in(flag):
    p, q = _param(), _param()
    with pytest.raises(NotImplementedError, match=f"RMSprop\\({flag}=True\\)"):
        optim.RMSprop([{"params": [p]}, {"params": [q], flag: True}], lr=0.1)
    opt = optim.RMSprop([p], lr=0.1)
    with pytest.raises(NotImplementedError, match=flag):
        opt.add_param_group({"params": [q], flag: True})


def test_a_loaded_state_dict_cannot_smuggle_a_flag_in():
    p = _param()
    opt = optim.Adam([p], lr=0.1)
    sd = opt.state_dict()
    sd["param_groups"][0]["capturable"] = True
    with pytest.raises(NotImplementedError, match=r"Adam\(capturable=True\)"):
        optim.Adam([_param()], lr=0.1).load_state_dict(sd)


@pytest.mark.parametrize("flag", ["foreach", "fused"])
@pytest.mark.parametrize("name", WITHOUT_KERNELS)
def test_fast_implementation_refused_where_ember_has_none(name, flag):
    if flag not in TORCH_FLAGS[name]:
        with pytest.raises(TypeError):
            getattr(optim, name)([_param()], **{flag: True})
        return
    with pytest.raises(NotImplementedError, match=rf"{name}\({flag}=True\).*per-parameter loop"):
        getattr(optim, name)([_param()], **{flag: True})
    for value in (None, False):  # the loop: what these values ask for
        opt = getattr(optim, name)([_param()], **{flag: value})
        opt.step()


@pytest.mark.parametrize("name", sorted(WITH_KERNELS))
def test_fused_and_foreach_both_true_raise_as_in_pytorch(name):
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        getattr(optim, name)([_param()], fused=True, foreach=True)


@pytest.mark.parametrize("flag", ["foreach", "fused"])
@pytest.mark.parametrize("dtype", [et.float16, et.int64])
@pytest.mark.parametrize("name", sorted(WITH_KERNELS))
def test_fast_implementation_refuses_params_it_cannot_update(name, flag, dtype):
    p = et.ones(3, dtype=dtype)
    with pytest.raises(RuntimeError, match=f"`{flag}=True` requires all the params"):
        getattr(optim, name)([p], **{flag: True})


def _spy(monkeypatch, name):
    """Count the fused-kernel calls of optimizer ``name`` (its module's ``_kernel``)."""
    module = importlib.import_module("ember.optim." + ("sgd" if name == "SGD" else "adam"))
    calls = []
    real = module._kernel

    def fake(kernel_name, t):
        kernel = real(kernel_name, t)
        if kernel is None:
            return None

        def counted(*args, **kwargs):
            calls.append(kernel_name)
            return kernel(*args, **kwargs)
        return counted

    monkeypatch.setattr(module, "_kernel", fake)
    return calls


KWARGS = {"SGD": {"lr": 0.1, "momentum": 0.9}, "Adam": {"lr": 0.1}, "AdamW": {"lr": 0.1}}


def _steps(name, flags, transpose=False, steps=3):
    rng = np.random.default_rng(0)
    p = et.from_numpy(rng.standard_normal((5, 4)))
    if transpose:
        p = p.t()
    opt = getattr(optim, name)([p], **KWARGS[name], **flags)
    for _ in range(steps):
        p.grad = et.from_numpy(rng.standard_normal(tuple(p.shape)))
        opt.step()
    return p.detach().numpy().copy()


@pytest.mark.parametrize("name", sorted(WITH_KERNELS))
@pytest.mark.parametrize("flags, contiguous_calls, strided_calls", [
    ({}, 3, 0),                                  # default: the kernel where it applies
    ({"foreach": None, "fused": None}, 3, 0),
    ({"foreach": False}, 0, 0),                  # PyTorch's for-loop
    ({"fused": False}, 0, 0),
    ({"foreach": False, "fused": False}, 0, 0),
    ({"fused": True}, 3, 3),                     # the kernel for every parameter
    ({"foreach": True}, 3, 3),
    ({"foreach": True, "fused": False}, 3, 3),
])
def test_flags_choose_the_implementation(monkeypatch, name, flags, contiguous_calls,
                                         strided_calls):
    calls = _spy(monkeypatch, name)
    loop = _steps(name, {"foreach": False})
    assert calls == []
    ours = _steps(name, flags)
    assert len(calls) == contiguous_calls
    np.testing.assert_allclose(ours, loop, rtol=1e-12, atol=1e-15)  # same numbers either way
    calls.clear()
    loop_t = _steps(name, {"foreach": False}, transpose=True)
    ours_t = _steps(name, flags, transpose=True)  # non-contiguous: forced path runs on copies
    assert len(calls) == strided_calls
    np.testing.assert_allclose(ours_t, loop_t, rtol=1e-12, atol=1e-15)


def test_a_users_optimizer_keeps_its_own_meaning_of_the_flags():
    class Mine(optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.1, "differentiable": True, "foreach": True})

        def step(self, closure=None):
            return None

    opt = Mine([_param()])
    assert opt.param_groups[0]["differentiable"] is True
