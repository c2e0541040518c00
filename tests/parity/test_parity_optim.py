"""Parity of ember.optim with torch.optim (PyTorch 2.13 CPU): trajectories and schedules.

Each optimizer runs 25 steps on the same small two-layer tanh network and data as its torch
twin, in float64. Gradients come from one NumPy function of each side's own current
parameters, so the trajectories feed back exactly as in training; the parameters must agree to
1e-7 relative at the end. One weight is a transposed (non-contiguous) view, so the plain
array path runs beside the fused kernels.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.tensor as et  # noqa: E402
from ember import optim  # noqa: E402
from ember.optim import lr_scheduler as esched  # noqa: E402

STEPS = 25
RTOL = 1e-7


def _data():
    rng = np.random.default_rng(1234)
    x = rng.standard_normal((32, 5))
    y = rng.standard_normal((32, 3))
    w1t = rng.standard_normal((8, 5)) * 0.5  # stored transposed: w1 = w1t.T (5, 8)
    b1 = rng.standard_normal(8) * 0.1
    w2 = rng.standard_normal((8, 3)) * 0.5
    b2 = rng.standard_normal(3) * 0.1
    return x, y, [w1t, b1, w2, b2]


def _grads(x, y, w1, b1, w2, b2):
    """Gradients of mean((tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2) (by hand, in NumPy)."""
    h = np.tanh(x @ w1 + b1)
    out = h @ w2 + b2
    d_out = 2.0 * (out - y) / out.size
    g_w2 = h.T @ d_out
    g_b2 = d_out.sum(0)
    d_h = (d_out @ w2.T) * (1.0 - h * h)
    return x.T @ d_h, d_h.sum(0), g_w2, g_b2


def _run_torch(cls, kwargs, groups=None):
    x, y, init = _data()
    w1t = torch.tensor(init[0]).t().requires_grad_()  # non-contiguous leaf
    params = [w1t] + [torch.tensor(a, requires_grad=True) for a in init[1:]]
    opt = cls(_grouped(params, groups), **kwargs)
    for _ in range(STEPS):
        arrays = [p.detach().numpy() for p in params]
        for p, g in zip(params, _grads(x, y, *arrays)):
            p.grad = torch.tensor(np.ascontiguousarray(g))
        opt.step()
    return [p.detach().numpy().copy() for p in params]


def _run_ember(cls, kwargs, groups=None):
    x, y, init = _data()
    w1t = et.tensor(init[0], dtype=et.float64).t()
    params = [w1t] + [et.tensor(a, dtype=et.float64) for a in init[1:]]
    opt = cls(_grouped(params, groups), **kwargs)
    for _ in range(STEPS):
        arrays = [np.asarray(p._data) for p in params]
        for p, g in zip(params, _grads(x, y, *arrays)):
            p.grad = et.tensor(np.ascontiguousarray(g), dtype=et.float64)
        opt.step()
    return [np.asarray(p._data).copy() for p in params]


def _grouped(params, groups):
    if groups is None:
        return params
    return [{"params": params[:2], **groups[0]}, {"params": params[2:], **groups[1]}]


CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.2}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.8, "weight_decay": 0.05}),
    ("SGD", {"lr": 0.01, "momentum": 0.5, "nesterov": True, "weight_decay": 0.01,
             "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "maximize": True}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.05, "maximize": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Adam", {"lr": 0.01, "betas": (0.6, 0.9)}),  # lerp's upper branch (1 - beta1 >= 0.5)
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ("Adamax", {"lr": 0.01}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adamax", {"lr": 0.01, "maximize": True, "betas": (0.8, 0.95)}),
    ("NAdam", {"lr": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.01, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("NAdam", {"lr": 0.01, "maximize": True}),
    ("RAdam", {"lr": 0.01}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.01, "betas": (0.9, 0.9), "maximize": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.1, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "maximize": True, "eps": 1e-6}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8}),
    ("Adadelta", {"weight_decay": 0.1, "maximize": True}),
    ("ASGD", {"lr": 0.05}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 10}),
    ("ASGD", {"lr": 0.05, "t0": 3, "weight_decay": 0.1, "maximize": True}),
    ("Rprop", {"lr": 0.01}),
    ("Rprop", {"lr": 0.02, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.05)}),
    ("Rprop", {"lr": 0.01, "maximize": True}),
    ("Adafactor", {"lr": 0.01}),
    ("Adafactor", {"lr": 0.05, "beta2_decay": -0.5, "d": 2.0, "weight_decay": 0.1}),
    ("Adafactor", {"lr": 0.01, "eps": (1e-20, 1e-2), "maximize": True}),
]


def _ids(case):
    name, kwargs = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kwargs.items())


def _check(ours, theirs):
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_trajectory_matches_torch(case):
    name, kwargs = case
    theirs = _run_torch(getattr(torch.optim, name), kwargs)
    ours = _run_ember(getattr(optim, name), kwargs)
    assert not np.allclose(theirs[2], _data()[2][2])  # the parameters did move
    _check(ours, theirs)


@pytest.mark.parametrize("name, kwargs", [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01, "maximize": True}),
])
def test_unfused_path_matches_torch(name, kwargs):
    theirs = _run_torch(getattr(torch.optim, name), kwargs)
    ours = _run_ember(getattr(optim, name), dict(kwargs, fused=False))
    _check(ours, theirs)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
def test_param_groups_match_torch(name):
    groups = [{"lr": 0.05}, {"lr": 0.01, "weight_decay": 0.1}]
    kwargs = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}
    theirs = _run_torch(getattr(torch.optim, name), kwargs, groups)
    ours = _run_ember(getattr(optim, name), kwargs, groups)
    _check(ours, theirs)


def _mixed_group_run(lib, name, kwargs, dtype):
    """One param group of mixed sizes (an empty one, a tiny one, one over several kernel
    chunks) whose gradients come and go, so each parameter has its own step count; ember runs
    its default (the multi-tensor kernel), torch its single-tensor loop."""
    rng = np.random.default_rng(4)
    shapes = [(6, 5), (0,), (1,), (300, 70), (17,), (40000,)]
    init = [rng.standard_normal(s).astype(dtype) for s in shapes]
    if lib == "torch":
        params = [torch.from_numpy(a.copy()).requires_grad_() for a in init]
        opt = getattr(torch.optim, name)(params, **kwargs, foreach=False)
    else:
        params = [et.from_numpy(a.copy()) for a in init]
        opt = getattr(optim, name)(params, **kwargs)
    make = torch.from_numpy if lib == "torch" else et.from_numpy
    for step in range(6):
        for i, p in enumerate(params):
            g = rng.standard_normal(shapes[i]).astype(dtype)
            p.grad = None if (i + step) % 3 == 0 and step < 5 else make(g)
        opt.step()
    return [p.detach().numpy().copy() for p in params]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, kwargs", [
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1, "maximize": True}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "betas": (0.4, 0.9)}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.2, "maximize": True}),
])
def test_fused_group_with_mixed_steps_matches_torch(name, kwargs, dtype):
    theirs = _mixed_group_run("torch", name, kwargs, dtype)
    ours = _mixed_group_run("ember", name, kwargs, dtype)
    # (torch's vector kernels round differently: a few ulp, grown by the steps)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": RTOL, "atol": 1e-12}
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_allclose(a, b, **tol)


def _matrix_run(lib, cls_name, kwargs, dtype, steps=8):
    """A few steps of ``cls_name`` on two 2-D weights (one transposed, non-contiguous) with
    gradients of a fixed quadratic, on each side's own current parameters."""
    rng = np.random.default_rng(3)
    init = [rng.standard_normal((6, 4)), rng.standard_normal((3, 5))]
    targets = [rng.standard_normal((6, 4)), rng.standard_normal((5, 3))]
    if lib == "torch":
        params = [torch.tensor(init[0], dtype=dtype),
                  torch.tensor(init[1].T.copy(), dtype=dtype).t()]
        opt = getattr(torch.optim, cls_name)(params, **kwargs)
    else:
        params = [et.tensor(init[0], dtype=dtype),
                  et.tensor(init[1].T.copy(), dtype=dtype).t()]
        opt = getattr(optim, cls_name)(params, **kwargs)
    for _ in range(steps):
        for p, t in zip(params, targets):
            arr = p.numpy() if lib == "torch" else np.asarray(p._data)
            g = np.ascontiguousarray((arr - (t if arr.shape == t.shape else t.T)) * 2.0)
            p.grad = torch.tensor(g, dtype=dtype) if lib == "torch" else et.tensor(g,
                                                                                    dtype=dtype)
        opt.step()
    return [np.array(p.numpy() if lib == "torch" else p._data, dtype=np.float64)
            for p in params]


@pytest.mark.parametrize("kwargs", [
    {"lr": 0.02},
    {"lr": 0.05, "nesterov": False, "weight_decay": 0.0},
    {"lr": 0.02, "momentum": 0.9, "adjust_lr_fn": "match_rms_adamw", "ns_steps": 3},
])
def test_muon_trajectory_matches_torch(kwargs):
    # the Newton-Schulz iteration runs in bfloat16 (float32 accumulation): ember rounds to
    # bfloat16 after each product as torch's CPU kernels do, which reproduces the update to
    # a few float32 ulps
    theirs = _matrix_run("torch", "Muon", kwargs, torch.float32)
    ours = _matrix_run("ember", "Muon", kwargs, et.float32)
    start = _matrix_run("ember", "Muon", dict(kwargs, lr=0.0), et.float32)
    for a, b, s0 in zip(ours, theirs, start):
        moved = np.abs(b - s0).max()
        assert moved > 1e-2
        np.testing.assert_allclose(a, b, atol=1e-5 * moved)


@pytest.mark.parametrize("name, kwargs", [
    ("ASGD", {"lr": 0.05, "t0": 3}), ("Rprop", {"lr": 0.01}), ("Adafactor", {"lr": 0.01}),
])
def test_state_dict_after_steps_matches_torch(name, kwargs):
    # the state PyTorch keeps per parameter: same keys, same values
    x, y, init = _data()
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    ep = [et.tensor(a, dtype=et.float64) for a in init]
    topt, eopt = getattr(torch.optim, name)(tp, **kwargs), getattr(optim, name)(ep, **kwargs)
    for _ in range(4):
        for ps, lib in ((tp, "torch"), (ep, "ember")):
            arrays = [p.detach().numpy() if lib == "torch" else np.asarray(p._data) for p in ps]
            for p, g in zip(ps, _grads(x, y, arrays[0].T, *arrays[1:])):
                g = np.ascontiguousarray(g.T if g.shape != tuple(p.shape) else g)
                p.grad = torch.tensor(g) if lib == "torch" else et.tensor(g, dtype=et.float64)
        topt.step()
        eopt.step()
    tsd, esd = topt.state_dict(), eopt.state_dict()
    assert sorted(tsd["param_groups"][0]) == sorted(esd["param_groups"][0])
    for k in tsd["state"]:
        assert sorted(tsd["state"][k]) == sorted(esd["state"][k])
        for key, tv in tsd["state"][k].items():
            np.testing.assert_allclose(np.asarray(esd["state"][k][key]._data), tv.numpy(),
                                       rtol=1e-7, atol=1e-12, err_msg=f"{name} {key}")


# ----------------------------------------------------------------------------- LBFGS
def _least_squares():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((30, 6))
    b = rng.standard_normal(30)
    return a, b


def _lbfgs_run(lib, kwargs, steps=3):
    a, b = _least_squares()
    if lib == "torch":
        x = torch.zeros(6, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([x], **kwargs)
    else:
        x = et.zeros(6, dtype=et.float64)
        opt = optim.LBFGS([x], **kwargs)
    losses = []

    def closure():
        opt.zero_grad()
        xv = (x.detach().numpy() if lib == "torch" else np.asarray(x._data)).copy()
        r = a @ xv - b
        g = a.T @ r
        x.grad = torch.tensor(g) if lib == "torch" else et.tensor(g, dtype=et.float64)
        return 0.5 * float(r @ r)

    for _ in range(steps):
        losses.append(float(opt.step(closure)))
    xv = x.detach().numpy() if lib == "torch" else np.asarray(x._data)
    return xv.copy(), losses, opt.state[x]["func_evals"], opt.state[x]["n_iter"]


@pytest.mark.parametrize("kwargs", [
    {"lr": 1, "max_iter": 4},
    {"lr": 0.5, "max_iter": 5, "history_size": 3},
    {"line_search_fn": "strong_wolfe", "max_iter": 4},
    {"line_search_fn": "strong_wolfe", "max_iter": 20, "history_size": 4},
], ids=["plain", "short-history", "wolfe", "wolfe-converge"])
def test_lbfgs_least_squares_matches_torch(kwargs):
    xt, lt, et_evals, t_iters = _lbfgs_run("torch", kwargs)
    xe, le, ee_evals, e_iters = _lbfgs_run("ember", kwargs)
    np.testing.assert_allclose(xe, xt, rtol=RTOL, atol=1e-10)
    np.testing.assert_allclose(le, lt, rtol=RTOL)
    assert (ee_evals, e_iters) == (et_evals, t_iters)
    assert lt[-1] < lt[0]


def test_lbfgs_strong_wolfe_solves_least_squares():
    a, b = _least_squares()
    kwargs = {"line_search_fn": "strong_wolfe", "tolerance_grad": 1e-12,
              "tolerance_change": 1e-14}
    xe, losses, _, _ = _lbfgs_run("ember", kwargs, steps=2)
    np.testing.assert_allclose(xe, np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-6)


# ----------------------------------------------------------------------------- schedules
def _sched_pair(make, opt_name="SGD", opt_kwargs=None, epochs=40, metrics=None,
                groups=(0.1, 0.05)):
    opt_kwargs = {"momentum": 0.9} if opt_kwargs is None and opt_name == "SGD" else (
        opt_kwargs or {})
    out = []
    for lib, mod, sched_mod in (("torch", torch.optim, torch.optim.lr_scheduler),
                                ("ember", optim, esched)):
        if lib == "torch":
            ps = [torch.zeros(2, requires_grad=True) for _ in groups]
        else:
            ps = [et.zeros(2) for _ in groups]
        opt = getattr(mod, opt_name)([{"params": [p], "lr": lr} for p, lr in zip(ps, groups)],
                                     **opt_kwargs)
        sched = make(sched_mod, opt)
        lrs = [[float(v) for v in sched.get_last_lr()] + [g["lr"] for g in opt.param_groups]]
        moms = []
        for epoch in range(epochs):
            opt.step()
            if metrics is not None:
                sched.step(metrics[epoch])
            else:
                sched.step()
            lrs.append([float(v) for v in sched.get_last_lr()])
            lrs[-1] += [g["lr"] for g in opt.param_groups]
            moms.append([g.get("momentum", g.get("betas", (None,))[0])
                         for g in opt.param_groups])
        out.append((lrs, moms))
    return out


SCHEDULES = {
    "LambdaLR": lambda m, o: m.LambdaLR(o, lr_lambda=_Decay(0.9)),
    "LambdaLR-list": lambda m, o: m.LambdaLR(o, lr_lambda=[_Decay(0.9), _Decay(0.5)]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lr_lambda=_Decay(0.97)),
    "StepLR": lambda m, o: m.StepLR(o, step_size=7, gamma=0.3),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[3, 10, 10, 25], gamma=0.5),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=6),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=13),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.93),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=17, power=2.5),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=9, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=5, T_mult=2, eta_min=0.002),
    "CyclicLR-triangular": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                   step_size_up=4, step_size_down=6),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1,
                                                    step_size_up=5, mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                  step_size_up=3, mode="exp_range",
                                                  gamma=0.97),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=0.5, total_steps=40),
    "OneCycleLR-linear-3phase": lambda m, o: m.OneCycleLR(
        o, max_lr=[0.5, 0.2], epochs=4, steps_per_epoch=10, anneal_strategy="linear",
        three_phase=True, pct_start=0.25),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.2, total_iters=5),
            m.CosineAnnealingLR(o, T_max=12), m.ExponentialLR(o, gamma=0.9)],
        milestones=[5, 20]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.5, total_iters=4), m.ExponentialLR(o, gamma=0.95),
         m.StepLR(o, step_size=6, gamma=0.5)]),
}


class _Decay:
    """A picklable lr lambda."""

    def __init__(self, base):
        self.base = base

    def __call__(self, epoch):
        return self.base ** epoch


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_matches_torch(name):
    (tl, tm), (el, em) = _sched_pair(SCHEDULES[name])
    np.testing.assert_allclose(el, tl, rtol=1e-12, atol=0)
    np.testing.assert_allclose(np.array(em, dtype=float), np.array(tm, dtype=float), rtol=1e-12)
    assert len({tuple(r) for r in tl}) > 1


def test_cyclic_lr_cycles_adam_beta1_like_torch():
    make = SCHEDULES["CyclicLR-triangular"]
    (tl, tm), (el, em) = _sched_pair(make, opt_name="Adam", opt_kwargs={})
    np.testing.assert_allclose(el, tl, rtol=1e-12)
    np.testing.assert_allclose(np.array(em, dtype=float), np.array(tm, dtype=float), rtol=1e-12)


def test_one_cycle_cycles_adam_beta1_like_torch():
    (tl, tm), (el, em) = _sched_pair(SCHEDULES["OneCycleLR"], opt_name="Adam", opt_kwargs={})
    np.testing.assert_allclose(el, tl, rtol=1e-12)
    np.testing.assert_allclose(np.array(em, dtype=float), np.array(tm, dtype=float), rtol=1e-12)


@pytest.mark.parametrize("kwargs", [
    {"patience": 2, "factor": 0.5},
    {"mode": "max", "patience": 1, "threshold": 0.1, "threshold_mode": "abs", "cooldown": 2},
    {"patience": 0, "min_lr": [0.02, 0.001], "factor": 0.3},
])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    rng = np.random.default_rng(3)
    metrics = list(np.round(np.cumsum(rng.standard_normal(40)) + 10, 3))
    (tl, _), (el, _) = _sched_pair(lambda m, o: m.ReduceLROnPlateau(o, **kwargs),
                                   metrics=metrics)
    np.testing.assert_allclose(el, tl, rtol=1e-12)
    assert tl[-1] != tl[0]


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
                                  "LinearLR", "PolynomialLR", "ConstantLR"])
def test_closed_form_epoch_argument_matches_torch(name):
    make = SCHEDULES[name]
    results = []
    for mod, sched_mod, zeros in ((torch.optim, torch.optim.lr_scheduler,
                                   lambda: torch.zeros(1, requires_grad=True)),
                                  (optim, esched, lambda: et.zeros(1))):
        opt = mod.SGD([zeros()], lr=0.1)
        sched = make(sched_mod, opt)
        lrs = []
        with pytest.warns(UserWarning):
            for epoch in (3, 11, 4, 30):
                opt.step()
                sched.step(epoch)
                lrs.append(sched.get_last_lr()[0])
        results.append(lrs)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12)


def test_warm_restarts_fractional_epochs_match_torch():
    results = []
    for mod, sched_mod, zeros in ((torch.optim, torch.optim.lr_scheduler,
                                   lambda: torch.zeros(1, requires_grad=True)),
                                  (optim, esched, lambda: et.zeros(1))):
        opt = mod.SGD([zeros()], lr=0.1)
        sched = sched_mod.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.01)
        lrs = []
        for epoch in np.arange(0, 20, 0.7):
            opt.step()
            sched.step(float(epoch))
            lrs.append(sched.get_last_lr()[0])
        results.append(lrs)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12)
    assert not math.isclose(results[0][0], results[0][3])
