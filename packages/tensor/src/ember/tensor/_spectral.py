"""``torch.stft`` and ``torch.istft``: the short-time Fourier transform and its inverse.

Both are composites of registry ops, so their gradients (to the signal and to the window) come
from the derivative table: padding by slices, ``flip`` and ``cat``; framing by ``unfold``
(a view); the window by ``mul``; overlap-add by ``index_add``; each frame's discrete Fourier
transform by ``ember.tensor.fft`` (``rfft``/``fft`` forward, ``irfft``/``ifft`` back, so the
imaginary parts of a one-sided spectrum's DC and Nyquist bins are ignored as PyTorch ignores
them); ``normalized`` is the transforms' ``norm="ortho"``.

    >>> import ember.tensor as et
    >>> x = et.arange(8.)
    >>> S = et.stft(x, 4, window=et.hann_window(4, periodic=True), return_complex=True)
    >>> S.shape
    ember.Size([3, 9])
    >>> y = et.istft(S, 4, window=et.hann_window(4, periodic=True), length=8)
    >>> bool(((y - x).abs() < 1e-5).all())
    True
"""
from __future__ import annotations

import warnings

from ._complex import real, view_as_real
from ._creation import ones, zeros
from ._fft_ops import fft, ifft, irfft, rfft
from ._registry import array_module
from ._scatter import index_add
from ._shape import cat, narrow
from ._tensor import Tensor

__all__ = ["stft", "istft"]

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _shape_str(t: Tensor) -> str:
    return f"[{', '.join(str(s) for s in t.shape)}]"


def _stft_prefix(x: Tensor, n_fft, hop, win, window, normalized, onesided, return_complex,
                 align_to_window) -> str:
    """PyTorch's stft error prefix: the resolved call."""
    w = "None" if window is None else f"{window.type()}{{{_shape_str(window)}}}"
    opt = "None" if onesided is None else int(bool(onesided))
    rc = "None" if return_complex is None else int(bool(return_complex))
    return (f"stft({x.type()}{_shape_str(x)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={w}, normalized={int(bool(normalized))}, "
            f"onesided={opt}, return_complex={rc}, align_to_window={align_to_window}) : ")


def _istft_prefix(x: Tensor, n_fft, hop, win, window, center, normalized, onesided, length,
                  return_complex) -> str:
    w = "None" if window is None else f"{window.type()}{{{_shape_str(window)}}}"
    opt = "None" if onesided is None else int(bool(onesided))
    return (f"istft({x.type()}{_shape_str(x)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={w}, center={int(bool(center))}, "
            f"normalized={int(bool(normalized))}, onesided={opt}, length={length}, "
            f"return_complex={int(bool(return_complex))}) : ")


def _pad_last(x: Tensor, left: int, right: int, mode: str, shape3) -> Tensor:
    """``x`` padded on its last dim (``F.pad``'s 1-d modes), from slices, ``flip`` and
    ``cat``; ``shape3`` is the 3-d shape PyTorch's errors name."""
    n = x.shape[-1]
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode == "reflect" and (left >= n or right >= n):
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                           f"input dimension, but got: padding ({left}, {right}) at dimension "
                           f"{len(shape3) - 1} of input {list(shape3)}")
    if mode == "circular" and (left > n or right > n):
        raise RuntimeError("Padding value causes wrapping around more than once.")
    if mode in ("replicate", "circular") and n == 0:
        raise RuntimeError(f"stft: padding mode {mode} needs a non-empty signal")
    lead = tuple(x.shape[:-1])
    if mode == "constant":
        lo = zeros(*lead, left, dtype=x.dtype, device=x.device)
        hi = zeros(*lead, right, dtype=x.dtype, device=x.device)
    elif mode == "reflect":  # (narrow: a view, as the slices are, without their parsing)
        lo = narrow(x, -1, 1, left).flip(-1)
        hi = narrow(x, -1, n - right - 1, right).flip(-1)
    elif mode == "replicate":
        lo = narrow(x, -1, 0, 1).expand(*lead, left)
        hi = narrow(x, -1, n - 1, 1).expand(*lead, right)
    else:
        lo = narrow(x, -1, n - left, left)
        hi = narrow(x, -1, 0, right)
    return cat([lo, x, hi], -1)


def _full_window(window: Tensor | None, win_length: int, n_fft: int, like: Tensor) -> Tensor:
    """The window as ``n_fft`` samples: ones where none was given; a shorter one centred
    between zeros (``cat``, so the window's gradient flows)."""
    if window is None:
        window = ones(win_length, dtype=like.dtype if like.dtype.is_floating_point else None,
                      device=like.device)
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    z = [zeros(left, dtype=window.dtype, device=window.device), window,
         zeros(n_fft - win_length - left, dtype=window.dtype, device=window.device)]
    return cat(z, 0)


def stft(input: Tensor, n_fft: int, hop_length: int | None = None,
         win_length: int | None = None, window: Tensor | None = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform of a 1-d signal or a batch of them (``(B?, L)``):
    ``X[..., k, m] = sum_t window[t] input[m hop_length + t] exp(-2 pi i t k / n_fft)``,
    shaped ``(B?, n_fft // 2 + 1 (onesided) or n_fft, n_frames)``.

    ``hop_length`` defaults to ``n_fft // 4``, ``win_length`` to ``n_fft``; ``window=None``
    is a rectangular window (with PyTorch's warning); a window shorter than ``n_fft`` is
    centred. ``center`` pads ``n_fft // 2`` on both sides by ``pad_mode``. ``normalized``
    scales by ``n_fft ** -0.5``. ``onesided`` (default: True for real input and window) keeps
    the non-negative frequencies. ``return_complex`` must be given for real inputs; False
    returns ``view_as_real`` of the result (deprecated, as in PyTorch).
    ``align_to_window`` (only with ``center=False``) frames the signal by the window rather
    than by ``n_fft``.

    >>> stft(tensor([1., 0., 0., 0.]), 4, window=ones(4), center=False,
    ...      return_complex=True).squeeze(-1)
    tensor([1.+0.j, 1.+0.j, 1.+0.j])
    """
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    x = input
    if center:
        if x.dim() > 3:
            raise RuntimeError(f"stft: expected a 1D or 2D tensor, got {x.dim()}D")
        shape3 = (1,) * (3 - x.dim()) + tuple(x.shape)
        x = _pad_last(x.reshape(*shape3), n_fft // 2, n_fft // 2, pad_mode, shape3)
        x = x.reshape(*x.shape[3 - input.dim():])
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which "
                      "is known to cause spectral leakage. Other windows such as "
                      "torch.hann_window or torch.hamming_window are recommended to reduce "
                      "spectral leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.",
                      UserWarning, stacklevel=2)
    complex_in = x.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=2)

    def fail(msg):
        return RuntimeError(_stft_prefix(x, n_fft, hop, win, window, normalized, onesided,
                                         return_complex, align_to_window) + msg)

    if x.dtype.name == "bool" and center and pad_mode == "reflect":
        raise NotImplementedError("stft(): \"reflection_pad1d\" not implemented for 'Bool'")
    if not (x.is_floating_point() or x.is_complex()):
        raise fail("expected a tensor of floating point or complex values")
    if x.dim() not in (1, 2):
        raise fail("expected a 1D or 2D tensor")
    if x.numel() == 0:  # PyTorch's FFT backends refuse an empty batch too
        raise fail(f"input tensor cannot be empty (got shape {list(x.shape)})")
    length = x.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise fail(f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise fail(f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise fail(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise fail(f"expected a 1D window tensor of size equal to win_length={win}, but got "
                   f"window with size {list(window.shape)}")
    if onesided is None:
        onesided = not complex_in
    elif onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    batched = x.dim() == 2
    if not batched:
        x = x.unsqueeze(0)
    if align_to_window:  # frames start where the (centred) window starts
        left = (n_fft - win) // 2
        n_frames = 1 + (length - win) // hop
        x = _pad_last(x, left, left, "constant", (1,) + tuple(x.shape))
        if (n_frames - 1) * hop + n_fft > x.shape[-1]:
            raise fail(f"align_to_window: {n_frames} frames of {n_fft} samples with hop "
                       f"{hop} need {(n_frames - 1) * hop + n_fft} samples, the padded "
                       f"signal has {x.shape[-1]}")
        x = x[..., :(n_frames - 1) * hop + n_fft]
    frames = x.unfold(-1, n_fft, hop)  # (B, n_frames, n_fft)
    w = _full_window(window, win, n_fft, x)
    frames = frames * w
    norm = "ortho" if normalized else "backward"
    out = rfft(frames, norm=norm) if onesided else fft(frames, norm=norm)
    out = out.transpose(-1, -2)
    if not batched:
        out = out.squeeze(0)
    return out if return_complex else view_as_real(out)


def istft(input: Tensor, n_fft: int, hop_length: int | None = None,
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of :func:`stft` by weighted overlap-add: each frame's inverse DFT times the
    window, summed at its offset, divided by the summed squared window (which must not
    vanish anywhere); ``center`` drops the ``n_fft // 2`` padded samples at each end;
    ``length`` trims (or zero-pads, with PyTorch's warning) the result. ``input`` is complex,
    ``(B?, n_fft // 2 + 1 (onesided) or n_fft, n_frames)``.

    >>> S = stft(arange(1., 9.), 4, window=ones(4), return_complex=True)
    >>> istft(S, 4, window=ones(4)).round()
    tensor([1., 2., 3., 4., 5., 6., 7., 8.])
    """
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion lossless.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")

    def fail(msg):
        return RuntimeError(_istft_prefix(input, n_fft, hop, win, window, center, normalized,
                                          onesided, length, return_complex) + msg)

    if input.dim() < 2:  # the frequency dim (-2) is read first, as in PyTorch
        n = max(input.dim(), 1)
        raise IndexError(f"istft(): Dimension out of range (expected to be in range of [{-n}, "
                         f"{n - 1}], but got -2)")
    if input.numel() == 0:
        raise fail("input tensor cannot be empty.")
    if input.dim() not in (2, 3):
        raise fail(f"expected a tensor with 3 or 4 dimensions, but got {input.dim() + 1}")
    n_freq, n_frames = input.shape[-2], input.shape[-1]
    one = onesided if onesided is not None else n_freq != n_fft
    if one and n_freq != n_fft // 2 + 1:
        raise fail("expected the frequency dimension (3rd to the last) of the input tensor to "
                   f"match n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    if not one and n_freq != n_fft:
        raise fail("expected the frequency dimension (3rd to the last) of the input tensor to "
                   f"match n_fft when onesided=False, but got {n_freq}")
    if not 0 < hop <= win:
        raise fail("expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise fail("expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise fail("Invalid window shape. window has to be 1D and length of `win_length`")
    batched = input.dim() == 3
    X = (input if batched else input.unsqueeze(0)).transpose(-1, -2)  # (B, n_frames, n_freq)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if one:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        y = ifft(X, n_fft, norm=norm)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not one:
            X = X[..., :n_fft // 2 + 1]
        y = irfft(X, n_fft, norm=norm)
    w = _full_window(window, win, n_fft, real(X) if X.is_complex() else X)
    y = y * w  # (B, n_frames, n_fft)
    total = n_fft + hop * (n_frames - 1)
    # each frame's sample positions in the output (an index, no gradient): one array
    xp = array_module(y._data)
    pos = Tensor._make((xp.arange(0, n_frames * hop, hop, dtype=xp.int64)[:, None] +
                        xp.arange(n_fft, dtype=xp.int64)).reshape(-1))
    B = y.shape[0]
    out = index_add(zeros(B, total, dtype=y.dtype, device=y.device), 1, pos,
                    y.reshape(B, n_frames * n_fft))
    w2 = (w * w).expand(n_frames, n_fft).reshape(-1)
    env = index_add(zeros(total, dtype=w2.dtype, device=w2.device), 0, pos, w2)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = -(n_fft // 2) if center else total
    out = out[:, start:end]
    env = env[start:end]
    low = env.abs().min()
    if bool(low < 1e-11):
        raise fail(f"window overlap add min: {float(low):g}")
    out = out / env
    if not batched:
        out = out.squeeze(0)
    if end > total:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        tail = zeros(*out.shape[:-1], end - total, dtype=out.dtype, device=out.device)
        out = cat([out, tail], -1)
    return out


def _bind_methods() -> None:
    for name, fn in (("stft", stft), ("istft", istft)):
        if name not in Tensor.__dict__:
            setattr(Tensor, name, fn)


_bind_methods()
