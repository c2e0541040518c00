"""Normalization layers: ``BatchNorm1d/2d/3d``, ``SyncBatchNorm``, ``InstanceNorm1d/2d/3d``,
``LayerNorm``, ``GroupNorm``, ``LocalResponseNorm``.

    >>> import ember.tensor as et
    >>> bn = BatchNorm2d(3)
    >>> bn(et.randn(4, 3, 5, 5)).shape, int(bn.num_batches_tracked)
    (ember.Size([4, 3, 5, 5]), 1)
"""
from __future__ import annotations

from collections.abc import Sequence

import ember.tensor as et
from ember.autograd import Function
from ember.autograd import no_grad as _no_grad
from ember.tensor import Tensor

from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "InstanceNorm1d",
           "InstanceNorm2d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d", "RMSNorm", "CrossMapLRN2d",
           "InstanceNorm3d", "LayerNorm", "GroupNorm", "LocalResponseNorm"]


def _register_affine(m: Module, affine: bool, bias: bool, n: int, device, dtype) -> None:
    """A norm layer's per-channel ``weight`` and ``bias`` Parameters, registered as None
    where absent."""
    def make(present: bool):
        return Parameter(et.empty(n, device=device, dtype=dtype)) if present else None
    m.register_parameter("weight", make(affine))
    m.register_parameter("bias", make(affine and bias))


def _reset_affine(m: Module) -> None:
    if m.affine:
        init.ones_(m.weight)
        if m.bias is not None:
            init.zeros_(m.bias)


class _NormBase(Module):
    """Affine parameters and running statistics shared by batch and instance norm."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _register_affine(self, affine, bias, num_features, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", et.zeros(num_features, device=device,
                                                          dtype=dtype))
            self.register_buffer("running_var", et.ones(num_features, device=device,
                                                        dtype=dtype))
            self.register_buffer("num_batches_tracked", et.tensor(0, dtype=et.long,
                                                                  device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias,
                            bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) input (``torch.nn.BatchNorm1d``)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) input; ``momentum=None`` keeps a cumulative average."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) input."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose training statistics are those of the whole batch across the processes
    of ``process_group`` (``torch.nn.SyncBatchNorm``; default: the world of
    ``ember.distributed``), over (N, C, *) input of any rank >= 2.

    While training with an initialized ``ember.distributed`` group of more than one process,
    the per-channel count, sum and sum of squares of each process's batch are summed across
    the group (an all-reduce whose backward all-reduces the gradients, so the input gradient is
    that of the whole batch's loss, as PyTorch's), on CPU and CUDA alike (PyTorch's needs a
    GPU); anywhere else it is :class:`BatchNorm1d`'s arithmetic.

        >>> import ember.tensor as et
        >>> SyncBatchNorm(3)(et.randn(4, 3, 2)).shape
        ember.Size([4, 3, 2])
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _group(self):
        """``(ember.distributed, group)`` when this call must synchronize, else None."""
        try:
            import ember.distributed as dist
        except ImportError:  # ember-distributed not installed: one process
            return None
        if not dist.is_initialized():
            return None
        group = self.process_group  # None: the default group
        return (dist, group) if dist.get_world_size(group) > 1 else None

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        sync = self._group() if bn_training and self.training else None
        if sync is None:
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        dims = [0] + list(range(2, input.dim()))
        # the statistics in float64 for lower precisions, summed across the group
        x = input if input.dtype == et.float64 else input.to(et.float64)
        count = et.full((1,), float(input.numel() // input.shape[1]), dtype=et.float64,
                        device=input.device)
        stats = _AllReduceSum.apply(et.cat([count, x.sum(dims), (x * x).sum(dims)]), *sync)
        n = stats[0]
        c = input.shape[1]
        mean = stats[1:1 + c] / n
        var = stats[1 + c:] / n - mean * mean
        if self.track_running_stats and self.running_mean is not None:
            with _no_grad():
                nd = n.detach()
                self.running_mean.mul_(1 - factor).add_(factor * mean.detach().to(
                    self.running_mean.dtype))
                self.running_var.mul_(1 - factor).add_(factor * (var.detach() * nd / (nd - 1))
                                                       .to(self.running_var.dtype))
        shape = [1, c] + [1] * (input.dim() - 2)
        y = (x - mean.view(shape)) * et.rsqrt(var + self.eps).view(shape)
        y = y.to(input.dtype)
        if self.weight is not None:
            y = y * self.weight.view(shape)
        if self.bias is not None:
            y = y + self.bias.view(shape)
        return y

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """``module`` with every batch-norm layer in it (``module`` itself included) replaced
        by a :class:`SyncBatchNorm` with the same settings, sharing its parameters and buffers
        (PyTorch's ``convert_sync_batchnorm``)."""
        out = module
        if isinstance(module, _BatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group,
                                bias=module.bias is not None)
            if module.affine:
                with _no_grad():
                    out.weight = module.weight
                    if module.bias is not None:
                        out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class _AllReduceSum(Function):
    """The sum of a tensor over the processes of a group; its backward sums the gradients
    the same way (each process's input feeds every process's loss)."""

    @staticmethod
    def forward(ctx, x, dist, group):
        ctx.dist, ctx.group = dist, group
        out = x.clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        g = grad.clone()
        ctx.dist.all_reduce(g, group=ctx.group)
        return g, None, None


class _InstanceNorm(_NormBase):
    _nd = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        nd = self._nd
        if input.dim() not in (nd + 1, nd + 2):
            raise ValueError(f"expected {nd + 1}D or {nd + 2}D input (got {input.dim()}D "
                             f"input)")
        feature_dim = input.dim() - nd - 1
        if input.shape[feature_dim] != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim={feature_dim} to match "
                             f"num_features ({self.num_features}), but got: "
                             f"{input.shape[feature_dim]}.")
        batched = input.dim() == nd + 2
        x = input if batched else input.unsqueeze(0)
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out if batched else out.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over (N, C, L) or (C, L) (``torch.nn.InstanceNorm1d``)."""

    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over (N, C, H, W) or (C, H, W)."""

    _nd = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over (N, C, D, H, W) or (C, D, H, W)."""

    _nd = 3


class _LazyNormBase(LazyModuleMixin):
    """``num_features`` from dim 1 of the first input (as PyTorch's lazy norms read it)."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = et.tensor(0, dtype=et.long, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        for lazy in (self.weight, self.bias, self.running_mean, self.running_var):
            if lazy is not None:
                lazy.materialize((self.num_features,))
        self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    """A BatchNorm1d whose ``num_features`` is inferred from the first input."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    """A BatchNorm2d whose ``num_features`` is inferred from the first input.

    >>> m = LazyBatchNorm2d()
    >>> m(et.ones(2, 3, 4, 4)).shape, tuple(m.running_mean.shape), type(m).__name__
    (ember.Size([2, 3, 4, 4]), (3,), 'BatchNorm2d')
    """

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    """A BatchNorm3d whose ``num_features`` is inferred from the first input."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNormBase, InstanceNorm1d):
    """An InstanceNorm1d whose ``num_features`` is inferred from the first input."""

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormBase, InstanceNorm2d):
    """An InstanceNorm2d whose ``num_features`` is inferred from the first input."""

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormBase, InstanceNorm3d):
    """An InstanceNorm3d whose ``num_features`` is inferred from the first input."""

    cls_to_become = InstanceNorm3d


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` dims (``torch.nn.LayerNorm``).

    >>> LayerNorm(4)(et.randn(2, 4)).shape
    ember.Size([2, 4])
    """

    def __init__(self, normalized_shape: Sequence[int] | int, eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(v) for v in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(et.empty(*self.normalized_shape, device=device,
                                             dtype=dtype))
            if bias:
                self.bias = Parameter(et.empty(*self.normalized_shape, device=device,
                                               dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """Root-mean-square normalization over the trailing ``normalized_shape`` dims, with an
    elementwise scale (``torch.nn.RMSNorm``); ``eps=None`` is the dtype's machine epsilon.

    >>> RMSNorm([2, 3])(et.randn(4, 2, 3)).shape
    ember.Size([4, 2, 3])
    """

    def __init__(self, normalized_shape: Sequence[int] | int, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(v) for v in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.register_parameter("weight", Parameter(et.empty(
            *self.normalized_shape, device=device, dtype=dtype)) if elementwise_affine else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Normalize groups of channels (``torch.nn.GroupNorm``).

    >>> GroupNorm(2, 4)(et.randn(3, 4, 5)).shape
    ember.Size([3, 4, 5])
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, affine, bias, num_channels, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _ResponseNorm(Module):
    """What the local response normalizations share: a window ``size`` and ``alpha``,
    ``beta``, ``k``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class LocalResponseNorm(_ResponseNorm):
    """Local response normalization across channels (``torch.nn.LocalResponseNorm``).

    >>> LocalResponseNorm(2)(et.ones(1, 4, 3)).shape
    ember.Size([1, 4, 3])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)


class CrossMapLRN2d(_ResponseNorm):
    """Lua Torch's cross-channel local response normalization of 4-D input
    (``torch.nn.CrossMapLRN2d``): ``x * (k + alpha / size * s) ** -beta`` where ``s`` sums the
    squares over a window of channels. The window is Lua Torch's: channels
    ``[c - pre + 1, c + pre - 1]`` with ``pre = (size - 1) // 2 + 1``, and always channel 0.
    Gradients are this forward's exact derivative (PyTorch's legacy backward assumes a
    symmetric window and differs from it).

    >>> CrossMapLRN2d(3, alpha=3., beta=1., k=0.)(et.ones(1, 3, 1, 1)).flatten().tolist()
    [0.5, 0.3333333432674408, 0.3333333432674408]
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             f"instead.")
        c = input.shape[1]
        pre = (self.size - 1) // 2 + 1
        lo = [max(0, i - pre + 1) for i in range(c)]
        hi = [min(i + pre - 1, c - 1) + 1 for i in range(c)]
        sq = input.square()
        sums = F.pad(sq.cumsum(1), (0, 0, 0, 0, 1, 0))  # sums[:, j]: channels below j
        dev = input.device
        window = sums.index_select(1, et.tensor(hi, device=dev)) - \
            sums.index_select(1, et.tensor(lo, device=dev))
        # Lua Torch's running window never drops channel 0
        window = window + sq[:, :1] * et.tensor([float(v > 0) for v in lo], dtype=sq.dtype,
                                                device=dev).view(1, c, 1, 1)
        return input * (window * (self.alpha / self.size) + self.k).pow(-self.beta)
