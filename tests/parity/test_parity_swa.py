"""``ember.optim.swa_utils`` against ``torch.optim.swa_utils`` (PyTorch 2.13, float64, the same
weights and data): averaged parameters and buffers of SWA and EMA (``avg_fn`` and
``multi_avg_fn`` forms, ``use_buffers``), ``update_bn``'s statistics, ``SWALR``'s learning
rates, and the state dicts."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.optim.swa_utils as tsu  # noqa: E402

import ember.nn as enn  # noqa: E402
import ember.optim as eoptim  # noqa: E402
import ember.tensor as et  # noqa: E402
from ember.optim import swa_utils as esu  # noqa: E402


def _pair():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                             torch.nn.Linear(4, 2)).double()
    em = enn.Sequential(enn.Linear(3, 4), enn.BatchNorm1d(4), enn.Linear(4, 2)).double()
    em.load_state_dict({k: et.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    return em, tm


def _state(m):
    return {k: (v.detach().numpy() if hasattr(v, "detach") else v.numpy())
            for k, v in m.state_dict().items()}


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_single", "swa_single", "swa_buffers"])
def test_averaged_model(kind):
    em, tm = _pair()
    kw = {"swa": lambda u: {}, "ema": lambda u: {"multi_avg_fn": u.get_ema_multi_avg_fn(0.7)},
          "ema_single": lambda u: {"avg_fn": u.get_ema_avg_fn(0.7)},
          "swa_single": lambda u: {"avg_fn": u.get_swa_avg_fn()},
          "swa_buffers": lambda u: {"use_buffers": True}}[kind]
    ea, ta = esu.AveragedModel(em, **kw(esu)), tsu.AveragedModel(tm, **kw(tsu))
    eo = eoptim.SGD(em.parameters(), lr=0.1)
    to = torch.optim.SGD(tm.parameters(), lr=0.1)
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = rng.standard_normal((6, 3))
        eo.zero_grad()
        to.zero_grad()
        (em(et.from_numpy(x)) ** 2).mean().backward()
        (tm(torch.from_numpy(x)) ** 2).mean().backward()
        eo.step()
        to.step()
        ea.update_parameters(em)
        ta.update_parameters(tm)
    es, ts = _state(ea), _state(ta)
    assert sorted(es) == sorted(ts)
    for k in es:
        np.testing.assert_allclose(es[k], ts[k], atol=1e-12, err_msg=k)
    x = rng.standard_normal((5, 3))
    ea.eval()
    ta.eval()
    np.testing.assert_allclose(ea(et.from_numpy(x)).detach().numpy(),
                               ta(torch.from_numpy(x)).detach().numpy(), atol=1e-12)


def test_update_bn():
    em, tm = _pair()
    rng = np.random.default_rng(4)
    data = [rng.standard_normal((5, 3)) * 2 + 1 for _ in range(3)]
    esu.update_bn([et.from_numpy(d) for d in data], em)
    tsu.update_bn([torch.from_numpy(d) for d in data], tm)
    es, ts = _state(em), _state(tm)
    for k in es:
        np.testing.assert_allclose(es[k], ts[k], atol=1e-12, err_msg=k)
    assert em[1].momentum == tm[1].momentum


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("epochs", [0, 1, 3])
def test_swalr(strategy, epochs):
    ew, tw = et.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
    eo = eoptim.SGD([ew], lr=0.5, momentum=0.9)
    to = torch.optim.SGD([tw], lr=0.5, momentum=0.9)
    es = esu.SWALR(eo, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
    ts = tsu.SWALR(to, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
    for _ in range(6):
        np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-14)
        eo.step()
        to.step()
        es.step()
        ts.step()
    assert eo.param_groups[0]["swa_lr"] == to.param_groups[0]["swa_lr"]
