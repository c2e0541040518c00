"""``ember.nn.utils.prune`` against ``torch.nn.utils.prune`` (PyTorch 2.13, the same weights,
float64): the masks, parameters, buffers and outputs after L1 / Ln-structured / custom /
global pruning, iterative pruning of one parameter (the masks combined), gradients through a
pruned layer, ``remove`` and ``is_pruned``, and the errors of bad amounts. The random methods
are checked for their counts (PyTorch's draws are its own)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.utils.prune as tp  # noqa: E402

import ember.nn as enn  # noqa: E402
import ember.tensor as et  # noqa: E402
from ember.nn.utils import prune as ep  # noqa: E402

X = np.random.default_rng(1).standard_normal((5, 6))


def _pair():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    tm = tm.double()
    em = enn.Sequential(enn.Linear(6, 8), enn.ReLU(), enn.Linear(8, 4)).double()
    em.load_state_dict({k: et.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    return em, tm


def _same(em, tm):
    assert sorted(n for n, _ in em.named_parameters()) == \
        sorted(n for n, _ in tm.named_parameters())
    assert sorted(n for n, _ in em.named_buffers()) == sorted(n for n, _ in tm.named_buffers())
    for (k, a), (_, b) in zip(sorted(em.state_dict().items()), sorted(tm.state_dict().items())):
        np.testing.assert_array_equal(a.numpy(), b.detach().numpy(), err_msg=k)
    eo, to = em(et.from_numpy(X)), tm(torch.from_numpy(X))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-12)
    return eo, to


STEPS = {
    "l1": lambda p, m: p.l1_unstructured(m[0], "weight", amount=0.3),
    "l1_count": lambda p, m: p.l1_unstructured(m[2], "bias", amount=2),
    "ln": lambda p, m: p.ln_structured(m[0], "weight", amount=0.5, n=2, dim=0),
    "ln_inf_dim1": lambda p, m: p.ln_structured(m[2], "weight", amount=3, n=float("inf"), dim=1),
    "custom": lambda p, m: p.custom_from_mask(
        m[2], "weight", mask=(m[2].weight.detach() > 0).to(m[2].weight.dtype)),
    "identity": lambda p, m: p.identity(m[0], "bias"),
    "global": lambda p, m: p.global_unstructured(
        [(m[0], "weight"), (m[2], "weight")], pruning_method=p.L1Unstructured, amount=0.4),
}


@pytest.mark.parametrize("seq", [["l1"], ["l1_count"], ["ln"], ["ln_inf_dim1"], ["custom"],
                                 ["identity"], ["global"], ["l1", "ln", "l1"],
                                 ["ln", "l1", "global"], ["custom", "global", "l1_count"]])
def test_pruning_matches_pytorch(seq):
    em, tm = _pair()
    for step in seq:
        STEPS[step](ep, em)
        STEPS[step](tp, tm)
        _same(em, tm)
    assert ep.is_pruned(em) and tp.is_pruned(tm)
    eo, to = _same(em, tm)
    eo.sum().backward()
    to.sum().backward()
    for (k, a), (_, b) in zip(sorted(em.named_parameters()), sorted(tm.named_parameters())):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12, err_msg=k)
    for m, mod in ((em, ep), (tm, tp)):
        for i in (0, 2):
            for name in ("weight", "bias"):
                if hasattr(m[i], name + "_orig"):
                    mod.remove(m[i], name)
    assert not ep.is_pruned(em) and not tp.is_pruned(tm)
    _same(em, tm)


def test_random_methods_prune_their_share():
    em, _ = _pair()
    ep.random_unstructured(em[0], "weight", amount=0.25)
    assert int((em[0].weight_mask == 0).sum()) == 12
    ep.random_structured(em[2], "weight", amount=0.5, dim=0)
    rows = em[2].weight_mask.sum(1)
    assert sorted(rows.tolist()) == [0.0, 0.0, 8.0, 8.0]


@pytest.mark.parametrize("call", [
    lambda p, m: p.l1_unstructured(m[0], "weight", amount=1.5),
    lambda p, m: p.l1_unstructured(m[0], "weight", amount=-1),
    lambda p, m: p.l1_unstructured(m[0], "weight", amount=100),
    lambda p, m: p.l1_unstructured(m[0], "weight", amount="a"),
    lambda p, m: p.ln_structured(m[0], "bias", amount=0.5, n=2, dim=0),
    lambda p, m: p.remove(m[0], "weight"),
])
def test_errors(call):
    em, tm = _pair()
    with pytest.raises(Exception) as te:
        call(tp, tm)
    with pytest.raises(type(te.value)):
        call(ep, em)
    assert not ep.is_pruned(em)
