"""``ember.optim.swa_utils`` (PyTorch's ``torch.optim.swa_utils``): weight averaging.

:class:`AveragedModel` keeps a copy of a model whose parameters are the running average of the
model's over the steps it is updated at: the equal-weight average of Stochastic Weight
Averaging (Izmailov et al. 2018) by default, or an exponential moving average
(``multi_avg_fn=get_ema_multi_avg_fn(0.999)``). :class:`SWALR` anneals each group's learning
rate to a constant SWA rate; :func:`update_bn` recomputes batch-norm statistics for the
averaged weights with one pass over the data.

This module needs ember-nn (an :class:`AveragedModel` is a Module); ``import ember.optim``
alone does not import it.

    >>> import ember.nn as nn
    >>> model = nn.Linear(2, 1)
    >>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    >>> ema.update_parameters(model); int(ema.n_averaged)
    1
"""
from __future__ import annotations

import copy
import itertools
import math

import ember.tensor as et
from ember.autograd import no_grad

try:
    from ember.nn import BatchNorm1d, BatchNorm2d, BatchNorm3d, Module, SyncBatchNorm
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("ember.optim.swa_utils needs ember-nn: pip install ember-nn") from exc

from .lr_scheduler import LRScheduler, _format_param, _warn_get_lr_called_within_step

_BATCH_NORMS = (BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm)  # (the lazy ones too)

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def get_ema_multi_avg_fn(decay: float = 0.999):
    """``f(averaged, current, n)`` updating a list of averaged tensors in place to
    ``decay * averaged + (1 - decay) * current`` (floating tensors by ``lerp_``)."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")

    @no_grad()
    def ema_update(ema_params, current_params, _):
        for e, c in zip(ema_params, current_params):
            if e.is_floating_point() or e.is_complex():
                e.lerp_(c, 1 - decay)
            else:
                e.copy_(e * decay + c * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """``f(averaged, current, n)`` updating a list of averaged tensors in place to the mean
    of ``n + 1`` values: ``averaged + (current - averaged) / (n + 1)``."""

    @no_grad()
    def swa_update(averaged_params, current_params, num_averaged):
        n = float(num_averaged)
        for a, c in zip(averaged_params, current_params):
            if a.is_floating_point() or a.is_complex():
                a.lerp_(c, 1 / (n + 1))
            else:
                a.copy_(a + (c - a) / (n + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """``f(averaged, current, n) -> decay * averaged + (1 - decay) * current``."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """``f(averaged, current, n) -> averaged + (current - averaged) / (n + 1)``."""

    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` (``.module``) whose parameters (and, with ``use_buffers``, buffers)
    are averaged by :meth:`update_parameters`; calling it calls the copy. ``avg_fn`` (one
    tensor at a time) or ``multi_avg_fn`` (lists): the average (default: SWA's equal
    weights); ``n_averaged``: how many updates went in (the first copies the model)."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", et.tensor(0, dtype=et.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model) -> None:
        """Fold ``model``'s current parameters into the average."""
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        mine_d, theirs_d = [], []
        first = int(self.n_averaged) == 0
        for a, p in zip(mine, theirs):
            p = p.detach().to(a.device)
            mine_d.append(a.detach())
            theirs_d.append(p)
            if first:
                a.detach().copy_(p)
        n = int(self.n_averaged)
        if n > 0:
            if self.avg_fn is None:
                (self.multi_avg_fn or get_swa_multi_avg_fn())(mine_d, theirs_d,
                                                               self.n_averaged)
            else:
                for a, p in zip(mine_d, theirs_d):
                    a.copy_(self.avg_fn(a, p, self.n_averaged.to(a.device)))
        if not self.use_buffers:  # the buffers follow the model's
            for b, mb in zip(self.module.buffers(), model.buffers()):
                b.detach().copy_(mb.detach().to(b.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader, model, device=None) -> None:
    """Recompute the running statistics of ``model``'s batch-norm layers with one pass over
    ``loader`` (batches, or tuples whose first element is the input): their cumulative
    averages, the layers' momenta restored after."""
    momenta = {}
    for m in model.modules():
        if isinstance(m, _BATCH_NORMS):
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for m, momentum in momenta.items():
        m.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate from its value to ``swa_lr`` over ``anneal_epochs``
    steps (``"cos"`` or ``"linear"``), then keep it there."""

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr),
                             optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must by one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t: float) -> float:
        if self._anneal_strategy == "cos":
            return (1 - math.cos(math.pi * t)) / 2
        return t

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha)
                for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(self.optimizer.param_groups, prev)]
