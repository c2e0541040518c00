"""``ember.nn.utils.parametrizations``: ``weight_norm``, ``spectral_norm`` and ``orthogonal``
as parametrizations (``torch.nn.utils.parametrizations``), registered with
:func:`ember.nn.utils.parametrize.register_parametrization`.

    >>> import ember.nn as nn
    >>> m = weight_norm(nn.Linear(3, 2))
    >>> [name for name, _ in m.named_parameters()]
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""
from __future__ import annotations

from enum import Enum, auto

import ember.tensor as et
from ember.autograd import no_grad
from ember.tensor import Tensor

from .. import functional as F
from ..modules import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---------------------------------------------------------------------- weight norm
def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dim but ``dim``, kept as size-1 dims (PyTorch's
    ``norm_except_dim(v, 2, dim)``); ``dim == -1`` means the norm of the whole tensor, 0-d."""
    if dim == -1:
        return et.linalg.vector_norm(v)
    ndim = v.dim()
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {dim})")
    dim = dim % ndim
    others = tuple(d for d in range(v.dim()) if d != dim)
    if not others:
        return v.abs()
    return et.linalg.vector_norm(v, 2, dim=others, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """``g * v / ||v||`` with the norm of :func:`_norm_except_dim` (PyTorch's
    ``_weight_norm(v, g, dim)``)."""
    if v.device != g.device:
        raise RuntimeError(f"_weight_norm: expected v and g on the same device, but got "
                           f"{v.device} and {g.device}")
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    """``(g, v) -> g * v / ||v||``; ``right_inverse(w) = (||w||, w)``."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


class _WeightNormCompat:
    """Load-state-dict pre-hook: a checkpoint of the legacy hook-based weight norm
    (``<name>_g``, ``<name>_v``) loads into the parametrized module."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs) -> None:
        g_key, v_key = f"{prefix}{self.name}_g", f"{prefix}{self.name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{self.name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{self.name}.original1"] = state_dict.pop(v_key)


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (magnitude ``g``, direction
    ``v``), the norm taken over every dim but ``dim`` (over the whole tensor for
    ``dim=None``). ``g`` and ``v`` are ``parametrizations.<name>.original0`` and
    ``original1``; a legacy ``<name>_g`` / ``<name>_v`` checkpoint still loads.

    >>> import ember.nn as nn
    >>> m = weight_norm(nn.Linear(4, 3))
    >>> tuple(m.parametrizations.weight.original0.shape)
    (3, 1)
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    module._register_load_state_dict_pre_hook(_WeightNormCompat(name))
    return module


# ---------------------------------------------------------------------- spectral norm
class _SpectralNorm(Module):
    """``W -> W / sigma(W)``, with the largest singular value ``sigma`` estimated by power
    iteration on the buffers ``_u`` and ``_v`` (updated in training mode only)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # u and v are updated in place and never enter the graph: sigma = u^T W v is then
        # differentiated with u and v held constant, as PyTorch does
        with no_grad():
            for _ in range(n_power_iterations):
                F.normalize(et.mv(weight_mat, self._v), dim=0, eps=self.eps, out=self._u)
                F.normalize(et.mv(weight_mat.mH, self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = et.vdot(u, et.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def _default_spectral_dim(module: Module) -> int:
    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Reparametrize ``module.<name>`` as ``W / sigma(W)``, ``sigma`` the largest singular
    value of ``W`` seen as a matrix with ``dim`` (0, or 1 for the ConvTranspose layers) as its
    rows, estimated by ``n_power_iterations`` steps of power iteration per forward in training
    mode (the vectors are the buffers ``parametrizations.<name>.0._u`` and ``._v``).

    >>> import ember.nn as nn
    >>> m = spectral_norm(nn.Linear(4, 3))
    >>> for key in m.state_dict():
    ...     print(key)
    bias
    parametrizations.weight.original
    parametrizations.weight.0._u
    parametrizations.weight.0._v
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = _default_spectral_dim(module)
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ---------------------------------------------------------------------- orthogonal
def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.size(-2), Q.size(-1)
    eye = et.eye(k, dtype=Q.dtype, device=Q.device)
    atol = 10.0 * n * et.finfo(Q.dtype).eps
    return et.allclose(Q.mH @ Q, eye, atol=atol)


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of A's QR decomposition, its columns' signs chosen so that R has a positive
    diagonal (unique for full-rank A)."""
    X, tau = et.geqrf(A)
    Q = et.linalg.householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """A (batch of) matrices with orthonormal columns (rows, for a wide matrix) from an
    unconstrained one: the matrix exponential or the Cayley map of its skew-symmetric part,
    or a product of Householder reflectors; with ``use_trivialization`` the result is
    multiplied by the buffer ``base``, the point the map is centred on."""

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:  # pad to n x n with zero columns
                pad = X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)
                X = et.cat([X, pad], dim=-1)
            A = X - X.mH  # skew-symmetric (skew-Hermitian)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = et.linalg.matrix_exp(A)
            else:
                eye = et.eye(n, dtype=A.dtype, device=A.device)
                Q = et.linalg.solve(et.add(eye, A, alpha=-0.5), et.add(eye, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = et.linalg.householder_product(A, tau)
            # the diagonal of X (an integer) flips the sign of the columns
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix "
                                          "exponential or the Cayley parametrizations when "
                                          "use_trivialization=False.")
            # the reflectors of Q's QR decomposition, with the signs of R's diagonal (a
            # reflector with tau == 0 is the identity: its sign is flipped) on the diagonal
            A, tau = et.geqrf(Q)
            A.diagonal(dim1=-2, dim2=-1).sign_()
            A.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:  # complete the columns to a square matrix at random, then orthogonalize
            N = et.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(et.cat([Q, N], dim=-1))
        self.base = Q
        # the unconstrained matrix that maps to the identity (so that forward gives base)
        neg_id = et.zeros_like(Q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain ``module.<name>`` (a matrix or a batch of matrices) to have orthonormal
    columns, or rows when it is wide. ``orthogonal_map`` is ``"matrix_exp"``, ``"cayley"`` or
    ``"householder"``; by default ``"matrix_exp"`` for square or complex matrices and
    ``"householder"`` otherwise. ``use_trivialization`` (the default) stores a base point in
    the buffer ``parametrizations.<name>.0.base``, and assigning to ``module.<name>`` moves it.

    >>> import ember.nn as nn
    >>> m = orthogonal(nn.Linear(4, 3))
    >>> bool(et.allclose(m.weight @ m.weight.mT, et.eye(3), atol=1e-5))
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = _OrthMaps.__members__.get(orthogonal_map) \
        if isinstance(orthogonal_map, str) else None
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
