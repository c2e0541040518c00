"""DistributedDataParallel: gradients averaged across processes, overlapping backward.

At construction the wrapped module's parameters and buffers are broadcast from rank 0, and the
parameters that require grad are packed, in reverse order (roughly the order backward produces
their gradients), into buckets of at most ``bucket_cap_mb`` (one flat tensor per bucket, one
dtype and device per bucket).

The reducer works as PyTorch's does, driven by two autograd facilities:

* a post-accumulate-grad hook on each parameter (it runs once ``.grad`` holds the accumulated
  gradient) marks the parameter ready: its ``.grad`` is copied into its bucket slot (with
  ``gradient_as_bucket_view=True``, ``.grad`` becomes that slot, so later backward passes
  accumulate straight into the bucket). A bucket whose parameters are all ready starts its
  non-blocking all-reduce (average), in the fixed bucket order, the same on every process,
  while backward goes on;
* the first hook of a backward pass queues an end-of-backward callback
  (``ember.autograd.engine.queue_callback``) that waits for every bucket and writes the averaged
  gradients into ``.grad``.

A synchronizing forward (grad mode on, outside ``no_sync()``) arms the reducer for one
reduction. With ``find_unused_parameters=True`` the parameters the output's graph does not
reach are marked ready (zero, or their ``.grad`` from ``no_sync`` steps) at the first hook,
parameters reached but left without a gradient at the end of backward, and a parameter unused
on every process keeps its ``.grad`` untouched. Without it, a parameter that gets no gradient
leaves its bucket unreduced, and the next forward reports it. A backward pass after the
iteration's reduction has finished accumulates locally, without averaging, as in PyTorch; one
that reaches a parameter already marked ready in the unfinished reduction raises.
"""
from __future__ import annotations

import contextlib
import weakref

import ember.tensor as et
from ember.autograd import is_grad_enabled
from ember.autograd.engine import queue_callback
from ember.nn import Module
from ember.tensor import Tensor

from . import _c10d as c10d

__all__ = ["DistributedDataParallel"]


class _Bucket:
    __slots__ = ("indices", "flat", "slots", "pending", "work")

    def __init__(self, indices, flat, slots) -> None:
        self.indices = indices  # parameter indices, in bucket order
        self.flat = flat        # one contiguous tensor holding the bucket's gradients
        self.slots = slots      # per parameter: a view of flat shaped like the parameter
        self.pending = len(indices)
        self.work = None


class DistributedDataParallel(Module):
    """Data parallel training over a process group (PyTorch's DistributedDataParallel).

    Every process runs the same model on its own part of the batch; ``backward()`` leaves the
    gradient averaged over all processes in each parameter's ``.grad``::

        dist.init_process_group("mpi")
        model = DistributedDataParallel(net)
        loss_fn(model(x_local), y_local).backward()
        opt.step()
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an ember.nn.Module, got "
                            f"{type(module).__name__}")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        devices = {p.device for p in module.parameters()}
        if len(devices) > 1:
            raise ValueError(f"DistributedDataParallel's input module must be on the same type "
                             f"of devices, but input module parameters locate in {devices}.")
        device = next(iter(devices))
        if device_ids is not None and device.type == "cpu":
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                f"single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                f"{device_ids}, output_device {output_device}, and module parameters "
                f"{devices}.")
        if device_ids is not None and len(device_ids) != 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        if bucket_cap_mb is None:
            bucket_cap_mb = 25
        if not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got "
                             f"{bucket_cap_mb}")
        self.module = module
        self.device = device
        self.device_ids = None if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.process_group = process_group if process_group is not None else c10d._default()
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._params = params
        self._world = c10d.get_world_size(self.process_group)

        self._sync_module_states()
        self._buckets, self._where = self._build_buckets()
        n = len(params)
        # per iteration (armed by a synchronizing forward, ended by the finalizing callback)
        self._expect = False          # hooks take part in a reduction
        self._pending = False         # some parameter was marked ready; finalize still owed
        self._ready = [False] * n
        self._launched = 0            # buckets whose all-reduce has started, in order
        self._unused: list[int] = []  # marked ready at the first hook of the backward
        self._marked_unused = False
        self._used_work = None
        # per backward pass
        self._callback_queued = False
        # used by find_unused_parameters / static_graph (reset when a reduction finishes)
        self._local_used = [False] * n
        self._used_map = None
        self._iterations = 0          # synchronizing forwards (static_graph's first one)
        self._static_unused: frozenset | None = None  # static_graph: after its first iteration
        self._static_global_used: list[bool] | None = None
        self._hook_handles = []
        ref = weakref.ref(self)
        for i, p in enumerate(params):
            self._hook_handles.append(
                p.register_post_accumulate_grad_hook(_ReadyHook(ref, i)))

    # -- construction ----------------------------------------------------------------------
    def _sync_module_states(self) -> None:
        """Broadcast every parameter and buffer from rank 0 of the group."""
        src = c10d.get_global_rank(self.process_group, 0)
        tensors = list(self.module.parameters()) + [b for b in self.module.buffers()]
        works = [c10d.broadcast(t.detach(), src, group=self.process_group, async_op=True)
                 for t in tensors]
        for w in works:
            w.wait()

    def _build_buckets(self):
        buckets, where = [], {}
        order = list(range(len(self._params) - 1, -1, -1))
        groups: list[list[int]] = []
        sizes: list[int] = []
        keys: list = []
        for i in order:
            p = self._params[i]
            key = (p.dtype, p.device)
            nbytes = p.numel() * p.element_size()
            # the open bucket of this dtype/device, if it has room
            j = next((k for k in range(len(groups) - 1, -1, -1) if keys[k] == key), None)
            if j is None or (sizes[j] and sizes[j] + nbytes > self.bucket_bytes_cap):
                groups.append([])
                sizes.append(0)
                keys.append(key)
                j = len(groups) - 1
            groups[j].append(i)
            sizes[j] += nbytes
        for b, indices in enumerate(groups):
            p0 = self._params[indices[0]]
            total = sum(self._params[i].numel() for i in indices)
            flat = et.zeros(total, dtype=p0.dtype, device=p0.device)
            slots, off = [], 0
            for k, i in enumerate(indices):
                n = self._params[i].numel()
                slots.append(flat[off:off + n].view(tuple(self._params[i].shape)))
                where[i] = (b, k)
                off += n
            buckets.append(_Bucket(indices, flat, slots))
        return buckets, where

    # -- one iteration -----------------------------------------------------------------------
    def _static_first(self) -> bool:
        return self.static_graph and self._static_unused is None

    def _tracks_use(self) -> bool:
        """Whether parameter use is recorded and agreed on across processes this iteration."""
        return (self.find_unused_parameters and not self.static_graph) or self._static_first()

    def _prepare_for_backward(self, out) -> None:
        """Arm the reducer for the backward of this forward's output (PyTorch's
        ``prepare_for_backward``)."""
        self._expect = True
        self._callback_queued = False  # a new pass (even after one that failed)
        self._ready = [False] * len(self._params)
        self._launched = 0
        self._marked_unused = False
        self._used_work = None
        for b in self._buckets:
            b.pending = len(b.indices)
            b.work = None
        if self.static_graph:
            self._unused = sorted(self._static_unused or ())
        elif self.find_unused_parameters:
            reached = _reachable_leaves(out)
            self._unused = [i for i, p in enumerate(self._params) if id(p) not in reached]
        else:
            self._unused = []

    def forward(self, *inputs, **kwargs):
        grad_on = is_grad_enabled()
        if grad_on and self._pending:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`ember.distributed.DistributedDataParallel`, and by making sure all `forward` "
                "function outputs participate in calculating loss.")
        sync = grad_on and self.require_backward_grad_sync
        if sync:
            self._iterations += 1
        self.require_forward_param_sync = sync
        if sync and self.broadcast_buffers and self._world > 1:
            buffers = list(self.module.buffers())
            if buffers:
                src = c10d.get_global_rank(self.process_group, 0)
                works = [c10d.broadcast(b.detach(), src, group=self.process_group,
                                        async_op=True) for b in buffers]
                for w in works:
                    w.wait()
        if self.device_ids is not None:
            inputs, kwargs = _to_device((inputs, kwargs), self.device)
        out = self.module(*inputs, **kwargs)
        if sync:
            self._prepare_for_backward(out)
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Inside this context, backward accumulates gradients locally without averaging; the
        first backward after it averages the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # -- the reducer ---------------------------------------------------------------------------
    def _on_ready(self, i: int) -> None:
        """Post-accumulate-grad hook of parameter ``i``: its ``.grad`` is complete."""
        if self._tracks_use():
            # used in this iteration (no_sync steps included: their .grad is reduced too)
            self._local_used[i] = True
        if not self._expect:
            return  # no_sync, or the iteration's reduction is over: accumulate locally
        if not self._callback_queued:  # the first hook of this backward pass
            self._callback_queued = True
            queue_callback(self._end_of_backward)
        try:
            if self._static_unused is not None and i in self._static_unused:
                raise RuntimeError(
                    f"Your training graph has changed in this iteration, e.g., one parameter "
                    f"is unused in first iteration, but then got used in this iteration "
                    f"(parameter at index {i}). This is not compatible with static_graph set "
                    f"to True.")
            if not self._marked_unused:
                self._marked_unused = True
                for j in self._unused:
                    self._mark_ready(j)
            self._mark_ready(i)
        except BaseException:
            self._callback_queued = False  # the failing pass drops its queued callback
            raise
        self._progress()

    def _mark_ready(self, i: int) -> None:
        if self._ready[i]:
            raise RuntimeError(
                "Expected to mark a variable ready only once. This error is caused by a "
                "parameter receiving a gradient twice in one reduction, e.g. a second "
                "backward pass reaching it before the reduction of the first one finished "
                "(one of them reached only some of the parameters), or a parameter used "
                "outside the `forward` function. Call backward once per forward, use "
                "find_unused_parameters=True, or no_sync() around the extra backward passes.\n"
                f"Parameter at index {i} has been marked as ready twice. This means that "
                "multiple autograd engine hooks have fired for this particular parameter "
                "during this iteration.")
        self._ready[i] = True
        self._pending = True
        p = self._params[i]
        b, k = self._where[i]
        bucket = self._buckets[b]
        slot = bucket.slots[k]
        grad = p.grad
        if grad is None:
            slot.zero_()  # no gradient in this backward: contributes nothing
        elif grad is not slot:
            slot.copy_(grad)
            if self.gradient_as_bucket_view:
                p.grad = slot  # later accumulation goes straight into the bucket
        bucket.pending -= 1
        # launch in bucket order, the same on every process (collectives must match up)
        buckets = self._buckets
        while self._launched < len(buckets) and buckets[self._launched].pending == 0:
            bucket = buckets[self._launched]
            bucket.work = c10d.all_reduce(bucket.flat, c10d.ReduceOp.AVG,
                                          group=self.process_group, async_op=True)
            self._launched += 1
            if self._launched == len(buckets) and self._tracks_use():
                self._start_used_map()

    def _progress(self) -> None:
        """Let the transport advance the reductions in flight (MPI progresses inside calls)."""
        for bucket in self._buckets:
            if bucket.work is not None:
                bucket.work.is_completed()

    def _start_used_map(self) -> None:
        used = et.tensor([1 if u else 0 for u in self._local_used], dtype=et.int32,
                         device=self.device)
        self._used_map = used
        self._used_work = c10d.all_reduce(used, c10d.ReduceOp.MAX, group=self.process_group,
                                          async_op=True)

    def _end_of_backward(self) -> None:
        """Queued by the first hook of a backward pass; runs once that pass has finished."""
        self._callback_queued = False
        if not self._expect:
            return
        if self._launched < len(self._buckets) and self._tracks_use():
            # reached by the graph but given no gradient (e.g. an output left out of the
            # loss): ready now, contributing zero or the .grad kept from no_sync steps
            for j, ready in enumerate(self._ready):
                if not ready:
                    self._mark_ready(j)
        if self._launched < len(self._buckets):
            return  # unfinished: the next forward reports it (or another backward completes it)
        self._finalize()

    def _finalize(self) -> None:
        for bucket in self._buckets:
            bucket.work.wait()
        globally_used = self._static_global_used
        if self._used_work is not None:
            self._used_work.wait()
            globally_used = [bool(v) for v in self._used_map.tolist()]
        for bucket in self._buckets:
            for k, i in enumerate(bucket.indices):
                if globally_used is not None and not globally_used[i]:
                    continue  # unused on every process: .grad stays as it was
                p, slot = self._params[i], bucket.slots[k]
                if self.gradient_as_bucket_view:
                    p.grad = slot
                elif p.grad is None:
                    p.grad = slot.clone()
                else:
                    p.grad.copy_(slot)
        if self._static_first():
            self._static_unused = frozenset(i for i, u in enumerate(self._local_used) if not u)
            self._static_global_used = globally_used
        self._local_used = [False] * len(self._params)
        self._used_work = None
        self._used_map = None
        self._expect = False
        self._pending = False

    # -- state -----------------------------------------------------------------------------
    def __getstate__(self):
        raise TypeError("DistributedDataParallel cannot be pickled; save "
                        "model.module.state_dict() or model.state_dict() instead")


class _ReadyHook:
    """The per-parameter post-accumulate-grad hook (a class, not a closure: no cycle through
    the model)."""

    __slots__ = ("ref", "index")

    def __init__(self, ref, index: int) -> None:
        self.ref = ref
        self.index = index

    def __call__(self, param: Tensor) -> None:
        ddp = self.ref()
        if ddp is not None:
            ddp._on_ready(self.index)


def _reachable_leaves(out) -> set:
    """ids of the leaf tensors the autograd graph of ``out`` reaches."""
    stack, seen, leaves = [], set(), set()
    _collect_grad_fns(out, stack)
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        var = getattr(fn, "variable", None)
        if var is not None:
            leaves.add(id(var))
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return leaves


def _collect_grad_fns(obj, stack) -> None:
    if isinstance(obj, Tensor):
        if obj.grad_fn is not None:
            stack.append(obj.grad_fn)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _collect_grad_fns(x, stack)
    elif isinstance(obj, dict):
        for x in obj.values():
            _collect_grad_fns(x, stack)


def _to_device(obj, device):
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple):
        return tuple(_to_device(x, device) for x in obj)
    if isinstance(obj, list):
        return [_to_device(x, device) for x in obj]
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj
