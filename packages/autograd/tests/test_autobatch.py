"""ember.autograd.autobatch: per-example code run batched gives the unbatched run's losses and
gradients (Tree-LSTM, LSTM acceptor over variable lengths, SPINN shift-reduce encoder), with
value-dependent control flow, ops without a batching rule, no_grad, and per-example errors.

The models are written with ember.tensor ops only (this distribution's tests run without
ember-nn): parameters are leaf tensors that require grad."""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import random
import sys
from pathlib import Path

import numpy as np
import pytest

import ember.tensor as et
from ember.autograd import autobatch, grad, no_grad
from ember.autograd.autobatch import is_pending

_path = Path(__file__).resolve().parents[2] / "tensor" / "tests" / "devices.py"
if "ember_test_devices" in sys.modules:
    DV = sys.modules["ember_test_devices"]
else:
    _spec = importlib.util.spec_from_file_location("ember_test_devices", _path)
    DV = importlib.util.module_from_spec(_spec)
    sys.modules["ember_test_devices"] = DV
    _spec.loader.exec_module(DV)
CUDA_ONLY, DEVICES, require_device = DV.CUDA_ONLY, DV.DEVICES, DV.require_device

TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=2e-4, atol=1e-5)}


def param(rng, *shape, dtype="float64", scale=0.3, device="cpu"):
    return et.tensor(rng.standard_normal(shape) * scale, dtype=getattr(et, dtype),
                     device=device, requires_grad=True)


def run_both(params, loss_fn, dtype):
    """Loss and gradients without and with autobatch (backward outside the context)."""
    results = []
    for batched in (False, True):
        for p in params:
            p.grad = None
        if batched:
            with autobatch() as ctx:
                loss = loss_fn()
            assert ctx.stats["calls"] > 0
        else:
            loss = loss_fn()
        loss.backward()
        results.append((loss.item(), [p.grad.cpu().numpy().copy() for p in params]))
    (l0, g0), (l1, g1) = results
    np.testing.assert_allclose(l1, l0, **TOL[dtype])
    for a, b in zip(g0, g1):
        np.testing.assert_allclose(b, a, **TOL[dtype])
    return results


def cross_entropy(logits, label):
    logp = logits - logits.logsumexp(1, keepdim=True)
    return -logp.gather(1, label.reshape(1, 1)).sum()


# ------------------------------------------------------------------------------ Tree-LSTM
def random_tree(rng, n):
    if n == 1:
        return rng.randrange(50)
    k = rng.randint(1, n - 1)
    return (random_tree(rng, k), random_tree(rng, n - k))


def leaves(t):
    return [t] if not isinstance(t, tuple) else leaves(t[0]) + leaves(t[1])


class TreeLSTM:
    """The binary Tree-LSTM of the W7 anchor, node by node."""

    def __init__(self, rng, H, dtype, device="cpu"):
        self.H, self.device = H, device
        p = functools.partial(param, rng, dtype=dtype, device=device)
        self.emb = p(50, H)
        self.leaf_w, self.leaf_b = p(3 * H, H), p(3 * H)
        self.comp_w, self.comp_b = p(5 * H, 2 * H), p(5 * H)
        self.out_w, self.out_b = p(5, H), p(5)

    def params(self):
        return [self.emb, self.leaf_w, self.leaf_b, self.comp_w, self.comp_b, self.out_w,
                self.out_b]

    def node(self, tree, xs, pos):
        if not isinstance(tree, tuple):
            x = xs[pos[0]:pos[0] + 1]
            pos[0] += 1
            i, o, u = et.linear(x, self.leaf_w, self.leaf_b).chunk(3, 1)
            c = et.sigmoid(i) * et.tanh(u)
            return et.sigmoid(o) * et.tanh(c), c
        hl, cl = self.node(tree[0], xs, pos)
        hr, cr = self.node(tree[1], xs, pos)
        i, fl, fr, o, u = et.linear(et.cat([hl, hr], 1), self.comp_w, self.comp_b).chunk(5, 1)
        c = et.sigmoid(i) * et.tanh(u) + et.sigmoid(fl) * cl + et.sigmoid(fr) * cr
        return et.sigmoid(o) * et.tanh(c), c

    def loss(self, tree, label):
        ids = et.tensor(leaves(tree), device=self.device)
        h, _ = self.node(tree, et.embedding(self.emb, ids), [0])
        return cross_entropy(et.linear(h, self.out_w, self.out_b),
                             et.tensor([label], device=self.device))


def tree_lstm_case(dtype, device="cpu"):
    """(parameters, loss function) of a Tree-LSTM over 10 random trees."""
    rng = np.random.default_rng(0)
    prng = random.Random(0)
    model = TreeLSTM(rng, 8, dtype, device)
    data = [(random_tree(prng, prng.randint(1, 12)), prng.randrange(5)) for _ in range(10)]
    return model.params(), lambda: et.stack([model.loss(t, y) for t, y in data]).mean()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_tree_lstm_losses_and_gradients(dtype):
    run_both(*tree_lstm_case(dtype), dtype)


def test_tree_lstm_runs_batched():
    """Trees of one shape batch into few groups: far fewer group runs than calls."""
    rng = np.random.default_rng(1)
    prng = random.Random(1)
    model = TreeLSTM(rng, 4, "float64")
    data = [(random_tree(prng, 8), prng.randrange(5)) for _ in range(16)]
    with autobatch() as ctx:
        loss = et.stack([model.loss(t, y) for t, y in data]).sum()
    assert ctx.stats["groups"] * 8 < ctx.stats["calls"]
    assert ctx.stats["unbatched"] == {}, ctx.stats["unbatched"]
    loss.backward()
    assert model.comp_w.grad is not None


# ------------------------------------------------------------------------------ LSTM acceptor
class Acceptor:
    """A per-example LSTM over a variable-length sequence (no padding), then a classifier."""

    def __init__(self, rng, V, E, H, dtype, device="cpu"):
        self.H, self.device = H, device
        p = functools.partial(param, rng, dtype=dtype, device=device)
        self.emb = p(V, E)
        self.w_ih, self.w_hh = p(4 * H, E), p(4 * H, H)
        self.b = p(4 * H)
        self.out_w, self.out_b = p(2, H), p(2)
        self.dtype = getattr(et, dtype)

    def params(self):
        return [self.emb, self.w_ih, self.w_hh, self.b, self.out_w, self.out_b]

    def loss(self, seq, label):
        xs = et.embedding(self.emb, et.tensor(seq, device=self.device))
        h = et.zeros(1, self.H, dtype=self.dtype, device=self.device)
        c = et.zeros(1, self.H, dtype=self.dtype, device=self.device)
        for t in range(len(seq)):
            x = xs[t].unsqueeze(0)
            h, c = et.lstm_cell_fused(et.linear(x, self.w_ih, self.b),
                                      et.matmul(h, self.w_hh.t()), c)
        return cross_entropy(et.linear(h, self.out_w, self.out_b),
                             et.tensor([label], device=self.device))


def acceptor_case(dtype, device="cpu"):
    """(parameters, loss function) of an LSTM acceptor over 9 sequences of lengths 1-11."""
    rng = np.random.default_rng(2)
    model = Acceptor(rng, 30, 6, 5, dtype, device)
    seqs = [list(rng.integers(0, 30, int(n))) for n in rng.integers(1, 12, 9)]
    labels = [int(y) for y in rng.integers(0, 2, 9)]
    return model.params(), lambda: et.stack([model.loss(s, y)
                                             for s, y in zip(seqs, labels)]).mean()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lstm_acceptor_variable_lengths(dtype):
    run_both(*acceptor_case(dtype), dtype)


# ------------------------------------------------------------------------------ SPINN
class SPINN:
    """The shift-reduce encoder of examples/spinn_snli.py, one example at a time: a buffer of
    word states, a stack, a TreeLSTM reduction of the top two entries."""

    def __init__(self, rng, V, H, dtype, device="cpu"):
        self.H, self.device = H, device
        p = functools.partial(param, rng, dtype=dtype, device=device)
        self.emb = p(V, H)
        self.proj_w, self.proj_b = p(2 * H, H), p(2 * H)
        self.comp_w, self.comp_b = p(5 * H, 2 * H), p(5 * H)
        self.out_w, self.out_b = p(3, H), p(3)
        self.zero = et.zeros(2 * H, dtype=getattr(et, dtype), device=device)

    def params(self):
        return [self.emb, self.proj_w, self.proj_b, self.comp_w, self.comp_b, self.out_w,
                self.out_b]

    def reduce(self, left, right):
        h_l, c_l = left.chunk(2, 0)
        h_r, c_r = right.chunk(2, 0)
        a, i, f_l, f_r, o = et.linear(et.cat([h_l, h_r], 0), self.comp_w,
                                      self.comp_b).chunk(5, 0)
        c = a.tanh() * i.sigmoid() + f_l.sigmoid() * c_l + f_r.sigmoid() * c_r
        return et.cat([o.sigmoid() * c.tanh(), c], 0)

    def loss(self, words, transitions, label):
        buf = et.linear(et.embedding(self.emb, et.tensor(words, device=self.device)),
                        self.proj_w, self.proj_b)
        buffer = [buf[i] for i in reversed(range(len(words)))]
        stack = [self.zero, self.zero]
        for op in transitions:
            if op == "shift":
                stack.append(buffer.pop())
            else:
                right, left = stack.pop(), stack.pop()
                stack.append(self.reduce(left, right))
        h = stack[-1][: self.H].unsqueeze(0)
        return cross_entropy(et.linear(h, self.out_w, self.out_b),
                             et.tensor([label], device=self.device))


def random_transitions(rng, n):
    """Shift-reduce transitions of a random binary parse over ``n`` words."""
    out, depth, left = [], 0, n
    while left or depth > 1:
        if left and (depth < 2 or rng.random() < 0.5):
            out.append("shift")
            left -= 1
            depth += 1
        else:
            out.append("reduce")
            depth -= 1
    return out


def spinn_case(dtype, device="cpu"):
    """(parameters, loss function) of the SPINN encoder over 8 random parses."""
    rng = np.random.default_rng(3)
    prng = random.Random(3)
    model = SPINN(rng, 40, 6, dtype, device)
    data = []
    for _ in range(8):
        n = prng.randint(1, 9)
        data.append(([prng.randrange(40) for _ in range(n)], random_transitions(prng, n),
                     prng.randrange(3)))
    return model.params(), lambda: et.stack([model.loss(*ex) for ex in data]).mean()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_spinn_encoder(dtype):
    run_both(*spinn_case(dtype), dtype)


@pytest.mark.parametrize("device", CUDA_ONLY)
@pytest.mark.parametrize("case", [tree_lstm_case, acceptor_case, spinn_case],
                         ids=["tree_lstm", "acceptor", "spinn"])
def test_models_on_device(case, device):
    """On the GPU the batched run equals the unbatched one, and both equal the CPU's."""
    require_device(device)
    _, (l1, g1) = run_both(*case("float64", device), "float64")
    (lc, gc), _ = run_both(*case("float64"), "float64")
    np.testing.assert_allclose(l1, lc, **TOL["float64"])
    for a, b in zip(gc, g1):
        np.testing.assert_allclose(b, a, **TOL["float64"])


# ------------------------------------------------------------------------------ semantics
def test_pending_tensors_know_their_metadata():
    w = et.ones(3, 4, requires_grad=True)
    with autobatch():
        y = et.ones(2, 3) @ w
        assert is_pending(y)
        assert y.shape == (2, 4) and y.dtype == et.float32 and y.requires_grad
        assert not y.is_leaf and y.dim() == 2 and y.numel() == 8
        assert is_pending(y)            # answering metadata ran nothing
        z = y.sum(1)
        assert z.tolist() == [12.0, 12.0]  # a value: the pending graph ran
        assert not is_pending(z)
    assert y.grad_fn is not None


def test_results_used_after_the_context_are_real_tensors():
    # values of two contexts, of different shapes, met by an op after both have ended: the op
    # reads real arrays (it once read the pending values' stand-ins, and cat saw two devices)
    x = et.from_numpy(np.arange(12.0).reshape(3, 4))
    with autobatch():
        a = et.stack([x[i] ** 2 for i in range(2)])
    with autobatch():
        b = et.stack([x[i] ** 2 for i in range(2, 3)])
    assert is_pending(a) and is_pending(b)
    assert np.array_equal(et.cat([a, b]).numpy(), np.arange(12.0).reshape(3, 4) ** 2)


def test_value_dependent_control_flow():
    rng = np.random.default_rng(4)
    w = param(rng, 4, 4)
    xs = [et.tensor(rng.standard_normal((1, 4))) for _ in range(6)]

    def f(x):
        steps = 0
        while x.norm().item() > 0.5 and steps < 20:   # the value decides the graph
            x = et.tanh(x @ w) * 0.7
            steps += 1
        if bool((x.sum() > 0).item()):
            return x.sum() * 2
        return -x.sum()

    def loss_fn():
        return et.stack([f(x) for x in xs]).sum()

    run_both([w], loss_fn, "float64")


def test_op_without_rule_runs_per_example():
    from ember.autograd import _batching

    assert "as_strided" not in _batching.RULES  # strides into each example's own storage
    rng = np.random.default_rng(5)
    w = param(rng, 3)
    xs = [et.tensor(rng.standard_normal(3)) for _ in range(5)]

    def loss_fn():
        return et.stack([et.as_strided(x.unsqueeze(1) * w, (2, 2), (1, 1)).tanh().sum()
                         for x in xs]).sum()

    run_both([w], loss_fn, "float64")
    with autobatch() as ctx:
        loss_fn()
    assert ctx.stats["unbatched"] == {"as_strided": 1}, ctx.stats


def test_random_ops_on_shared_arguments_draw_per_example():
    """Every example calling a random op on the same tensors gets its own draw (a group of one
    call repeated must not run once for all), of the broadcast shape of its arguments."""
    count, prob = et.full((50,), 100.0, dtype=et.float64), et.full((2, 50), 0.5,
                                                                 dtype=et.float64)
    rates = et.full((2, 50), 4.0, dtype=et.float64)
    et.manual_seed(3)
    with autobatch():
        draws = [et.binomial(count, prob) for _ in range(6)]
        counts = [et.poisson(rates) for _ in range(6)]
    for ds, mean in ((draws, 50.0), (counts, 4.0)):
        assert all(tuple(d.shape) == (2, 50) for d in ds)
        assert len({tuple(d.reshape(-1).tolist()) for d in ds}) == 6
        values = np.stack([d.numpy() for d in ds])
        assert abs(values.mean() - mean) < 0.1 * mean


def test_own_index_out_of_range_raises_the_examples_error():
    """``x[idx]`` with each example's own index batches as a gather; an index out of range in
    one example makes the group run call by call, raising that example's IndexError."""
    xs = [et.tensor(np.arange(6.0).reshape(3, 2) + k, requires_grad=True) for k in range(3)]
    ids = [et.tensor([0, 2]), et.tensor([1, -3]), et.tensor([3, 0])]
    with pytest.raises(IndexError, match=r"^getitem\(\): index 3 is out of bounds for dimension "
                                          "0 with size 3"):
        with autobatch():
            ys = [(x * 1)[i * 1] for x, i in zip(xs, ids)]
            et.stack(ys).sum().item()
    with autobatch() as ctx:
        ys = [(x * 1)[i * 1] for x, i in zip(xs[:2], ids[:2])]
    assert ctx.stats["unbatched"] == {}
    np.testing.assert_array_equal(ys[1].detach().numpy(), [[3.0, 4.0], [1.0, 2.0]])
    # entries x[i, j]: a column index out of range must not land on another row's entry
    cols = [et.tensor([1, 0]), et.tensor([2, 1]), et.tensor([0, 0])]
    rows = [et.tensor([0, 2]), et.tensor([0, 1]), et.tensor([2, -1])]
    with pytest.raises(IndexError, match="out of bounds"):
        with autobatch():
            ys = [(x * 1)[r * 1, c * 1] for x, r, c in zip(xs, rows, cols)]
            et.stack(ys).sum().item()
    with autobatch() as ctx:
        ys = [(x * 1)[r * 1, c * 1] for x, r, c in zip(xs[::2], rows[::2], cols[::2])]
    assert ctx.stats["unbatched"] == {}
    assert ys[1].tolist() == [6.0, 6.0]


def test_calls_with_and_without_grad_do_not_share_a_group():
    """A call that needs no gradient and one that does (same op and shapes) run as separate
    batched calls: the batched node of the first never takes part in backward, so an op whose
    derivative for an argument is missing (``igamma``'s first) raises only where it is needed,
    as without the context."""
    rng = np.random.default_rng(9)
    w = param(rng, 2, 3)
    xs = [et.tensor(rng.random((2, 3)) + 0.5, dtype=et.float64) for _ in range(3)]
    with autobatch() as ctx:
        plain = [(x * 1).exp() for x in xs]
        grads = [(x * w).exp() for x in xs]
        out = [et.igamma(p, g) for p, g in zip(plain, grads)]
        loss = et.stack([o.sum() for o in out]).sum()
    assert ctx.stats["unbatched"] == {}
    assert not any(p.requires_grad for p in plain) and all(g.requires_grad for g in grads)
    loss.backward()
    ref = sum(et.igamma((x * 1).exp(), (x * w).exp()).sum() for x in xs)
    g = w.grad.numpy().copy()
    w.grad = None
    ref.backward()
    np.testing.assert_allclose(g, w.grad.numpy(), rtol=1e-12)


def test_no_grad_inside_the_context():
    rng = np.random.default_rng(6)
    w = param(rng, 3, 3)
    xs = [et.tensor(rng.standard_normal((2, 3))) for _ in range(4)]
    ref = [et.sigmoid(x @ w).sum().item() for x in xs]
    with autobatch():
        with no_grad():
            ys = [et.sigmoid(x @ w).sum() for x in xs]
        assert not any(y.requires_grad for y in ys)
        k = (xs[0] @ w).sum()
        assert k.requires_grad
    np.testing.assert_allclose([y.item() for y in ys], ref, rtol=1e-12)
    assert all(y.grad_fn is None for y in ys)


def test_backward_inside_the_context():
    rng = np.random.default_rng(7)
    w = param(rng, 3, 3)
    xs = [et.tensor(rng.standard_normal((1, 3))) for _ in range(4)]
    expected = sum((x @ w).tanh().sum() for x in xs)
    expected.backward()
    g = w.grad.numpy().copy()
    w.grad = None
    with autobatch():
        loss = et.stack([(x @ w).tanh().sum() for x in xs]).sum()
        loss.backward()
        np.testing.assert_allclose(w.grad.numpy(), g, rtol=1e-12)


def test_inplace_op_runs_after_the_pending_graph():
    x = et.ones(3)
    with autobatch():
        y = x * 2
        x.add_(1)        # an in-place op runs at once, after what was deferred before it
        z = x * 2
    assert y.tolist() == [2.0, 2.0, 2.0] and z.tolist() == [4.0, 4.0, 4.0]


def test_inplace_on_a_concrete_tensor_no_pending_call_reads_waits_not():
    # per-example set-up writes into a tensor made in the context (w = zeros(3); w[0] = 1)
    # run at once without running the pending graph: the minibatch still batches
    rng = np.random.default_rng(32)
    w = param(rng, 4, 4)
    xs = [et.tensor(rng.standard_normal((3, 4))) for _ in range(8)]

    def loss_fn():
        out = []
        for x in xs:
            m = et.zeros(3)
            m[0] = 1.0
            alpha = et.full((1, 4), -1e4, dtype=et.float64)
            alpha[0, 2] = 0.0
            out.append(((x @ w) * m.unsqueeze(1)).sum() + et.logsumexp(alpha + x[:1] @ w, 1))
        return et.stack(out).sum()

    with autobatch() as ctx:
        loss_fn()
    assert ctx.stats["groups"] * 3 <= ctx.stats["calls"], ctx.stats
    run_both([w], loss_fn, "float64")


def test_inplace_on_a_concrete_tensor_a_pending_call_reads_runs_the_graph_first():
    # the write reaches memory a deferred call reads (the tensor itself, a view of it made
    # before the context, a parameter): the pending graph runs first, as eagerly
    for target in ("itself", "view", "parameter"):
        base = et.ones(4)
        p = et.ones(4, requires_grad=True)
        read = {"itself": base, "view": base[1:], "parameter": p}[target]
        with autobatch():
            y = read * 2
            if target == "parameter":
                with no_grad():
                    p.mul_(3)
            else:
                base.mul_(3)
        assert y.tolist() == [2.0] * len(read.tolist()), target
    # a group run before whose result a pending call reads (rows of the written tensor)
    w = et.arange(6.0).reshape(3, 2)
    with autobatch():
        v = w[0:2]
        v.tolist()       # the rows group runs
        y = v * 2        # reads its result
        w[0, 0] = 100.0  # after y was made: y keeps the old value
    assert y.tolist() == [[0.0, 2.0], [4.0, 6.0]]


def test_inplace_on_an_unread_pending_value_waits():
    # `total += loss` and in-place activations on a fresh value are recorded as their
    # out-of-place twins: the pending graph does not run at each one
    rng = np.random.default_rng(31)
    w = param(rng, 4, 4)
    xs = [et.tensor(rng.standard_normal((1, 4))) for _ in range(6)]
    mask = et.tensor([[True, False, True, False]])

    def loss_fn():
        total = 0
        for x in xs:
            h = x @ w
            h.tanh_()                       # fresh value, read by nobody: waits
            h.mul_(2).add_(x, alpha=0.5)    # chained, still unread
            h[0, 1] = 0.25                  # setitem_ -> setitem
            h.masked_fill_(mask, -1.0)
            total += (h * h).sum()          # the running total, each step unread
        return total

    with autobatch() as ctx:
        loss_fn()
    # matmul tanh mul (x * alpha) add setitem masked_fill mul sum: one group each; the
    # six adds of the running total depend on each other (the first is 0 + tensor)
    assert ctx.stats == {"groups": 9 + 6, "calls": 60, "unbatched": {}}, ctx.stats
    run_both([w], loss_fn, "float64")


def test_inplace_after_a_read_or_on_a_view_runs_at_once():
    # a value read since it was made, a view and a detached value share memory or are saved
    # for backward: the op runs at once on the real tensors, as eagerly
    rng = np.random.default_rng(32)
    w = param(rng, 3, 3)
    x = et.tensor(rng.standard_normal((2, 3)))
    for case in ("read", "view", "detached", "cast"):
        with autobatch():
            h = x @ w
            if case == "read":
                y = h * 3
                h.add_(1)                 # y was made from the value before
            elif case == "view":
                y = h[0]
                h.add_(1)                 # the view sees the write
            elif case == "detached":
                y = h.detach()
                y.add_(1)                 # so does the value it was detached from
            else:
                y = (h > 0).long()
                with pytest.raises(RuntimeError):
                    y.add_(0.5)           # the op's own error: a float result into int64
                continue
            assert not is_pending(h)
        hv = (x @ w).detach().numpy()
        want = {"read": 3 * hv, "view": hv[0] + 1, "detached": hv + 1}[case]
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12)
        np.testing.assert_allclose(h.detach().numpy(), hv + 1, rtol=1e-12)


def test_views_alias_their_base_across_examples():
    # row slices and views of several examples are gathered into one batched buffer (a
    # copy), yet a write through a view reaches its base and a write to a base reaches its
    # views, before and after the write as eagerly; gradients flow through both
    rng = np.random.default_rng(34)
    w = param(rng, 4, 4)
    xs = [et.tensor(rng.standard_normal((3, 4))) for _ in range(3)]

    def program():
        outs = []
        for x in xs:
            other = (x @ w)[2:]           # a row slice of another value, never written
            v = (x @ w) * 1.0
            v[:1].mul_(2.0)               # through a view of v
            h = (x @ w) + 0.5
            y, t = h[0], h.t()
            before = y + 2                # recorded before the write: the old value
            h.add_(1.0)
            outs += [other, v, before, y - 1, t.sum(0)]
        return outs

    eager = program()
    loss_e = sum(o.sum() for o in eager)
    loss_e.backward()
    g_e, w.grad = w.grad.numpy().copy(), None
    with autobatch():
        batched = program()
    for a, b in zip(eager, batched):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-12)
    sum(o.sum() for o in batched).backward()
    np.testing.assert_allclose(w.grad.numpy(), g_e, rtol=1e-10)


def test_identical_calls_give_distinct_tensors():
    # two calls alike on one value run once, batched, yet each gives its own tensor: its
    # memory (an in-place write to one leaves the other), its node (retain_grad), as eagerly
    rng = np.random.default_rng(35)
    w = param(rng, 4, 4)
    x = et.tensor(rng.standard_normal((3, 4)))

    def program():
        a = (x @ w).tanh()
        b, c = a * 1.0, a * 1.0
        b.retain_grad()
        c.retain_grad()
        d = c.detach()
        d[:1].mul_(2.0)               # writes c, not b
        (2 * b + 3 * c).sum().backward()
        return b, c

    b_e, c_e = program()
    g_e, w.grad = w.grad.numpy().copy(), None
    with autobatch():
        b, c = program()
    for e, t in ((b_e, b), (c_e, c)):
        np.testing.assert_allclose(t.detach().numpy(), e.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(t.grad.numpy(), e.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), g_e, rtol=1e-10)


def test_inplace_on_one_examples_value_leaves_the_others_saved_values():
    # the examples' values are rows of one batched result; a value the user holds is its own
    # tensor: an in-place write to it (after a read: it runs at once) is no modification of
    # what another example's node saved
    rng = np.random.default_rng(37)
    w = param(rng, 4, 4)
    xs = [et.tensor(rng.standard_normal((1, 4))) for _ in range(2)]

    def program():
        h1 = xs[0] @ w
        y1 = h1 * h1                  # saves h1
        h2 = xs[1] @ w
        z = h2 * 3
        h2.add_(1.0)
        return y1.sum() + z.sum() + h2.sum()

    loss_e = program()
    loss_e.backward()
    g_e, w.grad = w.grad.numpy().copy(), None
    with autobatch():
        loss = program()
    loss.backward()
    np.testing.assert_allclose(loss.item(), loss_e.item(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), g_e, rtol=1e-10)


def test_values_made_before_an_error_in_the_context_keep_them():
    """An exception of the user's code inside the context (or a generator closed there) leaves
    the values made before it as the unbatched run would: the pending graph runs at the exit."""
    rng = np.random.default_rng(12)
    w = param(rng, 4, 3)
    xs = [et.tensor(rng.standard_normal((2, 4))) for _ in range(3)]
    want = [float((x @ w).tanh().sum()) for x in xs]
    made = []
    with pytest.raises(KeyError):
        with autobatch():
            for i, x in enumerate(xs):
                if i == 2:
                    raise KeyError("a bad example")
                made.append((x @ w).tanh().sum())
    np.testing.assert_allclose([m.item() for m in made], want[:2], rtol=1e-12)
    made[0].backward()
    x0, w0 = xs[0].numpy(), w.detach().numpy()
    np.testing.assert_allclose(w.grad.numpy(), x0.T @ (1 - np.tanh(x0 @ w0) ** 2), rtol=1e-12)

    def gen():
        with autobatch():
            for x in xs:
                yield (x @ w).sum()

    g = gen()
    first = next(g)
    g.close()  # GeneratorExit inside the context
    assert first.item() == pytest.approx(float((xs[0] @ w).sum()), rel=1e-12)


def test_decorator_with_and_without_parentheses():
    rng = np.random.default_rng(36)
    w = param(rng, 3, 2)
    xs = [et.tensor(rng.standard_normal((1, 3))) for _ in range(4)]
    want = sum(float((x @ w).tanh().sum().item()) for x in xs)

    def losses():
        ys = [(x @ w).tanh().sum() for x in xs]
        assert all(is_pending(y) for y in ys)
        return et.stack(ys).sum()

    for deco in (autobatch, autobatch()):
        got = deco(losses)()
        np.testing.assert_allclose(got.item(), want, rtol=1e-12)
    with pytest.raises(TypeError, match="autobatch"):
        autobatch(3)


def test_out_argument_is_written_inside_the_context():
    # out= of a tensor made outside: written with the op's value, resized when its shape
    # differs, cast to its dtype, as eagerly
    rng = np.random.default_rng(33)
    x = et.tensor(rng.standard_normal((2, 3)))
    xv = x.numpy()
    same, other, wider = et.empty(2, 3, dtype=et.float64), et.empty(5), et.empty(3)
    with autobatch():
        et.mul(x, 2.0, out=same)
        et.cat([x, x], 0, out=other)
        et.sum(x, 0, out=wider)
    np.testing.assert_allclose(same.numpy(), 2 * xv, rtol=1e-15)
    np.testing.assert_allclose(other.numpy(), np.concatenate([xv, xv]), rtol=1e-6)
    assert other.dtype == et.float32 and other.shape == (4, 3)
    np.testing.assert_allclose(wider.numpy(), xv.sum(0), rtol=1e-6)
    assert wider.dtype == et.float32


def test_shape_error_names_per_example_op_and_shapes():
    a, b = et.ones(1, 3), et.ones(1, 4)
    with autobatch():
        with pytest.raises(RuntimeError, match=r"\[1, 3\].*\[1, 4\]|\(1, 3\).*\(1, 4\)"):
            a * b


def test_value_error_at_run_time_names_per_example_call():
    table = et.ones(5, 2, requires_grad=True)
    with pytest.raises(IndexError) as info:
        with autobatch():
            ys = [et.embedding(table, et.tensor([i])) for i in (1, 2, 7)]
            et.stack(ys).sum().item()
    text = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    assert "embedding" in text and "[1]" in text and "[5, 2]" in text


# ------------------------------------------------------------------------------ rules
def _examples(rng, shapes, n=4, dtype=np.float64):
    return [[et.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True)
             for s in shapes] for _ in range(n)]


RULE_CASES = [
    ("add_bcast", lambda a, b: a + b, [(2, 3), (3,)]),
    ("mul_scalar", lambda a: a * 2.5 - 1, [(4,)]),
    ("where", lambda a, b: et.where(a > 0, a, b), [(2, 3), (2, 3)]),
    ("pow", lambda a: a.abs().pow(1.5), [(3,)]),
    ("clamp", lambda a: a.clamp(-0.5, 0.5), [(2, 2)]),
    ("sum_none", lambda a: a.sum(), [(2, 3)]),
    ("sum_dim", lambda a: a.sum(-1, keepdim=True), [(2, 3)]),
    ("mean_dims", lambda a: a.mean((0, 2)), [(2, 3, 4)]),
    ("amax", lambda a: a.amax(1), [(3, 4)]),
    ("max_dim", lambda a: a.max(0).values * 2, [(3, 4)]),
    ("logsumexp", lambda a: a.logsumexp(0), [(3, 2)]),
    ("cumsum", lambda a: a.cumsum(1), [(2, 3)]),
    ("softmaxish", lambda a: (a - a.logsumexp(1, keepdim=True)).exp(), [(2, 5)]),
    ("matmul_shared", None, [(2, 3)]),
    ("matmul_both", lambda a, b: a @ b, [(2, 3), (3, 4)]),
    ("cat_neg", lambda a, b: et.cat([a, b], -1), [(2, 3), (2, 1)]),
    ("stack", lambda a, b: et.stack([a, b], 1), [(2, 3), (2, 3)]),
    ("chunk", lambda a: a.chunk(3, 1)[1] * a.chunk(3, 1)[2], [(2, 6)]),
    ("unbind", lambda a, b: a.unbind(1)[2] + a.unbind(0)[1][:3] + b.unbind(-1)[1].sum(0),
     [(3, 4), (2, 3, 4)]),
    ("view", lambda a: a.view(6, 2).t().reshape(-1), [(3, 4)]),
    ("permute", lambda a: a.permute(2, 0, 1) * 1, [(2, 3, 4)]),
    ("unsqueeze_squeeze", lambda a: a.unsqueeze(-1).squeeze(0), [(1, 3)]),
    ("setitem_shared_value", lambda a: et.setitem(a * 1, (Ellipsis, 1), _VEC2 * 2) * a,
     [(2, 3)]),
    ("setitem_row", lambda a: _set_row(a * 2, 0, -0.5) + a, [(3, 2)]),
    ("expand", lambda a: a.expand(4, 3) * 1, [(1, 3)]),
    ("select_index", lambda a: a[1] + a[:, 2] + a[..., 0] + a[None, 0, 1:].sum(), [(3, 3)]),
    ("narrow", lambda a: a.narrow(1, 1, 2), [(2, 4)]),
    ("gather", lambda a: a.gather(1, et.tensor([[0, 2], [1, 1]])), [(2, 3)]),
    ("index_select", lambda a: a.index_select(1, et.tensor([2, 0])), [(2, 3)]),
    # each example's own index (from its values; index_fill's counted from the end)
    ("index_fill_own", lambda a: a.index_fill(1, a.argsort(1)[0, :2] - 4, -0.5) * a,
     [(2, 4)]),
    ("index_copy_own", lambda a, b: a.index_copy(1, a.argsort(1)[1, 1:], b), [(2, 4), (2, 3)]),
    ("index_add_own", lambda a, b: a.index_add(1, a.argsort(1)[0, :2], b, alpha=0.5),
     [(2, 4), (2, 2)]),
    ("transpose_matmul", lambda a, b: a.t() @ b, [(3, 2), (3, 4)]),
    ("to_dtype", lambda a: a.to(et.float32).to(et.float64), [(2,)]),
    ("relu_sig_tanh", lambda a: a.relu() + a.sigmoid() * a.tanh(), [(5,)]),
    ("var_norm", lambda a: a.var(1) + a.norm(), [(2, 4)]),
    ("complex_parts", lambda a, b: (et.complex(a, b) * et.complex(b, a)).angle() +
     et.complex(a, b).conj().imag + et.complex(a, b).sgn().real, [(2, 3), (2, 3)]),
    ("special_pointwise", lambda a, b: a.sinc() + a.exp().digamma() + a.exp().lgamma() +
     et.logaddexp(a, b) + et.xlogy(a.exp(), b.exp()) + a.sigmoid().logit(1e-6) +
     a.copysign(b), [(2, 3), (2, 3)]),
    ("matmul_shared_vector", lambda a: et.cat([a @ _VEC3, _VEC2 @ a]), [(2, 3)]),
    ("matmul_matrix_vector", lambda a, b: a @ b, [(2, 3), (3,)]),
    ("matmul_vector_matrix", lambda a, b: a @ b, [(3,), (3, 4)]),
    ("matmul_dot", lambda a, b: a @ b, [(3,), (3,)]),
    ("layer_norm", lambda a, b: et.native_layer_norm(a, [4], _LN_W, None, 1e-5)[0] +
     et.native_layer_norm(b, [4], None, None, 1e-5)[0] +
     et.native_layer_norm(a, [2, 4], None, None, 1e-5)[0] +
     et.native_layer_norm(a, [2, 4], _LN_W2, _LN_W2, 1e-5)[0], [(2, 4), (4,)]),
    ("flip", lambda a: a.flip(0) * a.flip([0, 1]) + et.flip(a, (-1,)) + a.flip(dims=[1]) +
     a.flip(dims=0), [(2, 3)]),
    ("repeat", lambda a: a.repeat(2, 1).sum(0) + a.repeat((1, 2, 1)).sum((0, 1)), [(2, 3)]),
    ("outer_trace", lambda a, b: et.outer(a, b) + et.trace(et.outer(a, b) * 1), [(3,), (3,)]),
    ("einsum", lambda a, b: et.einsum("ij,jk->ik", a, b) + et.einsum("ij,jk->ki", a, _M3).t()
     + et.einsum("...j,jk->...k", a, _M3) + et.einsum("ij,jk", a, b) +
     et.einsum("ji,jK", a.t(), b).sum() + et.einsum("ij,Bj", a, b.t()).t()[:2], [(2, 3), (3, 4)]),
    ("special_unary", lambda a: et.special.erfcx(a) + et.special.log_ndtr(a) +
     et.special.ndtr(a) + et.special.ndtri(a.sigmoid()) + et.special.i0e(a) + et.special.i1(a) +
     et.special.i1e(a) + et.special.bessel_j0(a) + et.special.bessel_y1(a.exp()) +
     et.special.modified_bessel_i0(a) + et.special.modified_bessel_k1(a.exp()) +
     et.special.scaled_modified_bessel_k0(a.exp()) + et.special.spherical_bessel_j0(a) +
     et.special.airy_ai(a) + et.special.entr(a.exp()) + et.polygamma(1, a.exp()) +
     et.isposinf(a / 0).to(et.float64) - et.isneginf(a / 0).to(et.float64), [(2, 3)]),
    ("special_binary", lambda a, b: et.special.xlog1py(a, b.exp()) +
     et.special.zeta(a.detach().exp() + 1, b.exp()) + et.logaddexp2(a, b) +
     et.igamma(a.detach().exp(), b.exp()) + et.igammac(a.detach().exp(), b.exp()) +
     et.special.chebyshev_polynomial_t(a, 3) +
     et.special.shifted_chebyshev_polynomial_u(a, b.abs().round()) +
     et.special.hermite_polynomial_h(a, 2) + et.special.hermite_polynomial_he(a, 3) +
     et.special.laguerre_polynomial_l(a, 2) + et.special.legendre_polynomial_p(a, 4) +
     et.frexp(a)[0] * et.frexp(b)[1], [(2, 3), (2, 3)]),
    ("integer_pointwise", lambda a, b: a * (
        et.gcd((a * 9).round().long(), (b * 9).round().long()) +
        et.lcm((a * 5).round().long(), _THREE) + et.bitwise_left_shift((a * 4).round().long(), 2) +
        et.bitwise_right_shift((b * 40).round().long(), 1)).double() + b, [(2, 3), (2, 3)]),
    ("linalg_square", lambda a: _spd(a).det() + et.linalg.slogdet(_spd(a))[1] +
     et.linalg.inv(_spd(a)).sum(-1) + et.linalg.cholesky(_spd(a)).sum(0) +
     et.linalg.eigh(_spd(a))[0] + et.linalg.matrix_exp(a * 0.1).sum(0) +
     et.linalg.qr(a)[1].abs().sum(0) + et.linalg.svd(a)[1] + et.linalg.pinv(a).sum(1) +
     et.linalg.lu_factor(_spd(a))[0].sum(0) + et.linalg.vector_norm(a, dim=1) +
     et.linalg.vector_norm(a, 1.5, keepdim=True).reshape(1) +
     et.linalg.matrix_rank(a).double() + et.geqrf(a)[0].abs().sum(0), [(3, 3)]),
    ("linalg_solve", lambda a, b, c: et.linalg.solve(_spd(a), b) + et.linalg.solve(_M33, b) +
     et.linalg.solve(_spd(a), c).sum(1) + et.linalg.solve(_spd(a), _VEC3) +
     et.linalg.solve_triangular(_spd(a).tril(), c, upper=False).sum(1) +
     et.linalg.solve(_spd(a), c.t(), left=False).sum(0), [(3, 3), (3,), (3, 2)]),
    ("tensordot", lambda a, b: et.tensordot(a, b, dims=1).sum(0) +
     et.tensordot(a, _M3, dims=([0], [0])).sum(0) + et.tensordot(_M3.t(), a, dims=1).sum(1) +
     et.tensordot(a, a, dims=2), [(3, 3), (3, 4)]),
    ("scatter_family", lambda a, b: et.select_scatter(a, b[0, :3], 0, 1) +
     et.slice_scatter(a, b[:, :2], 1, 0, 2) + et.diagonal_scatter(a, b[0, :3] * 2, 0, 0, 1) +
     a.scatter_reduce(1, et.tensor([[0, 1, 1], [2, 2, 0], [1, 0, 2]]), b[:, :3], "sum") +
     a.scatter_reduce(1, et.tensor([[0, 1, 1], [2, 2, 0], [1, 0, 2]]), b[:, :3], "amax",
                      include_self=False), [(3, 3), (3, 4)]),
    ("unfold_fft_views", lambda a, b: a.unfold(1, 2, 1).sum(-1).sum(0) +
     et.fft.fft(a).abs().sum(0)[:3] + et.fft.irfft(et.fft.rfft(a), n=4).sum(0)[:3] +
     et.view_as_real(et.complex(a, a * 2) * et.complex(b, b)).sum((0, 2))[:3] +
     et.view_as_complex(et.stack([a, b], -1)).abs().sum(0)[:3], [(3, 4), (3, 4)]),
    ("median_diag_cummax", lambda a: a.median() + et.diag(a) + a.cummax(1).values.sum(1) +
     a.cummin(0).values.sum(0) + et.diag(a, 1).sum(), [(3, 3)]),
    ("matmul_broadcast_batch", lambda a, b, c: (a @ b).sum(0) + (b.mT @ c) + (c[:, 0] @ a.mT).sum(0)
     + (a @ c[:, 0]).sum(0) + (a.unsqueeze(0) @ b.mT.unsqueeze(0).mT).sum((0, 1)),
     [(2, 3, 4), (4, 3), (4, 3)]),
    ("own_index_tensor", lambda a, b: a[((b.abs() * 10).long() % 3)] +
     a[((b.abs() * 7).long() % 3) - 3] * 2 + a[(b[:2].abs() * 5).long() % 3].sum(0) +
     a[(b[0].abs() * 3).long() % 3] + b.sum(), [(3, 2), (4, 2)]),
    ("own_weight_linear", lambda a, b, c: et.linear(a, b, c) + et.linear(a, _M3.t()[:2], c) +
     et.linear(a, b) + et.linear(a, b.t().t(), _VEC2), [(3, 3), (2, 3), (2,)]),
    ("matmul_shared_stack", lambda a: (a @ _STACK).sum(0) + (_STACK.mT @ a.t()).sum(0).t() +
     (a.unsqueeze(0) @ _STACK).sum((0, 1)), [(2, 3)]),
    ("matmul_vector_stack", lambda a: (a @ _STACK).sum(0) + (_STACK.mT @ a).sum(0) +
     _M3.t() @ a, [(3,)]),
    ("reduce_everything", lambda a: a.prod() + (a.abs() + 0.5).prod() + a.mean() + a.amax() +
     a.var() + a.norm() + a.count_nonzero() + a.logsumexp((0, 1)), [(2, 3)]),
    ("index_select_shared_input", lambda a: _M3.index_select(1, (a.abs() * 10).long() % 4) * a +
     _M3.index_select(0, (a.abs() * 7).long() % 3).sum(1) * a, [(3,)]),
    ("entries_index", lambda a, b: a[(b.abs() * 9).long() % 3, (b.abs() * 7).long() % 2] +
     a[(b.abs() * 5).long() % 3, _J] + a[_J + 1, (b.abs() * 3).long() % 2 - 2] + b,
     [(3, 2), (4,)]),
    ("nll_loss", lambda a, b: et.nll_loss_forward(a.log_softmax(1), _TGT, None, 1, -100)[0] +
     et.nll_loss_forward(a.log_softmax(1), _TGT, None, 2, 2)[0] +
     et.nll_loss_forward(a.log_softmax(1), _TGT, None, 0, 0)[0].sum() +
     et.nll_loss_forward(a.log_softmax(1), _TGT, None, 1, 1)[1] * a.sum() +
     et.nll_loss_forward(b.log_softmax(0), _TGT[0], None, 1, -100)[0] +
     et.nll_loss_forward(b.log_softmax(0), _TGT[1], None, 0, 1)[1] * b.sum() +
     et.nll_loss_forward(a.log_softmax(1), _TGT, None, 0, 1)[1], [(3, 4), (4,)]),
    ("rounding_divisions", lambda a, b: a + (a * 4).div(b.abs() + 0.5, rounding_mode="trunc") +
     (a * 4).div(b.abs() + 0.5, rounding_mode="floor") + et.fmod(a * 3, b.abs() + 0.5) +
     et.remainder(a * 3, b.abs() + 0.5), [(2, 4), (2, 4)]),
    ("search_bucket_isin", lambda a, b: a * et.bucketize(a, _BOUNDS).double() +
     b * et.searchsorted(_BOUNDS, a, right=True).double() +
     a * et.searchsorted(b.sort(-1).values, a).double() +
     b * et.isin((a * 2).round(), _BOUNDS * 2).double(), [(2, 4), (2, 4)]),
]


def _spd(a):
    """A symmetric positive definite matrix made of ``a`` (differentiable in it)."""
    return a @ a.mT + 3 * _EYE3


def _set_row(x, i, v):
    x[i] = v  # in place on a fresh pending value: recorded as the out-of-place setitem
    return x


_EYE3 = et.eye(3, dtype=et.float64)
_M33 = et.tensor([[2.0, 0.5, 0.0], [0.5, 3.0, -1.0], [0.0, -1.0, 4.0]], dtype=et.float64,
                 requires_grad=True)
_BOUNDS = et.tensor([-1.0, -0.25, 0.0, 0.5, 1.0], dtype=et.float64)
_THREE = et.tensor(3)
_J = et.tensor([0, 1, 1, 0])
_STACK = et.tensor(np.arange(24.0).reshape(2, 3, 4) / 9, dtype=et.float64, requires_grad=True)
_TGT = et.tensor([2, 1, 0])
_M3 = et.tensor(np.arange(12.0).reshape(3, 4) / 7, dtype=et.float64, requires_grad=True)
_VEC3 = et.tensor([0.5, -1.0, 2.0], dtype=et.float64, requires_grad=True)
_VEC2 = et.tensor([1.5, -0.5], dtype=et.float64)
_LN_W = et.tensor([1.0, 2.0, 0.5, -1.0], dtype=et.float64, requires_grad=True)
_LN_W2 = et.tensor([[1.0, 2.0, 0.5, -1.0], [0.25, 1.5, -2.0, 3.0]], dtype=et.float64,
                   requires_grad=True)


@pytest.mark.parametrize("name,fn,shapes", RULE_CASES, ids=[c[0] for c in RULE_CASES])
def test_rules_match_unbatched(name, fn, shapes):
    rng = np.random.default_rng(abs(hash(name)) % 1000)
    if fn is None:
        w = et.tensor(rng.standard_normal((3, 5)), requires_grad=True)

        def fn(a):
            return et.linear(a, w.t()) + a @ w

    exs = _examples(rng, shapes)
    # the rule is applied to pending values: the leaves themselves would be shared operands
    # (each example's leaf its own signature), one group a call
    ref = [fn(*[t * 1 for t in ex]) for ex in exs]
    grads_ref = []
    for r, ex in zip(ref, exs):
        (r * r).reshape(-1).sum().backward()
        grads_ref.append([t.grad.numpy().copy() for t in ex])
        for t in ex:
            t.grad = None
    with autobatch() as ctx:
        outs = [fn(*[t * 1 for t in ex]) for ex in exs]
        total = et.stack([(o * o).reshape(-1).sum() for o in outs]).sum()
    assert ctx.stats["groups"] < ctx.stats["calls"]
    assert ctx.stats["unbatched"] == {}, ctx.stats["unbatched"]
    for o, r in zip(outs, ref):
        assert tuple(o.shape) == tuple(r.shape)
        np.testing.assert_allclose(o.detach().numpy(), r.detach().numpy(), rtol=1e-12,
                                   atol=1e-12)
    total.backward()
    for ex, gr in zip(exs, grads_ref):
        for t, g in zip(ex, gr):
            np.testing.assert_allclose(t.grad.numpy(), g, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------ mechanism
def test_row_indexing_batches_across_indices_and_lengths():
    """``x[i]``, ``x[a:b]``, ``select``/``narrow`` along dim 0 with per-example indices, on
    sequences of different lengths, run as one group per kind of result (one index_select
    over the sources' rows), with the unbatched values and gradients."""
    rng = np.random.default_rng(11)
    w = param(rng, 4, 3)
    seqs = [et.tensor(rng.standard_normal((int(n), 4))) for n in (3, 5, 4, 6, 2)]

    def loss_fn():
        out = []
        for k, s in enumerate(seqs):
            h = et.tanh(s @ w)                       # (n, 3), a batched result
            n = s.shape[0]
            parts = [h[i] for i in range(n)] + [h.select(0, -1), s[k % n] @ w]
            win = h[max(n - 2, 0):n] * 2 + h.narrow(0, 0, 2)
            out.append(et.stack(parts).sum() + win.sum() + h[1:, 1:].sum())
        return et.stack(out).sum()

    run_both([w], loss_fn, "float64")
    with autobatch() as ctx:
        loss_fn()
    assert ctx.stats["unbatched"] == {}, ctx.stats["unbatched"]
    with autobatch() as ctx:
        hs = [et.tanh(s @ w) for s in seqs]             # a matmul and a tanh per length
        rows = [h[i] for h in hs for i in range(h.shape[0])]
        total = et.stack(rows).sum()
    assert ctx.stats["groups"] == 5 + 5 + 1 + 1 + 1, ctx.stats   # every h[i] in one group
    ref = sum(et.tanh(s @ w).sum() for s in seqs)
    np.testing.assert_allclose(total.item(), ref.item(), rtol=1e-12)


def test_row_index_out_of_range_raises_at_the_call():
    x = et.ones(3, 2)
    with autobatch():
        y = x * 2
        with pytest.raises(IndexError):
            y[5]


def test_groups_of_one_signature_at_different_depths_merge():
    """The loss after sequences of different lengths is one group, not one per length."""
    rng = np.random.default_rng(12)
    w = param(rng, 3, 3)
    xs = [et.tensor(rng.standard_normal((1, 3))) for _ in range(6)]

    def loss_fn():
        losses = []
        for k, x in enumerate(xs):
            for _ in range(k + 1):                   # a different depth per example
                x = et.tanh(x @ w)
            losses.append(x.logsumexp(1).sum())
        return et.stack(losses).sum()

    run_both([w], loss_fn, "float64")
    with autobatch() as ctx:
        loss_fn()
    # 6 levels of matmul and tanh, then logsumexp and sum once each (not once per depth),
    # the stack and the sum
    assert ctx.stats["groups"] == 6 * 2 + 2 + 2, ctx.stats


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(2, 5), (5,), (2, 5, 3)])
def test_cross_entropy_rule(reduction, shape):
    rng = np.random.default_rng(13)
    w = param(rng, *shape)
    red = {"none": 0, "mean": 1, "sum": 2}[reduction]
    xs = [et.tensor(rng.standard_normal(shape)) for _ in range(4)]
    tshape = () if len(shape) == 1 else (shape[0],) + tuple(shape[2:])
    ts = [et.tensor(rng.integers(0, 5, tshape)) for _ in range(4)]
    if len(shape) > 1:
        ts[1] = et.tensor(np.full(tshape, 3))
        ts[2] = et.tensor(np.where(rng.random(tshape) < 0.5, -100, 1))

    def loss_fn():
        return et.stack([et.cross_entropy_loss(x * w, t, None, red, -100, 0.1).sum()
                         for x, t in zip(xs, ts)]).sum()

    run_both([w], loss_fn, "float64")
    with autobatch() as ctx:
        loss_fn()
    assert ctx.stats["unbatched"] == {}, ctx.stats["unbatched"]


def test_flat_buffers_with_shared_and_broadcast_operands():
    """Values of rank 2 and 3 through the row-wise rules (flat buffers), with shared
    operands of one row, of a lower rank, and a one-row state every example starts from."""
    rng = np.random.default_rng(14)
    w, v = param(rng, 4, 6), param(rng, 1, 6)
    bias, h0 = param(rng, 6), et.zeros(1, 6, dtype=et.float64)
    xs = [et.tensor(rng.standard_normal((2, 4))) for _ in range(3)] + \
        [et.tensor(rng.standard_normal((1, 4)))]
    cube = [et.tensor(rng.standard_normal((2, 3, 4))) for _ in range(3)]

    def loss_fn():
        out = []
        for x in xs:
            h = et.linear(x, w.t(), bias) * v + h0          # (r, 6) rows
            a, b = h.chunk(2, 1)
            tail = h0[:, :3].expand(x.shape[0], 3)
            out.append((et.cat([a.sigmoid(), b, tail], 1) * 1.5).sum())
        for c in cube:
            out.append(et.tanh(c @ w).narrow(2, 1, 3).sum() + (c + bias[:4]).sum())
        return et.stack(out).sum()

    run_both([w, v, bias], loss_fn, "float64")
    with autobatch() as ctx:
        loss_fn()
    assert ctx.stats["unbatched"] == {}, ctx.stats["unbatched"]


def test_pending_values_read_after_a_flush():
    """Values computed before a flush (``.item()``) feed the calls recorded after it."""
    rng = np.random.default_rng(15)
    w = param(rng, 3, 3)
    xs = [et.tensor(rng.standard_normal((1, 3))) for _ in range(5)]

    def loss_fn():
        hs = [et.tanh(x @ w) for x in xs]
        scale = float(hs[0].sum().item())            # runs the pending graph
        return et.stack([(h @ w).sum() * scale + h.sum() for h in hs]).sum()

    run_both([w], loss_fn, "float64")


def test_slices_of_one_value():
    """Slices tiling a dim (``chunk``, one ``split_with_sizes``; ``narrow`` after ``narrow``,
    run as one split) and slices with gaps or overlaps, and a slice read by one example only
    (run as slices); all with the unbatched gradients."""
    rng = np.random.default_rng(16)
    w = param(rng, 3, 6)
    xs = [et.tensor(rng.standard_normal((2, 3))) for _ in range(4)]

    def loss_fn():
        out = []
        for k, x in enumerate(xs):
            h = x @ w                                   # (2, 6)
            a, b, c = h.chunk(3, 1)
            gap = h.narrow(1, 0, 2) * h.narrow(1, 3, 2)         # leaves a gap
            over = h.narrow(1, 0, 4).sum() + h.narrow(1, 2, 4).sum()  # overlaps
            q = h * 2                                           # narrows that tile it
            tiles = (q.narrow(1, 0, 1) * q.narrow(1, 1, 5).sum(1, keepdim=True)).sum()
            out.append((a * b.sigmoid() + c).sum() + gap.sum() * 0.5 + over + tiles)
            if k == 0:
                out.append(h.narrow(1, 5, 1).sum())
        return et.stack(out).sum()

    run_both([w], loss_fn, "float64")
    with autobatch() as ctx:
        loss_fn()
    assert ctx.stats["unbatched"] == {}, ctx.stats["unbatched"]


def test_values_read_twice_and_from_many_sources():
    """One group reading a value twice (the same rows of a buffer in one argument: their
    gradients add up) and an argument gathered from the results of several groups (one
    gather node), with the unbatched gradients."""
    rng = np.random.default_rng(17)
    w, u = param(rng, 3, 3), param(rng, 3, 3)
    xs = [et.tensor(rng.standard_normal((1, 3))) for _ in range(6)]

    def loss_fn():
        out = []
        for k, x in enumerate(xs):
            h = et.tanh(x @ w)
            for _ in range(k % 3):              # h from a different depth per example
                h = et.tanh(h @ u)
            a, b = et.sigmoid(h), et.tanh(h)
            out.append((h * a).sum() + (h * b).sum() + (h * h).sum())
        return et.stack(out).sum()

    run_both([w, u], loss_fn, "float64")
    with autobatch() as ctx:
        loss_fn()
    assert ctx.stats["unbatched"] == {}, ctx.stats["unbatched"]


def test_create_graph_through_the_batched_graph():
    """A gradient taken with create_graph=True through the batched graph (gathers included)
    is differentiable again: the gradient penalty matches the unbatched run's."""
    rng = np.random.default_rng(18)
    w = param(rng, 3, 3)
    xs = [et.tensor(rng.standard_normal((1, 3))) for _ in range(5)]

    def f(k, x):
        h = et.tanh(x @ w) if k % 2 else et.sigmoid(x @ w)   # from one of two groups
        return (h @ w * h).sum() * (k + 1)

    def penalty(batched):
        w.grad = None
        if batched:
            with autobatch():
                loss = et.stack([f(k, x) for k, x in enumerate(xs)]).sum()
        else:
            loss = et.stack([f(k, x) for k, x in enumerate(xs)]).sum()
        (g,) = grad(loss, [w], create_graph=True)
        p = (g * g).sum()
        p.backward()
        return p.item(), w.grad.numpy().copy()

    p0, g0 = penalty(False)
    p1, g1 = penalty(True)
    np.testing.assert_allclose(p1, p0, **TOL["float64"])
    np.testing.assert_allclose(g1, g0, **TOL["float64"])


@pytest.mark.parametrize("chain", [("t_",), ("t_", "t_"), ("unsqueeze_", "squeeze_"),
                                   ("t_", "transpose_"), ("as_strided_",)])
def test_inplace_view_ops_on_pending_values(chain):
    # an in-place view op (PyTorch's t_, transpose_, squeeze_, unsqueeze_, as_strided_) gives
    # the tensor the user holds its view's shape and history; on a pending value it runs the
    # pending graph, and one after another they chain as without the context
    rng = np.random.default_rng(31)
    w = param(rng, 4, 4)
    xs = [et.tensor(rng.standard_normal((n, 4))) for n in (1, 3, 3)]
    calls = {"t_": lambda g: g.t_(), "transpose_": lambda g: g.transpose_(0, 1),
             "unsqueeze_": lambda g: g.unsqueeze_(0), "squeeze_": lambda g: g.squeeze_(0),
             "as_strided_": lambda g: g.as_strided_((2, 2), (1, 2))}

    def loss_fn():
        total = 0
        for x in xs:
            g = x @ w
            for name in chain:
                calls[name](g)
            total = total + (g * g).sum()
        return total

    if chain == ("as_strided_",):  # (its node reads the geometry of the tensor it changed)
        for batched in (False, True):
            with autobatch() if batched else contextlib.nullcontext():
                value = loss_fn()
            assert value.shape == ()
            np.testing.assert_allclose(value.item(), sum(
                float(((x @ w).detach().numpy().ravel()[[0, 2, 1, 3]] ** 2).sum())
                for x in xs), rtol=1e-12)
        return
    run_both([w], loss_fn, "float64")


def test_resize_of_a_pending_value():
    # resize_ reads and replaces the tensor's own array: a pending value is made first
    rng = np.random.default_rng(32)
    w = param(rng, 4, 4)
    xs = [et.tensor(rng.standard_normal((n, 4))) for n in (1, 3)]

    def loss_fn():
        total = 0
        for x in xs:
            h = x @ w
            g = (h * 2).detach()
            g.resize_(2, 2)
            total = total + h.sum() * g.sum()
        return total

    run_both([w], loss_fn, "float64")


@pytest.mark.parametrize("expr", ["h[:k]", "h[:, :k]", "h[:, k:]", "h[..., :k]",
                                  "h[:, 1:k + 1]", "h[k - 1:, ::k]"])
def test_slice_bounds_that_are_pending_counts(expr):
    # a slice bound may be a 0-d integer tensor computed in the context (read through
    # __index__, as Python's slicing reads it: the pending graph runs)
    rng = np.random.default_rng(33)
    w = param(rng, 4, 4)
    xs = [et.tensor(rng.standard_normal((n, 4)) * 2) for n in (2, 3, 4, 4)]

    def loss_fn():
        total = 0
        for x in xs:
            h = x @ w
            k = (h[:, 0] > -10).sum()  # every row: k = len(x) >= 2
            total = total + eval(expr, {"h": h, "k": k}).sum()
        return total

    run_both([w], loss_fn, "float64")


def test_separate_backward_passes_over_the_examples():
    # examples share batched nodes; a backward through some examples' results (without
    # retain_graph) leaves what those nodes saved for the others, as the unbatched run's
    # separate graphs do: an actor's loss then a critic's, per-example input gradients
    rng = np.random.default_rng(34)
    wa, wc = param(rng, 3, 4), param(rng, 3, 4)
    states = [et.tensor(rng.standard_normal((n, 3)), requires_grad=True) for n in (1, 3, 2, 3)]

    def run(batched, per_example):
        for p in (wa, wc, *states):
            p.grad = None
        with autobatch() if batched else contextlib.nullcontext():
            a = [(s @ wa).tanh().sum() for s in states]
            c = [(s @ wc).tanh().pow(2).sum() for s in states]
        if per_example:
            gs = [grad(o, s)[0].numpy() for o, s in zip(a, states)]
            gs += [grad(o, s)[0].numpy() for o, s in zip(c, states)]
            return gs
        sum(a).backward()
        sum(c).backward()
        return [wa.grad.numpy(), wc.grad.numpy()] + [s.grad.numpy() for s in states]

    for per_example in (False, True):
        for e, b in zip(run(False, per_example), run(True, per_example)):
            np.testing.assert_allclose(b, e, **TOL["float64"])


def test_a_second_backward_through_freed_batched_nodes_raises():
    # once every example has been through a backward without retain_graph, the batched nodes
    # free what they saved: a second backward raises as without the context; retain_graph
    # keeps them for it
    rng = np.random.default_rng(35)
    w = param(rng, 3, 4)
    xs = [et.tensor(rng.standard_normal((n, 3))) for n in (2, 3, 2)]
    for batched in (False, True):
        with autobatch() if batched else contextlib.nullcontext():
            loss = et.stack([(x @ w).sigmoid().sum() for x in xs]).sum()
        w.grad = None
        loss.backward(retain_graph=True)
        loss.backward()
        np.testing.assert_allclose(w.grad.numpy() / 2, grad(
            et.stack([(x @ w).sigmoid().sum() for x in xs]).sum(), w)[0].numpy(), rtol=1e-12)
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()


def test_type_errors_name_a_pending_value_tensor():
    # Python's own messages name an argument's class: a pending value is a Tensor there too
    h = et.ones(2, 3) * 2
    k = et.tensor(1.0)  # (a 0-d integer tensor is taken as an int, as PyTorch takes it)
    with pytest.raises(TypeError, match=r"must be int, not Tensor$"):
        h.select(1, k)
    with autobatch():
        p = h * 1
        assert is_pending(p)
        assert type(p).__name__ == "Tensor"
        with pytest.raises(TypeError, match=r"for divmod\(\): 'Tensor' and 'float'"):
            divmod(p, 1.0)
        with pytest.raises(TypeError, match=r"must be int, not Tensor$"):
            h.select(1, k * 1)


@pytest.mark.parametrize("device", DEVICES)
def test_leaf_whose_data_is_a_pending_value(device):
    # ``leaf.data = pending`` (what nn.Parameter's deepcopy does inside the context): the leaf
    # holds the pending value's stand-in, and an op on it, a view among them, reads the value
    # (on CUDA the sharing test handed the stand-in to CuPy's may_share_memory)
    require_device(device)
    rng = np.random.default_rng(23)
    w = et.tensor(rng.standard_normal((3, 2)), device=device)
    x = et.tensor(rng.standard_normal((4, 3)), device=device)

    leaf = et.zeros(3, 2, dtype=et.float64, device=device, requires_grad=True)

    def loss_fn():
        leaf.data = w * 2
        return ((x @ leaf).t() * leaf.sum(0, keepdim=True).t()).sum()

    run_both([leaf], loss_fn, "float64")


@pytest.mark.parametrize("device", DEVICES)
def test_pending_layout_is_the_unbatched_runs(device):
    # a transpose's result is not contiguous: reshape / flatten / contiguous().view copy as in
    # the unbatched run, also in a group of one call (examples of different lengths)
    require_device(device)
    rng = np.random.default_rng(21)
    w = param(rng, 4, device=device)
    xs = [et.tensor(rng.standard_normal((n, 4)), device=device) for n in (3, 2, 3)]
    eager = [(x * w).t() for x in xs]
    with autobatch():
        ts = [(x * w).t() for x in xs]
        assert [t.is_contiguous() for t in ts] == [e.is_contiguous() for e in eager] == \
            [False] * 3
        assert [t.stride() for t in ts] == [e.stride() for e in eager]
        assert ts[0].contiguous().is_contiguous()
        assert (xs[0] * w).expand(2, 3, 4).stride() == (0, 4, 1)

    def loss_fn():
        out = []
        for x in xs:
            t = (x * w).t()
            out.append(t.reshape(-1).sum() + t.flatten().tanh().sum() +
                       t.contiguous().view(-1)[1:].sum())
        return et.stack(out).sum()

    run_both([w], loss_fn, "float64")


def test_batched_results_keep_the_layout_the_unbatched_run_gives():
    # einsum's result here is column-major unbatched; its batched rows are not: a value taken
    # from them gets the promised layout, so ``t()`` of it is contiguous and views as promised
    rng = np.random.default_rng(23)
    w = param(rng, 5, 5)
    x = et.tensor(rng.standard_normal((2, 5)))
    eager = et.einsum("rd,de->re", x + x, w)
    assert not eager.is_contiguous()

    def loss_fn():
        et.einsum("rd,de->re", x, w)  # a call of the same signature joins the group
        y = et.einsum("rd,de->re", x + x, w)
        return y.t().contiguous().view(-1).tanh().sum()

    run_both([w], loss_fn, "float64")
    with autobatch():
        ys = [et.einsum("rd,de->re", x * k, w) for k in (1.0, 2.0, 3.0)]
    assert [y.stride() for y in ys] == [eager.stride()] * 3
    np.testing.assert_allclose(ys[1].detach().numpy(), eager.detach().numpy(), rtol=1e-12)


def test_list_arguments_are_read_at_the_call():
    # a list the caller appends to (or changes) after the call, before the group runs: the
    # deferred call uses its contents at the call, as without the context (attention over a
    # history of states, stacked at every step)
    rng = np.random.default_rng(24)
    w = param(rng, 3, 3)
    xs = [et.tensor(rng.standard_normal((1, 3))) for _ in range(4)]
    base = et.tensor(rng.standard_normal((2, 3, 4)))

    def loss_fn():
        hist, out, dims = [], [], [0]
        h = et.zeros(1, 3, dtype=et.float64)
        for x in xs:
            hist.append(h)
            keys = et.cat(hist, 0)                      # one more row every step
            att = et.softmax((keys @ w @ x.t()).t(), 1)
            h = et.tanh(att @ keys + x @ w)
            out.append(et.stack(hist).sum() + (base * h.sum()).sum(dim=dims).sum() +
                       (base * h.sum()).flip(dims).sum() + base[[0, 1], :, [1]].sum() * h.sum())
            dims[0] = (dims[0] + 1) % 3                 # the list argument changes after
        return et.stack(out).sum()

    run_both([w], loss_fn, "float64")


def test_empty_dim_tuples_and_later_patterns():
    # ``x.max()`` passes ``dim=()``: the compiled recorder of that pattern is valid code, and
    # the calls after it (other patterns of the op, in later contexts) record as before
    rng = np.random.default_rng(22)
    w = param(rng, 3, 4)
    xs = [et.tensor(rng.standard_normal((3, 4))) for _ in range(4)]
    for f in (lambda t: t.max(), lambda t: t.amax(dim=()), lambda t: t.amax(1).sum()):
        run_both([w], lambda f=f: et.stack([f(x * w) for x in xs]).sum(), "float64")


def test_tensor_indices_after_the_first_position():
    rng = np.random.default_rng(23)
    w = param(rng, 5, 4)
    cols, rows = et.tensor([0, 2, 3]), et.tensor([4, 0, 1])
    xs = [et.tensor(rng.standard_normal((5, 4))) for _ in range(3)]

    def loss_fn():
        return et.stack([(h[:, cols].sum() + h[rows, 1:].sum() * 2 + h[..., cols].tanh().sum()
                          + h[rows, cols].sum() + h[1:, cols].sum())
                         for h in (x * w for x in xs)]).sum()

    run_both([w], loss_fn, "float64")


def test_detach_of_a_value_another_call_reads():
    rng = np.random.default_rng(24)
    w = param(rng, 3)
    xs = [et.tensor(rng.standard_normal((2, 3))) for _ in range(3)]

    def loss_fn():
        out = []
        for x in xs:
            h = x * w
            a = h.sum()
            d = h.detach()
            assert not d.requires_grad
            out.append(a * d.sum() + (h * d).sum())
        return et.stack(out).sum()

    run_both([w], loss_fn, "float64")


def test_detach_waits_with_the_graph():
    # detach is an op: inside the context it is deferred and batched like any other, so
    # per-example code that cuts a gradient (targets, stop-gradients) does not run the
    # pending graph at each call
    rng = np.random.default_rng(25)
    w = param(rng, 3, 3)
    xs = [et.tensor(rng.standard_normal((1, 3))) for _ in range(4)]
    with autobatch() as ctx:
        hs = [et.tanh(x @ w) for x in xs]
        ds = [h.detach() for h in hs]
        assert all(is_pending(d) and not d.requires_grad for d in ds)
        assert all(is_pending(h) for h in hs)  # nothing ran
        loss = et.stack([(h * d).sum() for h, d in zip(hs, ds)]).sum()
    assert ctx.stats["unbatched"] == {}
    # one group per op: matmul, tanh, detach, mul, sum, then stack and sum once
    assert (ctx.stats["groups"], ctx.stats["calls"]) == (7, 22)
    loss.backward()
    want = np.zeros((3, 3))
    for x in xs:  # d is a constant: the gradient of (h * d).sum() is x^T (d * (1 - h^2))
        h = np.tanh(x.numpy() @ w.detach().numpy())
        want += x.numpy().T @ (h * (1 - h * h))
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12)
    for h, d in zip(hs, ds):
        assert d.grad_fn is None and not d.requires_grad
        np.testing.assert_array_equal(d.numpy(), h.detach().numpy())
        v = h._version
        d.add_(0.0)  # one memory and version counter, as eagerly
        assert h._version == v + 1


@pytest.mark.parametrize("device", DEVICES)
def test_composites_that_read_arrays_take_pending_values(device):
    # take / take_along_dim / masked_select / repeat_interleave / logcumsumexp check devices
    # and pick the array module from their inputs' arrays: a pending value answers both
    require_device(device)
    rng = np.random.default_rng(25)
    w = param(rng, 4, device=device)
    xs = [et.tensor(rng.standard_normal((3, 4)), device=device) for _ in range(3)]
    idx = et.tensor([[0, 3], [2, 1], [1, 1]], device=device)
    mask = et.tensor([True, False, True, True], device=device)

    def loss_fn():
        out = []
        for x in xs:
            h = x * w
            out.append(et.take(h, et.tensor([0, 5, -1], device=device)).sum() +
                       et.take_along_dim(h, idx, 1).sum() +
                       et.take_along_dim(h, (h > 0).long(), None).sum() +
                       et.masked_select(h, mask).sum() + et.masked_select(h, h > 0).sum() +
                       et.repeat_interleave(h, et.tensor([1, 0, 2], device=device),
                                            0).tanh().sum() +
                       et.logcumsumexp(h, 1).sum())
        return et.stack(out).sum()

    run_both([w], loss_fn, "float64")


@pytest.mark.parametrize("how", ["grad", "backward"])
def test_pending_gradients_handed_to_backward(how):
    # a pending grad_outputs / gradient (built inside the context) with create_graph=True
    rng = np.random.default_rng(26)
    w = param(rng, 3, 2)
    x = param(rng, 2, 3)
    results = []
    for batched in (False, True):
        w.grad = x.grad = None
        with autobatch() if batched else contextlib.nullcontext():
            h = x @ w
            go = et.ones_like(h) * 0.5 + h
            if how == "grad":
                (gx,) = grad(h, x, grad_outputs=go, create_graph=True)
                gx.pow(2).sum().backward()
            else:
                h.backward(gradient=go, create_graph=True)
                w.grad.pow(2).sum().backward()
        results.append((x.grad.numpy().copy(), w.grad.numpy().copy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-12)


def test_autocast_entered_outside_the_context_sets_pending_dtypes():
    # the output types of deferred calls are found through the recorders below autobatch's
    # (autocast casts a linear's arguments to bfloat16): as without the context
    rng = np.random.default_rng(27)
    w = param(rng, 3, 4, dtype="float32")
    x = et.tensor(rng.standard_normal((2, 4)), dtype=et.float32)
    with et.autocast("cpu"):
        ye = et.linear(x, w)
        ze = ye * 2
        with autobatch():
            y = et.linear(x, w)
            z = y * 2
            assert is_pending(y) and (y.dtype, z.dtype) == (ye.dtype, ze.dtype) == \
                (et.bfloat16, et.bfloat16)
    assert (y.dtype, z.dtype) == (et.bfloat16, et.bfloat16)
    np.testing.assert_array_equal(z.detach().float().numpy(), ze.detach().float().numpy())
    grads = []
    for out in (ze, z):  # the weight's gradient reaches it through autocast's cast
        w.grad = None
        out.float().pow(2).sum().backward(retain_graph=True)  # (one cached cast: shared)
        grads.append(w.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


def test_contexts_of_two_threads_ending_in_either_order():
    import threading

    from ember.tensor.extension import get_recorder

    before = get_recorder()
    x = et.ones(2, 3, requires_grad=True)
    inside, main_done, worker_done = threading.Event(), threading.Event(), threading.Event()
    log = {}

    def worker():
        with autobatch():
            log["before"] = is_pending(x * 2)
            inside.set()
            main_done.wait(10)
            y = x * 3
            log["after"] = is_pending(y)  # still deferred after the main thread's context ended
        log["value"] = y.sum().item()
        worker_done.set()

    th = threading.Thread(target=worker)
    with autobatch():
        a = x * 2
        th.start()
        inside.wait(10)
    main_done.set()
    worker_done.wait(10)
    th.join(10)
    assert log == {"before": True, "after": True, "value": 18.0}
    assert a.sum().item() == 12.0
    assert get_recorder() is before  # no ended context's recorder left installed
    b = x * 5
    assert not is_pending(b)
    b.sum().backward()
    assert x.grad.tolist() == [[5.0] * 3] * 2


def test_square_matrix_ops_wait_like_any_op():
    """inv, solve and cholesky refuse the ones that stand in for pending values (a singular
    matrix): their results' types come from identity matrices instead, so they are deferred
    and grouped like any op, not run at once after a flush of everything before them."""
    rng = np.random.default_rng(31)
    w = param(rng, 3, 3)
    xs = [et.tensor(rng.standard_normal((4, 3))) for _ in range(5)]
    eye = et.eye(3, dtype=et.float64)

    def loss_fn():
        out = []
        for x in xs:
            h = x @ w
            a = h.t() @ h + eye
            out.append(et.linalg.inv(a).sum() + et.linalg.solve(a, eye[:, :2]).sum() +
                       et.linalg.cholesky(a).sum())
        return et.stack(out).sum()

    run_both([w], loss_fn, "float64")
    with autobatch() as ctx:
        loss_fn()
    # one group per call site (five examples each), not a group per call
    assert ctx.stats["groups"] * 4 < ctx.stats["calls"], ctx.stats


def test_compiled_recorders_in_front_of_ops_defer_only_this_threads_calls():
    # after a few calls, an op's compiled recorder sits in front of its calls (the registry's
    # op recorder): another thread's calls still run at once, an autocast entered inside the
    # context still casts them, and none is left in front after the exit
    import threading

    rng = np.random.default_rng(31)
    w = param(rng, 4, 4, dtype="float32")
    x = et.tensor(rng.standard_normal((2, 4)), dtype=et.float32)
    other = {}
    with autobatch():
        ys = [et.sigmoid(et.linear(x * float(i), w)) for i in range(5)]
        assert all(is_pending(y) for y in ys)

        def worker():
            other["y"] = et.sigmoid(et.linear(x * 2.0, w))

        th = threading.Thread(target=worker)
        th.start()
        th.join(10)
        assert not is_pending(other["y"])
        with et.autocast("cpu"):
            z = et.sigmoid(et.linear(x * 3.0, w))
            assert is_pending(z) and z.dtype == et.bfloat16
        more = [et.sigmoid(et.linear(x * float(i), w)) for i in range(5)]
        assert all(is_pending(y) and y.dtype == et.float32 for y in more)
    after = et.sigmoid(et.linear(x * 2.0, w))
    assert not is_pending(after)
    expect = 1 / (1 + np.exp(-(x.numpy() * 2.0) @ w.detach().numpy().T))
    for got in (other["y"], ys[2], more[2], after):
        np.testing.assert_allclose(got.detach().numpy(), expect, rtol=1e-5, atol=1e-6)
    with et.autocast("cpu"):
        expect_z = et.sigmoid(et.linear(x * 3.0, w))
    np.testing.assert_array_equal(z.detach().float().numpy(), expect_z.detach().float().numpy())


def test_fused_pointwise_ops_batch_as_elementwise():
    # addcmul / addcdiv / polar are single registry ops: one batched call per group
    rng = np.random.default_rng(37)
    w = param(rng, 3)
    xs = [et.tensor(rng.standard_normal((2, 3))) for _ in range(4)]

    def f(x):
        a = et.addcmul(x, x, w, value=0.5)
        b = et.addcdiv(a, w, x.abs() + 1.0)
        return et.view_as_real(et.polar(b.abs(), a)).sum()

    eager = [f(x) for x in xs]
    ctx = autobatch()
    with ctx:
        got = [f(x) for x in xs]
    assert not {"addcmul", "addcdiv", "polar"} & set(ctx.stats["unbatched"])
    for g, e in zip(got, eager):
        np.testing.assert_allclose(g.item(), e.item(), **TOL["float64"])
    et.stack(got).sum().backward()
    gb = w.grad.numpy().copy()
    w.grad = None
    et.stack(eager).sum().backward()
    np.testing.assert_allclose(gb, w.grad.numpy(), **TOL["float64"])


def test_kron_batches_with_stacked_and_shared_operands():
    rng = np.random.default_rng(33)
    w = param(rng, 2, 3)
    xs = [et.tensor(rng.standard_normal((3, 2)), requires_grad=True) for _ in range(5)]
    ys = [et.tensor(rng.standard_normal(4), requires_grad=True) for _ in range(5)]

    def loss_fn():
        return et.stack([(et.kron(x, w) * 2).sum() + et.kron(w, x).pow(2).sum() +
                         et.kron(x, y).sum() for x, y in zip(xs, ys)]).sum()

    with autobatch() as ctx:
        loss_fn()
    assert ctx.stats["groups"] * 2 < ctx.stats["calls"] and not ctx.stats["unbatched"]
    run_both([w] + xs + ys, loss_fn, "float64")


def test_repeat_interleave_batches_int_counts_and_runs_tensor_counts_as_they_come():
    # an int count batches (one repeat a dim further in); tensor counts give each example a
    # result shaped by its own values, so such calls run as they come
    rng = np.random.default_rng(34)
    w = param(rng, 3, 4)
    xs = [et.tensor(rng.standard_normal((2, 3))) for _ in range(5)]
    counts = [et.tensor([1, 2, 0]), et.tensor([3, 0, 0]), et.tensor([0, 1, 1]),
              et.tensor([2, 2, 2]), et.tensor([1, 0, 4])]

    def loss_fn():
        out = []
        for x, c in zip(xs, counts):
            h = x @ w
            out.append(h.repeat_interleave(2, dim=0).pow(2).sum() +
                       h.repeat_interleave(3, dim=-1).sum() +
                       (x.t().repeat_interleave(c, dim=0) @ et.ones(2, dtype=et.float64)).sum()
                       + et.repeat_interleave(c).sum())
        return et.stack(out).sum()

    with autobatch() as ctx:
        loss_fn()
    assert not ctx.stats["unbatched"].get("repeat_interleave"), ctx.stats
    run_both([w], loss_fn, "float64")
