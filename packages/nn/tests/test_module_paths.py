"""PyTorch's ``torch.nn.modules.*`` paths hold the same objects under ember.nn.modules, and
the layers that live only there (PixelShuffle) work against a NumPy oracle."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember.nn as nn
import ember.tensor as et

PATHS = {
    "ember.nn.modules.activation": ["MultiheadAttention", "ReLU", "GELU", "Softmax"],
    "ember.nn.modules.loss": ["_Loss", "_WeightedLoss", "MSELoss", "CrossEntropyLoss"],
    "ember.nn.modules.module": ["Module"],
    "ember.nn.modules.pixelshuffle": ["PixelShuffle", "PixelUnshuffle"],
    "ember.nn.modules.batchnorm": ["BatchNorm1d", "BatchNorm2d", "_BatchNorm", "_NormBase"],
    "ember.nn.modules.instancenorm": ["InstanceNorm2d", "_InstanceNorm"],
    "ember.nn.modules.normalization": ["LayerNorm", "GroupNorm"],
    "ember.nn.modules.transformer": ["Transformer", "TransformerEncoder",
                                     "TransformerDecoder", "TransformerEncoderLayer",
                                     "TransformerDecoderLayer"],
    "ember.nn.modules.container": ["Sequential", "ModuleList", "ModuleDict"],
    "ember.nn.modules.linear": ["Linear", "Identity"],
    "ember.nn.modules.conv": ["Conv2d"],
    "ember.nn.modules.rnn": ["LSTM", "GRU"],
    "ember.nn.modules.sparse": ["Embedding"],
    "ember.nn.modules.dropout": ["Dropout"],
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_submodule_holds_the_same_objects(path):
    mod = importlib.import_module(path)
    modules = importlib.import_module("ember.nn.modules")
    for name in PATHS[path]:
        obj = getattr(mod, name)
        public = getattr(nn, name, None) if not name.startswith("_") else None
        if public is not None:
            assert obj is public, (path, name)
        else:
            assert isinstance(obj, type) and issubclass(obj, nn.Module), (path, name)
        if not name.startswith("_"):
            assert getattr(modules, name) is obj


def test_from_imports_as_programs_write_them():
    from ember.nn.modules.activation import MultiheadAttention
    from ember.nn.modules.loss import _Loss, _WeightedLoss
    from ember.nn.modules.module import Module
    from ember.nn.modules.pixelshuffle import PixelShuffle
    from ember.tensor.serialization import load, save

    assert MultiheadAttention is nn.MultiheadAttention and Module is nn.Module
    assert issubclass(nn.MSELoss, _Loss) and issubclass(nn.CrossEntropyLoss, _WeightedLoss)
    assert PixelShuffle is nn.PixelShuffle
    assert save is et.save and load is et.load


def test_modules_utils_tuples():
    from ember.nn.modules.utils import _ntuple, _pair, _quadruple, _single, _triple

    assert _single(2) == (2,) and _pair(3) == (3, 3) and _triple(1) == (1, 1, 1)
    assert _quadruple(0) == (0, 0, 0, 0) and _pair([4, 5]) == (4, 5) and _ntuple(5)(1)[4] == 1


class _MyLoss(nn.modules.loss._Loss):
    def forward(self, input, target):
        d = (input - target).abs()
        return d.mean() if self.reduction == "mean" else d.sum()


def test_loss_base_subclass_as_programs_write_it():
    loss = _MyLoss(reduction="sum")
    assert loss.reduction == "sum"
    assert loss(et.ones(3), et.zeros(3)).item() == 3.0


# --------------------------------------------------------------------------- pixel shuffle
def _shuffle_oracle(x: np.ndarray, r: int) -> np.ndarray:
    *b, c, h, w = x.shape
    out = np.empty((*b, c // (r * r), h * r, w * r), x.dtype)
    for ch in range(c // (r * r)):
        for i in range(r):
            for j in range(r):
                out[..., ch, i::r, j::r] = x[..., ch * r * r + i * r + j, :, :]
    return out


@pytest.mark.parametrize("shape,r", [((1, 4, 2, 3), 2), ((2, 18, 2, 2), 3), ((8, 3, 2), 2),
                                     ((2, 2, 9, 1, 1), 3), ((1, 5, 2, 2), 1)])
def test_pixel_shuffle_matches_numpy_and_unshuffle_inverts(shape, r):
    x = np.random.default_rng(0).standard_normal(shape)
    y = nn.PixelShuffle(r)(et.tensor(x))
    np.testing.assert_array_equal(y.numpy(), _shuffle_oracle(x, r))
    back = nn.PixelUnshuffle(r)(y)
    np.testing.assert_array_equal(back.numpy(), x)


def test_pixel_shuffle_gradient():
    x = et.randn(1, 8, 2, 3, dtype=et.float64, requires_grad=True)
    g = et.randn(1, 2, 4, 6, dtype=et.float64)
    nn.PixelShuffle(2)(x).backward(g)
    np.testing.assert_array_equal(x.grad.numpy(),
                                  nn.PixelUnshuffle(2)(g).numpy())


def test_pixel_shuffle_errors_and_repr():
    with pytest.raises(RuntimeError, match=r"pixel_shuffle.*divisible by.*4"):
        nn.PixelShuffle(2)(et.ones(1, 3, 2, 2))
    with pytest.raises(RuntimeError, match=r"pixel_shuffle.*at least 3 dimensions"):
        nn.PixelShuffle(2)(et.ones(4, 4))
    with pytest.raises(RuntimeError, match=r"pixel_unshuffle.*height.*divisible"):
        nn.PixelUnshuffle(2)(et.ones(1, 1, 3, 4))
    with pytest.raises(RuntimeError, match=r"pixel_unshuffle.*width.*divisible"):
        nn.PixelUnshuffle(2)(et.ones(1, 1, 4, 3))
    with pytest.raises(RuntimeError, match="positive"):
        nn.PixelShuffle(0)(et.ones(1, 4, 2, 2))
    assert repr(nn.PixelShuffle(3)) == "PixelShuffle(upscale_factor=3)"
    assert repr(nn.PixelUnshuffle(2)) == "PixelUnshuffle(downscale_factor=2)"
