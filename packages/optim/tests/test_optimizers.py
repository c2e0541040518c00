"""ember.optim updates against a NumPy reference of PyTorch's single-tensor formulas, the
Optimizer base (groups, zero_grad, hooks, state_dict), and the argument errors PyTorch raises.
No torch import: the reference below is written from PyTorch's documented formulas."""

from __future__ import annotations

import contextlib
import copy
import pickle
import subprocess
import sys

import numpy as np
import pytest

import ember.tensor as et
from ember import optim


def _lerp(a, b, w):
    return a + w * (b - a) if abs(w) < 0.5 else b - (b - a) * (1 - w)


class Reference:
    """One parameter's update, state kept in a dict; ``step(p, g)`` returns the new p."""

    def __init__(self, name: str, **kw):
        self.name = name
        self.kw = kw
        self.state: dict = {}

    def step(self, p, g):
        fn = getattr(self, "_" + self.name.lower())
        return fn(p.copy(), g.copy(), self.state, **self.kw)

    @staticmethod
    def _sgd(p, g, s, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
             maximize=False):
        if maximize:
            g = -g
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            if "buf" not in s:
                s["buf"] = g.copy()
            else:
                s["buf"] = s["buf"] * momentum + (1 - dampening) * g
            g = g + momentum * s["buf"] if nesterov else s["buf"]
        return p + -lr * g

    @staticmethod
    def _adam(p, g, s, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False,
              maximize=False, decoupled_weight_decay=False):
        b1, b2 = betas
        s.setdefault("m", np.zeros_like(p))
        s.setdefault("v", np.zeros_like(p))
        s.setdefault("vmax", np.zeros_like(p))
        s["t"] = t = s.get("t", 0) + 1
        if maximize:
            g = -g
        if weight_decay:
            if decoupled_weight_decay:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        s["m"] = _lerp(s["m"], g, 1 - b1)
        s["v"] = s["v"] * b2 + (1 - b2) * g * g
        v = s["v"]
        if amsgrad:
            s["vmax"] = v = np.maximum(s["vmax"], v)
        denom = np.sqrt(v) / (1 - b2 ** t) ** 0.5 + eps
        return p + -(lr / (1 - b1 ** t)) * s["m"] / denom

    @staticmethod
    def _adamw(p, g, s, weight_decay=1e-2, **kw):
        return Reference._adam(p, g, s, weight_decay=weight_decay,
                               decoupled_weight_decay=True, **kw)

    @staticmethod
    def _adamax(p, g, s, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                maximize=False):
        b1, b2 = betas
        s.setdefault("m", np.zeros_like(p))
        s.setdefault("u", np.zeros_like(p))
        s["t"] = t = s.get("t", 0) + 1
        if maximize:
            g = -g
        if weight_decay:
            g = g + weight_decay * p
        s["m"] = _lerp(s["m"], g, 1 - b1)
        s["u"] = np.maximum(s["u"] * b2, np.abs(g) + eps)
        return p + -(lr / (1 - b1 ** t)) * s["m"] / s["u"]

    @staticmethod
    def _nadam(p, g, s, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
               momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False):
        b1, b2 = betas
        s.setdefault("m", np.zeros_like(p))
        s.setdefault("v", np.zeros_like(p))
        s.setdefault("mu_product", np.float32(1.0))  # PyTorch keeps it in float32
        s["t"] = t = s.get("t", 0) + 1
        if maximize:
            g = -g
        if weight_decay:
            if decoupled_weight_decay:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        mu = b1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        s["mu_product"] = np.float32(s["mu_product"] * np.float32(mu))
        mp = float(s["mu_product"])
        s["m"] = _lerp(s["m"], g, 1 - b1)
        s["v"] = s["v"] * b2 + (1 - b2) * g * g
        denom = np.sqrt(s["v"] / (1 - b2 ** t)) + eps
        p = p + (-lr * (1 - mu) / (1 - mp)) * g / denom
        return p + (-lr * mu_next / (1 - mp * mu_next)) * s["m"] / denom

    @staticmethod
    def _radam(p, g, s, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
               decoupled_weight_decay=False, maximize=False):
        b1, b2 = betas
        s.setdefault("m", np.zeros_like(p))
        s.setdefault("v", np.zeros_like(p))
        s["t"] = t = s.get("t", 0) + 1
        if maximize:
            g = -g
        if weight_decay:
            if decoupled_weight_decay:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        s["m"] = _lerp(s["m"], g, 1 - b1)
        s["v"] = s["v"] * b2 + (1 - b2) * g * g
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        m_hat = s["m"] / bc1
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / bc2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = bc2 ** 0.5 / (np.sqrt(s["v"]) + eps)
            return p + -1.0 * (m_hat * lr * adaptive * rect)
        return p + -1.0 * (m_hat * lr)

    @staticmethod
    def _rmsprop(p, g, s, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, maximize=False):
        s.setdefault("sq", np.zeros_like(p))
        s.setdefault("ga", np.zeros_like(p))
        s.setdefault("buf", np.zeros_like(p))
        if maximize:
            g = -g
        if weight_decay:
            g = g + weight_decay * p
        s["sq"] = s["sq"] * alpha + (1 - alpha) * g * g
        if centered:
            s["ga"] = _lerp(s["ga"], g, 1 - alpha)
            avg = np.sqrt(s["sq"] + -1 * s["ga"] * s["ga"]) + eps
        else:
            avg = np.sqrt(s["sq"]) + eps
        if momentum > 0:
            s["buf"] = s["buf"] * momentum + g / avg
            return p + -lr * s["buf"]
        return p + -lr * g / avg

    @staticmethod
    def _adagrad(p, g, s, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, maximize=False):
        s.setdefault("sum", np.full_like(p, initial_accumulator_value))
        s["t"] = t = s.get("t", 0) + 1
        if maximize:
            g = -g
        if weight_decay:
            g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        s["sum"] = s["sum"] + g * g
        return p + -clr * g / (np.sqrt(s["sum"]) + eps)

    @staticmethod
    def _adadelta(p, g, s, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
        s.setdefault("sq", np.zeros_like(p))
        s.setdefault("acc", np.zeros_like(p))
        if maximize:
            g = -g
        if weight_decay:
            g = g + weight_decay * p
        s["sq"] = s["sq"] * rho + (1 - rho) * g * g
        delta = np.sqrt(s["acc"] + eps) / np.sqrt(s["sq"] + eps) * g
        s["acc"] = s["acc"] * rho + (1 - rho) * delta * delta
        return p + -lr * delta


# ----------------------------------------------------------------------------- helpers
CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "maximize": True, "betas": (0.4, 0.9), "eps": 1e-3}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "maximize": True, "weight_decay": 0.3}),
    ("Adamax", {"lr": 0.01}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True,
               "maximize": True}),
    ("RAdam", {"lr": 0.01}),
    ("RAdam", {"lr": 0.01, "betas": (0.9, 0.8), "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "betas": (0.9, 0.8), "weight_decay": 0.1,
               "decoupled_weight_decay": True, "maximize": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.5, "weight_decay": 0.1, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "initial_accumulator_value": 0.5,
                 "weight_decay": 0.1, "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.5, "weight_decay": 0.1, "maximize": True}),
]
STEPS = 8


def _ids(case):
    return case[0] + "-" + "-".join(f"{k}={v}" for k, v in case[1].items())


def _run(name, kwargs, dtype=np.float64, shape=(4, 3), transpose=False, steps=STEPS):
    """Run ember and the reference side by side on random gradients."""
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal(shape).astype(dtype)
    p = et.from_numpy(p0.copy())
    if transpose:
        p = p.t()
    opt = getattr(optim, name)([p], **kwargs)
    ref = Reference(name, **{k: v for k, v in kwargs.items() if k != "fused"})
    expected = p0.T.copy() if transpose else p0.copy()
    for _ in range(steps):
        g = rng.standard_normal(expected.shape).astype(dtype)
        p.grad = et.from_numpy(g.copy())
        opt.step()
        expected = ref.step(expected, g)
    return p.detach().numpy(), expected


@pytest.mark.parametrize("case", CONFIGS, ids=[_ids(c) for c in CONFIGS])
def test_update_matches_reference(case):
    name, kwargs = case
    ours, expected = _run(name, kwargs)
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-15)
    assert not np.allclose(ours, _run(name, kwargs, steps=0)[0])


@pytest.mark.parametrize("case", CONFIGS, ids=[_ids(c) for c in CONFIGS])
def test_update_on_non_contiguous_param(case):
    name, kwargs = case
    ours, expected = _run(name, kwargs, transpose=True)
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("case", [c for c in CONFIGS if c[0] in ("SGD", "Adam", "AdamW")],
                         ids=_ids)
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_and_array_paths(case, fused, dtype):
    name, kwargs = case
    ours, expected = _run(name, dict(kwargs, fused=fused), dtype=dtype, shape=(50, 40))
    assert ours.dtype == dtype
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ours, expected, rtol=rtol, atol=rtol * 1e-3)


def test_fused_kernel_runs_in_parallel_sizes():
    # large enough for the parallel kernel; the result must not depend on the split
    ours, expected = _run("Adam", {"lr": 0.01, "amsgrad": True}, shape=(300, 200), steps=3)
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-15)
    ours, expected = _run("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True},
                          shape=(300, 200), steps=3)
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-15)


def test_params_without_grad_are_skipped():
    a, b = et.ones(3, dtype=et.float64), et.ones(3, dtype=et.float64)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = et.ones(3, dtype=et.float64)
    opt.step()
    assert b.tolist() == [1.0, 1.0, 1.0]
    assert a.tolist() != [1.0, 1.0, 1.0]
    assert b not in opt.state and a in opt.state


def test_step_increments_state_and_bumps_versions():
    p = et.ones(3, dtype=et.float64)
    opt = optim.Adam([p], lr=0.1)
    p.grad = et.ones(3, dtype=et.float64)
    v0 = p._version
    opt.step()
    opt.step()
    state = opt.state[p]
    assert float(state["step"].item()) == 2.0
    assert state["step"].dtype == et.float32
    assert p._version > v0
    assert sorted(state) == ["exp_avg", "exp_avg_sq", "step"]


def test_closure_loss_is_returned():
    p = et.ones(2, dtype=et.float64)
    opt = optim.SGD([p], lr=0.1)

    def closure():
        p.grad = et.ones(2, dtype=et.float64)
        return 3.5

    assert opt.step(closure) == 3.5
    assert p.tolist() == [0.9, 0.9]


def test_lbfgs_needs_a_closure_and_solves_a_quadratic():
    p = et.zeros(3, dtype=et.float64)
    target = np.array([1.0, -2.0, 0.5])
    opt = optim.LBFGS([p], history_size=5, max_iter=50)
    with pytest.raises((RuntimeError, TypeError)):
        opt.step(None)

    def closure():
        d = p.detach().numpy() - target
        p.grad = et.tensor((2 * d).tolist(), dtype=et.float64)
        return float(d @ d)

    opt.step(closure)
    np.testing.assert_allclose(p.detach().numpy(), target, atol=1e-6)
    with pytest.raises(ValueError, match="per-parameter options"):
        optim.LBFGS([{"params": [et.zeros(1)]}, {"params": [et.zeros(1)]}])


# ----------------------------------------------------------------------------- base class
def test_groups_take_defaults_and_overrides():
    a, b = et.zeros(2), et.zeros(2)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["momentum"] == 0.9
    assert opt.param_groups[1]["params"][0] is b
    c = et.zeros(1)
    opt.add_param_group({"params": [c], "nesterov": True})
    assert opt.param_groups[2]["nesterov"] and opt.param_groups[2]["lr"] == 0.1
    assert "Parameter Group 2" in repr(opt)


def test_param_in_two_groups_raises():
    a = et.zeros(2)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        optim.SGD([{"params": [a]}, {"params": [a]}], lr=0.1)
    opt = optim.Adam([a])
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})


def test_bad_params_raise_like_torch():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.SGD(et.zeros(2), lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        optim.SGD([1.0], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {et.zeros(1)}}], lr=0.1)
    with pytest.raises(UserWarning, match="duplicate parameters"):
        a = et.zeros(1)
        optim.SGD([a, a], lr=0.1)


@pytest.mark.parametrize("make, message", [
    (lambda p: optim.SGD(p, lr=-0.1), "Invalid learning rate: -0.1"),
    (lambda p: optim.SGD(p, lr=0.1, momentum=-1), "Invalid momentum value: -1"),
    (lambda p: optim.SGD(p, lr=0.1, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: optim.SGD(p, lr=0.1, nesterov=True),
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.Adam(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.Adam(p, eps=-1), "Invalid epsilon value: -1"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.Adam(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda p: optim.AdamW(p, weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (lambda p: optim.Adamax(p, betas=(0.9, 1.5)), "Invalid beta parameter at index 1: 1.5"),
    (lambda p: optim.NAdam(p, momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (lambda p: optim.RAdam(p, betas=(-0.1, 0.9)), "Invalid beta parameter at index 0: -0.1"),
    (lambda p: optim.RMSprop(p, alpha=-1), "Invalid alpha value: -1"),
    (lambda p: optim.RMSprop(p, momentum=-1), "Invalid momentum value: -1"),
    (lambda p: optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda p: optim.Adagrad(p, initial_accumulator_value=-1),
     "Invalid initial_accumulator_value value: -1"),
    (lambda p: optim.Adadelta(p, rho=1.5), "Invalid rho value: 1.5"),
    (lambda p: optim.LBFGS(p, lr=-1), "Invalid learning rate: -1"),
])
def test_bad_hyperparameters_raise_value_error(make, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("(", r"\(")):
        make([et.zeros(2)])


def test_zero_grad():
    p = et.ones(2)
    opt = optim.SGD([p], lr=0.1)
    p.grad = et.ones(2)
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_step_hooks_run_and_can_be_removed():
    p = et.ones(2)
    opt = optim.Adam([p])
    calls = []
    pre = opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    opt.step()
    assert calls == ["pre", "post"]
    pre.remove()
    opt.step()
    assert calls == ["pre", "post", "post"]


def test_optimizer_pickles():
    p = et.ones(2, dtype=et.float64)
    opt = optim.Adam([p], lr=0.1)
    p.grad = et.ones(2, dtype=et.float64)
    opt.step()
    clone = pickle.loads(pickle.dumps(opt))
    assert clone.param_groups[0]["lr"] == 0.1
    assert len(clone.state) == 1


def test_import_compiles_nothing():
    code = ("import sys, ember.optim, ember.optim.lr_scheduler; "
            "assert 'numba' not in sys.modules, 'numba imported'")
    subprocess.run([sys.executable, "-c", code], check=True, env=None)


# ----------------------------------------------------------------------------- state_dict
def _train(opt, params, rng, steps):
    for _ in range(steps):
        for p in params:
            p.grad = et.from_numpy(rng.standard_normal(tuple(p.shape)))
        opt.step()


@pytest.mark.parametrize("case", CONFIGS, ids=[_ids(c) for c in CONFIGS])
def test_state_dict_round_trip_continues_identically(case):
    name, kwargs = case
    make = getattr(optim, name)
    init = [np.linspace(-1, 1, 6).reshape(2, 3), np.linspace(0.5, 2, 3)]
    params = [et.from_numpy(a.copy()) for a in init]
    opt = make([{"params": params[:1]}, {"params": params[1:], "lr": 0.05}], **kwargs)
    rng = np.random.default_rng(5)
    _train(opt, params, rng, 3)
    saved = copy.deepcopy(opt.state_dict())
    stateless = name == "SGD" and not kwargs.get("momentum")
    assert sorted(saved["state"]) == ([] if stateless else [0, 1])
    assert [g["params"] for g in saved["param_groups"]] == [[0], [1]]

    fresh = [et.from_numpy(p.detach().numpy().copy()) for p in params]
    opt2 = make([{"params": fresh[:1]}, {"params": fresh[1:], "lr": 0.05}], **kwargs)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[1]["lr"] == 0.05
    state = np.random.default_rng(9)
    _train(opt, params, state, 4)
    _train(opt2, fresh, np.random.default_rng(9), 4)
    for a, b in zip(params, fresh):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_load_state_dict_casts_to_param_dtype_and_keeps_step():
    p64 = et.ones(3, dtype=et.float64)
    opt = optim.Adam([p64], lr=0.1)
    p64.grad = et.ones(3, dtype=et.float64)
    opt.step()
    p32 = et.ones(3, dtype=et.float32)
    opt32 = optim.Adam([p32], lr=0.1)
    opt32.load_state_dict(opt.state_dict())
    st = opt32.state[p32]
    assert st["exp_avg"].dtype == et.float32 and st["exp_avg_sq"].dtype == et.float32
    assert st["step"].dtype == et.float32
    assert st["exp_avg"] is not opt.state[p64]["exp_avg"]
    p32.grad = et.ones(3, dtype=et.float32)
    opt32.step()
    assert float(st["step"].item()) == 2.0


def test_load_state_dict_accepts_json_shaped_state():
    # what a JSON metadata round trip makes of a state dict: string keys, lists for tuples
    p = et.ones(2, dtype=et.float64)
    opt = optim.Adam([p], lr=0.1)
    p.grad = et.ones(2, dtype=et.float64)
    opt.step()
    sd = opt.state_dict()
    sd = {"state": {str(k): v for k, v in sd["state"].items()},
          "param_groups": [dict(g, betas=list(g["betas"])) for g in sd["param_groups"]]}
    q = et.ones(2, dtype=et.float64)
    opt2 = optim.Adam([q], lr=0.1)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["betas"] == (0.9, 0.999)
    assert q in opt2.state


def test_load_state_dict_refuses_mismatched_groups():
    a, b = et.zeros(2), et.zeros(2)
    opt = optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1)
    one_group = optim.SGD([a, b], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        one_group.load_state_dict(opt.state_dict())
    other = optim.SGD([{"params": [a, b]}, {"params": [et.zeros(1)]}], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        other.load_state_dict(opt.state_dict())


# ----------------------------------------------------------------------------- CPU kernels
def _kernels():
    from ember.tensor.kernels.cpu import optim as kernels

    return kernels


def _adam_kwargs(**kw):
    base = {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0,
            "steps": [1], "amsgrad": False, "maximize": False, "decoupled_weight_decay": False}
    base.update(kw)
    return base


def _lists(*shapes, dtype=np.float64, fill=0.0):
    return [np.full(shape, fill, dtype) for shape in shapes]


def test_adam_kernel_validates_its_arrays():
    k = _kernels()
    ps = _lists(2, 4, fill=1.0)
    gs, ms, vs = _lists(2, 4, fill=1.0), _lists(2, 4), _lists(2, 4)
    bad = [
        (RuntimeError, r"expected exp_avgs\[1\] of shape \(4,\) \(the parameter's\), got \(3,\)",
         lambda: k.adam_step(ps, gs, _lists(2, 3), vs, None, **_adam_kwargs(steps=[1, 1]))),
        (RuntimeError, r"expected grads\[1\] of dtype float64 \(the parameter's\), got float32",
         lambda: k.adam_step(ps, [gs[0], gs[1].astype(np.float32)], ms, vs, None,
                             **_adam_kwargs(steps=[1, 1]))),
        (RuntimeError, r"amsgrad=True needs a max_exp_avg_sq buffer for every param, got None$",
         lambda: k.adam_step(ps, gs, ms, vs, None, **_adam_kwargs(steps=[1, 1], amsgrad=True))),
        (RuntimeError, r"got None \(max_exp_avg_sqs\[1\]\)",
         lambda: k.adam_step(ps, gs, ms, vs, [np.zeros(2), None],
                             **_adam_kwargs(steps=[1, 1], amsgrad=True))),
        (ValueError, r"steps count from 1, got 0 \(steps\[1\]\)",
         lambda: k.adam_step(ps, gs, ms, vs, None, **_adam_kwargs(steps=[1, 0]))),
        (RuntimeError, r"params\[1\] must be a writeable C-contiguous array",
         lambda: k.adam_step([ps[0], np.ones((4, 4)).T], [gs[0], np.ones((4, 4))],
                             [ms[0], np.zeros((4, 4))], [vs[0], np.zeros((4, 4))], None,
                             **_adam_kwargs(steps=[1, 1]))),
        (RuntimeError, r"expected float32 or float64 params, got int64 \(params\[1\]\)",
         lambda: k.adam_step([ps[0], np.ones(4, np.int64)], [gs[0], np.ones(4, np.int64)],
                             [ms[0], np.zeros(4, np.int64)], [vs[0], np.zeros(4, np.int64)],
                             None, **_adam_kwargs(steps=[1, 1]))),
        (RuntimeError, r"expected steps to hold 2 entries \(one per param\), got 1",
         lambda: k.adam_step(ps, gs, ms, vs, None, **_adam_kwargs(steps=[1]))),
        (TypeError, r"expected params to be a list of NumPy arrays \(one per param\), got ndarray",
         lambda: k.adam_step(ps[0], gs[0], ms[0], vs[0], None, **_adam_kwargs(steps=[1]))),
        (TypeError, r"expected exp_avg_sqs\[0\] to be a NumPy array, got list",
         lambda: k.adam_step(ps, gs, ms, [[0.0, 0.0], vs[1]], None,
                             **_adam_kwargs(steps=[1, 1]))),
    ]
    for error, message, call in bad:
        with pytest.raises(error, match=message):
            call()
    # every array is checked before anything is written, the first parameter included
    assert [p.tolist() for p in ps] == [[1.0] * 2, [1.0] * 4]
    assert all(not m.any() for m in ms + vs)
    k.adam_step([], [], [], [], None, **_adam_kwargs(steps=[]))  # nothing to do


def test_sgd_kernel_validates_and_updates_in_place():
    k = _kernels()
    ps, bufs = _lists(3, 2, dtype=np.float32, fill=1.0), _lists(3, 2, dtype=np.float32)
    gs = _lists(3, 2, dtype=np.float32, fill=1.0)
    kw = {"lr": 0.5, "momentum": 0.9, "dampening": 0.0, "weight_decay": 0.0,
          "nesterov": False, "maximize": False}
    with pytest.raises(RuntimeError, match="needs a momentum buffer and a first-step flag"):
        k.sgd_step(ps, gs, None, first_steps=[True, True], **kw)
    with pytest.raises(RuntimeError, match=r"needs a momentum buffer for every param, got None "
                                           r"\(bufs\[1\]\)"):
        k.sgd_step(ps, gs, [bufs[0], None], first_steps=[True, True], **kw)
    with pytest.raises(RuntimeError, match=r"expected first_steps to hold 2 entries"):
        k.sgd_step(ps, gs, bufs, first_steps=[True], **kw)
    assert [p.tolist() for p in ps] == [[1.0] * 3, [1.0] * 2]
    k.sgd_step(ps, gs, bufs, first_steps=[True, True], **kw)
    assert [b.tolist() for b in bufs] == [[1.0] * 3, [1.0] * 2]
    assert [p.tolist() for p in ps] == [[0.5] * 3, [0.5] * 2]
    # per-parameter first steps: the second buffer starts over from the gradient
    k.sgd_step(ps, gs, bufs, first_steps=[False, True], **kw)
    np.testing.assert_array_equal(bufs[0], np.float32(0.9) + 1)
    assert bufs[1].tolist() == [1.0] * 2 and ps[1].tolist() == [0.0] * 2
    assert ps[0].dtype == np.float32
    # without momentum the buffers and flags are not read
    k.sgd_step(ps, gs, None, first_steps=None, **dict(kw, momentum=0.0))
    assert ps[1].tolist() == [-0.5] * 2


def test_adam_kernel_division_by_zero_gives_inf_like_torch():
    k = _kernels()
    p, m, v = np.zeros(2), np.zeros(2), np.zeros(2)
    k.adam_step([p], [np.array([1.0, 0.0])], [m], [v], None, **_adam_kwargs(eps=0.0))
    assert p[0] == pytest.approx(-0.01) and np.isnan(p[1])  # 0 / 0, as torch gives


# The kernels' arithmetic, written out in NumPy in the parameter's dtype: the scalars rounded
# as the kernels round them, the operations in torch's single-tensor order (NumPy's float32
# and float64 operations are IEEE, as the kernels' are, so the results must agree exactly).
def _adam_exact(p, g, m, v, vmax, *, lr, beta1, beta2, eps, weight_decay, step, amsgrad,
                maximize, decoupled_weight_decay):
    t = p.dtype.type
    w = t(1 - beta1)
    if maximize:
        g = -g
    if weight_decay != 0:
        if decoupled_weight_decay:
            p = p * t(1 - lr * weight_decay)
        else:
            g = g + t(weight_decay) * p
    m[...] = m + w * (g - m) if abs(w) < 0.5 else g - (g - m) * t(1 - w)
    v[...] = v * t(beta2) + t(1 - beta2) * g * g
    if amsgrad:
        np.maximum(vmax, v, out=vmax)
    denom = np.sqrt(vmax if amsgrad else v) / t((1 - beta2 ** step) ** 0.5) + t(eps)
    return p + t(-(lr / (1 - beta1 ** step))) * m / denom


def _sgd_exact(p, g, buf, *, lr, momentum, dampening, weight_decay, nesterov, maximize,
               first_step):
    t = p.dtype.type
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + t(weight_decay) * p
    if momentum != 0:
        buf[...] = g if first_step else buf * t(momentum) + t(1 - dampening) * g
        g = g + t(momentum) * buf if nesterov else buf
    return p + t(-lr) * g


# sizes around the chunk length (16384), tiny and empty ones; about 110k elements in all, so
# the parallel kernel runs; the first four alone (below 32k) take the serial one
SIZES = [(3,), (0,), (1,), (5, 7), (16383,), (16384,), (128, 129), (0, 4), (40000,), (2,)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sizes", [SIZES, SIZES[:4]], ids=["parallel", "serial"])
@pytest.mark.parametrize("hyper", [
    {},
    {"amsgrad": True, "weight_decay": 0.1},
    {"maximize": True, "beta1": 0.4, "eps": 1e-3},  # lerp's upper branch
    {"weight_decay": 0.1, "decoupled_weight_decay": True},
    {"amsgrad": True, "maximize": True, "weight_decay": 0.3, "decoupled_weight_decay": True},
], ids=["plain", "amsgrad-l2", "maximize-lerp-high", "adamw", "adamw-amsgrad-maximize"])
def test_adam_kernel_is_exact_per_tensor_over_mixed_sizes_and_steps(dtype, sizes, hyper):
    k = _kernels()
    rng = np.random.default_rng(7)
    kw = _adam_kwargs(**dict(hyper, beta2=0.99))
    kw.pop("steps")
    ps = [rng.standard_normal(s).astype(dtype) for s in sizes]
    states = [[np.zeros(s, dtype) for s in sizes] for _ in range(3)]
    expected = [p.copy() for p in ps]
    expected_states = [[a.copy() for a in column] for column in states]
    for step in range(1, 5):
        gs = [rng.standard_normal(s).astype(dtype) for s in sizes]
        steps = [step + i % 3 for i in range(len(sizes))]  # every parameter its own step
        k.adam_step(ps, gs, *states[:2], states[2] if kw["amsgrad"] else None, steps=steps,
                    **kw)
        for i in range(len(sizes)):
            m, v, vmax = (column[i] for column in expected_states)
            expected[i] = _adam_exact(expected[i], gs[i], m, v, vmax, step=steps[i], **kw)
    for ours, theirs in zip(ps + sum(states, []), expected + sum(expected_states, [])):
        assert ours.dtype == dtype
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sizes", [SIZES, SIZES[:4]], ids=["parallel", "serial"])
@pytest.mark.parametrize("hyper", [
    {},
    {"weight_decay": 0.01, "maximize": True},
    {"momentum": 0.9},
    {"momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01},
    {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01, "maximize": True},
], ids=["plain", "decay-maximize", "momentum", "dampening", "nesterov"])
def test_sgd_kernel_is_exact_per_tensor_over_mixed_sizes_and_steps(dtype, sizes, hyper):
    k = _kernels()
    rng = np.random.default_rng(8)
    kw = dict({"lr": 0.1, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0,
               "nesterov": False, "maximize": False}, **hyper)
    ps = [rng.standard_normal(s).astype(dtype) for s in sizes]
    bufs = [np.zeros(s, dtype) for s in sizes]
    expected, expected_bufs = [p.copy() for p in ps], [b.copy() for b in bufs]
    for step in range(3):
        gs = [rng.standard_normal(s).astype(dtype) for s in sizes]
        first = [step == i % 2 for i in range(len(sizes))]  # buffers started at other steps
        k.sgd_step(ps, gs, bufs if kw["momentum"] else None,
                   first_steps=first if kw["momentum"] else None, **kw)
        for i in range(len(sizes)):
            expected[i] = _sgd_exact(expected[i], gs[i], expected_bufs[i],
                                     first_step=first[i], **kw)
    for ours, theirs in zip(ps + bufs, expected + expected_bufs):
        np.testing.assert_array_equal(ours, theirs)


def test_kernels_take_mixed_dtypes_and_non_contiguous_or_read_only_grads():
    k = _kernels()
    rng = np.random.default_rng(9)
    dtypes = [np.float32, np.float64, np.float32]
    ps = [rng.standard_normal((40, 30)).astype(d) for d in dtypes]
    gs = [np.asfortranarray(rng.standard_normal((40, 30)).astype(d)) for d in dtypes]
    gs[2] = np.ascontiguousarray(gs[2])
    gs[2].flags.writeable = False
    ms, vs = [np.zeros_like(p) for p in ps], [np.zeros_like(p) for p in ps]
    kw = _adam_kwargs()
    kw.pop("steps")
    expected = [_adam_exact(p.copy(), g, m.copy(), v.copy(), None, step=1, **kw)
                for p, g, m, v in zip(ps, gs, ms, vs)]
    k.adam_step(ps, gs, ms, vs, None, **_adam_kwargs(steps=[1, 1, 1]))
    for ours, theirs in zip(ps, expected):
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)
    bufs = [np.zeros_like(p) for p in ps]
    expected = [_sgd_exact(p.copy(), g, b.copy(), lr=0.1, momentum=0.9, dampening=0.0,
                           weight_decay=0.0, nesterov=True, maximize=False, first_step=True)
                for p, g, b in zip(ps, gs, bufs)]
    k.sgd_step(ps, gs, bufs, lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0,
               nesterov=True, maximize=False, first_steps=[True] * 3)
    for ours, theirs in zip(ps, expected):
        np.testing.assert_array_equal(ours, theirs)


# ----------------------------------------------------------------------------- fused groups
def _group_run(name, kwargs, *, fused, dtype=np.float32, transpose=(), float64=(), steps=4):
    """A group of parameters of mixed sizes (empty ones included) whose gradients come and
    go, so their step counts differ; ``transpose`` lists the parameters made non-contiguous,
    ``float64`` those of that dtype. Returns the final parameters."""
    rng = np.random.default_rng(3)
    shapes = [(6, 5), (0,), (1,), (300, 70), (17,), (40, 3)]
    params = []
    for i, s in enumerate(shapes):
        a = rng.standard_normal(s[::-1] if i in transpose else s)
        p = et.from_numpy(a.astype(np.float64 if i in float64 else dtype))
        params.append(p.t() if i in transpose else p)
    opt = getattr(optim, name)(params, **kwargs, fused=fused)
    for step in range(steps):
        for i, p in enumerate(params):
            skip = (i + step) % 3 == 0 and step < steps - 1
            g = rng.standard_normal(tuple(p.shape)).astype(p.detach().numpy().dtype)
            p.grad = None if skip else et.from_numpy(g)
        opt.step()
    return [p.detach().numpy().copy() for p in params]


GROUP_CASES = [
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1, "maximize": True}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01, "amsgrad": True}),
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "weight_decay": 0.01, "maximize": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.2}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", GROUP_CASES, ids=_ids)
def test_fused_group_equals_the_array_loop_exactly(case, dtype):
    # one kernel call a step for the whole group, each parameter at its own step count, gives
    # exactly the per-parameter loop's numbers (beta1 = 0.9: the loop's lerp rounds alike)
    name, kwargs = case
    loop = _group_run(name, kwargs, fused=False, dtype=dtype)
    for fused in (None, True):
        for ours, theirs in zip(_group_run(name, kwargs, fused=fused, dtype=dtype), loop):
            np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("case", GROUP_CASES, ids=_ids)
def test_fused_group_with_parameters_the_kernel_cannot_take_in_place(monkeypatch, case):
    # non-contiguous parameters: the loop under fused=None, copies in the same kernel call
    # under fused=True; the numbers are the loop's either way
    name, kwargs = case
    calls = _count_kernel_calls(monkeypatch, name)
    loop = _group_run(name, kwargs, fused=False, transpose=(0, 3))
    assert calls == []
    ours_default = _group_run(name, kwargs, fused=None, transpose=(0, 3))
    assert len(calls) == 4  # one call a step for the contiguous parameters
    assert max(calls) <= 4  # ... without the non-contiguous ones
    calls.clear()
    ours_forced = _group_run(name, kwargs, fused=True, transpose=(0, 3))
    assert len(calls) == 4 and max(calls) == 6  # every parameter in one call a step
    for a, b, c in zip(ours_default, ours_forced, loop):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, c)


@pytest.mark.parametrize("case", GROUP_CASES, ids=_ids)
def test_fused_group_of_mixed_dtypes(case):
    # float32 and float64 parameters in one group: one launch per dtype, each exact
    name, kwargs = case
    loop = _group_run(name, kwargs, fused=False, float64=(1, 3, 4))
    ours = _group_run(name, kwargs, fused=None, float64=(1, 3, 4))
    for i, (a, b) in enumerate(zip(ours, loop)):
        assert a.dtype == (np.float64 if i in (1, 3, 4) else np.float32)
        np.testing.assert_array_equal(a, b)


def _count_kernel_calls(monkeypatch, name):
    import importlib

    module = importlib.import_module("ember.optim." + ("sgd" if name == "SGD" else "adam"))
    calls = []
    real = module._kernel

    def fake(kernel_name, t):
        kernel = real(kernel_name, t)

        def counted(*args, **kwargs):
            calls.append(len(args[0]))
            return kernel(*args, **kwargs)
        return counted

    monkeypatch.setattr(module, "_kernel", fake)
    return calls


def test_fused_group_sees_a_replaced_param_data_and_state():
    p, q = et.zeros(3), et.zeros(4)
    opt = optim.Adam([p, q], lr=0.1)
    for t in (p, q):
        t.grad = et.ones(tuple(t.shape))
    opt.step()
    p.data = et.full((3,), 5.0)  # a new array under p
    opt.state[q]["exp_avg"] = et.zeros(4)  # a new state buffer
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), 5.0 - 0.1, rtol=1e-6)
    assert opt.state[q]["exp_avg"].tolist() != [0.0] * 4


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
                                  "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_step_inside_autobatch_runs_the_deferred_calls_first(name):
    # a step writes the parameters in place outside the op registry: a call deferred by
    # autobatch() before it reads them as they were at the call, as without the context
    from ember.autograd import autobatch

    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((3, 2))
    x1, x2 = (et.tensor(rng.standard_normal((2, 3))) for _ in range(2))
    seen = []
    for batched in (False, True):
        w = et.tensor(w0, requires_grad=True)
        opt = getattr(optim, name)([w], lr=0.5)
        with autobatch() if batched else contextlib.nullcontext():
            (x1 @ w).pow(2).sum().backward()
            monitor = (x2 @ w).pow(2).sum()   # deferred inside the context
            opt.step()
            seen.append((monitor.item(), w.detach().numpy().copy()))
    np.testing.assert_allclose(seen[1][0], seen[0][0], rtol=1e-12)
    np.testing.assert_allclose(seen[1][0], ((x2.numpy() @ w0) ** 2).sum(), rtol=1e-12)
    np.testing.assert_allclose(seen[1][1], seen[0][1], rtol=1e-12)
