"""Devices: ``"cpu"`` (NumPy storage) and ``"cuda"`` / ``"cuda:N"`` (CuPy storage)."""
from __future__ import annotations

__all__ = ["device"]

#: PyTorch's device-type and layout predicates that are always False for ember's tensors:
#: ember has CPU (NumPy) and CUDA (CuPy) storage only, strided, unquantized, not nested.
#: ``is_cpu`` and ``is_cuda`` are answered by the Tensor itself.
FALSE_PREDICATES = ("is_xpu", "is_mps", "is_meta", "is_ipu", "is_mtia", "is_maia",
                    "is_xla", "is_vulkan", "is_mkldnn", "is_quantized", "is_nested")


class device:
    """A device, as in ``device("cuda:0")``, ``device("cpu")`` or ``device("cuda", 1)``."""

    __slots__ = ("type", "index")

    def __init__(self, type, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool):
            self.type, self.index = "cuda", type
            return
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a string or device, got {type!r}")
        name, sep, idx = type.partition(":")
        if name not in ("cpu", "cuda"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type}")
        if sep:
            if index is not None or not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if name == "cpu" and index not in (None, 0):
            raise RuntimeError(f"CPU device index must be -1 or zero, got {index}")
        self.type = name
        self.index = index if name == "cuda" else None

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and (
            self.index == other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (str(self),))


CPU = device("cpu")
# the device factories use when none is given (``set_default_device``)
DEFAULT_DEVICE = [CPU]


def to_device(d) -> device:
    if d is None:
        return DEFAULT_DEVICE[0]
    return d if isinstance(d, device) else device(d)


def _false(self) -> bool:
    return False


def bind_device_predicates(cls) -> None:
    """Give the Tensor class the predicates of :data:`FALSE_PREDICATES` as read-only
    properties (any the class already defines are left alone)."""
    for name in FALSE_PREDICATES:
        if name not in cls.__dict__:
            setattr(cls, name, property(_false, doc=f"``{name}``: always False in ember."))
