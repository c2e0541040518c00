"""Recurrent layers: ``RNN`` (tanh / relu), ``LSTM`` (with ``proj_size``), ``GRU`` and their
single-step cells, with PyTorch's parameter names, shapes and initialization.

    >>> import ember.tensor as et
    >>> lstm = LSTM(10, 20, num_layers=2)
    >>> out, (h, c) = lstm(et.randn(5, 3, 10))
    >>> tuple(out.shape), tuple(h.shape), tuple(c.shape)
    ((5, 3, 20), (2, 3, 20), (2, 3, 20))

Every layer accepts a :class:`~ember.nn.utils.rnn.PackedSequence` and then computes, at step
``t``, on only the first ``batch_sizes[t]`` rows: no arithmetic on padding. The input projection
of all time steps is one matrix product per layer and direction; each step is one autograd node
(see :mod:`ember.nn.functional._rnn`). Backward through the steps is differentiable again:
double backward (``create_graph=True``) recomputes each step with ember ops.
"""
from __future__ import annotations

import math
import numbers
import warnings

import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor.extension import unwrap

from .. import functional as F
from .. import init
from ..functional import _rnn
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _dropout(x: Tensor, p: float) -> Tensor:
    """Dropout between layers (training mode only; the caller checks)."""
    return F.dropout(x, p, True)


def _check_int(name: str, value, positive: bool = True) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be greater than zero")


class RNNBase(Module):
    """The shared machinery of :class:`RNN`, :class:`LSTM` and :class:`GRU`.

    Parameters per layer ``k`` and direction (suffix ``_reverse`` for the backward one):
    ``weight_ih_l{k}`` (G*H, input), ``weight_hh_l{k}`` (G*H, H or proj_size),
    ``bias_ih_l{k}``, ``bias_hh_l{k}`` (G*H) and, for an LSTM with ``proj_size``,
    ``weight_hr_l{k}`` (proj_size, H); G is 4 (LSTM), 3 (GRU) or 1 (RNN). All are initialized
    from U(-1/sqrt(H), 1/sqrt(H)).
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        _check_int("input_size", input_size)
        _check_int("hidden_size", hidden_size)
        _check_int("num_layers", num_layers)
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        D = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(D):
                layer_input = input_size if layer == 0 else real_hidden * D
                shapes = [("weight_ih_l{}{}", (gate_size, layer_input)),
                          ("weight_hh_l{}{}", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for pattern, shape in shapes:
                    name = pattern.format(layer, suffix)
                    setattr(self, name,
                            Parameter(et.empty(shape, dtype=dtype, device=device)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    # -- parameters -------------------------------------------------------------------
    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """A no-op kept for PyTorch compatibility (there is no cuDNN weight buffer here)."""

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def _layer_weights(self) -> list[tuple]:
        out = []
        for names in self._all_weights:
            suffix_free = [n.split("_l")[0] for n in names]
            got = dict(zip(suffix_free, (getattr(self, n) for n in names)))
            out.append((got["weight_ih"], got["weight_hh"], got.get("bias_ih"),
                        got.get("bias_hh"), got.get("weight_hr")))
        return out

    # -- checks -----------------------------------------------------------------------
    def _real_hidden(self) -> int:
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def _check_hidden(self, h: Tensor, expected: tuple, what: str = "hidden") -> None:
        if tuple(h.shape) != expected:
            raise RuntimeError(f"Expected {what} size {expected}, got {list(h.shape)}")

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward ----------------------------------------------------------------------
    def forward(self, input, hx=None):
        name = type(self).__name__
        is_lstm = self.mode == "LSTM"
        D = 2 if self.bidirectional else 1
        w0 = getattr(self, self._flat_weights_names[0])
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes, sorted_indices, unsorted_indices = input
            sizes = [int(b) for b in batch_sizes.tolist()]
            if data.dim() != 2:
                raise RuntimeError(f"input must have 2 dimensions, got {data.dim()}")
            x2d, B, batched = data, sizes[0], True
        else:
            if not isinstance(input, Tensor):
                raise TypeError(f"{name}: expected a Tensor or PackedSequence input, got "
                                f"{type(input).__name__}")
            if input.dim() not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                                 "tensor instead")
            batched = input.dim() == 3
            x = input if batched else input.unsqueeze(0 if self.batch_first else 1)
            if self.batch_first:
                x = x.transpose(0, 1)
            T, B = x.shape[0], x.shape[1]
            if T == 0:
                raise RuntimeError(f"{name}: Expected sequence length to be larger than 0 in "
                                   f"RNN (input of shape {list(input.shape)})")
            sizes = [B] * T
            x2d = x.reshape(T * B, x.shape[2])
            sorted_indices = unsorted_indices = None
        if x2d.dtype != w0.dtype:
            raise ValueError(f"RNN input dtype ({x2d.dtype}) does not match weight dtype "
                             f"({w0.dtype}). Convert input: input.to({w0.dtype}), or convert "
                             f"model: model.to({x2d.dtype})")
        if x2d.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x2d.shape[-1]}")
        h_shape = (self.num_layers * D, B, self._real_hidden())
        c_shape = (self.num_layers * D, B, self.hidden_size)
        if hx is None:
            h0 = et.zeros(h_shape, dtype=x2d.dtype, device=x2d.device)
            c0 = et.zeros(c_shape, dtype=x2d.dtype, device=x2d.device) if is_lstm else None
        else:
            h0, c0 = (hx[0], hx[1]) if is_lstm else (hx, None)
            want = 3 if batched else 2
            states = (h0, c0) if is_lstm else (h0,)
            if any(s.dim() != want for s in states):
                dims = ", ".join(f"{s.dim()}-D" for s in states)
                kind = "batched 3-D" if batched else "unbatched 2-D"
                what = "hx and cx" if is_lstm else "hx"
                raise RuntimeError(f"For {kind} input, {what} should also be {want}-D but got "
                                   f"({dims}) tensor{'s' if is_lstm else ''}")
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            self._check_hidden(h0, h_shape)
            if c0 is not None:
                self._check_hidden(c0, c_shape, "hidden[1]")
            if sorted_indices is not None:
                h0 = h0.index_select(1, sorted_indices)
                c0 = c0.index_select(1, sorted_indices) if c0 is not None else None
        out2d, h_n, c_n = _rnn._recurrent(
            self.mode, x2d, sizes, h0, c0, self._layer_weights(), self.num_layers,
            self.bidirectional, self.dropout, self.training, _dropout)
        if packed:
            if unsorted_indices is not None:
                h_n = h_n.index_select(1, unsorted_indices)
                c_n = c_n.index_select(1, unsorted_indices) if c_n is not None else None
            output = PackedSequence(out2d, batch_sizes, sorted_indices, unsorted_indices)
        else:
            output = out2d.view(len(sizes), B, out2d.shape[1])
            if self.batch_first:
                output = output.transpose(0, 1)
            if not batched:
                output = output.squeeze(0 if self.batch_first else 1)
                h_n = h_n.squeeze(1)
                c_n = c_n.squeeze(1) if c_n is not None else None
        return (output, (h_n, c_n)) if is_lstm else (output, h_n)


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` with ``act`` tanh or
    relu (``nonlinearity``).

    >>> rnn = RNN(4, 8, nonlinearity="relu", batch_first=True)
    >>> out, h = rnn(et.randn(2, 5, 4))
    >>> tuple(out.shape), tuple(h.shape)
    ((2, 5, 8), (1, 2, 8))
    """

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def __setattr__(self, name, value):
        if name == "nonlinearity" and "_parameters" not in self.__dict__:
            object.__setattr__(self, name, value)  # set before Module.__init__ runs
        else:
            super().__setattr__(name, value)


class LSTM(RNNBase):
    """Long short-term memory: gates (i, f, g, o), ``c_t = f c_{t-1} + i g``,
    ``h_t = o tanh(c_t)`` (times ``W_hr^T`` when ``proj_size > 0``). Returns
    ``output, (h_n, c_n)``.

    >>> out, (h, c) = LSTM(3, 6, proj_size=2)(et.randn(4, 1, 3))
    >>> tuple(out.shape), tuple(h.shape), tuple(c.shape)
    ((4, 1, 2), (1, 1, 2), (1, 1, 6))
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit: gates (r, z, n), ``n = tanh(W_in x + b_in + r (W_hn h + b_hn))``,
    ``h' = (1 - z) n + z h``.

    >>> out, h = GRU(3, 5, bidirectional=True)(et.randn(4, 2, 3))
    >>> tuple(out.shape), tuple(h.shape)
    ((4, 2, 10), (2, 2, 5))
    """

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# --------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """Shared parameters of the cells: ``weight_ih`` (G*H, input), ``weight_hh`` (G*H, H),
    ``bias_ih``, ``bias_hh`` (G*H), all from U(-1/sqrt(H), 1/sqrt(H))."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        _check_int("input_size", input_size)
        _check_int("hidden_size", hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        g = num_chunks * hidden_size
        self.weight_ih = Parameter(et.empty((g, input_size), dtype=dtype, device=device))
        self.weight_hh = Parameter(et.empty((g, hidden_size), dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(et.empty(g, dtype=dtype, device=device))
            self.bias_hh = Parameter(et.empty(g, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nl = getattr(self, "nonlinearity", "tanh")
        if nl != "tanh":
            s += f", nonlinearity={nl}"
        return s

    _WEIGHTS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")

    def _prepare(self, input: Tensor, hx, n_states: int):
        """``(input as (N, I), [states as (N, H)], batched, (w_ih, w_hh, b_ih, b_hh))`` after
        PyTorch's checks; the arrays' own shapes and dtypes are read, and the weights from the
        parameter table, where attribute access finds them after a failed lookup (a cell
        runs once a step: its checks and lookups were most of its Python)."""
        table = self._parameters
        weights = tuple([getattr(self, n) if (w := table.get(n)) is None else w
                         for n in self._WEIGHTS])
        if not isinstance(input, Tensor):
            raise TypeError(f"{type(self).__name__}: expected a Tensor input, got "
                            f"{type(input).__name__}")
        d = unwrap(input)
        nd = d.ndim
        if nd not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {nd}D "
                             "instead")
        if d.shape[-1] != self.input_size:
            raise RuntimeError(f"{type(self).__name__}: input has inconsistent input_size: "
                               f"got {d.shape[-1]} expected {self.input_size}")
        w = weights[0]
        if d.dtype != unwrap(w).dtype:  # (PyTorch's RuntimeError, from its product)
            raise RuntimeError(f"{type(self).__name__}: input dtype ({input.dtype}) does not "
                               f"match weight dtype ({w.dtype})")
        batched = nd == 2
        x = input if batched else input.unsqueeze(0)
        N, H = (d.shape[0] if batched else 1), self.hidden_size
        if hx is None:
            return x, [et.zeros((N, H), dtype=x.dtype, device=x.device)
                       for _ in range(n_states)], batched, weights
        states = list(hx) if n_states == 2 else [hx]
        want = (N, H) if batched else (H,)
        for s in states:
            sd = unwrap(s)
            if sd.ndim != nd:
                raise RuntimeError(f"{type(self).__name__}: Expected hidden to be {nd}D for "
                                   f"{nd}D input, got {sd.ndim}D instead")
            if sd.shape != want:
                shown = list(sd.shape) if batched else [1, *sd.shape]  # (as unsqueezed)
                raise RuntimeError(f"{type(self).__name__}: hidden state has shape {shown}; "
                                   f"expected {[N, H]}")
        if not batched:
            states = [s.unsqueeze(0) for s in states]
        return x, states, batched, weights


class RNNCell(RNNCellBase):
    """One Elman step ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    >>> tuple(RNNCell(3, 4)(et.randn(2, 3)).shape)
    (2, 4)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched, weights = self._prepare(input, hx, 1)
        cell = _rnn.rnn_tanh_cell if self.nonlinearity == "tanh" else _rnn.rnn_relu_cell
        out = cell(x, h, *weights)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns ``(h', c')``.

    >>> h, c = LSTMCell(3, 4)(et.randn(2, 3))
    >>> tuple(h.shape), tuple(c.shape)
    ((2, 4), (2, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx=None) -> tuple[Tensor, Tensor]:
        x, (h, c), batched, weights = self._prepare(input, hx, 2)
        h, c = _rnn.lstm_cell(x, (h, c), *weights)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step.

    >>> tuple(GRUCell(3, 4)(et.randn(3)).shape)
    (4,)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched, weights = self._prepare(input, hx, 1)
        out = _rnn.gru_cell(x, h, *weights)
        return out if batched else out.squeeze(0)
