"""Module system: registration, iteration, state_dict, hooks, modes, conversion, repr."""
import copy
import pickle

import numpy as np
import pytest

import ember.nn as nn
import ember.tensor as et
from ember.nn import Parameter


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(4, 2, bias=False)
        self.register_buffer("running", et.zeros(2))
        self.register_buffer("tmp", et.ones(1), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) + self.running


def test_registration_and_names():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in net.named_buffers()] == ["running", "tmp"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in net.named_parameters(prefix="m")][0] == "m.fc1.weight"
    assert len(list(net.parameters(recurse=False))) == 0
    assert net.fc2.bias is None
    assert isinstance(net.fc1.weight, Parameter)


def test_shared_parameters_and_remove_duplicate():
    a = nn.Linear(2, 2)
    seq = nn.Sequential(a, a)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert len(list(seq.named_modules(remove_duplicate=False))) == 3


def test_setattr_routing_and_errors():
    m = nn.Module()
    m.w = Parameter(et.ones(2))
    assert "w" in m._parameters
    with pytest.raises(TypeError):
        m.w = et.ones(2)
    m.w = None
    assert m._parameters["w"] is None
    m.sub = nn.Linear(1, 1)
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(KeyError):
        m.register_buffer("a.b", et.ones(1))
    with pytest.raises(AttributeError):
        _ = m.nope
    with pytest.raises(ValueError):
        m.register_parameter("q", _nonleaf())


def _nonleaf():
    p = Parameter(et.ones(1))
    q = p * 2
    q.__class__ = Parameter
    return q


def test_buffer_class_registers():
    m = nn.Module()
    m.b = nn.Buffer(et.ones(3), persistent=False)
    assert "b" in m._buffers and "b" in m._non_persistent_buffers_set
    assert "b" not in m.state_dict()


def test_state_dict_roundtrip_and_errors():
    net, other = Net(), Net()
    sd = net.state_dict()
    assert list(sd) == ["running", "fc1.weight", "fc1.bias", "fc2.weight"] or \
        set(sd) == {"running", "fc1.weight", "fc1.bias", "fc2.weight"}
    assert not sd["fc1.weight"].requires_grad
    res = other.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    np.testing.assert_array_equal(other.fc1.weight.detach().numpy(),
                                  net.fc1.weight.detach().numpy())
    bad = dict(sd)
    bad["extra"] = et.ones(1)
    del bad["fc1.bias"]
    with pytest.raises(RuntimeError, match="Missing key.*fc1.bias"):
        other.load_state_dict(bad)
    with pytest.raises(RuntimeError, match="Unexpected key.*extra"):
        other.load_state_dict(bad)
    res = other.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["fc1.bias"] and res.unexpected_keys == ["extra"]
    wrong = dict(sd)
    wrong["fc1.weight"] = et.ones(5, 5)
    with pytest.raises(RuntimeError, match="size mismatch for fc1.weight"):
        other.load_state_dict(wrong, strict=False)


def test_state_dict_save_load(tmp_path):
    net = Net()
    path = tmp_path / "m.safetensors"
    et.save(net.state_dict(), str(path))
    other = Net()
    other.load_state_dict(et.load(str(path)))
    np.testing.assert_array_equal(other.fc2.weight.detach().numpy(),
                                  net.fc2.weight.detach().numpy())


def test_train_eval_requires_grad_zero_grad_apply():
    net = Net()
    net.eval()
    assert not net.training and not net.fc1.training
    net.train()
    assert net.act.training
    net(et.randn(2, 3)).sum().backward()
    assert net.fc1.weight.grad is not None
    net.zero_grad(set_to_none=False)
    assert float(net.fc1.weight.grad.abs().sum()) == 0.0
    net.zero_grad()
    assert net.fc1.weight.grad is None
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Net"]


def test_dtype_conversion_keeps_parameter_identity():
    net = Net()
    w = net.fc1.weight
    net.double()
    assert net.fc1.weight is w and w.dtype == et.float64 and isinstance(w, Parameter)
    assert net.running.dtype == et.float64
    net.to(et.float32)
    assert w.dtype == et.float32
    net.half().float()
    net.to("cpu")
    assert net.cpu() is net
    with pytest.raises(TypeError):
        net.to(et.int64)


def test_forward_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    out = lin(et.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), lin.bias.detach().numpy()[None] + 1,
                               rtol=1e-6)
    assert calls == [et.Size([1, 2])]
    h1.remove()
    h2.remove()
    out = lin(et.ones(1, 2))
    assert len(calls) == 1
    h3 = lin.register_forward_pre_hook(lambda m, a, k: (a, {}), with_kwargs=True)
    lin(et.ones(1, 2))
    h3.remove()


def test_repr_nested():
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(inplace=True),
                        nn.Sequential(nn.Dropout(0.2), nn.Linear(3, 1, bias=False)))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): ReLU(inplace=True)\n"
        "  (2): Sequential(\n"
        "    (0): Dropout(p=0.2, inplace=False)\n"
        "    (1): Linear(in_features=3, out_features=1, bias=False)\n"
        "  )\n"
        ")")


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    seq.append(nn.Tanh())
    assert len(seq) == 3 and isinstance(seq[-1], nn.Tanh)
    assert isinstance(seq[1:], nn.Sequential) and len(seq[1:]) == 2
    seq.insert(0, nn.Identity())
    assert isinstance(seq[0], nn.Identity)
    seq.extend([nn.Sigmoid()])
    del seq[0]
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Tanh", "Sigmoid"]
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.append(nn.Linear(1, 2))
    assert len(ml) == 4 and len(list(ml.parameters())) == 8
    md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
    assert list(md.keys()) == ["b", "a"] and "a" in md
    pl = nn.ParameterList([et.ones(2), Parameter(et.zeros(1))])
    assert all(isinstance(p, Parameter) for p in pl) and len(list(pl.parameters())) == 2
    pd = nn.ParameterDict({"x": et.ones(1)})
    pd["y"] = Parameter(et.zeros(2))
    assert set(n for n, _ in pd.named_parameters()) == {"x", "y"}


def test_copy_and_pickle():
    net = Net()
    c = copy.deepcopy(net)
    assert c.fc1.weight is not net.fc1.weight
    np.testing.assert_array_equal(c.fc1.weight.detach().numpy(), net.fc1.weight.detach().numpy())
    p = pickle.loads(pickle.dumps(net))
    x = et.randn(2, 3)
    np.testing.assert_allclose(p(x).detach().numpy(), net(x).detach().numpy())


def test_get_submodule_parameter():
    net = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.Linear(1, 2)))
    assert net.get_submodule("1.0").out_features == 2
    assert net.get_parameter("1.0.bias").shape == (2,)
    with pytest.raises(AttributeError):
        net.get_submodule("5")


def test_lazy_linear():
    lazy = nn.LazyLinear(3)
    out = lazy(et.randn(2, 7))
    assert out.shape == (2, 3) and type(lazy) is nn.Linear and lazy.weight.shape == (3, 7)


def test_full_backward_hook_is_called_once_and_can_replace_grad_input():
    lin = nn.Linear(4, 2).double()
    W = lin.weight.detach().numpy()
    calls = []

    def hook(module, grad_input, grad_output):
        calls.append((module, grad_input, grad_output))
        return tuple(None if g is None else g * 3 for g in grad_input)

    lin.register_full_backward_hook(hook)
    xv = np.arange(12.0).reshape(3, 4) / 10
    x = et.tensor(xv, requires_grad=True)
    y = lin(x)
    y.pow(2).sum().backward()
    gy = 2 * (xv @ W.T + lin.bias.detach().numpy())
    assert len(calls) == 1 and calls[0][0] is lin
    (gin,), (gout,) = calls[0][1], calls[0][2]
    np.testing.assert_allclose(gout.numpy(), gy)
    np.testing.assert_allclose(gin.numpy(), gy @ W)
    np.testing.assert_allclose(x.grad.numpy(), 3 * gy @ W)  # what the hook returned
    np.testing.assert_allclose(lin.weight.grad.numpy(), gy.T @ xv)  # the weight's is unchanged
    # no argument requires grad: the hook fires with the output's gradient, grad_input None
    calls.clear()
    lin(et.tensor(xv)).sum().backward()
    assert len(calls) == 1 and calls[0][1] == (None,)
    np.testing.assert_allclose(calls[0][2][0].numpy(), np.ones((3, 2)))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        lin(et.tensor(xv, requires_grad=True)).sum().backward()


def test_full_backward_pre_hook_sees_and_replaces_grad_output():
    # hook(module, grad_output) runs before the gradients w.r.t. the inputs are computed; a
    # returned tuple is the grad_output the module's backward (and its backward hooks) get
    lin = nn.Linear(4, 2).double()
    W = lin.weight.detach().numpy()
    order = []

    def pre(module, grad_output):
        order.append(("pre", grad_output[0].numpy().copy()))
        return (grad_output[0] * 2,)

    lin.register_full_backward_pre_hook(pre)
    lin.register_full_backward_hook(lambda m, gi, go: order.append(("post", go[0].numpy())))
    xv = np.arange(12.0).reshape(3, 4) / 10
    x = et.tensor(xv, requires_grad=True)
    lin(x).pow(2).sum().backward()
    gy = 2 * (xv @ W.T + lin.bias.detach().numpy())
    assert [k for k, _ in order] == ["pre", "post"]
    np.testing.assert_allclose(order[0][1], gy)
    np.testing.assert_allclose(order[1][1], 2 * gy)
    np.testing.assert_allclose(x.grad.numpy(), 2 * gy @ W)
    np.testing.assert_allclose(lin.weight.grad.numpy(), 2 * gy.T @ xv)
    h = lin.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_output, got 2, but expected 1"):
        lin(et.tensor(xv, requires_grad=True)).sum().backward()
    h.remove()
    lin(et.tensor(xv)).sum().backward()  # removed: the first hook alone again
