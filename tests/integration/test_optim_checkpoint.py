"""Checkpointing mid-training: model parameters, optimizer state and scheduler state saved
with ``ember.tensor.save``, loaded into fresh objects with ``ember.tensor.load``, and trained
on, give exactly the parameters of a run that never stopped.

The model is a tiny two-layer tanh network over raw ember tensors; gradients come from
``ember.autograd`` (``loss.backward()``).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et
from ember import optim
from ember.autograd import no_grad
from ember.optim import lr_scheduler

TOTAL, SPLIT = 12, 5


def _data():
    rng = np.random.default_rng(11)
    x = et.tensor(rng.standard_normal((16, 4)).tolist(), dtype=et.float64)
    return x, et.tensor(rng.standard_normal((16, 1)).tolist(), dtype=et.float64)


def _model(seed):
    rng = np.random.default_rng(seed)
    shapes = {"w1": (4, 8), "b1": (8,), "w2": (8, 1), "b2": (1,)}
    params = {}
    for name, shape in shapes.items():
        t = et.tensor((rng.standard_normal(shape) * 0.5).tolist(), dtype=et.float64)
        t.requires_grad_(True)
        params[name] = t
    return params


def _loss(params, x, y):
    h = et.tanh(x @ params["w1"] + params["b1"])
    out = h @ params["w2"] + params["b2"]
    diff = out - y
    return (diff * diff).mean()


def _train(params, opt, sched, steps, x, y):
    for _ in range(steps):
        opt.zero_grad()
        loss = _loss(params, x, y)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()


OPTIMIZERS = [
    (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
     lambda o: lr_scheduler.StepLR(o, step_size=3, gamma=0.5)),
    (lambda ps: optim.Adam(ps, lr=0.05, amsgrad=True),
     lambda o: lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=TOTAL)),
    (lambda ps: optim.AdamW(ps, lr=0.05, weight_decay=0.1),
     lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=7)),
    (lambda ps: optim.Adamax(ps, lr=0.05), None),
    (lambda ps: optim.NAdam(ps, lr=0.05, weight_decay=0.01),
     lambda o: lr_scheduler.MultiStepLR(o, milestones=[4, 8], gamma=0.3)),
    (lambda ps: optim.RAdam(ps, lr=0.05, decoupled_weight_decay=True, weight_decay=0.1), None),
    (lambda ps: optim.RMSprop(ps, lr=0.01, centered=True, momentum=0.5),
     lambda o: lr_scheduler.CyclicLR(o, base_lr=0.005, max_lr=0.02, step_size_up=3)),
    (lambda ps: optim.Adagrad(ps, lr=0.1, lr_decay=0.01), None),
    (lambda ps: optim.Adadelta(ps, lr=1.0),
     lambda o: lr_scheduler.LinearLR(o, start_factor=0.5, total_iters=6)),
]
IDS = ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "Adadelta"]


def _groups(params):
    return [{"params": [params["w1"], params["b1"]]},
            {"params": [params["w2"], params["b2"]]}]


@pytest.mark.parametrize("make_opt, make_sched", OPTIMIZERS, ids=IDS)
def test_resume_from_checkpoint_matches_uninterrupted_run(tmp_path, make_opt, make_sched):
    x, y = _data()

    ref = _model(0)
    ref_opt = make_opt(_groups(ref))
    ref_sched = make_sched(ref_opt) if make_sched else None
    _train(ref, ref_opt, ref_sched, TOTAL, x, y)

    first = _model(0)
    opt = make_opt(_groups(first))
    sched = make_sched(opt) if make_sched else None
    _train(first, opt, sched, SPLIT, x, y)
    path = tmp_path / "ckpt.safetensors"
    et.save({"model": {k: v.detach() for k, v in first.items()},
             "optimizer": opt.state_dict(),
             "scheduler": sched.state_dict() if sched else {},
             "epoch": SPLIT}, path)
    del first, opt, sched

    ckpt = et.load(path)
    assert ckpt["epoch"] == SPLIT
    second = _model(99)  # different initial values: everything must come from the file
    with no_grad():
        for name, p in second.items():
            p.copy_(ckpt["model"][name])
    opt = make_opt(_groups(second))
    sched = None
    if make_sched:  # as in PyTorch: build and load the scheduler, then the optimizer
        sched = make_sched(opt)
        sched.load_state_dict(ckpt["scheduler"])
    opt.load_state_dict(ckpt["optimizer"])
    if sched is not None:
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
    _train(second, opt, sched, TOTAL - SPLIT, x, y)

    for name in ref:
        np.testing.assert_array_equal(second[name].detach().numpy(), ref[name].detach().numpy(),
                                      err_msg=name)
    assert not np.array_equal(ref["w1"].detach().numpy(), _model(0)["w1"].detach().numpy())


def test_lbfgs_state_survives_a_checkpoint(tmp_path):
    x, y = _data()

    def run(params, opt, steps):
        def closure():
            opt.zero_grad()
            loss = _loss(params, x, y)
            loss.backward()
            return loss
        for _ in range(steps):
            opt.step(closure)

    ref = _model(0)
    ref_opt = optim.LBFGS(list(ref.values()), max_iter=3, history_size=4)
    run(ref, ref_opt, 4)

    first = _model(0)
    opt = optim.LBFGS(list(first.values()), max_iter=3, history_size=4)
    run(first, opt, 2)
    path = tmp_path / "lbfgs.safetensors"
    et.save({"model": {k: v.detach() for k, v in first.items()},
             "optimizer": opt.state_dict()}, path)
    ckpt = et.load(path)
    second = _model(5)
    with no_grad():
        for name, p in second.items():
            p.copy_(ckpt["model"][name])
    opt = optim.LBFGS(list(second.values()), max_iter=3, history_size=4)
    opt.load_state_dict(ckpt["optimizer"])
    run(second, opt, 2)
    for name in ref:
        np.testing.assert_allclose(second[name].detach().numpy(), ref[name].detach().numpy(),
                                   rtol=1e-12, atol=1e-14)
