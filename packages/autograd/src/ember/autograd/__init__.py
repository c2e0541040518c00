"""ember.autograd (placeholder shell; the capability lands with its issue)."""

__version__ = "0.1.0"
__all__ = ["__version__"]
