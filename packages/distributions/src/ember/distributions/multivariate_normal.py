"""MultivariateNormal and LowRankMultivariateNormal."""
from __future__ import annotations

import math

import ember.tensor as et
from ember.tensor import Size

from . import constraints
from .distribution import Distribution
from .utils import lazy_property, standard_normal

__all__ = ["CholeskyParameterized", "LowRankMultivariateNormal", "MultivariateNormal",
           "scale_tril_from"]


def _batch_shape(*shapes):
    return Size(et.broadcast_shapes(*[tuple(s) for s in shapes]))


def _batched_matrix(matrix, loc, what):
    """The batch shape of ``matrix`` (a batch of matrices) and ``loc``, and ``matrix``
    expanded to it."""
    if matrix.dim() < 2:
        raise ValueError(f"{what} must be at least two-dimensional, "
                         "with optional leading batch dimensions")
    batch_shape = _batch_shape(matrix.shape[:-2], loc.shape[:-1])
    return batch_shape, matrix.expand(tuple(batch_shape) + (-1, -1))


def batch_mv(bmat, bvec):
    """Matrix-vector product over batch dims: ``bmat @ bvec[..., None]``."""
    return et.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def batch_mahalanobis(bL, bx):
    """``x^T (L L^T)^{-1} x`` for lower-triangular ``L``, broadcasting batch dims."""
    n = bx.shape[-1]
    batch = et.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    L = bL.expand(tuple(batch) + (n, n))
    x = bx.expand(tuple(batch) + (n,))
    sol = et.linalg.solve_triangular(L, x.unsqueeze(-1), upper=False).squeeze(-1)
    return sol.pow(2).sum(-1)


def _half_log_det(L):
    return L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def scale_tril_from(covariance_matrix, precision_matrix, scale_tril):
    """The lower Cholesky factor ``L`` of a covariance ``L L^T`` given by exactly one of
    the three (the others None)."""
    if scale_tril is not None:
        return scale_tril
    if covariance_matrix is not None:
        return et.linalg.cholesky(covariance_matrix)
    # P = U U^T with U upper-triangular (Cholesky of the reversed matrix), so that
    # Sigma = P^-1 = L L^T with L = U^-T lower-triangular
    u = et.linalg.cholesky(precision_matrix.flip(-2, -1)).flip(-2, -1)
    eye = et.eye(u.shape[-1], dtype=u.dtype, device=u.device)
    return et.linalg.solve_triangular(u.mT, eye.expand(u.shape), upper=False)


class CholeskyParameterized(Distribution):
    """A family parameterized by one of ``covariance_matrix``, ``precision_matrix`` or
    ``scale_tril`` (kept as ``_unbroadcasted_scale_tril``); the others are computed on
    first use, expanded to ``_cov_shape()``."""

    def _cov_shape(self):
        raise NotImplementedError

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._cov_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return et.matmul(L, L.mT).expand(self._cov_shape())

    @lazy_property
    def precision_matrix(self):
        return et.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._cov_shape())


class MultivariateNormal(CholeskyParameterized):
    """Multivariate normal with mean ``loc`` and exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (lower-triangular, positive diagonal)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (
                precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        if scale_tril is not None:
            batch_shape, self.scale_tril = _batched_matrix(scale_tril, loc,
                                                           "scale_tril matrix")
        elif covariance_matrix is not None:
            batch_shape, self.covariance_matrix = _batched_matrix(covariance_matrix, loc,
                                                                  "covariance_matrix")
        else:
            batch_shape, self.precision_matrix = _batched_matrix(precision_matrix, loc,
                                                                 "precision_matrix")
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._unbroadcasted_scale_tril = scale_tril_from(covariance_matrix, precision_matrix,
                                                         scale_tril)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        cov_shape = loc_shape + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        return self._expanded(new, batch_shape)

    def _cov_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc.dtype, self.loc.device)
        return self.loc + batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = _half_log_det(self._unbroadcasted_scale_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det

    def entropy(self):
        half_log_det = _half_log_det(self._unbroadcasted_scale_tril)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        if len(self._batch_shape) == 0:
            return h
        return h.expand(self._batch_shape)


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal whose covariance is ``cov_factor @ cov_factor.mT +
    diag(cov_diag)`` (a low-rank factor plus a diagonal)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        loc_ = loc.unsqueeze(-1)
        cov_diag_ = cov_diag.unsqueeze(-1)
        try:
            loc_, self.cov_factor, cov_diag_ = et.broadcast_tensors(loc_, cov_factor, cov_diag_)
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = self._capacitance(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    @staticmethod
    def _capacitance(W, D):
        # K = I + W^T D^-1 W, and its Cholesky factor
        Wt_Dinv = W.mT / D.unsqueeze(-2)
        K = et.matmul(Wt_Dinv, W)
        eye = et.eye(W.shape[-1], dtype=W.dtype, device=W.device)
        return et.linalg.cholesky(K + eye)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return self._expanded(new, batch_shape)

    def _cov_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        return et.linalg.cholesky(self._dense_cov()).expand(self._cov_shape())

    @lazy_property
    def covariance_matrix(self):
        return self._dense_cov().expand(self._cov_shape())

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W K^-1 W^T D^-1
        W = self._unbroadcasted_cov_factor
        D = self._unbroadcasted_cov_diag
        Wt_Dinv = W.mT / D.unsqueeze(-2)
        A = et.linalg.solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        return (et.diag_embed(D.reciprocal()) - et.matmul(A.mT, A)).expand(self._cov_shape())

    def _dense_cov(self):
        W = self._unbroadcasted_cov_factor
        return et.matmul(W, W.mT) + et.diag_embed(self._unbroadcasted_cov_diag)

    def _log_det(self):
        return (2 * self._capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                + self._unbroadcasted_cov_diag.log().sum(-1))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        w_shape = tuple(shape[:-1]) + tuple(self.cov_factor.shape[-1:])
        eps_w = standard_normal(w_shape, self.loc.dtype, self.loc.device)
        eps_d = standard_normal(shape, self.loc.dtype, self.loc.device)
        return (self.loc + batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        W = self._unbroadcasted_cov_factor
        D = self._unbroadcasted_cov_diag
        # diff^T Sigma^-1 diff = diff^T D^-1 diff - |C^-1 W^T D^-1 diff|^2
        batch = et.broadcast_shapes(tuple(diff.shape[:-1]), tuple(W.shape[:-2]))
        Wt_Dinv_diff = batch_mv(W.mT, diff / D)
        C = self._capacitance_tril
        k = C.shape[-1]
        C = C.expand(tuple(batch) + (k, k))
        sol = et.linalg.solve_triangular(C, Wt_Dinv_diff.expand(tuple(batch) + (k,))
                                         .unsqueeze(-1), upper=False).squeeze(-1)
        m = (diff.pow(2) / D).sum(-1) - sol.pow(2).sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m + self._log_det())

    def entropy(self):
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        if len(self._batch_shape) == 0:
            return h
        return h.expand(self._batch_shape)
