"""``biject_to`` and ``transform_to``: from constraints to transforms
(``torch.distributions.constraint_registry``).

``biject_to(c)`` gives a bijective transform from unconstrained space onto ``c`` (for
reparameterizing inside a model, where log-det-Jacobians matter); ``transform_to(c)`` a
transform onto ``c`` that need not be bijective (for unconstrained optimization). Both are
:class:`ConstraintRegistry` objects: register a factory for a new constraint class with
``@biject_to.register(MyConstraint)``.
"""
from __future__ import annotations

from numbers import Number

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A map from constraint classes to factories ``factory(constraint) -> Transform``."""

    def __init__(self):
        self._registry = {}
        super().__init__()

    def register(self, constraint, factory=None):
        """Register ``factory`` for ``constraint`` (a Constraint subclass, or an instance
        standing for its class); without ``factory``, a decorator."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, constraints.Constraint)):
            raise TypeError("Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        """The transform for ``constraint``; NotImplementedError when none is registered."""
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _register_both(*constraint_objects):
    """Register one factory for each constraint in both registries."""
    def decorator(factory):
        for c in constraint_objects:
            biject_to.register(c, factory)
            transform_to.register(c, factory)
        return factory
    return decorator


@_register_both(constraints.real)
def _to_real(constraint):
    return transforms.identity_transform


@_register_both(constraints.positive, constraints.nonnegative)
def _to_positive(constraint):
    return transforms.ExpTransform()


@_register_both(constraints.greater_than, constraints.greater_than_eq)
def _to_greater_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


@_register_both(constraints.less_than)
def _to_less_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


@_register_both(constraints.interval, constraints.half_open_interval)
def _to_interval(constraint):
    low, high = constraint.lower_bound, constraint.upper_bound
    if isinstance(low, Number) and low == 0 and isinstance(high, Number) and high == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(low, high - low)])


@_register_both(constraints.corr_cholesky)
def _to_corr_cholesky(constraint):
    return transforms.CorrCholeskyTransform()


def _register_structured(registry):
    """The factories that recurse into their parts with ``registry`` itself."""
    @registry.register(constraints.independent)
    def _to_independent(constraint):
        return transforms.IndependentTransform(registry(constraint.base_constraint),
                                               constraint.reinterpreted_batch_ndims)

    @registry.register(constraints.cat)
    def _to_cat(constraint):
        return transforms.CatTransform([registry(c) for c in constraint.cseq],
                                       constraint.dim, constraint.lengths)

    @registry.register(constraints.stack)
    def _to_stack(constraint):
        return transforms.StackTransform([registry(c) for c in constraint.cseq],
                                         constraint.dim)


_register_structured(biject_to)
_register_structured(transform_to)

biject_to.register(constraints.simplex, lambda c: transforms.StickBreakingTransform())
transform_to.register(constraints.simplex, lambda c: transforms.SoftmaxTransform())
transform_to.register(constraints.lower_cholesky,
                      lambda c: transforms.LowerCholeskyTransform())
for _c in (constraints.positive_definite, constraints.positive_semidefinite):
    transform_to.register(_c, lambda c: transforms.PositiveDefiniteTransform())
