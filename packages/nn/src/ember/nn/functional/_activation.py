"""Activation functions, composed from ember ops in numerically stable forms.

Branches that could overflow in the branch a ``where`` discards are clamped first, so their
gradients stay finite (no ``0 * inf``). ``inplace=True`` writes the result into the input.

    >>> import ember.tensor as et
    >>> relu(et.tensor([-1., 2.])).tolist()
    [0.0, 2.0]
"""
from __future__ import annotations

import warnings

import ember.tensor as et
from ember.autograd import is_grad_enabled, no_grad
from ember.tensor import Tensor
from ember.tensor.extension import OPS

# the fused registry ops (PyTorch's aten names)
_softmax = OPS["_softmax"].public
_log_softmax = OPS["_log_softmax"].public

__all__ = [
    "threshold", "threshold_", "relu", "relu_", "relu6", "elu", "elu_", "selu", "selu_", "celu",
    "celu_", "gelu", "silu", "mish", "prelu", "rrelu", "rrelu_", "leaky_relu", "leaky_relu_",
    "hardtanh", "hardtanh_", "hardsigmoid", "hardswish", "sigmoid", "logsigmoid", "tanh",
    "tanhshrink", "softplus", "softmax", "log_softmax", "softmin", "softshrink", "hardshrink",
    "softsign", "glu", "gumbel_softmax",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _apply(input: Tensor, inplace: bool, fn) -> Tensor:
    """``fn(input)``, written back into ``input`` when ``inplace``."""
    if not inplace:
        return fn(input)
    if is_grad_enabled() and (input.requires_grad or input.grad_fn is not None):
        if input.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        return input.copy_(fn(input.clone()))
    with no_grad():
        return input.copy_(fn(input))


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``value if x <= threshold else x`` (so NaN stays NaN and passes its gradient, as in
    PyTorch)."""
    return _apply(input, inplace, lambda x: et.where(x <= threshold, value, x))


def threshold_(input: Tensor, threshold_value: float, value: float) -> Tensor:
    return threshold(input, threshold_value, value, inplace=True)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)``; the gradient at 0 is 0, as in PyTorch."""
    return _apply(input, inplace, et.relu)


def relu_(input: Tensor) -> Tensor:
    return relu(input, inplace=True)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``clamp(x, min_val, max_val)`` with zero gradient outside the open interval."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _apply(input, inplace, lambda x: et.where(
        x <= min_val, float(min_val), et.where(x >= max_val, float(max_val), x)))


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``alpha * (exp(x) - 1) if x <= 0 else x`` (one op each way: ``ember.tensor.elu``)."""
    return _apply(input, inplace, lambda x: et.elu(x, alpha))


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    return _apply(input, inplace, lambda x: et.elu(x, _SELU_ALPHA, _SELU_SCALE))


def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu alpha must not be 0")
    return _apply(input, inplace, lambda x: et.elu(x, alpha, 1.0, 1.0 / alpha))


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)``; ``approximate="tanh"`` uses the tanh formula."""
    return et.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)``."""
    return _apply(input, inplace, et.silu)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    return _apply(input, inplace, et.mish)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x if x > 0 else weight * x``, ``weight`` per channel (dim 1) or shared."""
    w = weight
    if weight.numel() != 1:
        if input.dim() < 2:
            c = input.shape[0] if input.dim() == 1 else 1
        else:
            c = input.shape[1]
        if weight.numel() != c:
            raise RuntimeError(f"prelu: mismatch in parameter count: weight has "
                               f"{weight.numel()} elements, input has {c} channels")
        if input.dim() >= 2:
            w = weight.reshape(c, *([1] * (input.dim() - 2)))
    else:
        w = weight.reshape(())
    return et.where(input > 0, input, w * input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: slope ~ U(lower, upper) per element in training, else the mean."""
    if training:
        def fn(x):
            slope = et.empty_like(x).uniform_(lower, upper).detach()
            return et.where(x > 0, x, x * slope)
    else:  # leaky_relu with the mean slope: at 0 the slope's side, as in PyTorch
        def fn(x):
            return et.where(x > 0, x, x * ((lower + upper) / 2))
    return _apply(input, inplace, fn)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x if x > 0 else negative_slope * x``."""
    return _apply(input, inplace, lambda x: et.where(x > 0, x, x * negative_slope))


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``: the gradient is 1/6 inside (-3, 3), else 0."""
    return _apply(input, inplace, et.hardsigmoid)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``."""
    return _apply(input, inplace, et.hardswish)


def sigmoid(input: Tensor) -> Tensor:
    return et.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return et.tanh(input)


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))``: finite for any finite x."""
    return et.log_sigmoid(input)


def tanhshrink(input: Tensor) -> Tensor:
    return input - et.tanh(input)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    return et.softplus(input, beta, threshold)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    # 0 inside [-lambd, lambd]; elsewhere (NaN included, which stays NaN and passes its
    # gradient, as in PyTorch) x shifted toward 0
    return et.where((input >= -lambd) & (input <= lambd), 0.0,
                    et.where(input < -lambd, input + lambd, input - lambd))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """0 inside ``[-lambd, lambd]``, else ``x`` (a NaN stays NaN and passes its gradient)."""
    return et.where((input >= -lambd) & (input <= lambd), 0.0, input)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return input / (1 + input.abs())


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """``a * sigmoid(b)`` with ``a, b`` the halves of ``input`` along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size "
                           f"{input.shape[dim]}")
    a, b = et.chunk(input, 2, dim)
    return a * et.sigmoid(b)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _prep(input: Tensor, dim, dtype, name: str, stacklevel: int):
    if dim is None:
        dim = _softmax_dim(name, input.dim(), stacklevel + 1)
    if dtype is not None:
        input = input.to(dtype=dtype)
    return input, dim


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype=None) -> Tensor:
    """``(x - max) - log(sum(exp(x - max)))`` along ``dim`` (the registry op
    ``_log_softmax``): shift-invariant, finite for logits of any size.

    >>> log_softmax(et.tensor([1000., 0.]), dim=0).tolist()
    [0.0, -1000.0]
    """
    x, dim = _prep(input, dim, dtype, "log_softmax", _stacklevel)
    return _log_softmax(x, dim, False)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``exp(x - max) / sum(exp(x - max))`` along ``dim`` (the registry op ``_softmax``)."""
    x, dim = _prep(input, dim, dtype, "softmax", _stacklevel)
    return _softmax(x, dim, False)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``softmax(-x, dim)``."""
    x, dim = _prep(input, dim, dtype, "softmin", _stacklevel)
    return _softmax(-x, dim, False)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample from the Gumbel-softmax (Concrete) distribution over ``dim``: softmax of
    ``(logits + Gumbel noise) / tau``. ``hard=True`` returns the one-hot of its argmax, with
    the soft sample's gradient (straight-through). ``eps`` is unused, as in PyTorch.

    >>> y = gumbel_softmax(et.zeros(2, 3), hard=True)
    >>> y.sum(-1).tolist(), sorted(set(y.flatten().tolist()))
    ([1.0, 1.0], [0.0, 1.0])
    """
    gumbels = -et.empty_like(logits).exponential_().log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = et.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
