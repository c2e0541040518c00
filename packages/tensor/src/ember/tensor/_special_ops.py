"""``torch.special`` and the special functions of ``torch.*`` (``lgamma``, ``digamma``,
``polygamma``, ``mvlgamma``, ``i0``, ``sinc``, ``logit``, ``xlogy``, ``igamma``,
``igammac``): registry ops over SciPy's ``scipy.special`` (CPU) and CuPy's
``cupyx.scipy.special`` (CUDA); ``lgamma``, ``polygamma``, ``ndtr``, ``ndtri`` and the
``i0`` / ``i0e`` / ``i1`` / ``i1e`` / ``k0`` / ``k0e`` / ``k1`` / ``k1e`` / ``j0`` / ``j1`` /
``y0`` / ``y1`` Bessel functions over ``ember.tensor.kernels.special`` (Numba loops on the
CPU, where SciPy's scalar Cephes code is several times slower).

SciPy is imported on the first call of such an op, never when ember.tensor is imported.
Integer and bool inputs compute in the default float dtype, float16 in float32 (the result is
cast back), like PyTorch. Derivatives are in ember-autograd's ``derivatives_special.py``; the
orthogonal polynomials are not differentiable (as in PyTorch).
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from . import _dtype as D
from ._checks import check_dtype, not_implemented
from ._creation import tensor
from ._fpstate import quiet_begin, quiet_call, quiet_end
from ._pointwise import _check_cast, _check_inplace
from ._reduction import sum as _sum
from ._registry import array_module, defop, write_out
from ._tensor import Tensor
from .kernels import get as _kernel
from .kernels import special as _special_kernels

_make = Tensor._make
_nd = np.ndarray
# the functions of kernels.special that compute these ops (Numba loops: no floating-point
# warning to silence)
_KERNELS = {_special_kernels.lgamma, _special_kernels.i0, _special_kernels.i0e,
            _special_kernels.i1, _special_kernels.i1e, _special_kernels.ndtr,
            _special_kernels.ndtri, _special_kernels.entr, _special_kernels.xlogy,
            _special_kernels.xlog1py, _special_kernels.sinc, _special_kernels.spherical_j0,
            _special_kernels.k0, _special_kernels.k0e, _special_kernels.k1, _special_kernels.k1e,
            _special_kernels.j0, _special_kernels.j1, _special_kernels.y0, _special_kernels.y1}

__all__ = ["lgamma", "lgamma_", "digamma", "digamma_", "polygamma", "polygamma_", "mvlgamma",
           "mvlgamma_", "i0", "i0_", "sinc", "sinc_", "logit", "logit_", "xlogy", "xlogy_",
           "igamma", "igamma_", "igammac", "igammac_"]


def _sp(xp):
    """``scipy.special`` or ``cupyx.scipy.special`` (imported on first use)."""
    if xp is np:
        try:
            import scipy.special as sp
        except ImportError:
            raise ImportError("ember.tensor's special functions need SciPy: pip install "
                              "scipy") from None
        return sp
    import cupyx.scipy.special as sp

    return sp


def _k(name: str):
    """``compute(xp, *arrays)``: ``name`` of :func:`_sp` on the arrays, looked up once per array
    module (the import statement and the lookup cost a third of the ufunc's own time on a small
    tensor)."""
    fns = {}

    def compute(xp, *arrays):
        f = fns.get(xp)
        if f is None:
            f = fns[xp] = getattr(_sp(xp), name)
        return f(*arrays)

    compute.sp_name = name  # (:func:`_unary` calls the function itself)
    return compute


def _float_in(d, op: str, complex_ok: bool = False):
    """``(array to compute on, result dtype)``: ints/bools in the default float dtype,
    float16 computed in float32; complex tensors raise unless ``complex_ok`` (PyTorch has
    complex kernels for few of these)."""
    dt = d.dtype
    kind = dt.kind
    if kind == "f":
        return (d.astype(_F32), dt) if dt == _F16 else (d, dt)
    if kind == "c":
        if complex_ok:
            return d, dt
        raise not_implemented(op, dt)
    dt = D._default[0].np
    return d.astype(dt), dt


# dtypes, not scalar types: comparing a dtype with a scalar type converts the type each time
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)


def _run(d, compute, op: str, complex_ok: bool = False, no_half: str | None = None,
         quiet: bool = True):
    """``compute(xp, array)`` of ``d`` in its computing dtype as a tensor of the result dtype;
    ``no_half``: the op's name where float16 / bfloat16 raise; ``quiet``: with NumPy's
    floating-point warnings off (not needed around the Numba loops of ``kernels.special``,
    which raise none)."""
    dt = d.dtype
    if dt.kind == "f" and dt.itemsize > 2:  # float32, float64: computed as they are
        a = d
    else:
        if no_half is not None:
            check_dtype(no_half, dt, half_ok=False)
        a, dt = _float_in(d, op, complex_ok)
    xp = np if d.__class__ is np.ndarray else array_module(d)
    if quiet:
        token = quiet_begin()
        try:
            r = compute(xp, a)
        finally:
            quiet_end(token)
    else:
        r = compute(xp, a)
    return _make(r if r.dtype == dt else r.astype(dt))


def _unary(name: str, compute, doc: str, differentiable: bool = True, half_ok: bool = True,
           complex_ok: bool = False):
    """The registry op ``name`` over ``compute(xp, array)`` (a :func:`_k` function or a kernel of
    ``kernels.special``): :func:`_run`'s steps in the op's own frame, with the function of each
    array module looked up once (``f(array)``: SciPy's or CuPy's ufunc itself, or the kernel
    bound to the module): no frames of ``_run`` and ``compute`` (with ``Tensor._make``'s, a
    third of a 4x64 call's ember time)."""
    op = name.replace("special_", "")
    no_half = None if half_ok else name
    quiet = compute not in _KERNELS
    sp_name = getattr(compute, "sp_name", None)
    fns = {}

    def resolve(xp):
        f = fns[xp] = getattr(_sp(xp), sp_name) if sp_name else partial(compute, xp)
        return f

    def impl(input: Tensor) -> Tensor:
        d = input._data
        dt = d.dtype
        if dt.kind != "f" or dt.itemsize <= 2:  # float16 / bfloat16, integers, complex
            if no_half is not None:
                check_dtype(no_half, dt, half_ok=False)
            d, dt = _float_in(d, op, complex_ok)
        xp = np if d.__class__ is _nd else array_module(d)
        f = fns.get(xp) or resolve(xp)
        if quiet:
            token = quiet_begin()
            try:
                r = f(d)
            finally:
                quiet_end(token)
        else:
            r = f(d)
        return _make(r if r.dtype == dt else r.astype(dt))

    impl.__name__ = op
    impl.__qualname__ = impl.__name__
    impl.__doc__ = doc
    return defop(name, out=True, differentiable=differentiable)(impl)


def _write_inplace(input: Tensor, result: Tensor, name: str) -> Tensor:
    d = input._data
    if result._data.dtype != d.dtype:
        _check_cast(name, result._data.dtype, d.dtype)
    _check_inplace(input, name)
    if tuple(result._data.shape) != tuple(d.shape):
        raise RuntimeError(f"{name}(): output with shape {list(d.shape)} doesn't match the "
                           f"broadcast shape {list(result._data.shape)}")
    d[...] = result._data
    input._bump()
    return input


# --------------------------------------------------------------------------- gamma family
lgamma = _unary("lgamma", _special_kernels.lgamma,
                "Natural log of the absolute value of the gamma function.\n\n"
                "    >>> lgamma(tensor([1., 3.]))\n    tensor([0.0000, 0.6931])\n")
digamma = _unary("digamma", _k("psi"),
                 "The logarithmic derivative of the gamma function (``psi``); ``-inf`` at 0 "
                 "and ``inf`` at -0 like PyTorch (SciPy's and CuPy's ``psi`` give them)."
                 "\n\n    >>> digamma(tensor([1.]))\n    tensor([-0.5772])\n")


@defop("lgamma_", inplace=True)
def lgamma_(input: Tensor) -> Tensor:
    """In-place :func:`lgamma`."""
    return _write_inplace(input, lgamma.op.impl(input), "lgamma_")


@defop("digamma_", inplace=True)
def digamma_(input: Tensor) -> Tensor:
    """In-place :func:`digamma`."""
    return _write_inplace(input, digamma.op.impl(input), "digamma_")


@defop("polygamma", out=True)
def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of :func:`digamma`.

    >>> polygamma(1, tensor([1.]))
    tensor([1.6449])
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return digamma.op.impl(input)
    return _run(input._data, lambda xp, a: _special_kernels.polygamma(xp, int(n), a),
                "polygamma", quiet=False)


_zeta = _k("zeta")


@defop("polygamma_", inplace=True)
def polygamma_(input: Tensor, n: int) -> Tensor:
    """In-place ``polygamma(n, input)`` (``Tensor.polygamma_(n)``)."""
    return _write_inplace(input, polygamma.op.impl(n, input), "polygamma_")


def _mvlgamma(input: Tensor, p: int) -> Tensor:
    if not isinstance(p, (int, np.integer)) or isinstance(p, bool):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not "
                        f"{type(p).__name__}")
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1, got {p}")
    d = input._data
    x = input if d.dtype.kind == "f" else input.to(dtype=D._default[0])
    if bool(((x._data <= (p - 1) / 2)).any()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2, got p={p}")
    offs = tensor([-0.5 * j for j in range(p)], dtype=x.dtype, device=x.device)  # one op
    return _sum(lgamma(x.unsqueeze(-1) + offs), -1) + p * (p - 1) / 4 * math.log(math.pi)


def mvlgamma(input: Tensor, p: int, *, out=None) -> Tensor:
    """Log of the multivariate gamma function of dimension ``p``.

    >>> mvlgamma(tensor([2.5]), 2)
    tensor([0.8570])
    """
    r = _mvlgamma(input, p)
    if out is not None:
        return write_out("mvlgamma", r, out)
    return r


def mvlgamma_(input: Tensor, p: int) -> Tensor:
    """In-place :func:`mvlgamma`."""
    return input.copy_(_mvlgamma(input, p))


# --------------------------------------------------------------------------- Bessel & co
i0 = _unary("i0", _special_kernels.i0,
            "Modified Bessel function of the first kind, order 0.\n\n"
            "    >>> i0(tensor([0.]))\n    tensor([1.])\n")


@defop("i0_", inplace=True)
def i0_(input: Tensor) -> Tensor:
    """In-place :func:`i0`."""
    return _write_inplace(input, i0.op.impl(input), "i0_")


sinc = _unary("sinc", _special_kernels.sinc,
              "Normalized sinc ``sin(pi x) / (pi x)`` (1 at 0).\n\n"
              "    >>> sinc(tensor([0., 0.5]))\n    tensor([1.0000, 0.6366])\n",
              complex_ok=True)


@defop("sinc_", inplace=True)
def sinc_(input: Tensor) -> Tensor:
    """In-place :func:`sinc`."""
    return _write_inplace(input, sinc.op.impl(input), "sinc_")


def _airy_ai(xp, a):
    sp = _sp(xp)
    if hasattr(sp, "airy"):
        return sp.airy(a)[0]
    return sp.ai(a) if hasattr(sp, "ai") else xp.asarray(  # pragma: no cover
        _sp(np).airy(xp.asnumpy(a))[0])


_SPECIAL_UNARY = {
    "erfcx": (_k("erfcx"), "Scaled complementary error function ``exp(x^2) erfc(x)``."),
    "i0e": (_special_kernels.i0e, "Exponentially scaled ``i0``: ``exp(-|x|) i0(x)``."),
    "i1": (_special_kernels.i1, "Modified Bessel function of the first kind, order 1."),
    "i1e": (_special_kernels.i1e, "Exponentially scaled ``i1``: ``exp(-|x|) i1(x)``."),
    "ndtr": (_special_kernels.ndtr, "Standard normal CDF."),
    "ndtri": (_special_kernels.ndtri, "Inverse of the standard normal CDF."),
    "log_ndtr": (_k("log_ndtr"), "Log of the standard normal CDF."),
    "entr": (_special_kernels.entr, "Elementwise entropy ``-x log x`` (0 at 0, -inf below)."),
    "bessel_j0": (_special_kernels.j0, "Bessel function of the first kind, order 0."),
    "bessel_j1": (_special_kernels.j1, "Bessel function of the first kind, order 1."),
    "bessel_y0": (_special_kernels.y0, "Bessel function of the second kind, order 0."),
    "bessel_y1": (_special_kernels.y1, "Bessel function of the second kind, order 1."),
    "modified_bessel_i0": (_special_kernels.i0,
                           "Modified Bessel function of the first kind, order 0."),
    "modified_bessel_i1": (_special_kernels.i1,
                           "Modified Bessel function of the first kind, order 1."),
    "modified_bessel_k0": (_special_kernels.k0,
                           "Modified Bessel function of the second kind, order 0."),
    "modified_bessel_k1": (_special_kernels.k1,
                           "Modified Bessel function of the second kind, order 1."),
    "scaled_modified_bessel_k0": (_special_kernels.k0e,
                                  "Exponentially scaled ``k0``: ``exp(x) k0(x)``."),
    "scaled_modified_bessel_k1": (_special_kernels.k1e,
                                  "Exponentially scaled ``k1``: ``exp(x) k1(x)``."),
    "spherical_bessel_j0": (_special_kernels.spherical_j0, "Spherical Bessel function of the "
                            "first kind, order 0: ``sin(x) / x``."),
    "airy_ai": (_airy_ai, "Airy function Ai."),
}
# airy_ai's derivative (Ai') is no ember op: not differentiable, as in PyTorch
_NONDIFF = {"airy_ai"}

# PyTorch has float16/bfloat16 kernels for these only; the others raise NotImplementedError
_HALF_OK = {"i0e", "i1", "i1e", "ndtr", "entr"}

SPECIAL = {}
for _name, (_fn, _doc) in _SPECIAL_UNARY.items():
    SPECIAL[_name] = _unary("special_" + _name, _fn,
                            f"{_doc}\n\n    >>> {_name}(tensor([0.5])).shape\n"
                            "    ember.Size([1])\n", _name not in _NONDIFF,
                            half_ok=_name in _HALF_OK)


# --------------------------------------------------------------------------- binary
_REAL_SCALARS = (bool, int, float)


def _binary_arrays(op: str, a, b):
    """Arrays of two operands (tensors or Python numbers) in their promoted float dtype.

    A tensor's dtype stands where the other operand is a tensor of the same dtype or a real
    Python number (which never widens a float tensor, and integer results become the default
    float anyway); PyTorch's promotion rules are asked only otherwise."""
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if not ta and not tb:
        raise TypeError(f"{op}(): expected at least one Tensor argument")
    if ta and tb and type(a._data) is not type(b._data):
        raise RuntimeError(f"{op}(): Expected all tensors to be on the same device, but found "
                           f"at least two devices, {a.device} and {b.device}!")
    other = b if ta else a
    dt = (a if ta else b)._data.dtype
    if other.__class__ not in _REAL_SCALARS and not (tb and ta and other._data.dtype == dt):
        dt = D.result_type(a, b).np
    if dt.kind == "c":
        raise not_implemented(op, dt)
    if dt.kind != "f" and dt != D.BF16_NP:
        dt = D._default[0].np
    ref = a._data if ta else b._data
    xp = np if ref.__class__ is np.ndarray else array_module(ref)
    calc = _F32 if dt == _F16 else dt  # (dtypes: a scalar type is converted per comparison)
    return xp, _in_dtype(xp, a, ta, calc), _in_dtype(xp, b, tb, calc), dt


def _in_dtype(xp, v, is_tensor: bool, calc):
    """The operand ``v`` (a tensor when ``is_tensor``, else a number) as an array of ``calc``
    (a tensor's own array where it already is)."""
    if is_tensor:
        d = v._data
        return d if d.dtype == calc else d.astype(calc)
    return xp.asarray(v, dtype=calc)


def _binary(name: str, compute, doc: str, first="input", second="other"):
    ns = {}
    call = compute if compute in _KERNELS else partial(quiet_call, compute)
    op = name.replace("special_", "")

    def impl(a, b):
        xp, x, y, dt = _binary_arrays(op, a, b)
        return _make(call(xp, x, y).astype(dt, copy=False))

    src = (f"def {name.replace('special_', '')}({first}, {second}):\n"
           f"    return impl({first}, {second})\n")
    exec(src, {"impl": impl}, ns)
    fn = ns[name.replace("special_", "")]
    fn.__doc__ = doc
    fn.__module__ = __name__
    return defop(name, out=True)(fn)


xlogy = _binary("xlogy", _special_kernels.xlogy,
                "``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN).\n\n"
                "    >>> xlogy(tensor([0., 2.]), tensor([0., 1.]))\n    tensor([0., 0.])\n")
special_xlog1py = _binary("special_xlog1py", _special_kernels.xlog1py,
                          "``input * log1p(other)``, 0 where ``input`` is 0.\n\n"
                          "    >>> et.special.xlog1py(tensor([0., 2.]), tensor([-1., 0.]))\n"
                          "    tensor([0., 0.])\n")
special_zeta = _binary("special_zeta", _zeta,
                       "Hurwitz zeta function ``sum_k (k + other)^-input``.\n\n"
                       "    >>> et.special.zeta(tensor([2.]), tensor([1.]))\n"
                       "    tensor([1.6449])\n")
igamma = _binary("igamma", _k("gammainc"),
                 "Regularized lower incomplete gamma function ``P(input, other)``.\n\n"
                 "    >>> igamma(tensor([1.]), tensor([0.]))\n    tensor([0.])\n")
igammac = _binary("igammac", _k("gammaincc"),
                  "Regularized upper incomplete gamma function ``Q(input, other)``.\n\n"
                  "    >>> igammac(tensor([1.]), tensor([0.]))\n    tensor([1.])\n")


def _inplace_binary(name, fn):
    def impl_(input: Tensor, other) -> Tensor:
        return _write_inplace(input, fn.op.impl(input, other), name + "_")

    impl_.__name__ = name + "_"
    impl_.__doc__ = f"In-place :func:`{name}`."
    return defop(name + "_", inplace=True)(impl_)


xlogy_ = _inplace_binary("xlogy", xlogy)
igamma_ = _inplace_binary("igamma", igamma)
igammac_ = _inplace_binary("igammac", igammac)


@defop("logit", out=True)
def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given.

    >>> logit(tensor([0.5, 0.75]))
    tensor([0.0000, 1.0986])
    """
    return _run(input._data, lambda xp, a: _special_kernels.logit(xp, a, eps), "logit",
                quiet=False)


@defop("logit_", inplace=True)
def logit_(input: Tensor, eps: float | None = None) -> Tensor:
    """In-place :func:`logit`."""
    return _write_inplace(input, logit.op.impl(input, eps), "logit_")


# --------------------------------------------------------------------------- polynomials
_POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
          "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
          "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
          "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
          "laguerre_polynomial_l", "legendre_polynomial_p"]


def _poly(kind: str):
    def impl(input, n):
        if isinstance(input, Tensor):  # no float16/bfloat16 kernels, as in PyTorch
            check_dtype("special_" + kind, input._data.dtype, half_ok=False)
        xp, x, nn, dt = _binary_arrays(kind, input, n)
        if isinstance(n, Tensor) and n._data.dtype.kind == "f":
            nn = n._data
        r = _kernel("orthogonal_poly", xp)(kind, x, nn)
        return _make(r.astype(dt, copy=False))

    impl.__name__ = kind
    impl.__doc__ = (f"The {kind.replace('_', ' ')} of degree ``n`` at ``input`` (not "
                    f"differentiable).\n\n    >>> {kind}(tensor([0.5]), 2).shape\n"
                    "    ember.Size([1])\n")
    return defop("special_" + kind, out=True, differentiable=False)(impl)


for _k_ in _POLYS:
    SPECIAL[_k_] = _poly(_k_)

_METHODS = ("lgamma", "lgamma_", "digamma", "digamma_", "mvlgamma", "mvlgamma_", "i0", "i0_",
            "sinc", "sinc_", "logit", "logit_", "xlogy", "xlogy_", "igamma", "igamma_",
            "igammac", "igammac_", "polygamma_")


def _polygamma_method(self, n):
    return polygamma(n, self)


def _bind() -> None:
    g = globals()
    for name in _METHODS:
        if name not in Tensor.__dict__:
            setattr(Tensor, name, g[name])
    if "polygamma" not in Tensor.__dict__:
        Tensor.polygamma = _polygamma_method


_bind()
