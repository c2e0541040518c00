"""ASGD, Rprop, Adafactor and Muon against NumPy references written from PyTorch's
documented algorithms (float64), on contiguous and transposed parameters; their state_dict
round trip and argument errors. No torch import."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import ember.tensor as et
from ember import optim
from ember.optim.muon import _adjust_lr, _bf16, _zeropower_via_newtonschulz


def _asgd(p, g, s, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
          maximize=False):
    s.setdefault("eta", lr)
    s.setdefault("mu", 1.0)
    s.setdefault("ax", np.zeros_like(p))
    s["t"] = t = s.get("t", 0) + 1
    g = -g if maximize else g
    if weight_decay:
        g = g + weight_decay * p
    eta = np.float32(s["eta"])  # PyTorch keeps eta and mu in float32 0-d tensors
    p = p * (1 - lambd * float(eta)) - float(eta) * g
    s["ax"] = s["ax"] + (p - s["ax"]) * np.float32(s["mu"]) if s["mu"] != 1 else p.copy()
    s["eta"] = lr / (1 + lambd * lr * t) ** alpha
    s["mu"] = float(np.float32(1 / max(1, t - t0)))
    return p


def _rprop(p, g, s, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    s.setdefault("prev", np.zeros_like(p))
    s.setdefault("size", np.full_like(p, lr))
    g = -g if maximize else g
    prod = g * s["prev"]
    factor = np.where(prod > 0, etas[1], np.where(prod < 0, etas[0], 1.0))
    s["size"] = np.clip(s["size"] * factor, *step_sizes)
    g = np.where(prod < 0, 0.0, g)
    s["prev"] = g
    return p - np.sign(g) * s["size"]


def _adafactor(p, g, s, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
               weight_decay=0.0, maximize=False):
    eps1 = np.finfo(p.dtype).eps if eps[0] is None else eps[0]
    g = -g if maximize else g
    s["t"] = t = s.get("t", 0) + 1
    beta = t ** beta2_decay
    alpha = max(eps[1], np.sqrt(np.mean(p * p))) * min(lr, 1 / math.sqrt(t))
    p = p * (1 - lr * weight_decay)
    if g.ndim > 1:
        s["r"] = s.get("r", 0.0) * (1 - beta) + beta * np.mean(g * g, -1, keepdims=True)
        s["c"] = s.get("c", 0.0) * (1 - beta) + beta * np.mean(g * g, -2, keepdims=True)
        v = s["r"] * s["c"] / np.maximum(s["r"].mean(-2, keepdims=True), eps1)
    else:
        s["v"] = s.get("v", 0.0) * (1 - beta) + beta * g * g
        v = s["v"]
    u = g / np.sqrt(np.maximum(v, eps1 * eps1))
    return p - alpha / max(1.0, np.sqrt(np.mean(u * u)) / d) * u


REFERENCES = {"ASGD": _asgd, "Rprop": _rprop, "Adafactor": _adafactor}
CONFIGS = [
    ("ASGD", {"lr": 0.05}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 3, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.05, "t0": 2, "maximize": True}),
    ("Rprop", {"lr": 0.01}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.08)}),
    ("Rprop", {"lr": 0.01, "maximize": True}),
    ("Adafactor", {"lr": 0.01}),
    ("Adafactor", {"lr": 0.05, "beta2_decay": -0.5, "d": 1.5, "weight_decay": 0.1}),
    ("Adafactor", {"lr": 0.01, "eps": (1e-20, 1e-2), "maximize": True}),
]


def _ids(case):
    return case[0] + "-" + "-".join(f"{k}={v}" for k, v in case[1].items())


def _run(name, kwargs, shape, transpose=False, steps=8):
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal(shape)
    p = et.from_numpy(p0.copy())
    if transpose:
        p = p.t()
    opt = getattr(optim, name)([p], **kwargs)
    expected, state = (p0.T.copy() if transpose else p0.copy()), {}
    for _ in range(steps):
        # a gradient that keeps its sign on some entries and flips on others (Rprop)
        g = rng.standard_normal(expected.shape) + 0.5
        p.grad = et.from_numpy(g.copy())
        opt.step()
        expected = REFERENCES[name](expected, g, state, **kwargs)
    return p.detach().numpy(), expected, p0


@pytest.mark.parametrize("shape, transpose", [((4, 3), False), ((4, 3), True), ((5,), False),
                                              ((2, 3, 4), False)])
@pytest.mark.parametrize("case", CONFIGS, ids=[_ids(c) for c in CONFIGS])
def test_update_matches_reference(case, shape, transpose):
    name, kwargs = case
    ours, expected, p0 = _run(name, kwargs, shape, transpose)
    np.testing.assert_allclose(ours, expected, rtol=1e-9, atol=1e-12)
    assert not np.allclose(ours, p0.T if transpose else p0)


def test_asgd_averages_the_iterates_after_t0():
    p = et.zeros(2, dtype=et.float64)
    opt = optim.ASGD([p], lr=0.1, lambd=0.0, t0=2)
    iterates = []
    for k in range(6):
        p.grad = et.tensor([1.0, -2.0], dtype=et.float64) * (k + 1)
        opt.step()
        iterates.append(p.tolist())
    # mu = 1 / max(1, t - t0) after step t: ax follows the iterates up to step t0 + 2, then
    # averages them from there on
    np.testing.assert_allclose(opt.state[p]["ax"].tolist(), np.mean(iterates[3:], 0),
                               rtol=1e-6)


def _ns_float64(g, coefficients, steps, eps):
    """The quintic Newton-Schulz iteration in float64 (no bfloat16 rounding)."""
    a, b, c = coefficients
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / max(np.linalg.norm(x), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if g.shape[0] > g.shape[1] else x


def test_bf16_rounding_is_to_nearest_even():
    x = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -9, 1 + 2 ** -9, -3.14159], dtype=np.float32)
    # 1 + 2^-8 and 1 + 2^-9 lie at or below half an ulp (2^-7) above 1: both round to 1
    np.testing.assert_array_equal(_bf16(x), [1.0, 1.0, 1 + 2 ** -7, 1.0, -3.140625])


@pytest.mark.parametrize("shape", [(6, 4), (3, 5)])
def test_newton_schulz_orthogonalizes(shape):
    rng = np.random.default_rng(1)
    g = rng.standard_normal(shape).astype(np.float32)
    coeffs = (3.4445, -4.7750, 2.0315)
    ours = _zeropower_via_newtonschulz(g, coeffs, 5, 1e-7)
    ref = _ns_float64(g.astype(np.float64), coeffs, 5, 1e-7)
    assert ours.shape == shape
    # bfloat16 keeps 8 significant bits: the result agrees with float64 to a few percent
    np.testing.assert_allclose(ours, ref, atol=0.08 * np.abs(ref).max())
    # the quintic iteration drives the singular values into roughly [0.7, 1.2]
    sv = np.linalg.svd(ours.astype(np.float64), compute_uv=False)
    assert sv.min() > 0.5 and sv.max() < 1.3


def test_muon_step_against_float64_reference():
    rng = np.random.default_rng(2)
    p0 = rng.standard_normal((6, 4)).astype(np.float32)
    p = et.from_numpy(p0.copy())
    opt = optim.Muon([p], lr=0.02, weight_decay=0.1, momentum=0.9)
    buf, expected = np.zeros((6, 4)), p0.astype(np.float64)
    coeffs = (3.4445, -4.7750, 2.0315)
    for _ in range(4):
        g = rng.standard_normal((6, 4)).astype(np.float32)
        p.grad = et.from_numpy(g.copy())
        opt.step()
        buf = 0.9 * buf + 0.1 * g
        update = _ns_float64(0.1 * g + 0.9 * buf, coeffs, 5, 1e-7)  # Nesterov
        expected = expected * (1 - 0.02 * 0.1) - 0.02 * math.sqrt(6 / 4) * update
    moved = np.abs(expected - p0).max()
    np.testing.assert_allclose(p.numpy(), expected, atol=0.03 * moved)
    assert _adjust_lr(1.0, "match_rms_adamw", (6, 4)) == pytest.approx(0.2 * math.sqrt(6))
    assert _adjust_lr(1.0, None, (3, 5)) == 1.0


@pytest.mark.parametrize("name, kwargs", [("ASGD", {"t0": 2}), ("Rprop", {}),
                                          ("Adafactor", {}), ("Muon", {})])
def test_state_dict_round_trip(name, kwargs, tmp_path):
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal((4, 3))

    def fresh():
        p = et.from_numpy(p0.copy())
        return p, getattr(optim, name)([p], lr=0.01, **kwargs)

    p, opt = fresh()
    grads = [rng.standard_normal((4, 3)) for _ in range(6)]
    for g in grads[:3]:
        p.grad = et.from_numpy(g.copy())
        opt.step()
    path = tmp_path / "opt.pt"
    et.save(opt.state_dict(), path)
    q, opt2 = fresh()
    q.data = p.detach().clone()
    opt2.load_state_dict(et.load(path))
    assert sorted(opt2.state[q]) == sorted(opt.state[p])
    for g in grads[3:]:
        for t, o in ((p, opt), (q, opt2)):
            t.grad = et.from_numpy(g.copy())
            o.step()
    np.testing.assert_array_equal(q.numpy(), p.numpy())
    assert copy.deepcopy(opt.state_dict())["param_groups"][0]["lr"] == 0.01


@pytest.mark.parametrize("make, error, message", [
    (lambda p: optim.ASGD(p, lr=-1), ValueError, "Invalid learning rate: -1"),
    (lambda p: optim.ASGD(p, weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
    (lambda p: optim.ASGD(p, lr=et.ones(2)), ValueError, "Tensor lr must be 1-element"),
    (lambda p: optim.Rprop(p, lr=-1), ValueError, "Invalid learning rate: -1"),
    (lambda p: optim.Rprop(p, etas=(1.2, 0.5)), ValueError, "Invalid eta values: 1.2, 0.5"),
    (lambda p: optim.Adafactor(p, lr=-1), ValueError, "Learning rate should be >= 0 but is: -1"),
    (lambda p: optim.Adafactor(p, beta2_decay=0.5), ValueError,
     "beta2_decay should be <= 0 but is: 0.5"),
    (lambda p: optim.Adafactor(p, eps=(-1, 1e-3)), ValueError,
     "epsilon1 should be >= 0 but is: -1"),
    (lambda p: optim.Adafactor(p, eps=(None, -1)), ValueError,
     "epsilon2 should be >= 0 but is: -1"),
    (lambda p: optim.Adafactor(p, d=0.5), ValueError,
     "Clipping threshold d should be >= 1 but is: 0.5"),
    (lambda p: optim.Adafactor(p, weight_decay=-1), ValueError,
     "weight_decay should be >= 0 but is: -1"),
    (lambda p: optim.Muon(p, lr=-1), ValueError, "Learning rate should be >= 0 but is: -1"),
    (lambda p: optim.Muon(p, momentum=-1), ValueError, "momentum should be >= 0 but is: -1"),
    (lambda p: optim.Muon(p, weight_decay=-1), ValueError,
     "weight decay should be >= 0 but is: -1"),
    (lambda p: optim.Muon(p, adjust_lr_fn="x"), ValueError,
     "Adjust learning rate function x is not supported"),
    (lambda p: optim.Muon([et.zeros(3)]), ValueError,
     "Muon only supports 2D parameters whereas we found a parameter with size"),
    (lambda p: optim.Muon(p, ns_steps=100).step(), ValueError,
     "Number of steps must be less than 100"),
])
def test_bad_arguments_raise_like_torch(make, error, message):
    p = et.zeros(2, 2)
    p.grad = et.ones(2, 2)
    with pytest.raises(error, match=message.replace(".", r"\.").replace("(", r"\(")):
        make([p])
