"""Indexing (SPEC 1.5, section 3): reads ``x[idx]``, writes ``x[idx] = v`` / ``x += v``,
the in-place NumPy writers (``np.put``, ``np.fill_diagonal``, ...), and the batching
rules of gather / index_set / index_add with the batch axis anywhere and batched index
arrays (one gather, not a loop).
"""

import itertools
import warnings

import numpy as np
import pytest

import rune
from rune.primitives import indexing
from helpers import check_all_axes, check_vmap

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 5, 3))
M = RNG.standard_normal((4, 6))
IDX = np.array([0, 2, 2, 1])            # repeated index: the gradient accumulates
MASK = X[:, :, 0] > 0

READS = [
    ("int", lambda x: x[1]),
    ("negative_int", lambda x: x[-1]),
    ("slice", lambda x: x[:, 1:3]),
    ("step", lambda x: x[::2]),
    ("negative_step", lambda x: x[::-1, 1]),
    ("ellipsis_none", lambda x: x[..., None]),
    ("none", lambda x: x[None]),
    ("none_middle", lambda x: x[:, None, 1:]),
    ("int_array_repeated", lambda x: x[IDX]),
    ("int_array_2d", lambda x: x[np.array([[0, 1], [3, 3]])]),
    ("negative_int_array", lambda x: x[:, np.array([-1, 0, -1])]),
    ("bool_mask", lambda x: x[MASK]),
    ("bool_mask_last_axis", lambda x: x[..., np.array([True, False, True])]),
    ("int_and_array", lambda x: x[1, IDX]),
    ("slice_and_array", lambda x: x[1:, IDX]),
    ("non_adjacent_arrays", lambda x: x[np.array([0, 1]), :, np.array([2, 0])]),
    ("non_adjacent_int_array", lambda x: x[1, :, np.array([2, 0, 0])]),
    ("arrays_split_by_none", lambda x: x[None, np.array([0, 1]), None, np.array([1, 2])]),
    ("adjacent_arrays_after_slice", lambda x: x[:, np.array([0, 4]), np.array([1, 2])]),
    ("ellipsis_array", lambda x: x[..., np.array([2, 2, 0])]),
    ("list", lambda x: x[[0, 3, 3]]),
    ("list_of_lists", lambda x: x[[0, 3], [1, 1]]),
    ("bool_list", lambda x: x[[True, False, False, True]]),
    ("empty_list", lambda x: x[[]]),
    ("scalar_array_index", lambda x: x[np.array(2)]),
    ("chained", lambda x: x[1:][IDX[:2]][:, ::-1]),
]
READ_IDS = [r[0] for r in READS]


@pytest.mark.parametrize("name,f", READS, ids=READ_IDS)
def test_read_value_and_grads(name, f):
    out = rune.jvp(f, (X,), (np.zeros_like(X),))[0]
    np.testing.assert_array_equal(out, f(X))
    rune.check_grads(f, X, order=2)


@pytest.mark.parametrize("name,f", READS, ids=READ_IDS)
def test_read_vmap_against_loop(name, f):
    if name == "bool_mask":
        pytest.skip("a per-example mask shape differs from the batch's; tested below")
    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        check_all_axes(f, X)


def test_repeated_indices_accumulate():
    g = rune.grad(lambda x: np.sum(x[np.array([0, 0, 2, 0])]))(np.zeros(4))
    np.testing.assert_array_equal(g, [3.0, 0.0, 1.0, 0.0])
    g = rune.grad(lambda x: np.sum(x[[1, 1], [2, 2]] * np.array([2.0, 5.0])))(np.zeros((2, 3)))
    np.testing.assert_array_equal(g, [[0, 0, 0], [0, 0, 7.0]])


def test_mask_read_gradient():
    x = np.array([1.0, -2.0, 3.0])
    g = rune.grad(lambda x: np.sum(x[x > 0] ** 2))(x)
    np.testing.assert_array_equal(g, [2.0, 0.0, 6.0])


# --------------------------------------------------------------------------
# Writes (SPEC 1.5)
# --------------------------------------------------------------------------

def _write(idx, op="set", buffer="mul"):
    def f(x, v):
        y = {"mul": lambda: x * 1.0, "copy": lambda: x.copy(), "self": lambda: x,
             "zeros_like": lambda: np.zeros_like(x) + x,
             "empty_like": lambda: _filled(np.empty_like(x), x)}[buffer]()
        if op == "set":
            y[idx] = v * v
        else:
            y[idx] += np.sin(v)
        return y * x
    return f


def _filled(buf, x):
    buf[...] = x
    return buf


VIDX = np.array([3, 0, 3])
WRITES = [
    ("int", 1, (5, 3)),
    ("negative_int", -1, (3,)),
    ("slice", (slice(None), slice(1, 3)), (2, 3)),
    ("step", (slice(None, None, 2), 0), (1,)),
    ("array_repeated", VIDX, (3, 5, 3)),
    ("int_array", (1, np.array([0, 4])), (2, 3)),
    ("non_adjacent", (np.array([0, 2]), slice(None), np.array([1, 1])), (2, 5)),
    ("mask", MASK, (int(MASK.sum()), 3)),
    ("ellipsis", (Ellipsis, 2), (4, 5)),
    ("broadcast_value", (slice(None), 2), (3,)),
    ("value_with_leading_ones", 0, (1, 5, 3)),
    ("array_value_with_leading_ones", VIDX[:2], (1, 2, 5, 3)),
]
WRITE_IDS = [w[0] for w in WRITES]


@pytest.mark.parametrize("op", ["set", "add"])
@pytest.mark.parametrize("name,idx,vshape", WRITES, ids=WRITE_IDS)
def test_write_value_and_grads(name, idx, vshape, op):
    if op == "add" and "leading_ones" in name:
        pytest.skip("NumPy refuses y[idx] += v when v has more dimensions than y[idx]")
    v = RNG.standard_normal(vshape)
    f = _write(idx, op, "self")         # writes into its own argument
    x = X.copy()
    want = f(X.copy(), v)
    got = rune.jvp(f, (x, v), (np.zeros_like(x), np.zeros_like(v)))[0]
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_array_equal(x, X)
    # check_grads also calls f on plain arrays, which NumPy would mutate: give it a copy
    rune.check_grads(lambda x, v: f(x.copy(), v), X, v, order=2)
    rune.check_grads(_write(idx, op, "mul"), X, v, order=2)


@pytest.mark.parametrize("buffer", ["mul", "copy", "zeros_like", "empty_like"])
def test_write_into_buffers_made_from_traced_values(buffer):
    v = RNG.standard_normal((3, 5, 3))
    f = _write(VIDX, "set", buffer)
    np.testing.assert_allclose(rune.jvp(f, (X, v), (X, v))[0], _write(VIDX, "set", "mul")(X, v))
    rune.check_grads(f, X, v, order=2)


def test_write_gradients_exact():
    def f(x, v):
        y = x.copy()
        y[1] = v            # x[1]'s old value is overwritten: no gradient to it
        y += 2 * x
        return np.sum(y * np.array([1.0, 2.0, 3.0]))

    gx, gv = rune.grad(f, argnums=(0, 1))(np.ones(3), 5.0)
    np.testing.assert_array_equal(gx, [3.0, 4.0, 9.0])
    assert gv == 2.0 and isinstance(gv, float)


def test_buffer_filled_row_by_row():
    def f(x):
        out = np.zeros_like(x)
        for i in range(x.shape[0]):
            out[i] = np.cumsum(x[i]) if i % 2 else x[i] ** 2
        return out
    rune.check_grads(f, M, order=2)
    check_all_axes(f, M)


def test_in_place_operators():
    def f(x, v):
        x = x * 1.0
        x += v
        x *= x
        x -= 1.0
        x /= 2.0
        x[0] **= 2
        return x
    rune.check_grads(f, M, M[0], order=2)
    check_all_axes(f, M, M[0])


def test_traced_value_into_plain_array_raises():
    a = np.zeros(3)         # made outside the functions (one made inside takes the write)

    def scalar(x):
        a[0] = x[0]
        return np.sum(a)

    def whole(x):
        a[:] = x
        return np.sum(a)

    for f in (scalar, whole):
        with pytest.raises(rune.TracerConversionError, match="zeros_like"):
            rune.grad(f)(np.ones(3))
        with pytest.raises(rune.TracerConversionError):
            rune.jvp(f, (np.ones(3),), (np.ones(3),))
    with pytest.raises(rune.TracerConversionError, match="zeros_like"):
        rune.vmap(whole)(np.ones((2, 3)))
    with pytest.raises(rune.TracerConversionError, match="plain NumPy array"):
        rune.grad(lambda x: np.sum(_put_plain(x)))(np.ones(3))


_PLAIN = np.zeros(3)      # made outside the function (one made inside takes the write)


def _put_plain(x):
    np.put(_PLAIN, [0], x[0])
    return _PLAIN


def test_inputs_are_never_mutated():
    def f(x):
        x[0] = 100.0
        x[IDX[:2]] += 1.0
        x += 1.0
        x.sort(axis=0)
        np.put(x, [1], -3.0)
        np.fill_diagonal(x, 0.0)
        return np.sum(x ** 2)

    x = M.copy()
    rune.grad(f)(x)
    rune.jvp(f, (x,), (x,))
    rune.vmap(f)(np.stack([x, x]))
    rune.hessian(f)(x)
    rune.vjp(f, x)[1](1.0)
    np.testing.assert_array_equal(x, M)
    want = f(M.copy())
    np.testing.assert_allclose(rune.value_and_grad(f)(x)[0], want)


# In-place NumPy writers: np.put, np.put_along_axis, np.fill_diagonal, np.copyto, np.putmask,
# np.place, all functional updates of a traced array.
def _inplace(writer):
    def f(x):
        y = x * 1.0
        writer(y, x)
        return y * x
    return f


INPLACE = [
    ("put", lambda y, x: np.put(y, [0, 5, 7, 5], x[1, :4] ** 2)),
    ("put_cyclic_wrap", lambda y, x: np.put(y, [0, 30, -1], x[0, :2], mode="wrap")),
    ("put_method", lambda y, x: y.put([2, 3], x[0, 0])),
    ("put_along_axis", lambda y, x: np.put_along_axis(y, np.array([[1], [0], [2], [3]]),
                                                      x[:, :1] ** 2, axis=1)),
    ("put_along_axis_none", lambda y, x: np.put_along_axis(y, np.array([3, 8]), x[0, 0],
                                                           axis=None)),
    ("fill_diagonal", lambda y, x: np.fill_diagonal(y, x[0, :4] * 3)),
    ("fill_diagonal_wrap", lambda y, x: np.fill_diagonal(y.T, 2.0, wrap=True)),
    ("copyto_where", lambda y, x: np.copyto(y, np.sin(x[0]), where=x > 0)),
    ("copyto", lambda y, x: np.copyto(y, x[0] ** 2)),
    ("putmask", lambda y, x: np.putmask(y, x > 0, x[0, :5])),
    ("place", lambda y, x: np.place(y, x > 0, x[0, :5])),
]


@pytest.mark.parametrize("name,writer", INPLACE, ids=[w[0] for w in INPLACE])
def test_inplace_writers(name, writer):
    if name == "fill_diagonal_wrap":
        # y.T is a new traced value: the write lands there, not in y (as for any
        # transposed copy); NumPy writes through its view.  Check the traced result only.
        def f(x):
            y = (x * 1.0).T
            np.fill_diagonal(y, x[0, :4], wrap=True)
            return y * x.T
        m = np.concatenate([M, M], axis=1).T.copy()
        want = f(m)
        np.testing.assert_allclose(rune.jvp(f, (m,), (m,))[0], want)
        rune.check_grads(f, m, order=2)
        return
    f = _inplace(writer)
    want = f(M)
    np.testing.assert_allclose(rune.jvp(f, (M,), (M,))[0], want)
    rune.check_grads(f, M, order=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)   # place: masks loop
        check_all_axes(f, M)


# --------------------------------------------------------------------------
# vmap: batched index arrays, batched values and targets, masks
# --------------------------------------------------------------------------

def _count_calls(monkeypatch, prim):
    calls = []
    impl = prim.impl

    def counted(*args, **params):
        calls.append(params)
        return impl(*args, **params)
    monkeypatch.setattr(prim, "impl", counted)
    return calls


def test_per_example_labels_are_one_gather(monkeypatch):
    logps = np.log(RNG.dirichlet(np.ones(10), size=64))
    labels = RNG.integers(0, 10, 64)
    calls = _count_calls(monkeypatch, indexing.gather_p)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        got = rune.vmap(lambda logp, y: logp[y])(logps, labels)
    np.testing.assert_array_equal(got, logps[np.arange(64), labels])
    assert len(calls) == 1


def test_per_example_gradients_with_labels_do_not_loop(monkeypatch):
    W = RNG.standard_normal((3, 4))
    xs = RNG.standard_normal((16, 3))
    ys = RNG.integers(0, 4, 16)

    def loss(W, x, y):
        z = x @ W
        logp = z - np.log(np.sum(np.exp(z)))
        return -logp[y]

    gathers = _count_calls(monkeypatch, indexing.gather_p)
    adds = _count_calls(monkeypatch, indexing.index_add_p)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        got = rune.vmap(rune.grad(loss), in_axes=(None, 0, 0))(W, xs, ys)
    # one scatter for the cotangent and one for its structural-zero mask, not one per example
    assert len(gathers) == 1 and len(adds) <= 2
    want = np.stack([rune.grad(loss)(W, x, y) for x, y in zip(xs, ys)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # and the other way round: the gradient of a vmapped loss
    g = rune.grad(lambda W: np.sum(rune.vmap(loss, in_axes=(None, 0, 0))(W, xs, ys)))(W)
    np.testing.assert_allclose(g, want.sum(0), rtol=1e-12)


GI = rune.dispatch.FUNCTIONS["getitem"]
SI = rune.dispatch.FUNCTIONS["setitem"]

# Index templates with one or two index arrays (i of shape (2,), k a scalar) in every
# position; the index arrays are batched with different values per example.
TEMPLATES = [
    ("i", lambda i, k: i),
    (":,i", lambda i, k: (slice(None), i)),
    (":,i,1:", lambda i, k: (slice(None), i, slice(1, None))),
    ("i,:,k", lambda i, k: (i, slice(None), k)),
    ("1,:,k", lambda i, k: (1, slice(None), k)),
    ("...,k", lambda i, k: (Ellipsis, k)),
    ("None,:,i,None", lambda i, k: (None, slice(None), i, None)),
    (":,i,k", lambda i, k: (slice(None), i, k)),
    ("i,k", lambda i, k: (i, k)),
    ("k,i", lambda i, k: (k, i)),
]

XB = RNG.standard_normal((3, 4, 5, 6))
IB = RNG.integers(0, 4, (3, 2))
KB = RNG.integers(0, 4, (3,))


def _moved(a, ax):
    return a[0] if ax is None else np.moveaxis(a, 0, ax)


AXES = [ax for ax in itertools.product([0, None, -1, 2], [0, None, 1], [0, None])
        if ax != (None, None, None)]


@pytest.mark.parametrize("name,tmpl", TEMPLATES, ids=[t[0] for t in TEMPLATES])
def test_gather_batching_every_axis(name, tmpl):
    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        for axes in AXES:
            # GI(x, idx) is x[idx] for a traced x and also for an unbatched plain x
            # (NumPy's own ndarray.__getitem__ cannot see traced index arrays).
            check_vmap(lambda x, i, k: GI(x, tmpl(i, k)),
                       _moved(XB, axes[0]), _moved(IB, axes[1]), _moved(KB, axes[2]),
                       in_axes=axes)


@pytest.mark.parametrize("op", ["set", "add"])
@pytest.mark.parametrize("name,tmpl", TEMPLATES, ids=[t[0] for t in TEMPLATES])
def test_update_batching_every_axis(name, tmpl, op):
    region = XB[0][tmpl(IB[0], KB[0])].shape
    VB = RNG.standard_normal((3,) + region)

    def f(x, i, k, v):
        y = x * 1.0
        if op == "set":
            y[tmpl(i, k)] = v
        else:
            y[tmpl(i, k)] += v
        return y

    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        for axes in AXES:
            if axes[0] is None:
                continue        # writing into an unbatched plain x: covered below
            for vax in (0, None, -1):
                v = VB[0][..., :1] if vax is None and region else _moved(VB, vax)
                check_vmap(f, _moved(XB, axes[0]), _moved(IB, axes[1]), _moved(KB, axes[2]),
                           v, in_axes=axes + (vax,))


PRIMS = {"gather": indexing.gather_p, "index_set": indexing.index_set_p,
         "index_add": indexing.index_add_p}
RULE_TEMPLATES = [
    (indexing._ARRAY, slice(None)),
    (slice(None), indexing._ARRAY),
    (indexing._ARRAY, slice(1, None), indexing._ARRAY),
    (Ellipsis, None, indexing._ARRAY),
    (1, slice(None, None, -1), indexing._ARRAY),
]


@pytest.mark.parametrize("prim", ["index_set", "index_add"])
def test_update_rules_with_unbatched_target_and_batched_index(prim):
    p = PRIMS[prim]
    x = RNG.standard_normal((4, 5))
    vb = RNG.standard_normal((3, 2, 5))
    ib = RNG.integers(0, 4, (3, 2))
    tmpl = (indexing._ARRAY, slice(None))

    def f(v, i):
        return p(x, v, i, template=tmpl)

    for axes in [(0, 0), (None, 0), (0, None), (2, 1), (1, None)]:
        check_vmap(f, vb[0] if axes[0] is None else np.moveaxis(vb, 0, axes[0]),
                   ib[0] if axes[1] is None else np.moveaxis(ib, 0, axes[1]), in_axes=axes)


@pytest.mark.parametrize("tmpl", RULE_TEMPLATES, ids=str)
@pytest.mark.parametrize("prim", ["gather", "index_set", "index_add"])
def test_rules_batch_axis_first_last_middle(prim, tmpl):
    """The three primitives called directly, every argument batched with its batch axis
    first, last and in the middle, and under vmap(vmap)."""
    x = RNG.standard_normal((4, 5, 6))
    k = sum(t is indexing._ARRAY for t in tmpl)
    idx = [np.array([[3, 0], [1, 3]]) % (4 if j == 0 and tmpl[0] is indexing._ARRAY else 5)
           for j in range(k)]
    p = PRIMS[prim]
    if prim == "gather":
        check_all_axes(lambda x, *i: p(x, *i, template=tmpl), x, *idx)
        return
    region = indexing.gather_p(x, *idx, template=tmpl).shape
    v = RNG.standard_normal(region)
    check_all_axes(lambda x, v, *i: p(x, v, *i, template=tmpl), x, v, *idx)
    check_all_axes(lambda x, v, *i: p(x, v[..., :1], *i, template=tmpl), x, v, *idx)


def test_gather_rules_nested_vmap_with_batched_indices():
    xs = RNG.standard_normal((2, 3, 4, 5))
    idx = RNG.integers(0, 5, (2, 3, 4))
    f = lambda x, i: GI(x, (slice(None), i))
    got = rune.vmap(rune.vmap(f))(xs, idx)
    want = np.stack([np.stack([xs[a, b][:, idx[a, b]] for b in range(3)]) for a in range(2)])
    np.testing.assert_array_equal(got, want)
    got = rune.vmap(rune.vmap(f, in_axes=(1, 0)), in_axes=(0, 1))(
        np.moveaxis(xs, 1, 2), np.moveaxis(idx, 0, 1))
    np.testing.assert_array_equal(got, want)


def test_batched_mask_falls_back_per_example():
    def masked_sum(x):
        return np.sum(x[x > 0] ** 2)

    xs = RNG.standard_normal((4, 6))
    with pytest.warns(rune.PerformanceWarning, match="np.where"):
        got = rune.vmap(masked_sum)(xs)
    np.testing.assert_allclose(got, [masked_sum(x) for x in xs])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        g = rune.vmap(rune.grad(masked_sum))(xs)
    np.testing.assert_allclose(g, np.where(xs > 0, 2 * xs, 0.0))


def test_batched_mask_write_falls_back_per_example():
    def relu_inplace(x):
        y = x.copy()
        y[y < 0] = 0.0
        return y

    xs = RNG.standard_normal((4, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        np.testing.assert_array_equal(rune.vmap(relu_inplace)(xs), np.maximum(xs, 0))
        np.testing.assert_array_equal(rune.vmap(rune.grad(lambda x: np.sum(relu_inplace(x))))(xs),
                                      (xs > 0).astype(float))


def test_unbatched_mask_and_index_stay_vectorized():
    mask = np.array([True, False, True, True, False, False])
    xs = RNG.standard_normal((4, 6))

    def f(x):
        y = x * 1.0
        y[mask] = x[mask] ** 2
        y[IDX[:2]] += 1.0
        return y[[0, 0, 5]]

    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        check_all_axes(f, xs[0])
        check_all_axes(rune.grad(lambda x: np.sum(f(x) ** 2)), xs[0])


def test_table_lookup_with_batched_tokens():
    table = RNG.standard_normal((10, 3))
    tokens = RNG.integers(0, 10, (5, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        # the table traced by grad, unbatched under vmap: one gather, one scatter-add
        g = rune.grad(lambda W: np.sum(rune.vmap(lambda t: W[t] ** 2)(tokens)))(table)
        # a batched table (one per example)
        tables = np.stack([table, 2 * table, -table, table, table])
        got = rune.vmap(lambda W, t: np.take_along_axis(W, t[:, None], axis=0))(tables, tokens)
        # a plain table: np.take_along_axis dispatches on its traced indices (table[t] and
        # np.take(table, t) cannot: NumPy converts the index itself)
        plain = rune.vmap(lambda t: np.take_along_axis(table, t[:, None], axis=0))(tokens)
    np.testing.assert_array_equal(plain, table[tokens])
    want = np.zeros_like(table)
    np.add.at(want, tokens.ravel(), 2 * table[tokens.ravel()])
    np.testing.assert_allclose(g, want)
    np.testing.assert_array_equal(got, np.stack([tables[b][tokens[b]] for b in range(5)]))


def test_repeated_write_gives_the_overwritten_value_no_gradient():
    def f(x, v):
        y = x * 1.0
        y[np.array([1, 3, 1])] = v      # NumPy keeps the last write to y[1]
        return y

    x, v = np.zeros(4), np.array([10.0, 20.0, 30.0])
    out, pullback = rune.vjp(f, x, v)
    np.testing.assert_array_equal(out, f(x, v))
    gx, gv = pullback(np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(gx, [1.0, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(gv, [0.0, 4.0, 2.0])
    rune.check_grads(f, x, v, order=2)
    xs, vs = np.zeros((3, 4)), RNG.standard_normal((3, 3))
    gs = rune.vmap(lambda x, v: rune.vjp(f, x, v)[1](np.arange(4.0))[1])(xs, vs)
    np.testing.assert_array_equal(gs, np.tile([0.0, 3.0, 1.0], (3, 1)))
    # with a batched index
    idx = np.array([[1, 3, 1], [0, 1, 2], [2, 2, 2]])
    g = rune.vmap(lambda x, v, i: rune.vjp(lambda x, v: _set(x, i, v), x, v)[1](
        np.arange(4.0))[1])(xs, vs, idx)
    np.testing.assert_array_equal(g, [[0.0, 3.0, 1.0], [0.0, 1.0, 2.0], [0.0, 0.0, 2.0]])


def _set(x, i, v):
    y = x * 1.0
    y[i] = v
    return y


# --------------------------------------------------------------------------
# Nesting through indexing
# --------------------------------------------------------------------------

def _indexed_loss(x):
    y = np.zeros_like(x)
    y[1:] = x[:-1] * x[1:]
    y[IDX[:3] % x.shape[0]] += x[0]
    y[0] = np.sum(x[x.shape[0] // 2:])
    return np.sum(np.sort(y) * np.arange(1.0, 1.0 + x.shape[0])) + np.sum(y[[0, 0, 2]] ** 3)


def test_indexing_nesting():
    x = RNG.standard_normal(6)
    xs = RNG.standard_normal((3, 6))
    rune.check_grads(_indexed_loss, x, order=2)
    got = rune.vmap(rune.grad(_indexed_loss))(xs)
    want = np.stack([rune.grad(_indexed_loss)(v) for v in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    g = rune.grad(lambda xs: np.sum(rune.vmap(_indexed_loss)(xs)))(xs)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    v = RNG.standard_normal(6)
    _, hv = rune.jvp(rune.grad(_indexed_loss), (x,), (v,))
    np.testing.assert_allclose(hv, rune.hessian(_indexed_loss)(x) @ v, rtol=1e-10)
    hs = rune.vmap(rune.hessian(_indexed_loss))(xs)
    np.testing.assert_allclose(hs[1], rune.hessian(_indexed_loss)(xs[1]), rtol=1e-12)


def test_write_through_flat():
    def f(x):
        y = x * 1.0
        y.flat[2] = 100.0
        return np.sum(y * x)
    v, g = rune.value_and_grad(f)(M)
    assert v == f(M)
    want = 2 * M.copy()
    want.flat[2] = 0.0 + 100.0
    np.testing.assert_allclose(g, want)
    rune.check_grads(f, M, order=2)


def _check_hessian(scal, x):
    n = x.size
    basis = np.eye(n).reshape((n,) + x.shape)
    want = np.stack([rune.jvp(rune.grad(scal), (x,), (e,))[1] for e in basis])
    want = want.reshape(x.shape + x.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        np.testing.assert_allclose(rune.hessian(scal)(x), want, atol=1e-10)
        np.testing.assert_allclose(rune.jacrev(rune.jacfwd(scal))(x), want, atol=1e-10)


@pytest.mark.parametrize("name,f", READS, ids=READ_IDS)
def test_read_hessian(name, f):
    _check_hessian(lambda x: np.sum(np.sin(f(x)) * f(x)), X)


@pytest.mark.parametrize("name,idx,vshape", WRITES, ids=WRITE_IDS)
def test_write_hessian(name, idx, vshape):
    v = RNG.standard_normal(vshape)
    for op in ("set",) if "leading_ones" in name else ("set", "add"):
        f = _write(idx, op, "mul")
        _check_hessian(lambda x: np.sum(np.sin(f(x, v * x[0, 0, 0]))), X)


def test_writes_through_views_reach_the_base():
    def f(x):
        y = x * 1.0
        r = y[1]
        r[:] = r * 2.0
        y.T[0] = y[:, 0] ** 2
        for row in y[2:]:
            row *= 3.0
        return y

    x = np.arange(1.0, 10.0).reshape(3, 3)
    np.testing.assert_allclose(rune.vjp(f, x)[0], f(x.copy()))
    rune.check_grads(lambda x: np.sum(f(x) ** 2), x, order=2)
    np.testing.assert_allclose(rune.vmap(f)(np.stack([x, -x])), np.stack([f(x), f(-x)]))

    def both_ways(x):
        y = x * 1.0
        r = y[1]
        y[1, 0] = 7.0 * y[0, 0]     # the base changes: the view sees it
        r[2] = 3.0 * r[0]           # the view changes: the base sees it
        tail = y[1:]
        last = tail[1]              # a view of a view
        last[:] = last + r
        return np.sum(y * y) + np.sum(r) + np.sum(tail * last)

    np.testing.assert_allclose(rune.vjp(both_ways, x)[0], both_ways(x.copy()))
    rune.check_grads(both_ways, x, order=2)
