"""Complex inputs across the whole op table, against PyTorch 2.13: every entry's samples with
their floating operands made complex (an imaginary part added). Where PyTorch raises, ember
raises (ops without complex kernels); where PyTorch computes, ember gives the same dtype,
shape and values, and the same gradients for a random complex output gradient."""
from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.autograd as ag  # noqa: E402
import ember.tensor as et  # noqa: E402
from ember.tensor.testing import op_table as OT  # noqa: E402

#: where PyTorch's gradient is wrong, with the reason (ember's passes gradcheck)
GRAD_DIFFERS = {
    "ldexp": "PyTorch 2.13's ldexp backward raises 2 to an integer exponent in that integer "
             "dtype, so a negative exponent gives a zero gradient",
}


def _complexify(a, rng):
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        return a.astype(np.float64) + 1j * rng.uniform(-1, 1, a.shape)
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, np.ndarray) for x in a):
        return type(a)(_complexify(x, rng) for x in a)
    return a


def _conv(m, a, grad):
    if isinstance(a, np.ndarray):
        t = torch.from_numpy(a.copy()) if m is torch else et.tensor(a.copy())
        return t.requires_grad_(True) if grad and a.dtype.kind in "fc" else t
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, np.ndarray) for x in a):
        return type(a)(_conv(m, x, grad) for x in a)
    return a


def _leaves(args):
    out = []
    for a in args:
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            if getattr(x, "requires_grad", False):
                out.append(x)
    return out


def _outs(o):
    return [x for x in (o if isinstance(o, (tuple, list)) else (o,))]


def _np(t):
    t = t.detach()
    return t.resolve_conj().resolve_neg().numpy() if isinstance(t, torch.Tensor) else t.numpy()


def _torch_fn(entry):
    f = getattr(torch, entry.name, None)
    if f is None and entry.name.startswith("special_"):
        f = getattr(torch.special, entry.name[len("special_"):], None)
    if f is None and entry.method:
        f = getattr(torch.Tensor, entry.method, None)
    return f


def _has_operand(a) -> bool:
    return isinstance(a, np.ndarray) or (isinstance(a, (list, tuple)) and bool(a) and
                                         all(isinstance(x, np.ndarray) for x in a))


def _takes_tensors(entry) -> bool:
    """Whether the entry's samples pass arrays as operands (factories such as ``zeros`` and
    ``linspace`` have none to make complex)."""
    samples = entry.samples("float64", np.random.default_rng(0))
    return any(_has_operand(s.args[i]) for s in samples for i in entry.operands
               if i < len(s.args))


ENTRIES = [e for e in OT.OP_TABLE if any(d.startswith("float") for d in e.dtypes)
           and _torch_fn(e) is not None and _takes_tensors(e)]


def _run(m, fn, args, kwargs, grad=False):
    a = _conv(m, args, grad)
    return a, fn(*a, **{k: _conv(m, v, False) for k, v in kwargs.items()})


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_complex_inputs_match_pytorch(entry):
    tfn = _torch_fn(entry)
    rng = np.random.default_rng(zlib.crc32(entry.name.encode()))
    checked = 0
    for sample in entry.samples("float64", rng)[:2]:
        args = tuple(_complexify(a, rng) if i in entry.operands else a
                     for i, a in enumerate(sample.args))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                _, want = _run(torch, tfn, args, sample.kwargs)
            except Exception:  # noqa: BLE001 - PyTorch has no complex kernel: ember raises
                with pytest.raises(Exception):  # noqa: B017, PT011 - any error, never a value
                    _run(et, entry.fn, args, sample.kwargs)
                checked += 1
                continue
            _, got = _run(et, entry.fn, args, sample.kwargs)
        for w, g in zip(_outs(want), _outs(got)):
            if not isinstance(w, torch.Tensor):
                continue
            assert str(w.dtype) == f"torch.{g.dtype.name}", (entry.name, w.dtype, g.dtype)
            assert tuple(w.shape) == tuple(g.shape), entry.name
            np.testing.assert_allclose(_np(g), _np(w), rtol=1e-6, atol=1e-8, equal_nan=True,
                                       err_msg=entry.name)
        checked += 1
        if entry.name not in GRAD_DIFFERS:
            _check_grads(entry, tfn, args, sample.kwargs, rng)
    assert checked, entry.name


def _check_grads(entry, tfn, args, kwargs, rng):
    """The same gradients as PyTorch for a random output gradient (where PyTorch has them)."""
    try:
        targs, want = _run(torch, tfn, args, kwargs, grad=True)
        tdiff = [w for w in _outs(want) if isinstance(w, torch.Tensor) and w.requires_grad]
        gos = [rng.standard_normal(tuple(w.shape)) +
               (1j * rng.standard_normal(tuple(w.shape)) if w.is_complex() else 0)
               for w in tdiff]
        tg = torch.autograd.grad(tdiff, _leaves(targs),
                                 [torch.from_numpy(np.asarray(g).astype(_np(w).dtype))
                                  for g, w in zip(gos, tdiff)], allow_unused=True) \
            if tdiff else ()
    except RuntimeError:  # PyTorch has no complex derivative here
        return
    eargs, got = _run(et, entry.fn, args, kwargs, grad=True)
    ediff = [g for g in _outs(got) if isinstance(g, et.Tensor) and g.requires_grad]
    assert len(tdiff) == len(ediff), entry.name
    if not tdiff:
        return
    eg = ag.grad(ediff, _leaves(eargs), [et.tensor(np.asarray(g).astype(_np(w).dtype))
                                         for g, w in zip(gos, ediff)], allow_unused=True)
    for a, b in zip(tg, eg):
        assert (a is None) == (b is None), entry.name
        if a is not None:
            np.testing.assert_allclose(_np(b), _np(a), rtol=1e-6, atol=1e-8,
                                       err_msg=f"{entry.name} gradient")


# ------------------------------------------------------------------ optimizers and nn layers
_OPTIMIZERS = [("SGD", {"momentum": 0.9}), ("SGD", {"momentum": 0.9, "nesterov": True}),
               ("Adam", {}), ("Adam", {"amsgrad": True, "weight_decay": 0.1}), ("AdamW", {}),
               ("RMSprop", {"momentum": 0.5}), ("Adagrad", {}), ("Adamax", {}), ("NAdam", {}),
               ("RAdam", {}), ("Adadelta", {}), ("ASGD", {}), ("Rprop", {})]


@pytest.mark.parametrize("name,kw", _OPTIMIZERS, ids=lambda v: str(v))
def test_optimizers_update_complex_parameters_as_pytorch(name, kw):
    """A complex parameter is two real ones (its parts), as in PyTorch's optimizers: Adam's
    second moment is per part, not g * g."""
    import ember.nn as nn
    import ember.optim as optim

    w0 = np.random.default_rng(1).standard_normal((2, 3)) * (1 + 0.5j) + 0.3j
    w, tw = nn.Parameter(et.tensor(w0)), torch.nn.Parameter(torch.tensor(w0))
    opt = getattr(optim, name)([w], lr=0.05, **kw)
    topt = getattr(torch.optim, name)([tw], lr=0.05, **kw)
    for _ in range(4):
        opt.zero_grad()
        (w.abs() ** 2 + 3 * w.imag).sum().backward()
        opt.step()
        topt.zero_grad()
        (tw.abs() ** 2 + 3 * tw.imag).sum().backward()
        topt.step()
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-6, atol=1e-9)
    for key, value in topt.state[tw].items():
        if isinstance(value, torch.Tensor) and value.dim():
            assert opt.state[w][key].dtype.name == str(value.dtype).split(".")[1], key


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_optimizers_without_a_complex_form_refuse_complex_parameters(name):
    import ember.nn as nn
    import ember.optim as optim

    w = nn.Parameter(et.ones(2, 2, dtype=et.complex64))
    opt = getattr(optim, name)([w], lr=0.1)
    (w.abs() ** 2).sum().backward()
    with pytest.raises(RuntimeError, match="complex"):
        opt.step()


def test_complex_linear_layer_matches_pytorch():
    import ember.nn as nn

    lin = nn.Linear(3, 2, dtype=et.complex128)
    tlin = torch.nn.Linear(3, 2, dtype=torch.complex128)
    with torch.no_grad():
        tlin.weight.copy_(torch.from_numpy(lin.weight.detach().numpy()))
        tlin.bias.copy_(torch.from_numpy(lin.bias.detach().numpy()))
    x0 = np.random.default_rng(2).standard_normal((4, 3)) * (1 - 1j)
    y, ty = lin(et.tensor(x0)), tlin(torch.tensor(x0))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    y.abs().sum().backward()
    ty.abs().sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), tlin.weight.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(lin.bias.grad.numpy(), tlin.bias.grad.numpy(), rtol=1e-10)
    w = et.empty(50000, dtype=et.complex64).uniform_(-1, 1).numpy()
    assert w.real.min() >= -1 and w.imag.max() < 1 and w.imag.std() > 0.5
