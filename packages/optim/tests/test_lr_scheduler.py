"""lr_scheduler against hand-computed closed forms (no torch), state_dict round trips, and
the errors and warnings PyTorch gives."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import ember.tensor as et
from ember import optim
from ember.optim import lr_scheduler as S

EPOCHS = 30


def _opt(lr=0.1, n_groups=1, cls=optim.SGD, **kw):
    return cls([{"params": [et.zeros(1)], "lr": lr} for _ in range(n_groups)], **kw)


def _lrs(opt, sched, epochs=EPOCHS, metrics=None):
    out = [sched.get_last_lr()[0]]
    for e in range(epochs):
        opt.step()
        sched.step() if metrics is None else sched.step(metrics[e])
        out.append(sched.get_last_lr()[0])
        assert opt.param_groups[0]["lr"] == out[-1]
    return out


class _Half:
    """A picklable schedule function with state."""

    def __init__(self):
        self.rate = 0.5

    def __call__(self, epoch):
        return self.rate ** epoch


CLOSED_FORMS = {
    "StepLR": (lambda o: S.StepLR(o, step_size=4, gamma=0.5),
               lambda e: 0.1 * 0.5 ** (e // 4)),
    "MultiStepLR": (lambda o: S.MultiStepLR(o, milestones=[3, 8, 8, 20], gamma=0.1),
                    lambda e: 0.1 * 0.1 ** sum(e >= m for m in (3, 8, 8, 20))),
    "ConstantLR": (lambda o: S.ConstantLR(o, factor=0.5, total_iters=6),
                   lambda e: 0.1 * (0.5 if e < 6 else 1.0)),
    "LinearLR": (lambda o: S.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=10),
                 lambda e: 0.1 * (0.25 + 0.5 * min(e, 10) / 10)),
    "ExponentialLR": (lambda o: S.ExponentialLR(o, gamma=0.9), lambda e: 0.1 * 0.9 ** e),
    "PolynomialLR": (lambda o: S.PolynomialLR(o, total_iters=12, power=2.0),
                     lambda e: 0.1 * (1 - min(e, 12) / 12) ** 2),
    "CosineAnnealingLR": (lambda o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.01),
                          lambda e: 0.01 + 0.09 * (1 + math.cos(math.pi * e / 10)) / 2),
    "LambdaLR": (lambda o: S.LambdaLR(o, lr_lambda=_Half()), lambda e: 0.1 * 0.5 ** e),
    "MultiplicativeLR": (lambda o: S.MultiplicativeLR(o, lr_lambda=lambda e: 0.8),
                         lambda e: 0.1 * 0.8 ** e),
    "CosineAnnealingWarmRestarts": (
        lambda o: S.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=0.0),
        lambda e: _sgdr(e, 4, 2, 0.1)),
    "CyclicLR": (lambda o: S.CyclicLR(o, base_lr=0.02, max_lr=0.1, step_size_up=5,
                                      cycle_momentum=False),
                 lambda e: 0.02 + 0.08 * max(0.0, 1 - abs(e / 5 - 2 * math.floor(1 + e / 10) + 1))),
}


def _sgdr(e, t0, mult, base):
    t_i, t_cur = t0, e
    while t_cur >= t_i:
        t_cur -= t_i
        t_i *= mult
    return base * (1 + math.cos(math.pi * t_cur / t_i)) / 2


@pytest.mark.parametrize("name", sorted(CLOSED_FORMS))
def test_schedule_matches_closed_form(name):
    make, form = CLOSED_FORMS[name]
    opt = _opt()
    got = _lrs(opt, make(opt))
    np.testing.assert_allclose(got, [form(e) for e in range(EPOCHS + 1)], rtol=1e-9,
                               atol=1e-15)
    assert len(set(np.round(got, 12))) >= 2


def test_cosine_annealing_recursive_form_continues_past_t_max():
    opt = _opt()
    got = _lrs(opt, S.CosineAnnealingLR(opt, T_max=5), epochs=20)
    expected = [0.1 * (1 + math.cos(math.pi * e / 5)) / 2 for e in range(21)]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-15)


def test_one_cycle_endpoints_and_momentum():
    opt = _opt(cls=optim.SGD, momentum=0.9)
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=20, pct_start=0.25, div_factor=10,
                         final_div_factor=100)
    lrs = _lrs(opt, sched, epochs=19)
    assert lrs[0] == pytest.approx(0.1)
    assert max(lrs) == pytest.approx(1.0)
    assert lrs[np.argmax(lrs)] == lrs[4]  # end of warm-up: pct_start * total - 1
    assert lrs[-1] == pytest.approx(0.1 / 100)
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.95)
    with pytest.raises(ValueError, match="Tried to step 21 times"):
        opt.step()
        sched.step()
        opt.step()
        sched.step()


def test_cyclic_lr_cycles_momentum_inversely():
    opt = _opt(momentum=0.9)
    sched = S.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2, base_momentum=0.8,
                       max_momentum=0.9)
    moms = []
    for _ in range(4):
        opt.step()
        sched.step()
        moms.append(opt.param_groups[0]["momentum"])
    np.testing.assert_allclose(moms, [0.85, 0.8, 0.85, 0.9])


def test_sequential_and_chained():
    opt = _opt()
    seq = S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=100),
                               S.ExponentialLR(opt, gamma=0.5)], milestones=[3])
    got = _lrs(opt, seq, epochs=6)
    np.testing.assert_allclose(got, [0.05, 0.05, 0.05, 0.1, 0.05, 0.025, 0.0125])

    opt = _opt()
    chain = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=2),
                                S.ExponentialLR(opt, gamma=0.9)])
    got = _lrs(opt, chain, epochs=4)
    np.testing.assert_allclose(got, [0.05, 0.045, 0.081, 0.0729, 0.06561])


def test_reduce_lr_on_plateau():
    opt = _opt()
    sched = S.ReduceLROnPlateau(opt, patience=1, factor=0.5, min_lr=0.02)
    metrics = [1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]
    got = _lrs(opt, sched, epochs=len(metrics), metrics=metrics)
    assert got == [0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.02]


def test_state_dict_round_trip_resumes_schedule():
    opt = _opt()
    sched = S.MultiStepLR(opt, milestones=[2, 5], gamma=0.5)
    for _ in range(3):
        opt.step()
        sched.step()
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 3
    opt2 = _opt()
    opt2.load_state_dict(opt.state_dict())
    sched2 = S.MultiStepLR(opt2, milestones=[2, 5], gamma=0.5)
    # a JSON round trip makes the Counter's keys strings
    sd = dict(sd, milestones={str(k): v for k, v in sd["milestones"].items()})
    sched2.load_state_dict(sd)
    for _ in range(4):
        for o, s in ((opt, sched), (opt2, sched2)):
            o.step()
            s.step()
        assert sched.get_last_lr() == sched2.get_last_lr()
    assert sched2.get_last_lr() == [0.025]


def test_lambda_state_dict_excludes_functions_and_keeps_object_state():
    opt = _opt()
    fn = _Half()
    sched = S.LambdaLR(opt, lr_lambda=fn)
    plain = S.LambdaLR(_opt(), lr_lambda=lambda e: 1.0)
    assert plain.state_dict()["lr_lambdas"] == [None]
    fn.rate = 0.25
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.25}]
    pickle.dumps(sd)
    other = _Half()
    sched2 = S.LambdaLR(_opt(), lr_lambda=other)
    sched2.load_state_dict(sd)
    assert other.rate == 0.25


def test_scheduler_errors_and_warnings():
    opt = _opt()
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR(object(), step_size=1)
    with pytest.raises(ValueError, match="between 0 and 1"):
        S.ConstantLR(opt, factor=2.0)
    with pytest.raises(ValueError, match="Expected positive integer T_0"):
        S.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(_opt(), step_size=1, last_epoch=3)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        S.LambdaLR(_opt(n_groups=2), lr_lambda=[_Half()])
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        S.SequentialLR(opt, [S.StepLR(opt, 1)], milestones=[2])
    sched = S.StepLR(_opt(), step_size=1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()


def test_multiple_groups_keep_their_own_rates():
    opt = optim.SGD([{"params": [et.zeros(1)], "lr": 0.1},
                     {"params": [et.zeros(1)], "lr": 1.0}], lr=0.5)
    sched = S.ExponentialLR(opt, gamma=0.5)
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [0.05, 0.5]
    assert sched.base_lrs == [0.1, 1.0]
