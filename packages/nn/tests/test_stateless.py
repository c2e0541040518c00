"""``ember.nn.utils.stateless.functional_call`` (and ``ember.autograd.func.functional_call``,
which calls it): a module run with other parameters and buffers gives what the module with
those tensors loaded gives, its own are back afterwards (also after an exception), gradients
reach the given tensors, tied weights and ``strict`` follow PyTorch. Parity with
``torch.func.functional_call`` is in ``tests/parity/test_parity_func.py``."""
from __future__ import annotations

import numpy as np
import pytest

import ember.nn as nn
import ember.tensor as et
from ember.autograd import func
from ember.nn.utils.stateless import functional_call

RNG = np.random.default_rng(0)


def _like(module):
    return {k: et.from_numpy(RNG.standard_normal(tuple(v.shape))).to(v.dtype)
            for k, v in module.named_parameters()}


def test_values_are_those_of_the_module_with_the_tensors_loaded():
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
    x = et.randn(3, 4)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    new = _like(model)
    out = functional_call(model, new, (x,))
    w0, b0 = new["0.weight"].numpy(), new["0.bias"].numpy()
    w2, b2 = new["2.weight"].numpy(), new["2.bias"].numpy()
    ref = np.maximum(x.numpy() @ w0.T + b0, 0) @ w2.T + b2
    assert np.allclose(out.detach().numpy(), ref, atol=1e-5)
    for k, v in model.state_dict().items():  # the module's own tensors are back
        assert np.array_equal(v.numpy(), before[k].numpy())
    assert func.functional_call is not functional_call
    assert np.allclose(func.functional_call(model, new, x).detach().numpy(), ref, atol=1e-5)


def test_buffers_kwargs_and_restore_after_an_exception():
    bn = nn.BatchNorm1d(3).eval()
    x = et.randn(4, 3)
    mean, var = et.full((3,), 0.5), et.full((3,), 4.0)
    out = functional_call(bn, {"running_mean": mean, "running_var": var}, args=(),
                          kwargs={"input": x})
    assert np.allclose(out.detach().numpy(), (x.numpy() - 0.5) / np.sqrt(4.0 + bn.eps), atol=1e-6)
    assert np.array_equal(bn.running_mean.numpy(), np.zeros(3))
    lin = nn.Linear(2, 2)
    w = lin.weight
    with pytest.raises(RuntimeError):
        functional_call(lin, {"weight": et.ones(3, 3)}, (et.ones(1, 2),))
    assert lin.weight is w and isinstance(lin.weight, nn.Parameter)


def test_gradients_reach_the_given_tensors():
    lin = nn.Linear(3, 1)
    w = et.randn(1, 3, requires_grad=True)
    x = et.randn(5, 3)
    functional_call(lin, {"weight": w}, (x,)).sum().backward()
    assert np.allclose(w.grad.numpy(), x.numpy().sum(0, keepdims=True))
    assert lin.weight.grad is None and lin.bias.grad is not None


def test_tied_weights_and_strict():
    seq = nn.Sequential(nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False))
    seq[1].weight = seq[0].weight
    x = et.ones(1, 2)
    out = functional_call(seq, {"0.weight": 2 * et.eye(2)}, (x,))
    assert out.tolist() == [[4.0, 4.0]]
    with pytest.raises(ValueError, match="which are tied"):
        functional_call(seq, {"0.weight": et.eye(2), "1.weight": 2 * et.eye(2)}, (x,))
    untied = functional_call(seq, {"0.weight": 2 * et.eye(2)}, (x,), tie_weights=False)
    assert np.allclose(untied.detach().numpy(), (2 * x.numpy()) @ seq[0].weight.detach().numpy().T)
    lin = nn.Linear(2, 1)
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        functional_call(lin, {"weight": et.ones(1, 2)}, (x,), strict=True)
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'foo'"):
        functional_call(lin, {"weight": et.ones(1, 2), "bias": et.zeros(1), "foo": et.ones(1)},
                        (x,), strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        functional_call(lin, ({"bias": et.zeros(1)}, {"bias": et.ones(1)}), (x,))


def test_per_example_gradients_with_vmap_and_grad():
    model = nn.Linear(3, 1)
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs, ys = et.randn(6, 3), et.randn(6, 1)

    def loss(p, x, y):
        return ((functional_call(model, p, (x.unsqueeze(0),)) - y) ** 2).sum()

    per = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    for i in range(6):
        ref = func.grad(loss)(params, xs[i], ys[i])
        assert np.allclose(per["weight"][i].numpy(), ref["weight"].numpy(), atol=1e-6)
        assert np.allclose(per["bias"][i].numpy(), ref["bias"].numpy(), atol=1e-6)


def test_ensemble_with_stack_module_state():
    models = [nn.Linear(3, 2) for _ in range(4)]
    params, buffers = func.stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3) and params["weight"].is_leaf
    assert params["weight"].requires_grad and buffers == {}
    x = et.randn(5, 3)

    def run(p, b, x):
        return functional_call(models[0], (p, b), (x,))

    out = func.vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        assert np.allclose(out[i].detach().numpy(), m(x).detach().numpy(), atol=1e-6)
    out.sum().backward()
    assert params["weight"].grad.shape == (4, 2, 3)
    with pytest.raises(RuntimeError, match="same class"):
        func.stack_module_state([nn.Linear(3, 2), nn.Bilinear(3, 3, 2)])
    with pytest.raises(RuntimeError, match="training/eval mode"):
        func.stack_module_state([nn.Linear(3, 2), nn.Linear(3, 2).eval()])
    with pytest.raises(RuntimeError, match="at least one model"):
        func.stack_module_state([])


def test_replace_all_batch_norm_modules():
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Sequential(nn.BatchNorm1d(4)))
    assert func.replace_all_batch_norm_modules_(net) is net
    for bn in (net[1], net[2][0]):
        assert bn.running_mean is None and bn.running_var is None
        assert bn.num_batches_tracked is None and not bn.track_running_stats
    x = et.randn(6, 3)
    h = net[0](x).detach().numpy()
    ref = (h - h.mean(0)) / np.sqrt(h.var(0) + 1e-5)
    assert np.allclose(net(x).detach().numpy(), (ref - ref.mean(0)) /
                       np.sqrt(ref.var(0) + 1e-5), atol=1e-4)
