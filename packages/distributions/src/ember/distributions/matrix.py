"""Distributions over matrices: LKJCholesky (Cholesky factors of correlation matrices)
and Wishart (positive definite matrices)."""
from __future__ import annotations

import math
import warnings
from numbers import Number

import ember.tensor as et
from ember.autograd import no_grad
from ember.tensor import Size

from . import constraints
from .continuous import Beta, Chi2
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .multivariate_normal import CholeskyParameterized, scale_tril_from
from .utils import broadcast_all, standard_normal

__all__ = ["LKJCholesky", "Wishart"]

_LOG_2 = math.log(2)


class LKJCholesky(Distribution):
    """LKJ distribution over the lower Cholesky factors of ``dim x dim`` correlation
    matrices, with ``concentration`` (eta): the correlation matrix ``L L^T`` has density
    proportional to ``det(L L^T)^(eta - 1)``. Sampled by the onion method (Lewandowski,
    Kurowicka and Joe, 2009)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError("Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        c = self.concentration
        # row i of the factor: a Beta(i/2, eta + (dim - 2 - i)/2) squared norm
        offset = et.arange(dim - 1, dtype=c.dtype, device=c.device)
        offset = et.cat([et.zeros(1, dtype=c.dtype, device=c.device), offset])
        marginal = c + 0.5 * (dim - 2)
        self._beta = Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(c.shape, Size((dim, dim)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        return self._expanded(new, batch_shape)

    def sample(self, sample_shape=Size()):
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            u = standard_normal(shape, y.dtype, y.device).tril(-1)
            tiny = et.finfo(y.dtype).tiny
            # rows of u on the unit sphere (the first row, all zeros, stays zero)
            u = u / u.norm(dim=-1, keepdim=True).clamp(min=tiny)
            w = y.sqrt() * u
            diag = (1 - (w ** 2).sum(-1)).clamp(min=tiny).sqrt()
            return w + et.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = et.arange(2, self.dim + 1, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        log_norm = (0.5 * dm1 * math.log(math.pi) + et.mvlgamma(alpha - 0.5, p=dm1)
                    - et.lgamma(alpha) * dm1)
        return unnormalized - log_norm


def _mvdigamma(x, p):
    """The multivariate digamma function: the derivative of ``mvlgamma(x, p)``."""
    if not bool((x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    shifts = et.arange(p, dtype=x.dtype, device=x.device) / 2
    return et.digamma(x.unsqueeze(-1) - shifts).sum(-1)


class Wishart(ExponentialFamily, CholeskyParameterized):
    """Wishart distribution over ``p x p`` positive definite matrices with ``df`` degrees
    of freedom (``df > p - 1``) and scale given by exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril``. ``rsample`` is Bartlett's decomposition, with
    reparameterized gradients (through the Chi2 diagonal) to ``df`` and the scale."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = Size(param.shape[:-2])
            self.df = et.tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = Size(et.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(tuple(batch_shape))
        event_shape = param.shape[-2:]
        p = event_shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{p - 1}.")
        cov_shape = tuple(batch_shape) + (-1, -1)
        for name, value in (("covariance_matrix", covariance_matrix),
                            ("precision_matrix", precision_matrix),
                            ("scale_tril", scale_tril)):
            if value is not None:
                setattr(self, name, value.expand(cov_shape))
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to "
                          "occur for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._unbroadcasted_scale_tril = scale_tril_from(covariance_matrix, precision_matrix,
                                                         scale_tril)
        self._set_chi2()

    def _set_chi2(self):
        """The Chi2 variables of Bartlett's diagonal: ``df - i`` degrees of freedom in row
        ``i``."""
        L = self._unbroadcasted_scale_tril
        shifts = et.arange(self._event_shape[-1], dtype=L.dtype, device=L.device)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - shifts)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(tuple(batch_shape))
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        new = self._expanded(new, batch_shape)
        new._set_chi2()
        return new

    def _cov_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    def _df_matrix(self):
        return self.df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = et.where(factor <= 0, et.full_like(factor, math.nan), factor)
        return factor.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=Size()):
        p = self._event_shape[-1]
        eps = et.finfo(self.df.dtype).eps
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        shape = tuple(sample_shape) + tuple(self._batch_shape) + (p, p)
        lower = standard_normal(shape, diag.dtype, diag.device).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (et.diag_embed(diag) + lower)
        return chol @ chol.mT

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        """Bartlett samples; a sample that is not numerically positive definite is drawn
        again (at most ``max_try_correction`` times, default 10), with a warning."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        singular = ~self.support.check(sample)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                fresh = self._bartlett_sampling(sample_shape)
                sample = et.where(singular.unsqueeze(-1).unsqueeze(-1), fresh, sample)
                singular = ~self.support.check(sample)
                if not bool(singular.any()):
                    break
        return sample

    def _log_det_scale(self):
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        trace = et.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(
            dim1=-2, dim2=-1).sum(-1)
        return (-nu * self._log_det_scale() - et.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * et.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * self._log_det_scale() + et.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        nu, p = self.df, self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-et.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + et.mvlgamma(y + (p + 1) / 2, p=p))
