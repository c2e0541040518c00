"""What the front end and the backends share: work handles (what an ``async_op=True``
collective returns, PyTorch's ``Work``), :class:`ReduceOp`, and the version bump after a
collective writes into tensors."""
from __future__ import annotations

import enum
import time
from datetime import timedelta

from ember.tensor.extension import bump_version

__all__ = ["Work", "ReduceOp"]


def _mark_written(tensors) -> None:
    """Tell ember.tensor that ``tensors`` were written in place behind its back (through the
    NumPy array or device pointer they share), so their version counters move as after any
    in-place op (autograd's saved-tensor checks see the change)."""
    for t in tensors:
        bump_version(t)


class ReduceOp(enum.Enum):
    """Reduction operations (``ReduceOp.SUM`` ...), PyTorch's names.

    >>> ReduceOp.AVG
    <RedOpType.AVG: 1>
    """

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"


class Work:
    """A collective in flight. ``wait()`` blocks until it is done (and finishes it: averaging,
    copying into output lists); ``is_completed()`` polls without blocking.

    Backends subclass it and provide ``_test()`` (non-blocking: done yet?) and ``_block()``.
    """

    def __init__(self, op: str, finish=None, outputs=()) -> None:
        self._op = op
        self._finish = finish
        self._outputs = list(outputs)
        self._done = False
        self._exc: BaseException | None = None

    # backends override these two
    def _test(self) -> bool:
        return True

    def _block(self) -> None:
        return None

    def _complete(self) -> None:
        if self._done:
            return
        self._done = True
        if self._finish is not None:
            finish, self._finish = self._finish, None
            try:
                finish()
            except BaseException as exc:
                self._exc = exc
                raise

    def is_completed(self) -> bool:
        """True once the operation has finished (polls the transport, never blocks)."""
        if not self._done and self._test():
            self._complete()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed() and self._exc is None

    def exception(self):
        return self._exc

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        """Block until the operation is done; with ``timeout``, raise RuntimeError if it is not
        done in time (the operation stays in flight)."""
        if self._done:
            if self._exc is not None:
                raise self._exc
            return True
        if timeout is None:
            self._block()
        else:
            seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
            deadline = time.monotonic() + seconds
            while not self._test():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self._op}: timed out after {seconds} s waiting for the "
                                       "operation to complete")
                time.sleep(1e-4)
        self._complete()
        return True

    def synchronize(self) -> None:
        self.wait()

    def result(self) -> list:
        """The output tensors of the operation (after waiting for it)."""
        self.wait()
        return list(self._outputs)

    def __repr__(self) -> str:
        state = "completed" if self._done else "pending"
        return f"<ember.distributed.Work {self._op} ({state})>"


class _DoneWork(Work):
    """A Work for an operation that finished synchronously (world size 1, empty tensors)."""

    def __init__(self, op: str, finish=None, outputs=()) -> None:
        super().__init__(op, finish, outputs)
