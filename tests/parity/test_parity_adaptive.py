"""``nn.AdaptiveLogSoftmaxWithLoss`` against PyTorch 2.13 (float64, the same weights): the
per-row output and the loss with their gradients, batched and unbatched, ``log_prob`` and
``predict``, the module's repr and state dict, and the errors of bad cutoffs and targets."""
from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.nn as nn  # noqa: E402
import ember.tensor as et  # noqa: E402


def _pair(cutoffs, head_bias, in_features=16, n_classes=30, div_value=2.0):
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs,
                                             div_value=div_value, head_bias=head_bias).double()
    em = nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, div_value=div_value,
                                       head_bias=head_bias).double()
    em.load_state_dict({k: et.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    return em, tm


@pytest.mark.parametrize("cutoffs", [[5], [4, 12, 20], [10, 29]])
@pytest.mark.parametrize("head_bias", [False, True])
def test_output_loss_gradients_log_prob_predict(cutoffs, head_bias):
    em, tm = _pair(cutoffs, head_bias)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    rng = np.random.default_rng(len(cutoffs))
    x = rng.standard_normal((9, 16)) * 3
    y = rng.integers(0, 30, 9)
    y[:3] = [0, cutoffs[-1], 29]
    ex = et.from_numpy(x.copy()).requires_grad_()
    tx = torch.from_numpy(x.copy()).requires_grad_()
    eo, to = em(ex, et.from_numpy(y)), tm(tx, torch.from_numpy(y))
    np.testing.assert_allclose(eo.output.detach().numpy(), to.output.detach().numpy(),
                               atol=1e-12)
    np.testing.assert_allclose(eo.loss.item(), to.loss.item(), atol=1e-12)
    (eo.loss + eo.output.sum()).backward()
    (to.loss + to.output.sum()).backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), atol=1e-11)
    for (k, p), (_, q) in zip(em.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-11, err_msg=k)
    np.testing.assert_allclose(em.log_prob(ex).detach().numpy(),
                               tm.log_prob(tx).detach().numpy(), atol=1e-12)
    assert em.predict(ex).tolist() == tm.predict(tx).tolist()
    e1, t1 = em(ex[0], et.tensor(int(y[0]))), tm(tx[0], torch.tensor(int(y[0])))
    assert tuple(e1.output.shape) == tuple(t1.output.shape) == ()
    np.testing.assert_allclose(e1.output.item(), t1.output.item(), atol=1e-12)
    for fn in ("log_prob", "predict"):  # rows only, as PyTorch's
        with pytest.raises(IndexError):
            getattr(tm, fn)(tx[1])
        with pytest.raises(IndexError):
            getattr(em, fn)(ex[1])


@pytest.mark.parametrize("make", [
    lambda m: m.AdaptiveLogSoftmaxWithLoss(8, 10, []),
    lambda m: m.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 3]),
    lambda m: m.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 10]),
    lambda m: m.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 5]),
    lambda m: m.AdaptiveLogSoftmaxWithLoss(8, 10, [0, 5]),
    lambda m: m.AdaptiveLogSoftmaxWithLoss(8, 10, [4])(m.ones(3, 8), m.tensor([0, 1, 10])),
    lambda m: m.AdaptiveLogSoftmaxWithLoss(8, 10, [4])(m.ones(3, 8), m.tensor([0, 1])),
    lambda m: m.AdaptiveLogSoftmaxWithLoss(8, 10, [4])(m.ones(3, 8), m.tensor([[0, 1]])),
    lambda m: m.AdaptiveLogSoftmaxWithLoss(8, 10, [4])(m.ones(3, 8), m.tensor(1)),
    lambda m: m.AdaptiveLogSoftmaxWithLoss(8, 10, [4])(m.ones(2, 3, 8), m.tensor([0, 1])),
])
def test_errors(make):
    with pytest.raises(Exception) as te:
        make(_TorchNS)
    with pytest.raises(type(te.value), match=re.escape(str(te.value)[:40])):
        make(_EmberNS)


class _TorchNS:
    AdaptiveLogSoftmaxWithLoss = torch.nn.AdaptiveLogSoftmaxWithLoss
    ones, tensor = torch.ones, torch.tensor


class _EmberNS:
    AdaptiveLogSoftmaxWithLoss = nn.AdaptiveLogSoftmaxWithLoss
    ones, tensor = et.ones, et.tensor
