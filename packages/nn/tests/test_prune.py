"""``ember.nn.utils.prune``: masks against NumPy (the smallest magnitudes, the channels of
least norm), the reparametrization (``<name>_orig`` trained, ``<name>_mask`` a buffer, the
pruned entries without gradient), iterative pruning working on what is left, ``remove`` and
the state dict. Parity with PyTorch: ``tests/parity/test_parity_prune.py``."""
from __future__ import annotations

import numpy as np
import pytest

import ember.nn as nn
import ember.tensor as et
from ember.nn.utils import prune


def _lin():
    et.manual_seed(0)
    return nn.Linear(5, 4).double()


def test_l1_unstructured_masks_the_smallest_magnitudes():
    lin = _lin()
    w = lin.weight.detach().numpy().copy()
    prune.l1_unstructured(lin, "weight", amount=0.35)  # round(0.35 * 20) = 7
    mask = lin.weight_mask.numpy()
    ref = np.ones(20)
    ref[np.argsort(np.abs(w).ravel())[:7]] = 0
    assert np.array_equal(mask.ravel(), ref)
    assert np.array_equal(lin.weight.detach().numpy(), w * mask)
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight_orig"]
    assert sorted(lin.state_dict()) == ["bias", "weight_mask", "weight_orig"]
    lin(et.ones(3, 5, dtype=et.float64)).sum().backward()
    assert np.all(lin.weight_orig.grad.numpy()[mask == 0] == 0)
    assert np.all(lin.weight_orig.grad.numpy()[mask == 1] != 0)


def test_iterative_pruning_works_on_what_is_left():
    lin = _lin()
    w = np.abs(lin.weight.detach().numpy().ravel())
    prune.l1_unstructured(lin, "weight", amount=4)
    prune.l1_unstructured(lin, "weight", amount=4)
    hook = next(h for h in lin._forward_pre_hooks.values()
                if isinstance(h, prune.BasePruningMethod))
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 2
    ref = np.ones(20)
    ref[np.argsort(w)[:8]] = 0  # the 4 smallest, then the 4 smallest of the rest
    assert np.array_equal(lin.weight_mask.numpy().ravel(), ref)


def test_ln_structured_masks_the_channels_of_least_norm():
    lin = _lin()
    w = lin.weight.detach().numpy().copy()
    prune.ln_structured(lin, "weight", amount=0.5, n=1, dim=0)
    keep = np.sort(np.argsort(-np.abs(w).sum(1))[:2])
    assert np.nonzero(lin.weight_mask.numpy().sum(1))[0].tolist() == keep.tolist()
    with pytest.raises(ValueError, match="multidimensional"):
        prune.ln_structured(lin, "bias", amount=1, n=2, dim=0)


def test_remove_makes_it_permanent():
    lin = _lin()
    prune.l1_unstructured(lin, "weight", amount=0.5)
    pruned = lin.weight.detach().numpy().copy()
    orig = lin.weight_orig
    prune.remove(lin, "weight")
    assert lin.weight is orig and isinstance(lin.weight, nn.Parameter)
    assert np.array_equal(lin.weight.detach().numpy(), pruned)
    assert sorted(lin.state_dict()) == ["bias", "weight"] and not prune.is_pruned(lin)
    with pytest.raises(ValueError, match="has to be pruned"):
        prune.remove(lin, "weight")


def test_global_unstructured_ranks_all_parameters_together():
    a, b = _lin(), nn.Linear(4, 3).double()
    w = np.concatenate([np.abs(a.weight.detach().numpy()).ravel(),
                        np.abs(b.weight.detach().numpy()).ravel()])
    prune.global_unstructured([(a, "weight"), (b, "weight")],
                              pruning_method=prune.L1Unstructured, amount=10)
    got = np.concatenate([a.weight_mask.numpy().ravel(), b.weight_mask.numpy().ravel()])
    ref = np.ones(32)
    ref[np.argsort(w)[:10]] = 0
    assert np.array_equal(got, ref)
