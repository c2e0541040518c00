"""Finite-difference checks of analytical gradients (``gradcheck``, ``gradgradcheck``)."""
from __future__ import annotations

import numpy as np

import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor.extension import unwrap

from .api import grad as _grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients disagree."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(func, inputs):
    """The tensors ``func`` returns that are differentiable (require grad), as PyTorch's
    gradcheck checks them (``native_layer_norm``'s ``mean`` and ``rstd`` are not); all of them
    when none is, so that their numerical Jacobian is checked to be zero."""
    outs = [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor)]
    diff = [o for o in outs if o.requires_grad]
    return diff or outs


def _real_coords(t: Tensor) -> np.ndarray:
    """A tensor's values (on any device) as float64 real coordinates: a complex element is
    two, its real and imaginary parts."""
    arr = unwrap(t.detach().cpu())
    if arr.dtype.kind == "c":
        return np.stack([arr.real, arr.imag], -1).astype(np.float64).reshape(-1)
    return arr.astype(np.float64).reshape(-1)


def _n_coords(t: Tensor) -> int:
    return t.numel() * (2 if t.is_complex() else 1)


def _numerical(func, inputs, diff_idx, eps):
    """Central differences over real coordinates (a complex element is two: its real and
    imaginary parts): list over outputs of list over inputs of (out_coords, in_coords)."""
    outs0 = _outputs(func, inputs)
    jac = [[np.zeros((_n_coords(o), _n_coords(inputs[i]))) for i in diff_idx] for o in outs0]
    for k, i in enumerate(diff_idx):
        x = inputs[i]
        view = unwrap(x)
        cplx = view.dtype.kind == "c"
        for j in range(_n_coords(x)):
            e = j // 2 if cplx else j
            idx = np.unravel_index(e, view.shape) if view.ndim else ()
            step = eps * 1j if cplx and j % 2 else eps
            orig = view[idx].item()
            # func may itself use autograd (gradgradcheck), so it runs with grad enabled
            view[idx] = orig + step
            plus = [_real_coords(o) for o in _outputs(func, inputs)]
            view[idx] = orig - step
            minus = [_real_coords(o) for o in _outputs(func, inputs)]
            view[idx] = orig
            for n, (p, m) in enumerate(zip(plus, minus)):
                jac[n][k][:, j] = (p - m) / (2 * eps)
    return jac


def _analytical(func, inputs, diff_idx):
    """Backward passes, one per real output coordinate: a complex output's real part gets
    the gradient 1, its imaginary part 1j. The gradient of a complex input is dL/dx + i dL/dy
    (PyTorch's convention), so its real coordinates are the Jacobian's row."""
    outs = _outputs(func, inputs)
    jac = []
    for o in outs:
        rows = [np.zeros((_n_coords(o), _n_coords(inputs[i]))) for i in diff_idx]
        if o.requires_grad:
            cplx = o.is_complex()
            for r in range(_n_coords(o)):
                g = et.zeros_like(o)
                unwrap(g).reshape(-1)[r // 2 if cplx else r] = 1j if cplx and r % 2 else 1
                gs = _grad([o], [inputs[i] for i in diff_idx], [g], retain_graph=True,
                           allow_unused=True)
                for k, gi in enumerate(gs):
                    if gi is not None:
                        rows[k][r, :] = _real_coords(gi)
        jac.append(rows)
    return jac


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, fast_mode: bool = False,
              masked=None) -> bool:
    """Compare the gradients of ``func`` at ``inputs`` with central finite differences.

    Inputs that require grad should be float64 or complex128; complex inputs and outputs are
    checked over their real and imaginary parts, so the check covers PyTorch's convention for
    complex gradients. Returns True, or raises GradcheckError (returns False when
    ``raise_exception=False``).

    >>> x = et.randn(3, dtype=et.float64, requires_grad=True)
    >>> gradcheck(lambda t: (t * t).sum(), (x,))
    True
    """
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    for i in diff_idx:
        if inputs[i].dtype is not et.float64 and inputs[i].dtype is not et.complex128:
            import warnings

            warnings.warn(f"gradcheck: input {i} is {inputs[i].dtype}, not float64; the "
                          "check is likely to fail for precision reasons", stacklevel=2)
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    num = _numerical(func, inputs, diff_idx, eps)
    ana = _analytical(func, inputs, diff_idx)
    for n, (nrows, arows) in enumerate(zip(num, ana)):
        for k, (nj, aj) in enumerate(zip(nrows, arows)):
            if not np.allclose(aj, nj, rtol=rtol, atol=atol):
                msg = (f"Jacobian mismatch for output {n} with respect to input "
                       f"{diff_idx[k]},\nnumerical:{nj}\nanalytical:{aj}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """Check second derivatives: gradcheck of ``(inputs, v) -> grad(func(inputs), inputs, v)``
    with ``create_graph=True``."""
    inputs = _as_tuple(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        gen = np.random.default_rng(0)
        grad_outputs = tuple(
            et.tensor(gen.standard_normal(tuple(o.shape)) + (
                1j * gen.standard_normal(tuple(o.shape)) if o.is_complex() else 0),
                dtype=o.dtype, device=o.device).requires_grad_(True)
            for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_order(*all_args):
        xs, vs = all_args[:n_in], all_args[n_in:]
        ys = _outputs(func, xs)
        gs = _grad(ys, [xs[i] for i in diff_idx], list(vs), create_graph=True,
                   allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_order, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
