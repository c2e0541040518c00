"""A sweep over the whole op table, ember against PyTorch CPU in one process, at two sizes.

    python benchmarks/bench_ops.py [--shape small|medium|both] [--filter NAME] [--min-ratio R]
                                   [--threads N] [--notes] [--profile] [--json]

Every entry of ``ember.tensor.testing.op_table.OP_TABLE`` (the tensor core's ops, nn's primitives
from ``nn_op_table``, linalg / special / the added ``torch.*`` names from ``op_table_extra``,
``torch.fft`` from ``op_table_fft``) is timed on ember and on PyTorch: forward without grad, and
forward + ``sum()`` + backward (complex outputs: ``real.sum()``), at SMALL (about 4 x 64: per-call
overhead dominates) and MEDIUM (about 256 x 1024: the kernels dominate). The ratio is ember /
PyTorch, lower is better; the goal is <= 1.5x at small and <= 1.2x at medium, for forward and
for forward + backward alike (an op is within goal when every column measured for it is).

PyTorch's counterpart of an entry: an explicit table for the entries whose ember function is a
variant or a lambda (``add_alpha``, ``max_dim``, ``getitem_adv``, ``linalg_svd_grad``, the fused
RNN cells, ...), then the entry's name (``linalg_X`` / ``special_X`` / ``fft_X`` in
``torch.linalg`` / ``torch.special`` / ``torch.fft``; else ``torch.X``, ``torch._C._nn.X`` (what
``torch.nn.functional`` calls: ``linear``, ``im2col``, ``cross_entropy_loss``,
``max_pool2d_with_indices``, ...), the ``torch.Tensor`` method, ``torch.nn.functional.X``,
``torch.ops.aten.X``), then the same for the ember function's own name.

Sized samples. The op table's samples are tiny (2 x 3); they are scaled generically. The arrays
of a sample get new shapes by one of three rules, tried in this order for each sample:
``position`` (the last dim -> 64 / 1024, the first dim of a >= 2-d array -> 4 / 256, a square
pair of trailing dims (a matrix) -> 16 / 512 on both, dims of size 1 and the middle dims kept),
``value`` (the same roles, given per original size across all the sample's arrays, so that sizes
the arrays share stay equal: ``mm``'s inner dim, ``index_add``'s source rows and index length),
``flat`` (1-d arrays -> 256 / 262144 elements). Dims never shrink. Floating values are resampled
from the sample's own values (so domains hold: positive, away from zero, inside (-1, 1)), with a
5 % jitter; boolean masks are redrawn; integer arrays of a floating op are indices: redrawn
within the smallest scaled dim of the first floating array that was larger than every original
index (or within its element count, for flat indices); integer data stays within its range.
A candidate is kept when PyTorch runs its forward (and the backward, where PyTorch has one) and
its largest input or output has between 1/2 and 16 times the 4 x 64 / 256 x 1024 element count
(a meta-device dry run measures outputs before anything is allocated: bigger candidates run
only if nothing else fits, over 64 times never). When no candidate of any sample is in range, a
per-op table of sized samples (``SIZED``: creation ops, views with size arguments, ``bmm``,
convolution, CTC, packed sequences, ...) is tried, then the candidate closest in size; such
off-target sizes are listed. An entry that PyTorch lacks or that no sized sample fits is listed
as skipped with the reason, so the sweep never silently narrows: every entry appears in the
table or in the skipped list, at each shape.

Per shape, every sample is chosen first, then each op is timed on ember and right after on
PyTorch, so that both see the same load of a shared machine. Threads: one for each framework by
default (PyTorch's intra-op pool, ember's Numba pool and NumPy's BLAS through threadpoolctl), as
this sweep has always run PyTorch: on a small shared machine a second thread makes both sides'
timings erratic; single-threaded, the harness times the process's CPU time
(``time.process_time``), which leaves out the time other jobs hold the cores. ``--threads N``
gives every pool ``N`` and times wall time; then every op is timed on ember first and on PyTorch
after (PyTorch's OpenMP threads keep spinning after its ops and would slow down NumPy's BLAS
threads timed right after them). The header reports what each framework uses and the timer.

Output: the ratio table sorted worst first (by the ratio over its shape's goal), the summary
(ops within goal at each shape and at both, median ratios), one note line per op not within goal
(its ratios, times and input shapes, for a maintainer to annotate what bounds it; ``--notes``
prints only those and the summary), off-target sizes, and the skipped list. With ``--profile``
each of those lines also says what bounds the op, measured: ember's call of its worst column
is run under ``cProfile`` and the line names the three entries with the most time of their own
(with their shares) and how many Python and C calls one call makes (see ``bound_by``).
"""
from __future__ import annotations

import argparse
import cProfile
import json
import math
import operator
import os
import pstats
import signal
import statistics
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path


def _blas_threads(argv) -> str:
    """``--threads`` of the command line (default 1), read before NumPy and SciPy load their
    BLAS: OpenBLAS takes its thread count from the environment when it loads, and without
    threadpoolctl nothing limits it later (two spinning BLAS threads count in the process's
    CPU time: a 4x4 triangular solve then reads 20 us instead of 1)."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, _blas_threads(sys.argv[1:]))

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import fmt_time, timeit  # noqa: E402

import ember.autograd  # noqa: E402,F401
import ember.tensor as et  # noqa: E402
from ember.tensor.testing import op_table as T  # noqa: E402
from ember.tensor.testing._harness import Sample  # noqa: E402

SHAPES = {"small": (4, 64), "medium": (256, 1024)}
GOALS = {"small": 1.5, "medium": 1.2}
LOW, HIGH, HARD = 0.5, 16, 64  # in-range sizes and the hard limit, in units of R x C elements
CALL_LIMIT = 30.0  # seconds: an op slower than this per call is reported, not timed
TIMER = {"fn": time.process_time}  # CPU time with one thread (main() sets wall time for more)
_DTYPES = ("float32", "complex64", "int64", "int32", "bool", "uint8", "int8", "float64")


def _rng(*key):
    return np.random.default_rng(zlib.crc32("/".join(map(str, key)).encode()))


def _dtype(entry) -> str:
    return next((d for d in _DTYPES if d in entry.dtypes), entry.dtypes[0])


# --------------------------------------------------------------------------- PyTorch's side
def _explicit(torch):
    """PyTorch counterparts of the entries whose ember function is a variant or a lambda."""
    aten, LA = torch.ops.aten, torch.linalg

    def phase_free(r):
        return r[0], r[1] * torch.conj(r[1][..., :1, :])

    def lstm_cell(ig, hg, cx):  # at::lstm_cell's CPU path, from the gates on
        i, f, g, o = (ig + hg).unsafe_chunk(4, 1)
        cy = f.sigmoid() * cx + i.sigmoid() * g.tanh()
        return o.sigmoid() * cy.tanh(), cy

    def gru_cell(ig, hg, hx):  # at::gru_cell's CPU path, from the gates on
        xr, xz, xn = ig.unsafe_chunk(3, 1)
        hr, hz, hn = hg.unsafe_chunk(3, 1)
        r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
        n = (xn + hn * r).tanh()
        return (hx - n) * z + n

    return {
        "tanh_backward": (aten.tanh_backward, "torch.ops.aten.tanh_backward"),
        "sigmoid_backward": (aten.sigmoid_backward, "torch.ops.aten.sigmoid_backward"),
        "threshold_backward": (aten.threshold_backward, "torch.ops.aten.threshold_backward"),
        "slice_view": (aten.slice, "torch.ops.aten.slice"),
        # ember's functions take the sizes as varargs too, torch's only as one sequence
        "reshape": (torch.Tensor.reshape, "Tensor.reshape"),
        "permute": (torch.Tensor.permute, "Tensor.permute"),
        "getitem_basic": (operator.getitem, "Tensor.__getitem__"),
        "getitem_adv": (operator.getitem, "Tensor.__getitem__"),
        "polygamma_method": (lambda x, n: x.polygamma(n), "Tensor.polygamma"),
        "sum_to_size": (lambda x, *s: x.sum_to_size(*s), "Tensor.sum_to_size"),
        "scatter_reduce_": (lambda x, *a, **k: x.clone().scatter_reduce_(*a, **k),
                            "clone + Tensor.scatter_reduce_"),
        "fill_diagonal_": (lambda x, *a, **k: x.clone().fill_diagonal_(*a, **k),
                           "clone + Tensor.fill_diagonal_"),
        "linalg_eig_grad": (lambda a: phase_free(LA.eig(a)), "torch.linalg.eig (phase-free)"),
        "linalg_eig_grad_complex": (lambda a: phase_free(LA.eig(a)),
                                    "torch.linalg.eig (phase-free)"),
        "linalg_cholesky_grad": (lambda a, upper=False: LA.cholesky(
            a @ a.mT + 3 * torch.eye(a.shape[-1], dtype=a.dtype), upper=upper),
            "torch.linalg.cholesky of a a^T + 3 I"),
        "linalg_eigh_grad": (lambda a: (lambda r: (r[0], r[1] * r[1][..., :1, :]))(
            LA.eigh(a + a.mT)), "torch.linalg.eigh (sign-free)"),
        "linalg_svd_grad": (lambda a: (lambda r: (r[1], r[0] @ r[2]))(
            LA.svd(a, full_matrices=False)), "torch.linalg.svd (S, U V^h)"),
        "linalg_lu_factor": (lambda a: LA.lu_factor(a).LU, "torch.linalg.lu_factor"),
        "linalg_lu_solve": (lambda a, b: LA.lu_solve(*LA.lu_factor(a), b),
                            "torch.linalg.lu_factor + lu_solve"),
        "linalg_lstsq": (lambda a, b: LA.lstsq(a, b).solution, "torch.linalg.lstsq"),
        "histogramdd": (torch.histogramdd, "torch.histogramdd"),
        "lstm_cell_fused": (lstm_cell, "at::lstm_cell's CPU gate math (torch ops)"),
        "gru_cell_fused": (gru_cell, "at::gru_cell's CPU gate math (torch ops)"),
    }


def _by_name(torch, name):
    for prefix in ("linalg", "special", "fft"):
        if name.startswith(prefix + "_"):
            f = getattr(getattr(torch, prefix), name[len(prefix) + 1:], None)
            if callable(f):
                return f, f"torch.{prefix}.{name[len(prefix) + 1:]}"
    for mod, label in ((torch, "torch"), (torch._C._nn, "torch._C._nn"),
                       (torch.Tensor, "Tensor"), (torch.nn.functional, "torch.nn.functional")):
        f = getattr(mod, name, None)
        if callable(f):
            return f, f"{label}.{name}"
    try:
        return getattr(torch.ops.aten, name), f"torch.ops.aten.{name}"
    except (AttributeError, RuntimeError):
        return None, None


def torch_counterpart(torch, entry, explicit):
    """(callable, label) or (None, reason)."""
    if entry.name in explicit:
        return explicit[entry.name]
    names = [entry.name]
    if entry.name.endswith("_complex"):
        names.append(entry.name[:-len("_complex")])
    own = getattr(entry.fn, "__name__", "<lambda>")
    if own != "<lambda>":
        names.append(own)
    for n in names:
        f, label = _by_name(torch, n)
        if f is not None:
            return f, label
    return None, f"no PyTorch counterpart found under {' / '.join(dict.fromkeys(names))}"


# --------------------------------------------------------------------------- structures
def _walk(obj):
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _walk(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _walk(x)


def _map(obj, f):
    if isinstance(obj, np.ndarray):
        return f(obj)
    if isinstance(obj, list):
        return [_map(x, f) for x in obj]
    if type(obj) is tuple:
        return tuple(_map(x, f) for x in obj)
    if isinstance(obj, dict):
        return {k: _map(v, f) for k, v in obj.items()}
    return obj


def _sample_arrays(s: Sample):
    return list(_walk(s.args)) + list(_walk(s.kwargs))


def _convert(obj, fw, grad=False, meta=False):
    """NumPy arrays (and NumPy scalars) as tensors of ``fw``; floating and complex ones as
    leaves that require grad when ``grad``."""
    def conv(a):
        a = np.asarray(a)
        if meta:
            t = fw.empty(a.shape, dtype=getattr(fw, a.dtype.name), device="meta")
        else:
            t = fw.tensor(a.copy()) if fw is et else fw.from_numpy(a.copy())
        if grad and a.dtype.kind in "fc":
            t.requires_grad_(True)
        return t

    if isinstance(obj, np.generic):
        return conv(obj)
    return _map(obj, conv)


def _convert_sample(s: Sample, fw, grad=False, meta=False):
    return (tuple(_convert(a, fw, grad, meta) for a in s.args),
            {k: _convert(v, fw, False, meta) for k, v in s.kwargs.items()})


def _tensors(out):
    if hasattr(out, "numel") and hasattr(out, "shape"):
        yield out
    elif isinstance(out, (list, tuple)):
        for o in out:
            yield from _tensors(o)


def _loss_output(out):
    """The first output that requires grad (None when there is none)."""
    return next((o for o in _tensors(out) if getattr(o, "requires_grad", False)), None)


def _loss(o):
    return (o.real if o.is_complex() else o).sum()


def _describe(s: Sample) -> str:
    def d(a):
        return f"{a.dtype.name}{tuple(a.shape)}"
    parts = []
    for a in list(s.args) + list(s.kwargs.values()):
        if isinstance(a, np.ndarray):
            parts.append(d(a))
        elif isinstance(a, (list, tuple)) and any(isinstance(x, np.ndarray) for x in _walk(a)):
            parts.append("[" + ", ".join(d(x) for x in _walk(a)) + "]")
    return ", ".join(parts) or repr(s.args)[:60]


# --------------------------------------------------------------------------- sized samples
def _grow(n, new):
    return n if n <= 1 else max(n, new)


def _position(arrays, R, C, S):
    def shape(s):
        if len(s) == 0:
            return s
        if len(s) == 1:
            return (_grow(s[0], C),)
        if s[-1] == s[-2] > 1:
            return s[:-2] + (_grow(s[-1], S),) * 2
        return (_grow(s[0], R),) + s[1:-1] + (_grow(s[-1], C),)
    return shape


def _value(arrays, R, C, S):
    role = {}

    def put(n, rank, new):
        if n > 1 and rank > role.get(n, (0, n))[0]:
            role[n] = (rank, new)
    for a in arrays:
        s = a.shape
        if len(s) >= 2 and s[-1] == s[-2]:
            put(s[-1], 3, S)
        if len(s) >= 1:
            put(s[-1], 2, C)
        if len(s) >= 2:
            put(s[0], 1, R)
    return lambda s: tuple(_grow(n, role[n][1]) if n in role else n for n in s)


def _flat(arrays, R, C, S):
    pos = _position(arrays, R, C, S)
    return lambda s: (_grow(s[0], R * C),) if len(s) == 1 else pos(s)


STRATEGIES = {"position": _position, "value": _value, "flat": _flat}


def scale(s: Sample, strategy: str, shape: str, rng, int_data: bool) -> Sample | None:
    """``s`` with its arrays resized by ``strategy``; None when nothing changes."""
    R, C = SHAPES[shape]
    S = math.isqrt(R * C)
    arrays = _sample_arrays(s)
    new_shape = STRATEGIES[strategy](arrays, R, C, S)
    if all(tuple(new_shape(a.shape)) == a.shape for a in arrays):
        return None
    biggest = max(math.prod(new_shape(a.shape)) for a in arrays)
    if biggest > HARD * R * C:
        raise ValueError(f"an input of {biggest} elements")
    main = next((a for a in arrays if a.dtype.kind in "fc"), None)
    main_new = tuple(new_shape(main.shape)) if main is not None else None

    def index_bound(a):
        if int_data or main is None or a.size == 0:
            return None
        lo, hi = int(a.min()), int(a.max())
        if lo < 0:
            return None
        dims = [n for o, n in zip(main.shape, main_new) if o > hi]
        if dims:
            return min(dims)
        return math.prod(main_new) if hi < main.size else None

    def fill(a):
        shp = tuple(new_shape(a.shape))
        if shp == a.shape:
            return a.copy()
        if a.dtype == np.bool_:
            return rng.random(shp) < 0.5
        if a.dtype.kind in "iu":
            bound = index_bound(a)
            if bound is not None:
                return rng.integers(0, bound, size=shp).astype(a.dtype)
            lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 1)
            return rng.integers(lo, hi + 1, size=shp).astype(a.dtype)
        vals = a.reshape(-1) if a.size else np.ones(1, a.dtype)
        out = rng.choice(vals, size=shp) * (1 + rng.uniform(-0.05, 0.05, size=shp))
        return out.astype(a.dtype)

    return Sample(_map(s.args, fill), _map(s.kwargs, fill), s.grad, s.note)


def _f(rng, *shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def _spd(rng, n):
    a = _f(rng, n, n)
    return (a @ a.T / n + np.eye(n, dtype=np.float32)).astype(np.float32)


def _lengths(rng, n, top):
    return np.sort(rng.integers(max(1, top // 2), top + 1, size=n))[::-1].copy()


def _sized_ctc(rng, shape):
    t, n, c, s = {"small": (16, 4, 4, 5), "medium": (64, 16, 256, 20)}[shape]
    x = _f(rng, t, n, c)
    lp = (x - np.log(np.exp(x).sum(2, keepdims=True))).astype(np.float32)
    return Sample((lp, rng.integers(1, c, size=(n, s)), [t] * n,
                   [int(v) for v in rng.integers(s // 2, s + 1, size=n)]))


def _sized_pack(rng, shape):
    t, b, h = {"small": (8, 4, 8), "medium": (64, 16, 256)}[shape]
    return Sample((_f(rng, t, b, h), _lengths(rng, b, t), False))


def _sized_pad(rng, shape):
    t, b, h = {"small": (8, 4, 8), "medium": (64, 16, 256)}[shape]
    lengths = _lengths(rng, b, t)
    sizes = np.asarray([(lengths > i).sum() for i in range(lengths[0])], dtype=np.int64)
    return Sample((_f(rng, int(sizes.sum()), h), sizes, False, 0.0, 0))


def _sized_ldl(rng, shape):
    from scipy.linalg import lapack

    n = _sq(shape)
    a = _f(rng, n, n)
    ld, piv, _ = lapack.ssytrf((a + a.T) / 2 - 2 * np.eye(n, dtype=np.float32), lower=1)
    return Sample((np.tril(ld).astype(np.float32), piv.astype(np.int32), _f(rng, n, 2)))


def _sized_householder(rng, shape):
    R, C = SHAPES[shape]
    h, tau = np.linalg.qr(_f(rng, C, R), mode="raw")
    return Sample((h.T.astype(np.float32).copy(), tau.astype(np.float32)))


def _sized_stft(rng, shape):
    R, C = SHAPES[shape]
    n = {"small": 16, "medium": 64}[shape]
    return Sample((_f(rng, R, C), n, n // 4, None, _f(rng, n, lo=0.5, hi=1.0)),
                  dict(return_complex=True))


def _sized_istft(rng, shape):
    R, C = SHAPES[shape]
    n = {"small": 16, "medium": 64}[shape]
    frames = C // (n // 4) + 1
    x = (_f(rng, R, n // 2 + 1, frames) + 1j * _f(rng, R, n // 2 + 1, frames))
    return Sample((x.astype(np.complex64), n, n // 4, None, _f(rng, n, lo=0.5, hi=1.0)))


def _rc(shape):
    return SHAPES[shape]


def _sq(shape):
    return math.isqrt(math.prod(SHAPES[shape]))


def _bmm_dims(shape):
    return {"small": (4, 8, 8), "medium": (16, 128, 128)}[shape]


def _conv_dims(shape):  # N, C_in, H, C_out, k
    return {"small": (2, 2, 8, 4, 3), "medium": (16, 16, 32, 32, 3)}[shape]


def _kron_dims(shape):  # kron of two of these is R x C
    return tuple(math.isqrt(n) for n in _rc(shape))


def _split_sizes(shape):
    R = _rc(shape)[0]
    return [R // 4, R // 4, R // 2]


# Sized samples for the ops the generic scaling cannot size (size arguments, coupled shapes,
# structured inputs, creation ops): name -> (rng, shape) -> Sample.
SIZED = {
    "view": lambda g, s: Sample((_f(g, *_rc(s)), _rc(s)[1], _rc(s)[0])),
    "reshape": lambda g, s: Sample((_f(g, *_rc(s)), _rc(s)[1], _rc(s)[0])),
    "expand": lambda g, s: Sample((_f(g, _rc(s)[0], 1), _rc(s)[0], _rc(s)[1])),
    "broadcast_to": lambda g, s: Sample((_f(g, 1, _rc(s)[1]), _rc(s))),
    "unflatten": lambda g, s: Sample((_f(g, *_rc(s)), 1, (_rc(s)[1] // 16, 16))),
    "as_strided": lambda g, s: Sample((_f(g, *_rc(s)), (_rc(s)[1], _rc(s)[0]),
                                       (1, _rc(s)[1]))),
    "as_strided_scatter": lambda g, s: Sample((
        _f(g, math.prod(_rc(s))), _f(g, _rc(s)[0] // 2, _rc(s)[1] // 2),
        (_rc(s)[0] // 2, _rc(s)[1] // 2), (1, _rc(s)[0] // 2))),
    "slice_scatter": lambda g, s: Sample((_f(g, *_rc(s)), _f(g, _rc(s)[0] // 2, _rc(s)[1]),
                                          0, 0, _rc(s)[0], 2)),
    "split_with_sizes": lambda g, s: Sample((_f(g, *_rc(s)), _split_sizes(s))),
    "split_with_sizes_fn": lambda g, s: Sample((_f(g, *_rc(s)), _split_sizes(s))),
    "unsafe_split_with_sizes": lambda g, s: Sample((_f(g, *_rc(s)), _split_sizes(s))),
    "native_layer_norm": lambda g, s: Sample((_f(g, *_rc(s)), [_rc(s)[1]], _f(g, _rc(s)[1]),
                                              _f(g, _rc(s)[1]), 1e-5)),
    "kron": lambda g, s: Sample((_f(g, *_kron_dims(s)), _f(g, *_kron_dims(s)))),
    "cross": lambda g, s: Sample((_f(g, _rc(s)[0], 3, _rc(s)[1] // 4),
                                  _f(g, _rc(s)[0], 3, _rc(s)[1] // 4), 1)),
    "view_as_complex": lambda g, s: Sample((_f(g, _rc(s)[0], _rc(s)[1] // 2, 2),)),
    "bmm": lambda g, s: Sample((_f(g, *_bmm_dims(s)), _f(g, *_bmm_dims(s)))),
    "baddbmm": lambda g, s: Sample((_f(g, *_bmm_dims(s)), _f(g, *_bmm_dims(s)),
                                    _f(g, *_bmm_dims(s))), dict(beta=0.5, alpha=2)),
    "addbmm": lambda g, s: Sample((_f(g, *_bmm_dims(s)[1:]), _f(g, *_bmm_dims(s)),
                                   _f(g, *_bmm_dims(s)))),
    "convolution": lambda g, s: (lambda n, c, h, o, k: Sample((
        _f(g, n, c, h, h), _f(g, o, c, k, k), _f(g, o), (1, 1), (1, 1), (1, 1), False, (0, 0),
        1)))(*_conv_dims(s)),
    "im2col": lambda g, s: (lambda n, c, h, o, k: Sample((
        _f(g, n, c, h, h), (k, k), (1, 1), (1, 1), (1, 1))))(*_conv_dims(s)),
    "col2im": lambda g, s: (lambda n, c, h, o, k: Sample((
        _f(g, n, c * k * k, h * h), (h, h), (k, k), (1, 1), (1, 1), (1, 1))))(*_conv_dims(s)),
    "lstm_cell_fused": lambda g, s: Sample((_f(g, _rc(s)[0], _rc(s)[1]),
                                            _f(g, _rc(s)[0], _rc(s)[1]),
                                            _f(g, _rc(s)[0], _rc(s)[1] // 4))),
    "gru_cell_fused": lambda g, s: Sample((_f(g, _rc(s)[0], 3 * (_rc(s)[1] // 4)),
                                           _f(g, _rc(s)[0], 3 * (_rc(s)[1] // 4)),
                                           _f(g, _rc(s)[0], _rc(s)[1] // 4))),
    "_ctc_loss": _sized_ctc,
    "_pack_padded_sequence": _sized_pack,
    "_pad_packed_sequence": _sized_pad,
    "histogramdd": lambda g, s: Sample((_f(g, math.prod(_rc(s)) // 2, 2), 8)),
    "linalg_cholesky": lambda g, s: Sample((_spd(g, _sq(s)),)),
    "linalg_ldl_solve": _sized_ldl,
    "linalg_householder_product": _sized_householder,
    "stft": _sized_stft,
    "istft": _sized_istft,
    "arange_int": lambda g, s: Sample((math.prod(_rc(s)),)),
    "arange_float": lambda g, s: Sample((0.0, math.prod(_rc(s)) / 4, 0.25)),
    "linspace": lambda g, s: Sample((0, 1, math.prod(_rc(s)))),
    "logspace": lambda g, s: Sample((0, 2, math.prod(_rc(s)))),
    "eye": lambda g, s: Sample((_sq(s),)),
    "zeros": lambda g, s: Sample(_rc(s)),
    "ones": lambda g, s: Sample(_rc(s)),
    "full_int": lambda g, s: Sample((_rc(s), 7)),
    "full_float": lambda g, s: Sample((_rc(s), 1.5)),
    "full_bool": lambda g, s: Sample((_rc(s), True)),
    "tensor_int": lambda g, s: Sample((list(range(math.prod(_rc(s)))),)),
    "tensor_float": lambda g, s: Sample(([i * 0.5 for i in range(math.prod(_rc(s)))],)),
}


# --------------------------------------------------------------------------- choosing
@dataclass
class Plan:
    name: str
    label: str = ""
    dtype: str = "float32"
    how: str = ""          # "sample 2 / value", "sized table", ...
    inputs: str = ""
    size: int = 0          # elements of the largest input or output
    off_target: bool = False
    make: object = None    # () -> Sample
    skip: str | None = None


def _estimate(torch, tfn, s: Sample, R, C):
    """Elements of the largest input or output, from a meta-device dry run (nothing is
    allocated; ops without a meta kernel count their inputs only); raises over the hard limit."""
    size_in = max((a.size for a in _sample_arrays(s)), default=1)
    if size_in > HARD * R * C:
        raise ValueError(f"inputs of {size_in} elements")
    try:
        ma, mk = _convert_sample(s, torch, meta=True)
        with torch.no_grad():
            mout = max((t.numel() for t in _tensors(tfn(*ma, **mk))), default=0)
    except Exception:  # noqa: BLE001  (no meta kernel, data-dependent: run it for real)
        mout = 0
    if mout > HARD * R * C:
        raise ValueError(f"an output of {mout} elements")
    return max(size_in, mout)


def _run_torch(torch, tfn, s: Sample, differentiable):
    """Largest input/output element count when PyTorch runs ``s``; raises when it refuses the
    forward (a backward it lacks leaves the candidate forward-only: ``measure`` reports it)."""
    ta, tk = _convert_sample(s, torch, grad=differentiable)
    out = tfn(*ta, **tk)
    o = _loss_output(out)
    if differentiable and o is not None:
        try:
            _loss(o).backward()
        except Exception:  # noqa: BLE001
            pass
    return max([a.size for a in _sample_arrays(s)] + [t.numel() for t in _tensors(out)] + [1])


def plan(torch, entry, explicit, shape) -> Plan:
    """Chooses the sized sample of ``entry`` at ``shape`` (see the module's docstring)."""
    p = Plan(entry.name, dtype=_dtype(entry))
    tfn, p.label = torch_counterpart(torch, entry, explicit)
    if tfn is None:
        p.skip = p.label
        return p
    R, C = SHAPES[shape]
    int_data = np.dtype(p.dtype).kind in "iub"
    samples = entry.samples(p.dtype, _rng(entry.name))
    seen, ran, big, errors = set(), [], [], []

    def in_range(size):
        return LOW * R * C <= size <= HIGH * R * C

    def candidates(strategies):
        for i in range(len(samples)):
            for st in strategies:
                yield f"sample {i} / {st}", (lambda i=i, st=st: scale(
                    entry.samples(p.dtype, _rng(entry.name))[i], st, shape,
                    _rng(entry.name, shape, i, st), int_data) or samples[i])

    def run(how, make, s):
        try:
            size = _run_torch(torch, tfn, s, entry.differentiable)
        except Exception as exc:  # noqa: BLE001  (kept as the reason if nothing fits)
            errors.append(f"{how}: {type(exc).__name__}: {str(exc).splitlines()[0][:90]}")
            return None
        ran.append((how, make, size, _describe(s)))
        return size

    def attempt(how, make):
        """Runs the candidate unless it is too big for the range (kept for later)."""
        try:
            s = make()
        except ValueError as exc:
            errors.append(f"{how}: {exc}")
            return None
        key = tuple(tuple(a.shape) for a in _sample_arrays(s)) + (how.split(" /")[0],)
        if key in seen:
            return None
        seen.add(key)
        try:
            est = _estimate(torch, tfn, s, R, C)
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{how}: {type(exc).__name__}: {str(exc).splitlines()[0][:90]}")
            return None
        if est > HIGH * R * C:
            big.append((how, make, est))
            return None
        return run(how, make, s)

    def accept(how, make, size, desc):
        p.how, p.make, p.size, p.inputs = how, make, size, desc
        p.off_target = not in_range(size)
        return p

    def closeness(size):
        return abs(math.log(max(size, 1) / (R * C)))

    for strategies in (("position", "value"), ("flat",)):
        for how, make in candidates(strategies):
            size = attempt(how, make)
            if size is not None and in_range(size):
                return accept(*ran[-1])
    if entry.name in SIZED:
        make = lambda: SIZED[entry.name](_rng(entry.name, shape, "sized"), shape)  # noqa: E731
        s = make()
        if run("sized table", make, s) is not None:
            return accept(*ran[-1])
    # nothing in range: the candidate closest in size that PyTorch runs
    pool = sorted([(closeness(c[2]), k, c) for k, c in enumerate(ran)] +
                  [(closeness(c[2]), len(ran) + k, c) for k, c in enumerate(big)])
    for _, _, c in pool:
        if len(c) == 4:
            return accept(*c)
        if run(c[0], c[1], c[1]()) is not None:
            return accept(*ran[-1])
    p.skip = "PyTorch refuses every sized sample (" + "; ".join(errors[:2]) + ")"
    return p


# --------------------------------------------------------------------------- timing
class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout


def _call_timed(fn, limit):
    """Seconds of one call of ``fn``, interrupted (``_Timeout``) after ``limit`` seconds."""
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        t0 = TIMER["fn"]()
        fn()
        return TIMER["fn"]() - t0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _time(fn, shape):
    """Best seconds per call: the harness's best of 3, calibrated to 5 ms at small and 10 ms at
    medium; a medium call over 10 ms is timed one call at a time, fewer repeats as it grows
    (the first call, which compiles and fills caches, never counts)."""
    t = _call_timed(fn, 2 * CALL_LIMIT)
    if shape == "small":
        return timeit(fn, repeat=3, min_time=0.005, timer=TIMER["fn"])
    if t < 0.01:
        return timeit(fn, repeat=3, min_time=0.01, timer=TIMER["fn"])
    t = _call_timed(fn, CALL_LIMIT)
    if t > 0.5:
        return t
    return min(t, timeit(fn, number=1, repeat=max(1, min(3, int(0.05 / t))), timer=TIMER["fn"]))


def measure(fw, fn, s: Sample, differentiable, shape):
    """{"fwd": seconds | None, "bwd": ..., "fwd_err": reason, "bwd_err": reason}."""
    res = {}
    try:
        a, k = _convert_sample(s, fw)
        res["fwd"] = _time(lambda: fn(*a, **k), shape)
    except _Timeout:
        res["fwd_err"] = f"over {CALL_LIMIT:.0f} s a call"
    except Exception as exc:  # noqa: BLE001  (reported, not hidden)
        res["fwd_err"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
    if not differentiable:
        return res
    try:
        a, k = _convert_sample(s, fw, grad=True)
        if _loss_output(fn(*a, **k)) is None:
            res["bwd_err"] = "no output requires grad"
            return res

        def run():
            _loss(_loss_output(fn(*a, **k))).backward()
        res["bwd"] = _time(run, shape)
    except _Timeout:
        res["bwd_err"] = f"over {CALL_LIMIT:.0f} s a call"
    except Exception as exc:  # noqa: BLE001
        res["bwd_err"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
    return res


def _where(key) -> str:
    """A profile entry's name: a C function as Python shows it (``ndarray.argsort``,
    ``numpy.arange``), a Python function as ``file.py:function`` (the path from the package
    folder on for ember's own files)."""
    path, _, name = key
    if path == "~":
        name = name.strip("<>")
        for pre in ("built-in method ", "method "):
            if name.startswith(pre):
                name = name[len(pre):]
        return name.replace("' of '", " of ").replace("'", "").replace(" objects", "")
    parts = Path(path).parts
    tail = parts[parts.index("ember") + 1:] if "ember" in parts else parts[-2:]
    return f"{'/'.join(tail)}:{name}"


def bound_by(fn, seconds: float) -> str:
    """What an ember call's time goes to, from ``cProfile`` over about ``seconds`` of calls:
    the entries with the most time of their own (C functions: NumPy's, SciPy's, builtins;
    Python functions: their own lines, Numba kernels they call included, as the profiler does
    not see into compiled calls), and how many Python and C calls one call makes. Shares are
    of the profiled time, which the profiler's own cost per call inflates for the Python
    calls of small ops."""
    n = max(1, min(2000, int(seconds / max(_call_timed(fn, CALL_LIMIT), 1e-7))))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        fn()
    prof.disable()
    stats = pstats.Stats(prof).stats
    own = {k: v for k, v in stats.items() if k[2] not in ("<lambda>", "run", "disable")
           and not k[0].endswith("bench_ops.py")}
    total = sum(v[2] for v in own.values()) or 1e-12
    top = sorted(own.items(), key=lambda kv: -kv[1][2])[:3]
    py = sum(v[1] for k, v in own.items() if k[0] != "~") / n
    c = sum(v[1] for k, v in own.items() if k[0] == "~") / n
    shares = ", ".join(f"{_where(k)} {100 * v[2] / total:.0f}%" for k, v in top)
    return f"{shares}; {py:.0f} Python and {c:.0f} C calls a call"


def _bound_of(e, s: Sample, backward: bool, shape) -> str:
    """:func:`bound_by` of ember's forward (or forward + backward) call of entry ``e``."""
    try:
        a, k = _convert_sample(s, et, grad=backward)
        if backward:
            def call():
                _loss(_loss_output(e.fn(*a, **k))).backward()
        else:
            def call():
                e.fn(*a, **k)
        return bound_by(call, 0.05 if shape == "small" else 0.2)
    except Exception as exc:  # noqa: BLE001  (the note says so instead)
        return f"not profiled ({type(exc).__name__}: {str(exc).splitlines()[0][:60]})"


def sweep(torch, shape, name_filter=None, log=None, interleave=True, profile=False):
    """Rows {op: {...}} and skipped [(op, what, reason)] at one shape (what: "op" when the
    entry is not measured at all, else the column left out)."""
    t_start = time.perf_counter()
    explicit = _explicit(torch)
    entries = [e for e in T.OP_TABLE if not name_filter or name_filter in e.name]
    plans = []
    for e in entries:
        p = plan(torch, e, explicit, shape)
        plans.append((e, p))
        if log:
            log(f"[{shape}] sized {e.name}: {p.skip or p.inputs} ({p.how}, "
                f"{time.perf_counter() - t_start:.1f} s)")
    timed = [(e, p) for e, p in plans if p.skip is None]
    fns = {e.name: torch_counterpart(torch, e, explicit)[0] for e, _ in timed}
    ember_res, torch_res = {}, {}

    def one(fw, res, e, s):
        res[e.name] = measure(fw, e.fn if fw is et else fns[e.name], s, e.differentiable, shape)
        if log:
            log(f"[{shape}] {'ember' if fw is et else 'torch'} {e.name}: {res[e.name]} "
                f"({time.perf_counter() - t_start:.1f} s)")

    if interleave:  # each op on ember then on PyTorch: both see the same machine load
        for e, p in timed:
            s = p.make()
            one(et, ember_res, e, s)
            one(torch, torch_res, e, s)
    else:  # every op on ember, then on PyTorch: its spinning OpenMP threads stay out of ember's
        for fw, res in ((et, ember_res), (torch, torch_res)):
            for e, p in timed:
                one(fw, res, e, p.make())
    rows, skipped = {}, []
    for e, p in plans:
        if p.skip is not None:
            skipped.append((e.name, "op", p.skip))
            continue
        er, tr = ember_res[e.name], torch_res[e.name]
        row = {"torch": p.label, "dtype": p.dtype, "inputs": p.inputs, "how": p.how,
               "size": p.size, "off_target": p.off_target}
        for kind in ("fwd", "bwd"):
            if er.get(kind) and tr.get(kind):
                row[kind] = er[kind] / tr[kind]
                row[f"ember_{kind}"], row[f"torch_{kind}"] = er[kind], tr[kind]
            elif f"{kind}_err" in er or f"{kind}_err" in tr:
                who = "ember" if f"{kind}_err" in er else "PyTorch"
                why = er.get(f"{kind}_err") or tr.get(f"{kind}_err")
                what = "forward" if kind == "fwd" else "forward+backward"
                skipped.append((e.name, what, f"{who}: {why}"))
        if "fwd" in row or "bwd" in row:
            if profile and not within(row, shape):
                worst = max((k for k in ("fwd", "bwd") if k in row), key=row.get)
                row["bound"] = f"{'fwd' if worst == 'fwd' else 'fwd+bwd'}: " + _bound_of(
                    e, p.make(), worst == "bwd", shape)
            rows[e.name] = row
        else:  # nothing measured: the whole entry is skipped
            skipped = [(n, "op" if n == e.name else w, r) for n, w, r in skipped]
    return rows, skipped


# --------------------------------------------------------------------------- report
@dataclass
class Report:
    shapes: list
    rows: dict = field(default_factory=dict)      # op -> {shape: row}
    skipped: dict = field(default_factory=dict)   # shape -> [(op, what, reason)]


def within(row, shape):
    g = GOALS[shape]
    return row is not None and "fwd" in row and all(row.get(k, 0) <= g for k in ("fwd", "bwd"))


def _over(rows_by_shape):
    return max((r[k] / GOALS[sh] for sh, r in rows_by_shape.items() for k in ("fwd", "bwd")
                if k in r), default=0.0)


def _cell(row, kind):
    return "-" if row is None or kind not in row else f"{row[kind]:.2f}"


def _skip_counts(rep: Report, sh):
    sk = rep.skipped.get(sh, [])
    ops = {op for op, what, _ in sk if what == "op"}
    cols = sum(1 for _, what, _ in sk if what != "op")
    return f"{len(ops)} entries skipped, {cols} columns of measured entries skipped"


def summary_lines(rep: Report):
    out = []
    for sh in rep.shapes:
        rs = [r[sh] for r in rep.rows.values() if sh in r]
        fw = [r["fwd"] for r in rs if "fwd" in r]
        bw = [r["bwd"] for r in rs if "bwd" in r]
        n_in = sum(within(r, sh) for r in rs)
        R, C = SHAPES[sh]
        med = (f"median forward {statistics.median(fw):.2f}" if fw else "no forward") + \
            (f", median forward+backward {statistics.median(bw):.2f}" if bw else "")
        out.append(f"{sh} ({R}x{C}): {n_in} of {len(rs)} ops within {GOALS[sh]}x (forward and "
                   f"forward+backward); {med}; {_skip_counts(rep, sh)}")
    if len(rep.shapes) > 1:
        both = [r for r in rep.rows.values() if all(sh in r for sh in rep.shapes)]
        n = sum(all(within(r[sh], sh) for sh in rep.shapes) for r in both)
        out.append(f"both shapes: {n} of {len(both)} ops measured at both within goal "
                   f"({' / '.join(f'{GOALS[s]}x {s}' for s in rep.shapes)})")
    return out


def note_lines(rep: Report):
    out = []
    for op, by in sorted(rep.rows.items(), key=lambda kv: -_over(kv[1])):
        bad = [sh for sh in rep.shapes if sh in by and not within(by[sh], sh)]
        if not bad:
            continue
        parts = []
        for sh in bad:
            r = by[sh]
            figs = [f"{'fwd' if k == 'fwd' else 'fwd+bwd'} {r[k]:.2f}x ({fmt_time(r['ember_' + k])}"
                    f" vs {fmt_time(r['torch_' + k])})" for k in ("fwd", "bwd") if k in r]
            parts.append(f"{sh} {', '.join(figs)} on {r['inputs']}")
        bound = "; ".join(f"{sh} {by[sh]['bound']}" for sh in bad if "bound" in by[sh])
        out.append(f"- {op} [{by[bad[0]]['torch']}]: " + "; ".join(parts) +
                   f" -- bound by ({'cProfile' if bound else 'not profiled: --profile'}): "
                   f"{bound or '?'}")
    return out


def print_report(rep: Report, min_ratio=0.0, notes_only=False):
    if not notes_only:
        cols = [f"{sh} {k}" for sh in rep.shapes for k in ("fwd", "fwd+bwd")]
        print("| op | " + " | ".join(cols) + " |\n| --- |" + " ---: |" * len(cols))
        for op, by in sorted(rep.rows.items(), key=lambda kv: -_over(kv[1])):
            top = max((r[k] for r in by.values() for k in ("fwd", "bwd") if k in r), default=0)
            if top >= min_ratio:
                cells = [_cell(by.get(sh), k) for sh in rep.shapes for k in ("fwd", "bwd")]
                print(f"| {op} | " + " | ".join(cells) + " |")
        print()
    for line in summary_lines(rep):
        print(line)
    print("\nNot within goal (one line per op: ratio, ember vs PyTorch time, inputs):")
    for line in note_lines(rep):
        print(line)
    if notes_only:
        return
    off = [(op, sh, by[sh]) for op, by in sorted(rep.rows.items()) for sh in rep.shapes
           if sh in by and by[sh]["off_target"]]
    print(f"\nOff-target sizes ({len(off)}: the largest input or output is outside "
          f"{LOW}..{HIGH} x the shape's element count):")
    for op, sh, r in off:
        print(f"- {op} at {sh}: {r['inputs']} ({r['size']} elements, {r['how']})")
    for sh in rep.shapes:
        print(f"\nSkipped at {sh} ({_skip_counts(rep, sh)}):")
        for op, what, why in rep.skipped.get(sh, []):
            print(f"- skipped {op} at {sh}{'' if what == 'op' else ' (' + what + ')'}: {why}")


def _thread_info(torch):
    blas = []
    try:
        from threadpoolctl import threadpool_info

        blas = [f"{i['internal_api']} {i['num_threads']}" for i in threadpool_info()
                if i["user_api"] == "blas" and "torch" not in i["filepath"]]
    except ImportError:
        blas = [f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} (threadpoolctl "
                "is not installed)"]
    import numba

    return (f"threads: PyTorch intra-op {torch.get_num_threads()}; ember: Numba "
            f"{numba.get_num_threads()} (ember.tensor.get_num_threads() {et.get_num_threads()}), "
            f"NumPy BLAS {', '.join(blas) or 'none found'}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", choices=("small", "medium", "both"), default="both")
    p.add_argument("--filter", default=None, help="only ops whose name contains this")
    p.add_argument("--min-ratio", type=float, default=0.0, help="print only rows at least this")
    p.add_argument("--threads", type=int, default=1,
                   help="threads for both frameworks: PyTorch's intra-op pool, ember's Numba "
                   "pool and NumPy's BLAS (default 1)")
    p.add_argument("--notes", action="store_true",
                   help="print only the ops not within goal (and the summary)")
    p.add_argument("--profile", action="store_true",
                   help="profile ember's call of every op out of goal (cProfile) and name what "
                   "its time goes to in its note line")
    p.add_argument("--json", action="store_true")
    p.add_argument("--verbose", action="store_true", help="log progress to stderr")
    a = p.parse_args(argv)
    import torch

    limiter = None  # noqa: F841  (kept alive for the whole run)
    et.set_num_threads(a.threads)
    torch.set_num_threads(a.threads)
    TIMER["fn"] = time.process_time if a.threads == 1 else time.perf_counter
    try:
        import scipy.linalg  # noqa: F401  (its own OpenBLAS: loaded now, so limited too)
    except ImportError:
        pass
    try:
        from threadpoolctl import threadpool_limits

        limiter = threadpool_limits(a.threads, user_api="blas")  # noqa: F841
    except ImportError:
        pass
    shapes = ["small", "medium"] if a.shape == "both" else [a.shape]
    log = (lambda m: print(m, file=sys.stderr, flush=True)) if a.verbose else None
    rep = Report(shapes)
    t0 = time.perf_counter()
    for sh in shapes:
        rows, skipped = sweep(torch, sh, a.filter, log, interleave=a.threads == 1,
                              profile=a.profile)
        for op, r in rows.items():
            rep.rows.setdefault(op, {})[sh] = r
        rep.skipped[sh] = skipped
    header = (f"ember vs PyTorch {torch.__version__} (CPU), ratio ember / PyTorch, lower is "
              f"better; shapes {', '.join(f'{s} {SHAPES[s][0]}x{SHAPES[s][1]}' for s in shapes)}"
              f"; {_thread_info(torch)}; timer {TIMER['fn'].__name__}; sweep took "
              f"{time.perf_counter() - t0:.0f} s")
    if a.json:
        print(json.dumps({"header": header, "shapes": shapes, "goals": GOALS, "rows": rep.rows,
                          "skipped": rep.skipped, "summary": summary_lines(rep)}))
        return rep
    print(header + "\n")
    print_report(rep, a.min_ratio, a.notes)
    return rep


if __name__ == "__main__":
    main()
