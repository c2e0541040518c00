"""Lazy modules: parameters whose shapes come from the first input (``torch.nn.modules.lazy``).

A lazy module is built with :class:`~ember.nn.parameter.UninitializedParameter` (and
``UninitializedBuffer``) in place of the tensors whose sizes depend on the input, for example a
``LazyLinear``'s ``in_features``. A forward pre-hook calls ``initialize_parameters(*args)`` on
the first call: the module materializes its parameters from the input's shape, initializes
them as its eager twin would, removes its hooks and becomes that twin (``cls_to_become``).
Loading a state dict into a lazy module materializes its parameters from the loaded shapes.
"""
from __future__ import annotations

import itertools

from ember.autograd import no_grad

from ..parameter import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixed in before the eager module class: ``class LazyLinear(LazyModuleMixin, Linear)``.

    A subclass implements ``initialize_parameters(*args, **kwargs)`` (materialize every lazy
    tensor from the forward arguments) and sets ``cls_to_become`` to the eager class."""

    cls_to_become = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs) -> None:
        for name, value in itertools.chain(self._parameters.items(), self._buffers.items()):
            loaded = state_dict.get(prefix + name)
            if value is not None and loaded is not None and is_lazy(value) \
                    and not is_lazy(loaded):
                with no_grad():
                    value.materialize(loaded.shape)

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer still waits for its shape."""
        return any(is_lazy(v) for v in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None) -> None:
        with no_grad():
            module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook, module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
