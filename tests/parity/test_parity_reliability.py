"""Issue 21 against PyTorch: edge-of-domain gradients, errors where PyTorch raises."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.nn.functional as F  # noqa: E402
import ember.tensor as et  # noqa: E402

TF = torch.nn.functional


def _both(fn_e, fn_t, *values, dtype=np.float64):
    xe = [et.tensor(np.asarray(v, dtype), requires_grad=True) for v in values]
    xt = [torch.tensor(np.asarray(v, dtype), requires_grad=True) for v in values]
    fn_e(*xe).backward()
    fn_t(*xt).backward()
    for a, b in zip(xe, xt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-12)


def test_bce_saturated_sigmoid_gradient():
    _both(lambda x: F.binary_cross_entropy(et.sigmoid(x), et.ones(3)),
          lambda x: TF.binary_cross_entropy(torch.sigmoid(x), torch.ones(3)),
          [20.0, 5.0, -3.0], dtype=np.float32)


def test_cross_entropy_all_ignored():
    _both(lambda x: F.cross_entropy(x, et.tensor([-100, -100])),
          lambda x: TF.cross_entropy(x, torch.tensor([-100, -100])), np.ones((2, 3)))


def test_std_constant_cumprod_zero_atan2_origin():
    _both(lambda x: x.std(), lambda x: x.std(), [2.0, 2.0, 2.0])
    _both(lambda x: x.cumprod(0).sum(), lambda x: x.cumprod(0).sum(), [2.0, 0.0, 3.0])
    _both(lambda x: (x.cumprod(1) * et.arange(8.0, dtype=et.float64).reshape(2, 4)).sum(),
          lambda x: (x.cumprod(1) * torch.arange(8.0, dtype=torch.float64).reshape(2, 4)).sum(),
          [[2.0, 0.0, 3.0, 0.0], [0.0, 0.0, 1.0, 2.0]])
    _both(lambda a, b: et.atan2(a, b).sum(), lambda a, b: torch.atan2(a, b).sum(),
          [0.0, 1.0], [0.0, -2.0])


def test_cumsum_float32_accumulation():
    e = et.cumsum(et.full((1_000_000,), 0.1), 0)[-1].item()
    t = torch.cumsum(torch.full((1_000_000,), 0.1), 0)[-1].item()
    assert e == t


def test_max_unpool_overlapping_windows():
    a = np.zeros((1, 1, 5, 5), np.float32)
    a[0, 0, 2, 2] = 5.0
    a[0, 0, 0, 4] = 1.0
    oe, ie = F.max_pool2d(et.tensor(a), 3, stride=1, return_indices=True)
    ot, it = TF.max_pool2d(torch.tensor(a), 3, stride=1, return_indices=True)
    ue = F.max_unpool2d(oe, ie, 3, stride=1, output_size=(5, 5))
    ut = TF.max_unpool2d(ot, it, 3, stride=1, output_size=(5, 5))
    np.testing.assert_array_equal(ue.numpy(), ut.numpy())


def _raise_alike(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(Exception) as ee:
        fe()
    base = next(c for c in type(te.value).__mro__ if c.__module__ == "builtins")
    assert isinstance(ee.value, base), (ee.value, te.value)


@pytest.mark.parametrize("case", [
    (lambda m: m.tensor([5, 3]) // m.tensor([0, 1])),
    (lambda m: m.tensor([5, 3]) % 0),
    (lambda m: m.full((2,), float("nan"), dtype=m.int64)),
    (lambda m: m.addcdiv(m.tensor([1, 2]), m.tensor([1, 2]), m.tensor([1, 2]))),
    (lambda m: m.lerp(m.zeros(3), m.zeros(4), 0.5)),
    (lambda m: m.empty(10**13)),
])
def test_tensor_errors_match(case):
    _raise_alike(lambda: case(et), lambda: case(torch))


def test_nn_errors_match():
    _raise_alike(lambda: F.one_hot(et.tensor([0, 1, 10**12])),
                 lambda: TF.one_hot(torch.tensor([0, 1, 10**12])))
    w = np.ones((5, 3), np.float32)
    _raise_alike(lambda: F.embedding_bag(et.tensor([0, 1, 2]), et.tensor(w), et.tensor([0, 5])),
                 lambda: TF.embedding_bag(torch.tensor([0, 1, 2]), torch.tensor(w),
                                          torch.tensor([0, 5])))
    lp = np.log(np.full((5, 1, 4), 0.25, np.float32))
    _raise_alike(lambda: F.ctc_loss(et.tensor(lp), et.tensor([[1, 2]]), et.tensor([5]),
                                    et.tensor([4])),
                 lambda: TF.ctc_loss(torch.tensor(lp), torch.tensor([[1, 2]]),
                                     torch.tensor([5]), torch.tensor([4])))
    import ember.nn as enn
    _raise_alike(lambda: enn.LSTM(3, 4)(et.zeros(0, 2, 3)),
                 lambda: torch.nn.LSTM(3, 4)(torch.zeros(0, 2, 3)))


def test_grad_assignment_and_saved_target_errors_match():
    pe, pt = et.zeros(3, requires_grad=True), torch.zeros(3, requires_grad=True)

    def set_e():
        pe.grad = et.zeros(1)

    def set_t():
        pt.grad = torch.zeros(1)
    _raise_alike(set_e, set_t)

    def nll(m, fn):
        x = m.zeros(3, 4, requires_grad=True)
        t = m.tensor([0, 1, 2])
        out = fn(x, t)
        t[0] = 3
        out.backward()
    _raise_alike(lambda: nll(et, F.nll_loss), lambda: nll(torch, TF.nll_loss))
    _raise_alike(lambda: nll(et, F.cross_entropy), lambda: nll(torch, TF.cross_entropy))
