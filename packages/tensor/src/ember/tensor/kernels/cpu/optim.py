"""Fused multi-tensor optimizer updates (Adam / AdamW, SGD) on lists of NumPy arrays, in place.

One call updates every parameter of its lists with one kernel launch per dtype: the launch's
``prange`` runs over fixed-size chunks of all the tensors together, so twenty parameters cost
one wake-up of Numba's thread pool (about 80 us on two cores), not twenty. Each element of a
parameter and of its state buffers is read once and written once, with no temporaries. The
arithmetic follows PyTorch's single-tensor ``torch.optim.adam._single_tensor_adam`` and
``torch.optim.sgd._single_tensor_sgd`` operation by operation (same operations in the same
order; step-dependent scalars computed on the host in double, per tensor, and rounded once to
the parameter dtype, as PyTorch does), so a tensor's result does not depend on the others in
the call. These are the CPU twins of ``kernels/cuda/optim.cu`` and take the same arguments.

How the kernel reaches the arrays: the wrapper validates every array, then a compiled helper
writes each tensor's data addresses and size into an integer table (about 0.5 us a tensor) and
the kernel views them with ``numba.carray``. A ``numba.typed.List`` of the arrays costs about
1.8 us an array to build (9 us a tensor for Adam's five), every call, since the gradients are
new arrays every step. The table holds no references: the caller's lists keep the arrays alive
for the duration of the call, and every call reads the addresses afresh, so a replaced
``p.data`` or state buffer is always the one updated.

>>> import numpy as np
>>> from ember.tensor.kernels.cpu.optim import sgd_step
>>> p, q = np.ones(3), np.zeros(2)
>>> sgd_step([p, q], [np.full(3, 0.5), np.ones(2)], None, lr=0.1, momentum=0.0,
...          dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False,
...          first_steps=None)
>>> p.tolist(), q.tolist()
([0.95, 0.95, 0.95], [-0.1, -0.1])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numba
import numpy as np
from numba import literal_unroll, prange, types
from numba.extending import intrinsic

from ._common import parallel_call, use_parallel

__all__ = ["adam_step", "sgd_step"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# Each update is a span kernel over whole arrays (a plain loop that LLVM vectorizes), run on
# chunks of the tensors by a serial and a parallel driver. The drivers are distinct functions
# because Numba's on-disk cache is keyed by the Python function: two njit wrappers of one
# function (one with parallel=True) share a cache entry, and whichever compiled first answered
# for both (the "serial" update then paid a parallel launch, ~50 us, per call).
def _adam_span(p, g, m, v, vmax, scalars, amsgrad, maximize, decoupled, low_weight):
    # the float scalars travel in one array of the parameter's dtype: Numba dispatches on
    # NumPy scalar arguments about 100x slower than on arrays
    weight_decay, decay_factor, w, one_minus_w = scalars[0], scalars[1], scalars[2], scalars[3]
    beta2, one_minus_beta2, eps = scalars[4], scalars[5], scalars[6]
    neg_step_size, bias_correction2_sqrt = scalars[7], scalars[8]
    for i in range(p.shape[0]):
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if weight_decay != 0:
            if decoupled:
                pi = pi * decay_factor
            else:
                gi = gi + weight_decay * pi
        mi = m[i]
        # torch.lerp (ATen/native/Lerp.h): the branch depends only on the weight
        if low_weight:
            mi = mi + w * (gi - mi)
        else:
            mi = gi - (gi - mi) * one_minus_w
        vi = v[i] * beta2 + one_minus_beta2 * gi * gi
        m[i] = mi
        v[i] = vi
        if amsgrad:
            vm = vmax[i]
            # torch.maximum propagates NaN
            if vm != vm or vm > vi:
                vi = vm
            vmax[i] = vi
        denom = np.sqrt(vi) / bias_correction2_sqrt + eps
        p[i] = pi + neg_step_size * mi / denom


def _sgd_span(p, g, buf, scalars, nesterov, maximize, first_step, has_momentum):
    neg_lr, momentum, one_minus_dampening, weight_decay = (scalars[0], scalars[1], scalars[2],
                                                            scalars[3])
    for i in range(p.shape[0]):
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if weight_decay != 0:
            gi = gi + weight_decay * pi
        if has_momentum:
            if first_step:
                b = gi
            else:
                b = buf[i] * momentum + one_minus_dampening * gi
            buf[i] = b
            if nesterov:
                gi = gi + momentum * b
            else:
                gi = b
        p[i] = pi + neg_lr * gi


# error_model="numpy": a float division by zero gives inf/nan as in PyTorch instead of raising
# ZeroDivisionError, and the loops carry no per-element zero test, so LLVM vectorizes them
# (with Python's error model the Adam loop stays scalar and runs about 5x slower).
_OPTIONS = {"cache": True, "nogil": True, "error_model": "numpy"}
_adam_span = numba.njit(**_OPTIONS)(_adam_span)
_sgd_span = numba.njit(**_OPTIONS)(_sgd_span)
_SPAN = 1 << 14  # elements per chunk (a parallel work item)


# --------------------------------------------------------------------------- the tensor table
@intrinsic
def _pointer(typingctx, address, like):
    """The integer ``address`` as a pointer to elements of ``like``'s dtype."""
    if not isinstance(address, types.Integer) or not isinstance(like, types.Array):
        return None

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

    return types.CPointer(like.dtype)(address, like), codegen


@numba.njit(**_OPTIONS)
def _record(addresses, sizes, j, arrays):
    """Row ``j`` of the table: the data address of each array of the tuple ``arrays`` (flat,
    C-contiguous, of one size, validated by the caller) and that size. (``literal_unroll``:
    a read-only gradient makes the tuple heterogeneous.)"""
    k = 0
    for a in literal_unroll(arrays):
        addresses[j, k] = a.ctypes.data
        k += 1
    sizes[j] = arrays[0].shape[0]


@numba.njit(**_OPTIONS)
def _chunk_starts(sizes):
    """The index of each tensor's first chunk (and the chunk count, last)."""
    starts = np.empty(sizes.shape[0] + 1, np.int64)
    starts[0] = 0
    for t in range(sizes.shape[0]):
        starts[t + 1] = starts[t] + (sizes[t] + _SPAN - 1) // _SPAN
    return starts


@numba.njit(**_OPTIONS)
def _chunk(starts, sizes, c):
    """Chunk ``c``: its tensor and its element range in that tensor (empty tensors have no
    chunk, so ``side="right"`` lands on the tensor that holds ``c``)."""
    t = np.searchsorted(starts, c, side="right") - 1
    lo = (c - starts[t]) * _SPAN
    return t, lo, min(sizes[t], lo + _SPAN)


@numba.njit(**_OPTIONS)
def _view(address, n, like, lo, hi):
    """Elements ``lo:hi`` of the ``n``-element array of ``like``'s dtype at ``address``."""
    return numba.carray(_pointer(address, like), n)[lo:hi]


@numba.njit(**_OPTIONS)
def _adam_chunk(c, starts, sizes, addresses, scalars, amsgrad, maximize, decoupled,
                low_weight):
    t, lo, hi = _chunk(starts, sizes, c)
    n, a, s = sizes[t], addresses[t], scalars[t]
    _adam_span(_view(a[0], n, s, lo, hi), _view(a[1], n, s, lo, hi), _view(a[2], n, s, lo, hi),
               _view(a[3], n, s, lo, hi), _view(a[4], n, s, lo, hi), s, amsgrad, maximize,
               decoupled, low_weight)


@numba.njit(**_OPTIONS)
def _adam_serial(sizes, addresses, scalars, amsgrad, maximize, decoupled, low_weight):
    starts = _chunk_starts(sizes)
    for c in range(starts[-1]):
        _adam_chunk(c, starts, sizes, addresses, scalars, amsgrad, maximize, decoupled,
                    low_weight)


@numba.njit(parallel=True, **_OPTIONS)
def _adam_parallel(sizes, addresses, scalars, amsgrad, maximize, decoupled, low_weight):
    starts = _chunk_starts(sizes)
    for c in prange(starts[-1]):
        _adam_chunk(c, starts, sizes, addresses, scalars, amsgrad, maximize, decoupled,
                    low_weight)


@numba.njit(**_OPTIONS)
def _sgd_chunk(c, starts, sizes, addresses, scalars, first, nesterov, maximize, has_momentum):
    t, lo, hi = _chunk(starts, sizes, c)
    n, a = sizes[t], addresses[t]
    _sgd_span(_view(a[0], n, scalars, lo, hi), _view(a[1], n, scalars, lo, hi),
              _view(a[2], n, scalars, lo, hi), scalars, nesterov, maximize, first[t],
              has_momentum)


@numba.njit(**_OPTIONS)
def _sgd_serial(sizes, addresses, scalars, first, nesterov, maximize, has_momentum):
    starts = _chunk_starts(sizes)
    for c in range(starts[-1]):
        _sgd_chunk(c, starts, sizes, addresses, scalars, first, nesterov, maximize,
                   has_momentum)


@numba.njit(parallel=True, **_OPTIONS)
def _sgd_parallel(sizes, addresses, scalars, first, nesterov, maximize, has_momentum):
    starts = _chunk_starts(sizes)
    for c in prange(starts[-1]):
        _sgd_chunk(c, starts, sizes, addresses, scalars, first, nesterov, maximize,
                   has_momentum)


def _tables(rows: list[tuple[np.ndarray, ...]]) -> list[tuple[np.dtype, list[int], Any, Any]]:
    """One launch per dtype: ``(dtype, indices, addresses, sizes)`` over the non-empty rows
    (each row: a tensor's flat arrays, the parameter first); ``indices`` are the rows'
    positions in the caller's lists."""
    groups: dict[np.dtype, list[int]] = {}
    for i, arrays in enumerate(rows):
        if arrays[0].shape[0]:
            groups.setdefault(arrays[0].dtype, []).append(i)
    tables = []
    for dtype, indices in groups.items():
        addresses = np.empty((len(indices), len(rows[indices[0]])), np.uintp)
        sizes = np.empty(len(indices), np.int64)
        for j, i in enumerate(indices):
            _record(addresses, sizes, j, rows[i])
        tables.append((dtype, indices, addresses, sizes))
    return tables


def _launch(serial: Any, parallel: Any, sizes: np.ndarray, *args: Any) -> None:
    if use_parallel(int(sizes.sum())):
        parallel_call(parallel, sizes, *args)
    else:
        serial(sizes, *args)


# --------------------------------------------------------------------------- validation
def _count(op: str, params: Any, **lists: Any) -> int:
    """The number of tensors: ``params`` and every list in ``lists`` hold one entry each."""
    n = None
    for name, seq in (("params", params), *lists.items()):
        if not isinstance(seq, (list, tuple)):
            raise TypeError(
                f"{op}(): expected {name} to be a list of NumPy arrays (one per param), got "
                f"{type(seq).__name__}")
        if n is None:
            n = len(seq)
        elif len(seq) != n:
            raise RuntimeError(
                f"{op}(): expected {name} to hold {n} entries (one per param), got {len(seq)}")
    return n


def _flat(op: str, name: str, i: int, arr: Any, shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A 1-d view of a C-contiguous array of ``shape`` and ``dtype`` (written in place)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(
            f"{op}(): expected {name}[{i}] to be a NumPy array, got {type(arr).__name__}")
    if arr.shape != shape:
        raise RuntimeError(f"{op}(): expected {name}[{i}] of shape {shape} (the parameter's), "
                           f"got {arr.shape}")
    if arr.dtype != dtype:
        raise RuntimeError(f"{op}(): expected {name}[{i}] of dtype {dtype} (the parameter's), "
                           f"got {arr.dtype}")
    if not arr.flags.c_contiguous or not arr.flags.writeable:
        raise RuntimeError(f"{op}(): {name}[{i}] must be a writeable C-contiguous array")
    return arr.reshape(-1)


def _param(op: str, i: int, param: Any) -> np.ndarray:
    if not isinstance(param, np.ndarray):
        raise TypeError(
            f"{op}(): expected params[{i}] to be a NumPy array, got {type(param).__name__}")
    if param.dtype not in _FLOATS:
        raise RuntimeError(
            f"{op}(): expected float32 or float64 params, got {param.dtype} (params[{i}])")
    return _flat(op, "params", i, param, param.shape, param.dtype)


def _grad(op: str, i: int, grad: Any, shape: tuple, dtype: np.dtype) -> np.ndarray:
    """The gradient, flat and C-contiguous (a copy where it is not: the caller keeps it alive
    until the kernel has run)."""
    grad = np.asarray(grad)
    if grad.shape != shape:
        raise RuntimeError(f"{op}(): expected grads[{i}] of shape {shape} (the parameter's), "
                           f"got {grad.shape}")
    if grad.dtype != dtype:
        raise RuntimeError(f"{op}(): expected grads[{i}] of dtype {dtype} (the parameter's), "
                           f"got {grad.dtype}")
    return np.ascontiguousarray(grad).reshape(-1)


# --------------------------------------------------------------------------- the kernels
def _adam_step_scalars(lr: float, beta1: float, beta2: float, step: float) -> tuple:
    """``(-step_size, bias_correction2_sqrt)`` in double, as ``_single_tensor_adam``."""
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr / bias_correction1
    return -step_size, bias_correction2 ** 0.5


def adam_step(params: Sequence[np.ndarray], grads: Sequence[np.ndarray],
              exp_avgs: Sequence[np.ndarray], exp_avg_sqs: Sequence[np.ndarray],
              max_exp_avg_sqs: Sequence[np.ndarray] | None, *, lr: float, beta1: float,
              beta2: float, eps: float, weight_decay: float, steps: Sequence[float],
              amsgrad: bool, maximize: bool, decoupled_weight_decay: bool) -> None:
    """One fused Adam (AdamW with ``decoupled_weight_decay``) step over lists of arrays, in
    place.

    Updates each ``params[i]``, ``exp_avgs[i]``, ``exp_avg_sqs[i]`` (and ``max_exp_avg_sqs[i]``
    with ``amsgrad``; the list is not read without it) exactly as ``torch.optim.Adam`` /
    ``AdamW``'s single-tensor path; ``steps[i]`` is that parameter's step, counting from 1.
    Every array is validated before anything is written.
    """
    op = "adam_step"
    lists = {"grads": grads, "exp_avgs": exp_avgs, "exp_avg_sqs": exp_avg_sqs, "steps": steps}
    if amsgrad:
        if max_exp_avg_sqs is None:
            raise RuntimeError(f"{op}(): amsgrad=True needs a max_exp_avg_sq buffer for every "
                               "param, got None")
        lists["max_exp_avg_sqs"] = max_exp_avg_sqs
    rows = []
    for i in range(_count(op, params, **lists)):
        p = _param(op, i, params[i])
        shape, dtype = params[i].shape, p.dtype
        g = _grad(op, i, grads[i], shape, dtype)
        m = _flat(op, "exp_avgs", i, exp_avgs[i], shape, dtype)
        v = _flat(op, "exp_avg_sqs", i, exp_avg_sqs[i], shape, dtype)
        if amsgrad:
            if max_exp_avg_sqs[i] is None:
                raise RuntimeError(f"{op}(): amsgrad=True needs a max_exp_avg_sq buffer for "
                                   f"every param, got None (max_exp_avg_sqs[{i}])")
            vmax = _flat(op, "max_exp_avg_sqs", i, max_exp_avg_sqs[i], shape, dtype)
        else:
            vmax = v  # never read or written by the kernel
        if int(steps[i]) < 1:
            raise ValueError(f"{op}(): steps count from 1, got {steps[i]} (steps[{i}])")
        rows.append((p, g, m, v, vmax))
    w = 1 - beta1
    by_step: dict[float, tuple] = {}  # host-side scalars, once per distinct step
    for dtype, indices, addresses, sizes in _tables(rows):
        t = dtype.type
        scalars = np.empty((len(indices), 9), dtype)
        scalars[:, :7] = [t(weight_decay), t(1 - lr * weight_decay), t(w), t(1 - t(w)),
                          t(beta2), t(1 - beta2), t(eps)]
        for i in indices:
            step = float(steps[i])
            if step not in by_step:
                by_step[step] = _adam_step_scalars(lr, beta1, beta2, step)
        scalars[:, 7:] = [by_step[float(steps[i])] for i in indices]  # rounded to the dtype
        _launch(_adam_serial, _adam_parallel, sizes, addresses, scalars, bool(amsgrad),
                bool(maximize), bool(decoupled_weight_decay), bool(abs(t(w)) < 0.5))


def sgd_step(params: Sequence[np.ndarray], grads: Sequence[np.ndarray],
             bufs: Sequence[np.ndarray] | None, *, lr: float, momentum: float,
             dampening: float, weight_decay: float, nesterov: bool, maximize: bool,
             first_steps: Sequence[bool] | None) -> None:
    """One fused SGD step over lists of arrays, in place, exactly as ``torch.optim.SGD``'s
    single-tensor path.

    ``bufs`` are the momentum buffers and ``first_steps`` say, per parameter, whether this is
    its buffer's first step (the buffer is then set to the (decayed) gradient instead of being
    averaged); both are not read when ``momentum`` is 0 and may be None. Every array is
    validated before anything is written.
    """
    op = "sgd_step"
    has_momentum = momentum != 0
    lists = {"grads": grads}
    if has_momentum:
        if bufs is None or first_steps is None:
            raise RuntimeError(f"{op}(): momentum={momentum} needs a momentum buffer and a "
                               "first-step flag for every param, got None")
        lists.update(bufs=bufs, first_steps=first_steps)
    rows = []
    for i in range(_count(op, params, **lists)):
        p = _param(op, i, params[i])
        shape, dtype = params[i].shape, p.dtype
        g = _grad(op, i, grads[i], shape, dtype)
        if has_momentum:
            if bufs[i] is None:
                raise RuntimeError(f"{op}(): momentum={momentum} needs a momentum buffer for "
                                   f"every param, got None (bufs[{i}])")
            b = _flat(op, "bufs", i, bufs[i], shape, dtype)
        else:
            b = p  # never read or written by the kernel
        rows.append((p, g, b))
    for dtype, indices, addresses, sizes in _tables(rows):
        t = dtype.type
        scalars = np.array([t(-lr), t(momentum), t(1 - dampening), t(weight_decay)],
                           dtype=dtype)
        first = np.array([has_momentum and bool(first_steps[i]) for i in indices], np.bool_)
        _launch(_sgd_serial, _sgd_parallel, sizes, addresses, scalars, first, bool(nesterov),
                bool(maximize), bool(has_momentum))
