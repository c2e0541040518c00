"""Generated bad inputs, ember against PyTorch, over the op table.

Every op-table entry whose ember function has a PyTorch counterpart of the same name
(``torch.X``, ``torch.linalg.X``, ``torch.special.X``, ``torch.nn.functional.X``) gets its valid
samples mutated into bad ones: another dtype (bool, uint8, int16, int32, float16, float64), a
mismatched shape, a zero-size or 0-d operand, an out-of-range dim, a non-tensor where a tensor
belongs, out-of-range integer values, an unknown keyword. Each case runs on both libraries with
the same values. Where PyTorch raises, ember must raise too (never return a value), with the
same exception type (the nearest builtin class: PyTorch's LinAlgError counts as RuntimeError)
for at least 95% of the cases, and its message must name the op.

The case list is drawn with a fixed seed and a fixed size, so the run is reproducible and
bounded (about ten seconds); ``python tests/parity/test_parity_bad_inputs.py`` prints the
counts and every disagreement.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ember.tensor.testing import op_table as T  # noqa: E402

SEED = 20240521
N_CASES = 4000  # drawn from every mutation of every entry's first samples
MUTANT_DTYPES = ("bool", "uint8", "int16", "int32", "int64", "float16", "float64")

_TORCH_SPACES = {
    "ember.tensor": (torch,),
    "ember.tensor.linalg": (torch.linalg,),
    "ember.tensor.special": (torch.special,),
    "ember.tensor.fft": (torch.fft,),
    "ember.nn.functional": (torch.nn.functional,),
}


def _torch_fn(entry):
    """The PyTorch function of the same name as the entry's ember function, or None."""
    fn = entry.fn
    name = getattr(fn, "__name__", "")
    if not name or name == "<lambda>" or name.startswith("_"):
        return None
    module = getattr(fn, "__module__", "") or ""
    spaces = ()
    for prefix, cand in _TORCH_SPACES.items():
        if module == prefix or module.startswith(prefix + "._"):
            spaces = cand
    # ember's linalg and special modules also define the ``torch.*`` forms (``cross``,
    # ``matmul``, ``det``, ``digamma``); only the ``linalg_``/``special_`` entries are the
    # namespaced functions, whose signatures can differ (``torch.linalg.cross`` takes ``dim``
    # by keyword only, ``torch.cross`` positionally).
    if module.startswith("ember.tensor._linalg"):
        spaces = (torch.linalg, torch) if entry.name.startswith("linalg_") else (torch,)
    if module.startswith("ember.tensor._special"):
        spaces = (torch.special, torch) if entry.name.startswith("special_") else (torch,)
    for space in spaces + (torch,):
        tfn = getattr(space, name, None)
        if tfn is None and space is torch.linalg and entry.name.startswith("linalg_"):
            tfn = getattr(space, entry.name[len("linalg_"):], None)
        if callable(tfn):
            return tfn
    return None


def _entries():
    out = []
    for entry in T.OP_TABLE:
        tfn = _torch_fn(entry)
        if tfn is not None:
            out.append((entry, tfn))
    return out


# --------------------------------------------------------------------------- mutations
def _arrays(sample):
    return [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray)]


def _ints(sample):
    return [i for i, a in enumerate(sample.args) if type(a) is int]


def _replace(sample, i, value):
    args = list(sample.args)
    args[i] = value
    return T.Sample(tuple(args), dict(sample.kwargs))


def _mutations(sample, rng):
    """(label, mutated sample) pairs for one valid sample."""
    out = []
    arrays = _arrays(sample)
    for i in arrays:
        a = sample.args[i]
        for dt in MUTANT_DTYPES:
            if a.dtype != np.dtype(dt):
                # a sample's NaN or inf cast to an integer type is whatever NumPy makes of it,
                # and a complex one cast to a real type loses its imaginary part: the mutation
                # is the dtype, and NumPy's cast warning is no test failure
                with np.errstate(invalid="ignore", over="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
                    cast = a.astype(dt)
                out.append((f"arg{i}:{dt}", _replace(sample, i, cast)))
        if a.ndim:
            wider = np.concatenate([a, a[..., :1]], axis=-1)
            out.append((f"arg{i}:shape+1", _replace(sample, i, wider)))
            out.append((f"arg{i}:empty", _replace(sample, i, a[:0])))
            out.append((f"arg{i}:0d", _replace(sample, i, a.reshape(-1)[:1].reshape(()))))
        out.append((f"arg{i}:extra-dim", _replace(sample, i, a[None, None])))
        out.append((f"arg{i}:str", _replace(sample, i, "x")))
        out.append((f"arg{i}:list", _replace(sample, i, a.tolist())))
        if a.dtype.kind in "iu" and a.size:
            big = a.copy()
            big.reshape(-1)[0] = 10_000 if a.dtype.itemsize > 1 else 120
            out.append((f"arg{i}:big-value", _replace(sample, i, big)))
            if a.dtype.kind == "i":
                neg = a.copy()
                neg.reshape(-1)[0] = -10_000 if a.dtype.itemsize > 1 else -120
                out.append((f"arg{i}:negative-value", _replace(sample, i, neg)))
    for i in _ints(sample):
        for v in (7, -8):
            out.append((f"arg{i}:int={v}", _replace(sample, i, v)))
        out.append((f"arg{i}:float", _replace(sample, i, float(sample.args[i]) + 0.5)))
    for k, v in sample.kwargs.items():
        if type(v) is int and k in ("dim", "dims", "axis"):
            for bad in (7, -8):
                kw = dict(sample.kwargs)
                kw[k] = bad
                out.append((f"{k}={bad}", T.Sample(sample.args, kw)))
    kw = dict(sample.kwargs)
    kw["no_such_keyword"] = 1
    out.append(("unknown-keyword", T.Sample(sample.args, kw)))
    return out


def _to_torch(a):
    if isinstance(a, np.ndarray):
        # np.array, not np.ascontiguousarray: that one makes a 0-d array 1-d, and the 0-d
        # mutation must reach PyTorch 0-d as it reaches ember
        return torch.from_numpy(np.array(a, order="C", copy=True))
    if isinstance(a, np.generic):
        return a.item()
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, np.ndarray) for x in a):
        return type(a)(_to_torch(x) for x in a)
    return a


def _builtin_class(exc: BaseException) -> type:
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls
    return Exception


def _run(fn, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(*args, **kwargs)
        except RecursionError as exc:  # a failure to report, not a library error to compare
            return exc
        except Exception as exc:
            return exc
    return None


def _names(entry, tfn) -> set[str]:
    names = {entry.name, getattr(entry.fn, "__name__", ""), tfn.__name__}
    names |= {n.split("_")[-1] for n in list(names) if n.startswith("linalg_")}
    return {n for n in names if n}


def _cases():
    """The fixed list of (entry, torch fn, label, sample): every mutation of each entry's first
    float32 samples, then a seeded draw of N_CASES of them."""
    rng = np.random.default_rng(SEED)
    pool = []
    for entry, tfn in _entries():
        dtype = "float32" if "float32" in entry.dtypes else entry.dtypes[0]
        try:
            samples = entry.samples(dtype, np.random.default_rng(SEED))
        except Exception:  # a generator that needs what this harness does not provide
            continue
        for sample in samples[:2]:
            # A mutation is judged against PyTorch only where PyTorch accepts the sample it
            # mutates: ember's functional forms also take the method forms' varargs
            # (``reshape(x, 3, 2)``, ``permute(x, 1, 0)``), which ``torch.reshape`` refuses
            # whatever the mutation, so PyTorch's error there says nothing about the mutation.
            if _run(tfn, tuple(_to_torch(a) for a in sample.args),
                    {k: _to_torch(v) for k, v in sample.kwargs.items()}) is not None:
                continue
            for label, mutant in _mutations(sample, rng):
                pool.append((entry, tfn, label, mutant))
    idx = np.random.default_rng(SEED).permutation(len(pool))[:N_CASES]
    return [pool[i] for i in sorted(idx)]


def run_differential():
    """Run every case; returns the counts and the lists of disagreements."""
    stats = {"cases": 0, "both_returned": 0, "both_raised": 0, "same_type": 0,
             "returned_where_torch_raised": 0, "raised_where_torch_returned": 0,
             "op_not_named": 0}
    returned, types, unnamed = [], [], []
    for entry, tfn, label, sample in _cases():
        t_args = tuple(_to_torch(a) for a in sample.args)
        t_kwargs = {k: _to_torch(v) for k, v in sample.kwargs.items()}
        t_exc = _run(tfn, t_args, t_kwargs)
        e_args, e_kwargs = T.to_ember(sample)
        e_exc = _run(entry.fn, e_args, e_kwargs)
        stats["cases"] += 1
        where = f"{entry.name} [{label}] {sample!r}"
        if t_exc is None and e_exc is None:
            stats["both_returned"] += 1
        elif t_exc is None:
            stats["raised_where_torch_returned"] += 1
        elif e_exc is None:
            stats["returned_where_torch_raised"] += 1
            returned.append(f"{where}: PyTorch raised {type(t_exc).__name__}: "
                            f"{str(t_exc)[:120]}")
        else:
            stats["both_raised"] += 1
            e_cls, t_cls = _builtin_class(e_exc), _builtin_class(t_exc)
            # PyTorch's Python-level wrappers (torch.functional: tensordot, norm, cdist, ...)
            # crash with AttributeError on a non-tensor argument before any check: that is no
            # designed error to copy, and TypeError (wrong argument type) is the one it means
            if e_cls is t_cls or (t_cls is AttributeError and e_cls is TypeError):
                stats["same_type"] += 1
            else:
                types.append(f"{where}: ember {type(e_exc).__name__}: {str(e_exc)[:100]} | "
                             f"PyTorch {type(t_exc).__name__}: {str(t_exc)[:100]}")
            msg = str(e_exc)
            if not any(n in msg for n in _names(entry, tfn)):
                stats["op_not_named"] += 1
                unnamed.append(f"{where}: {type(e_exc).__name__}: {msg[:120]}")
    return stats, returned, types, unnamed


# Issue 21 asks for 95% on both shares below. Measured now: 99.7% same exception type (the
# six others: PyTorch kernels that pick IndexError or RuntimeError, NotImplementedError or
# RuntimeError, by the path a shape takes inside them: index_select, index_add, convolution's
# dilated kernel, histc's scalar conversion), 100% naming the op. The floors hold what is
# reached, less a case or so, so that no change slips back.
SAME_TYPE_FLOOR = 0.995
OP_NAMED_FLOOR = 0.999


@pytest.fixture(scope="module")
def differential():
    return run_differential()


def test_enough_cases_are_generated(differential):
    stats, *_ = differential
    assert stats["cases"] >= 0.9 * N_CASES
    assert stats["both_raised"] >= 500, stats


def test_never_returns_where_pytorch_raises(differential):
    stats, returned, _, _ = differential
    print("bad-input differential:", stats)
    assert stats["returned_where_torch_raised"] == 0, "\n".join(returned[:40])


def test_same_exception_type_as_pytorch(differential):
    stats, _, types, _ = differential
    share = stats["same_type"] / stats["both_raised"]
    assert share >= SAME_TYPE_FLOOR, (f"{share:.3f} same types; first differences:\n" +
                                      "\n".join(types[:40]))


def test_errors_name_the_op(differential):
    stats, _, _, unnamed = differential
    share = 1 - stats["op_not_named"] / stats["both_raised"]
    assert share >= OP_NAMED_FLOOR, (f"{share:.3f} name the op; first others:\n" +
                                     "\n".join(unnamed[:40]))


def test_mutation_labels_cover_every_kind():
    sample = T.Sample((np.zeros((2, 3), np.float32), np.zeros(2, np.int64), 1), {"dim": 0})
    labels = {label.split(":")[-1] for label, _ in _mutations(sample, None)}
    assert {"shape+1", "empty", "0d", "str", "big-value", "negative-value", "int=7",
            "int16", "uint8", "bool"} <= labels
    assert any(label.startswith("dim=") for label, _ in _mutations(sample, None))


if __name__ == "__main__":
    s, ret, typ, unn = run_differential()
    print(s)
    for title, rows in (("RETURNED WHERE PYTORCH RAISED", ret), ("OTHER EXCEPTION TYPE", typ),
                        ("OP NOT NAMED", unn)):
        print(f"\n== {title}: {len(rows)}")
        for r in rows:
            print(" ", r)
