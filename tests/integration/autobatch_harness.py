"""The harness of the per-example program suites (``test_autobatch_programs2.py`` and
``test_autobatch_programs3.py``): a program ``program(batched)`` builds its model and data
from a seed and returns a report (a dict of tensors, floats, lists or dicts of them, None);
:func:`twice` runs it eagerly and inside ``autobatch()`` (the program opens the context through
:func:`ctx`) and compares the reports."""
from __future__ import annotations

import numpy as np

import ember.tensor as T
from ember.autograd import autobatch

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-11),
       "bfloat16": dict(rtol=2e-2, atol=2e-3)}
DT = {"float32": T.float32, "float64": T.float64}


def as_array(v):
    if v is None:
        return None
    if isinstance(v, T.Tensor):
        return v.detach().numpy().copy()
    return np.asarray(v)


def collect(out):
    """A program's report flattened to arrays: name -> array (or None)."""
    flat = {}
    for k, v in out.items():
        if isinstance(v, (list, tuple)) and v and isinstance(v[0], T.Tensor):
            for j, t in enumerate(v):
                flat[f"{k}[{j}]"] = as_array(t)
        elif isinstance(v, dict):
            for j, t in v.items():
                flat[f"{k}.{j}"] = as_array(t)
        else:
            flat[k] = as_array(v)
    return flat


def grads_of(model):
    return {n: p.grad for n, p in model.named_parameters()}


def twice(program, dtype="float32", seed=0):
    """Run ``program`` eagerly then batched from the same seed; the reports must agree (values
    within ``TOL[dtype]``, integers exactly; a gradient None eagerly may be zeros batched)."""
    reports = []
    for batched in (False, True):
        T.manual_seed(seed)
        np.random.seed(seed)
        reports.append(collect(program(batched)))
    r0, r1 = reports
    assert r0.keys() == r1.keys()
    for k in r0:
        a, b = r0[k], r1[k]
        if a is None:
            assert b is None or not np.any(b), k
            continue
        assert b is not None, k
        assert a.shape == b.shape, (k, a.shape, b.shape)
        assert a.dtype == b.dtype, (k, a.dtype, b.dtype)
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(b, a, err_msg=k, **TOL[dtype])
        else:
            np.testing.assert_array_equal(b, a, err_msg=k)
    return r0, r1


class _Null:
    stats = {"calls": 1}

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def ctx(batched):
    """``autobatch()`` for the batched run, a context that does nothing for the eager one."""
    return autobatch() if batched else _Null()
