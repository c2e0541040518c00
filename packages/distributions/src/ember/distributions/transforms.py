"""Bijections and other transforms between spaces (``torch.distributions.transforms``).

A transform ``t`` maps ``x`` in ``t.domain`` to ``y = t(x)`` in ``t.codomain``; ``t.inv``
is its inverse and ``t.log_abs_det_jacobian(x, y)`` the log of the absolute determinant of
its Jacobian, summed over ``domain.event_dim`` rightmost dims.
"""
from __future__ import annotations

import math
import numbers
import weakref

import ember.tensor as et
from ember.tensor import Tensor

from . import constraints
from .utils import (
    clamp_probs,
    lazy_property,
    softplus,
    sum_rightmost,
    tril_matrix_to_vec,
    vec_to_tril_matrix,
)

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
    "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "TanhTransform",
    "Transform", "identity_transform",
]


class Transform:
    """Base class of invertible (or, with ``bijective = False``, merely pseudo-invertible)
    transforms with computable log-det-Jacobians. ``cache_size=1`` remembers the last
    ``(x, y)`` pair so that ``inv(t(x))`` returns ``x`` exactly."""

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        self._cached_x_y = None, None
        super().__init__()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        inv = None
        if self._inv is not None:
            inv = self._inv()
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self) -> int:
        """+1 or -1: whether the (bijective, elementwise) transform is increasing."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform, sharing its cache."""

    def __init__(self, transform: Transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        if not isinstance(other, _InverseTransform):
            return False
        return self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """Apply ``parts`` in order: ``ComposeTransform([f, g])(x) == g(f(x))``."""

    def __init__(self, parts, cache_size: int = 0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        if not isinstance(other, ComposeTransform):
            return False
        return self.parts == other.parts

    __hash__ = object.__hash__

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        assert event_dim >= domain.event_dim
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        assert event_dim >= codomain.event_dim
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        inv = None
        if self._inv is not None:
            inv = self._inv()
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return et.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, x_i, y_i in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(sum_rightmost(part.log_abs_det_jacobian(x_i, y_i),
                                       event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        result = terms[0]
        for t in terms[1:]:
            result = result + t
        return result

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return self.__class__.__name__ + "(\n    " + inner + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """Treat ``reinterpreted_batch_ndims`` extra rightmost dims of ``base_transform`` as
    event dims (summed in ``log_abs_det_jacobian``)."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        return self.base_transform(x)

    def _inverse(self, y):
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return (f"{self.__class__.__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dims to ``out_shape``."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape = et.Size(in_shape)
        self.out_shape = et.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y):
        batch_shape = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        batch_shape = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return et.zeros(batch_shape, dtype=x.dtype, device=x.device)

    def forward_shape(self, shape):
        return _reshape_rightmost(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return _reshape_rightmost(shape, self.out_shape, self.in_shape)


def _reshape_rightmost(shape, src, dst):
    """``shape`` with its rightmost dims, which must be ``src``, replaced by ``dst``."""
    if len(shape) < len(src):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(src)
    if tuple(shape[cut:]) != tuple(src):
        raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {src}")
    return tuple(shape[:cut]) + tuple(dst)


class ExpTransform(Transform):
    """``y = exp(x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        # a Python number stays one, so that it adapts to the dtype of the values
        self.exponent = float(exponent) if isinstance(exponent, numbers.Real) else exponent

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self):
        if isinstance(self.exponent, float):
            return 1 if self.exponent > 0 else -1 if self.exponent < 0 else 0
        return self.exponent.sign()

    def __eq__(self, other):
        if not isinstance(other, PowerTransform):
            return False
        return bool((et.as_tensor(self.exponent) == et.as_tensor(other.exponent)).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return tuple(et.broadcast_shapes(shape, tuple(getattr(self.exponent, "shape", ()))))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return clamp_probs(et.sigmoid(x))

    def _inverse(self, y):
        finfo = et.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """``y = tanh(x)``."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2), written stably
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not bijective: the inverse picks the positive root)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x``; ``event_dim`` dims of ``x`` form one event."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
                if a != b:
                    return False
            elif not bool((et.as_tensor(a) == et.as_tensor(b)).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = x.shape
        scale = self.scale
        if isinstance(scale, numbers.Real):
            result = et.full_like(x, math.log(abs(scale)))
        else:
            result = scale.abs().log()
        if self.event_dim:
            result_size = tuple(result.shape[:result.dim() - self.event_dim]) + (-1,)
            result = result.reshape(result_size).sum(-1)
            shape = shape[:len(shape) - self.event_dim]
        return result.expand(tuple(shape))

    def forward_shape(self, shape):
        return tuple(et.broadcast_shapes(shape, tuple(getattr(self.loc, "shape", ())),
                                         tuple(getattr(self.scale, "shape", ()))))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


class SoftmaxTransform(Transform):
    """``y = softmax(x)`` over the last dim (not bijective; the inverse is ``log``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        logprobs = x
        probs = (logprobs - logprobs.amax(-1, keepdim=True)).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape


class StickBreakingTransform(Transform):
    """From unconstrained ``R^K`` to the ``K+1``-simplex by stick breaking; bijective."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    @staticmethod
    def _offset(n, like):
        # n, n-1, ..., 1 as a tensor like `like`
        return et.arange(n, 0, -1, dtype=like.dtype, device=like.device)

    def _call(self, x):
        k = x.shape[-1]
        z = clamp_probs(et.sigmoid(x - self._offset(k, x).log()))
        z_cumprod = (1 - z).cumprod(-1)
        ones = et.ones(tuple(x.shape[:-1]) + (1,), dtype=x.dtype, device=x.device)
        return et.cat([z, ones], -1) * et.cat([ones, z_cumprod], -1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = self._offset(y.shape[-1] - 1, y)
        sf = 1 - y_crop.cumsum(-1)
        sf = sf.clamp(min=et.finfo(y.dtype).tiny)
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        x = x - self._offset(x.shape[-1], x).log()
        # log|det J| = sum(-x + logsigmoid(x) + log y[:-1])
        return (-x - softplus(-x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)



class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return softplus(x)

    def _inverse(self, y):
        # log(exp(y) - 1) = y + log(1 - exp(-y))
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x)


def _with_leading_one(x):
    """``x`` shifted right by one along the last dim, a 1 filling the first place."""
    ones = et.ones(tuple(x.shape[:-1]) + (1,), dtype=x.dtype, device=x.device)
    return et.cat([ones, x[..., :-1]], -1)


class CorrCholeskyTransform(Transform):
    """From an unconstrained vector of length ``D(D-1)/2`` to the Cholesky factor of a
    ``D x D`` correlation matrix (lower triangular, positive diagonal, unit-norm rows):
    ``tanh`` maps each entry to (-1, 1), then stick breaking per row gives the factor."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other):
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        eps = et.finfo(x.dtype).eps
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        stick = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + et.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * _with_leading_one(stick)

    def _inverse(self, y):
        remaining = _with_leading_one(1 - (y * y).cumsum(-1))
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(remaining, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x, y):
        remaining = tril_matrix_to_vec(1 - (y * y).cumsum(-1), diag=-2)
        stick_logdet = 0.5 * remaining.log().sum(-1)
        tanh_logdet = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


class LowerCholeskyTransform(Transform):
    """From an unconstrained square matrix to a lower-triangular one with a positive
    diagonal: the strictly lower part is kept, the diagonal exponentiated (not bijective:
    the upper part is dropped)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """From an unconstrained square matrix to a positive definite one: ``L L^T`` with ``L``
    from :class:`LowerCholeskyTransform`."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(et.linalg.cholesky(y))


class _PiecewiseTransform(Transform):
    """Transforms ``tseq`` applied to consecutive pieces of ``dim`` (the pieces and how
    they join back are the subclass's)."""

    def __init__(self, tseq, dim=0, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    def _checked_pieces(self, z, name):
        if not -z.dim() <= self.dim < z.dim():
            raise AssertionError(f"dim {self.dim} out of range for {name} with {z.dim()} "
                                 "dimensions")
        size, expected, what = self._expected_size(z)
        if size != expected:
            raise AssertionError(f"{name}.size({self.dim}) = {size} must equal {what} "
                                 f"{expected}")
        return self._pieces(z)

    def _call(self, x):
        return self._join([t(p) for t, p in zip(self.transforms, self._checked_pieces(x, "x"))])

    def _inverse(self, y):
        pieces = self._checked_pieces(y, "y")
        return self._join([t.inv(p) for t, p in zip(self.transforms, pieces)])

    def _piece_jacobians(self, x, y):
        return [t.log_abs_det_jacobian(xp, yp) for t, xp, yp in
                zip(self.transforms, self._checked_pieces(x, "x"),
                    self._checked_pieces(y, "y"))]


class CatTransform(_PiecewiseTransform):
    """Apply ``tseq[i]`` to the ``i``-th of consecutive pieces of ``dim`` of lengths
    ``lengths`` (1 each by default) and concatenate the results."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")

    @lazy_property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _expected_size(self, z):
        return z.size(self.dim), self.length, "length"

    def _pieces(self, z):
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [z.narrow(self.dim, s, n) for s, n in zip(starts, self.lengths)]

    def _join(self, pieces):
        return et.cat(pieces, self.dim)

    def log_abs_det_jacobian(self, x, y):
        jacs = [sum_rightmost(j, self.event_dim - t.event_dim)
                for t, j in zip(self.transforms, self._piece_jacobians(x, y))]
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim = dim + self.event_dim
        if dim < 0:
            return et.cat(jacs, dim)
        total = jacs[0]
        for j in jacs[1:]:
            total = total + j
        return total

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(_PiecewiseTransform):
    """Apply ``tseq[i]`` to the ``i``-th slice of ``dim`` and stack the results."""

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _expected_size(self, z):
        return z.size(self.dim), len(self.transforms), "len(transforms)"

    def _pieces(self, z):
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _join(self, pieces):
        return et.stack(pieces, self.dim)

    def log_abs_det_jacobian(self, x, y):
        return et.stack(self._piece_jacobians(x, y), self.dim)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: from the distribution's support to the unit interval
    (its inverse is ``icdf``; its log-det-Jacobian the log density)."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
