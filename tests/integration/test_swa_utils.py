"""``ember.optim.swa_utils`` (it needs ember-nn, so its tests live here, where every
distribution is installed): the SWA and EMA averages against NumPy over a few training steps,
the buffers following the model or averaged, ``update_bn`` against batch norm's statistics of
the whole data, ``SWALR``'s schedule against its formula, and the module's docstring example.
Parity with PyTorch: ``tests/parity/test_parity_swa.py``."""
from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

import ember.nn as nn
import ember.optim as optim
import ember.tensor as et
from ember.optim import swa_utils


def _snapshots(model, steps=4, seed=0):
    """Train ``model`` a few SGD steps; the flat parameters after each."""
    rng = np.random.default_rng(seed)
    opt = optim.SGD(model.parameters(), lr=0.1)
    out = []
    for _ in range(steps):
        x = et.from_numpy(rng.standard_normal((8, 3)))
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()
        out.append(np.concatenate([p.detach().numpy().ravel() for p in model.parameters()]))
    return out


def _flat(m):
    return np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_single", "swa_single"])
def test_averages(kind):
    et.manual_seed(0)
    model = nn.Linear(3, 2).double()
    fns = {"swa": {}, "ema": {"multi_avg_fn": swa_utils.get_ema_multi_avg_fn(0.8)},
           "ema_single": {"avg_fn": swa_utils.get_ema_avg_fn(0.8)},
           "swa_single": {"avg_fn": swa_utils.get_swa_avg_fn()}}
    avg = swa_utils.AveragedModel(model, **fns[kind])
    snaps = []
    rng = np.random.default_rng(1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    for _ in range(4):
        x = et.from_numpy(rng.standard_normal((8, 3)))
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()
        snaps.append(_flat(model))
        avg.update_parameters(model)
    if kind.startswith("swa"):
        ref = np.mean(snaps, 0)
    else:
        ref = snaps[0]
        for s in snaps[1:]:
            ref = 0.8 * ref + 0.2 * s
    assert np.allclose(_flat(avg), ref, atol=1e-12)
    assert int(avg.n_averaged) == 4
    x = et.randn(2, 3, dtype=et.float64)
    assert np.allclose(avg(x).detach().numpy(), avg.module(x).detach().numpy())
    assert sorted(avg.state_dict()) == ["module.bias", "module.weight", "n_averaged"]


def test_buffers_follow_or_are_averaged():
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).double()
    follow = swa_utils.AveragedModel(net)
    averaged = swa_utils.AveragedModel(net, use_buffers=True)
    means = []
    for step in range(3):
        net(et.from_numpy(np.random.default_rng(step).standard_normal((6, 3)) + step))
        means.append(net[1].running_mean.numpy().copy())
        follow.update_parameters(net)
        averaged.update_parameters(net)
    assert np.array_equal(follow.module[1].running_mean.numpy(), means[-1])
    assert np.allclose(averaged.module[1].running_mean.numpy(), np.mean(means, 0))
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(net, avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    with pytest.raises(ValueError, match="Invalid decay value"):
        swa_utils.get_ema_multi_avg_fn(1.5)


def test_update_bn_recomputes_the_statistics():
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=0.3)).double().eval()
    rng = np.random.default_rng(5)
    batches = [et.from_numpy(rng.standard_normal((5, 3)) * 2 + 1) for _ in range(4)]
    swa_utils.update_bn([(b, None) for b in batches], net)
    h = np.concatenate([net[0](b).detach().numpy() for b in batches])
    per = [net[0](b).detach().numpy() for b in batches]
    assert np.allclose(net[1].running_mean.numpy(), np.mean([p.mean(0) for p in per], 0))
    assert np.allclose(net[1].running_var.numpy(),
                       np.mean([p.var(0, ddof=1) for p in per], 0))
    assert net[1].momentum == 0.3 and not net.training and h.shape == (20, 4)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swalr_schedule(strategy):
    w = et.zeros(1, requires_grad=True)
    opt = optim.SGD([w], lr=1.0)
    sched = swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=4, anneal_strategy=strategy)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(6):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    f = (lambda t: (1 - math.cos(math.pi * t)) / 2) if strategy == "cos" else (lambda t: t)
    ref = [0.1 * f(min(1, k / 4)) + 1.0 * (1 - f(min(1, k / 4))) for k in range(7)]
    assert np.allclose(lrs, ref)
    with pytest.raises(ValueError, match="anneal_strategy must by one of"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=-1)


def test_docstring_example():
    assert doctest.testmod(swa_utils, extraglobs={"et": et}).failed == 0
