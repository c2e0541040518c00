"""``ember.tensor.backends``: PyTorch's ``torch.backends`` switches.

ember has no cuDNN, no MPS and no oneDNN (its GPU path is CuPy with cuBLAS, see DESIGN.md),
so their ``is_available()`` are False, and the switches training scripts set
(``cudnn.benchmark = True``, ``cudnn.deterministic = True``, ``cuda.matmul.allow_tf32``) are
accepted and kept for code that reads them back; ``cuda.matmul.allow_tf32`` is PyTorch's other
spelling of :func:`ember.tensor.set_float32_matmul_precision` (``"high"`` / ``"highest"``).

    >>> import ember.tensor.backends.cudnn as cudnn
    >>> cudnn.benchmark = True
    >>> cudnn.is_available()
    False
    >>> cudnn.benchmark = False
"""
from . import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]
