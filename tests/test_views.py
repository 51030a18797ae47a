"""Views follow NumPy: every view-returning operation, against NumPy itself.

The parity test draws random programs (hypothesis) of views, views of views, writes
into views and bases, and reads of every array after every write; each program runs
with NumPy and under ``value_and_grad``, ``jvp`` and ``vmap``, and the values must be
NumPy's.  Derivatives are checked with ``rune.check_grads``.  Writes NumPy refuses
(read-only views) must be refused with the same exception type.
"""

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rune
from helpers import check_vmap

# --------------------------------------------------------------------------
# The view operations, each ``name -> (applies(shape), view(a))``
# --------------------------------------------------------------------------

VIEWS = {
    "row": (lambda s: len(s) >= 1 and s[0] >= 1, lambda a: a[-1]),
    "tail": (lambda s: len(s) >= 1, lambda a: a[1:]),
    "reversed": (lambda s: len(s) >= 1, lambda a: a[::-1]),
    "strided": (lambda s: len(s) >= 1, lambda a: a[..., ::2]),
    "column": (lambda s: len(s) >= 2, lambda a: a[:, 1:2]),
    "newaxis": (lambda s: True, lambda a: a[None]),
    "ellipsis_0d": (lambda s: len(s) >= 1 and s[-1] >= 1, lambda a: a[..., 0]),
    ".T": (lambda s: True, lambda a: a.T),
    "transpose_fn": (lambda s: True, lambda a: np.transpose(a, tuple(range(a.ndim))[1:] + (0,))
                     if a.ndim else np.transpose(a)),
    "transpose_method": (lambda s: True, lambda a: a.transpose()),
    "mT": (lambda s: len(s) >= 2, lambda a: a.mT),
    "reshape_flat": (lambda s: True, lambda a: a.reshape(-1)),
    "reshape_reversed": (lambda s: True, lambda a: np.reshape(a, a.shape[::-1])),
    "reshape_row": (lambda s: True, lambda a: a.reshape(1, -1)),
    "ravel_fn": (lambda s: True, lambda a: np.ravel(a)),
    "ravel_method": (lambda s: True, lambda a: a.ravel()),
    "squeeze": (lambda s: True, lambda a: np.squeeze(a)),
    "squeeze_method": (lambda s: True, lambda a: a.squeeze()),
    "expand_dims": (lambda s: True, lambda a: np.expand_dims(a, -1)),
    "swapaxes": (lambda s: len(s) >= 2, lambda a: np.swapaxes(a, 0, -1)),
    "swapaxes_method": (lambda s: len(s) >= 2, lambda a: a.swapaxes(-1, 0)),
    "moveaxis": (lambda s: len(s) >= 2, lambda a: np.moveaxis(a, 0, -1)),
    "flip": (lambda s: len(s) >= 1, lambda a: np.flip(a, -1)),
    "split": (lambda s: len(s) >= 1 and s[0] >= 2, lambda a: np.array_split(a, 2)[1]),
    "atleast_2d": (lambda s: True, lambda a: np.atleast_2d(a)),
    "real": (lambda s: True, lambda a: a.real),
    "imag": (lambda s: True, lambda a: a.imag),                   # read-only zeros
    "diagonal": (lambda s: len(s) >= 2, lambda a: np.diagonal(a)),  # read-only
    "diagonal_method": (lambda s: len(s) >= 2, lambda a: a.diagonal()),
    "broadcast_to": (lambda s: True, lambda a: np.broadcast_to(a, (2,) + a.shape)),
    "copy": (lambda s: True, lambda a: a.copy()),                 # not views: control
    "sin_of": (lambda s: True, lambda a: np.sin(a)),              # a new array (K order)
}

WRITES = {     # (0-d values: NumPy scalars are immutable, 0-d views are not)
    "set_all": lambda a: a.__setitem__(Ellipsis, np.sin(a) * 1.5 + 0.25),
    "iadd": lambda a: a.__iadd__(0.5),
    "imul": lambda a: a.__imul__(a + 1.25),
    "first_row": lambda a: a.__setitem__(0, a[-1] * 2.0 - 0.5) if a.ndim and a.shape[0] else None,
    "flat": lambda a: a.flat.__setitem__(a.size - 1, a.flat[0] ** 2) if a.ndim and a.size else None,
    "flat_assign": lambda a: setattr(a, "flat", np.cos(np.ravel(a))) if a.ndim else None,
    "fill": lambda a: a.fill(0.75) if a.ndim else None,
}

SHAPES = [(6,), (2, 3), (3, 1, 2), (2, 2, 2), (1, 4)]


def _run(program, x):
    """Interpret ``program`` on the array ``x``: ``[("view", i, op) | ("write", i, w)]``.
    Returns every array's values after every write (and -1 for a refused write)."""
    arrs = [x * 1.0]
    outs = []
    for kind, i, op in program:
        a = arrs[i % len(arrs)]
        if kind == "view":
            applies, view = VIEWS[op]
            if applies(a.shape):
                arrs.append(view(a))
            continue
        try:
            r = WRITES[op](a)
            if op in ("iadd", "imul"):     # the statement ``a += ...`` rebinds the name
                arrs[i % len(arrs)] = r
        except ValueError:              # a read-only view
            outs.append(-np.ones(1))
        except TypeError:               # item assignment into a NumPy scalar
            outs.append(-2.0 * np.ones(1))
        outs.extend(np.ravel(b) * 1.0 for b in arrs)
    outs.extend(np.ravel(b) * 1.0 for b in arrs)
    return np.concatenate(outs)


programs = st.lists(
    st.one_of(st.tuples(st.just("view"), st.integers(0, 5), st.sampled_from(sorted(VIEWS))),
              st.tuples(st.just("write"), st.integers(0, 5), st.sampled_from(sorted(WRITES)))),
    min_size=2, max_size=9)


def _inputs(shape):
    return np.linspace(0.3, 1.1, int(np.prod(shape))).reshape(shape)


@settings(max_examples=200)
@given(st.sampled_from(SHAPES), programs)
def test_view_programs_match_numpy(shape, program):
    x = _inputs(shape)
    want = _run(program, x.copy())
    f = lambda x: _run(program, x)                                   # noqa: E731
    got, _ = rune.vjp(f, x)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    value, g = rune.value_and_grad(lambda x: np.sum(np.sin(f(x))))(x)
    np.testing.assert_allclose(value, np.sum(np.sin(want)), rtol=1e-12)
    primal, _ = rune.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(primal, want, rtol=1e-13, atol=1e-13)
    rune.check_grads(f, x, order=1)
    check_vmap(f, np.stack([x, x[::-1] * 0.5 + 0.1]) if x.ndim else x)


@settings(max_examples=40)
@given(st.sampled_from(SHAPES[:3]), programs)
def test_view_programs_second_order(shape, program):
    rune.check_grads(lambda x: _run(program, x), _inputs(shape), order=2)


# --------------------------------------------------------------------------
# Each view operation by name, so a failure names it
# --------------------------------------------------------------------------

def _view_then_write(view):
    def f(x):
        y = x * 1.0
        v = view(y)
        try:
            v[...] = np.sin(v) + 2.0 * v          # the write reaches y in NumPy
        except ValueError:                        # a read-only view, as in NumPy
            return np.concatenate([np.ravel(y), np.zeros(1)])
        return np.concatenate([np.ravel(y), np.ravel(v) * 1.0])
    return f


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_each_view_writes_through_as_numpy(name):
    applies, view = VIEWS[name]
    x = _inputs((2, 3))
    f = _view_then_write(view)
    want = f(x.copy())
    np.testing.assert_allclose(rune.vjp(f, x)[0], want, rtol=1e-13)
    np.testing.assert_allclose(rune.jvp(f, (x,), (x,))[0], want, rtol=1e-13)
    rune.check_grads(f, x, order=2)
    check_vmap(f, np.stack([x, 2.0 * x, -x]))


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_each_view_sees_writes_into_its_base(name):
    applies, view = VIEWS[name]

    def f(x):
        y = x * 1.0
        v = view(y)
        w = view(v) if applies(v.shape) else v        # a view of a view
        y[0] = y[1] * 3.0 + x[0]                       # the base changes
        return np.concatenate([np.ravel(v) * 1.0, np.ravel(w) * 1.0])

    x = _inputs((2, 3))
    np.testing.assert_allclose(rune.vjp(f, x)[0], f(x.copy()), rtol=1e-13)
    rune.check_grads(f, x, order=2)
    check_vmap(f, np.stack([x, 2.0 * x]))


def test_issue_examples():
    def f(x):
        y = x.copy()
        y.reshape(2, 2)[0, 0] = 0.0
        return np.sum(y)

    x = np.ones(4)
    value, g = rune.value_and_grad(f)(x)
    assert value == f(x.copy()) == 3.0
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0, 1.0])

    def g_(v):
        buf = np.zeros_like(v, shape=6)
        buf.reshape(2, 3)[1] = v
        return buf

    v = np.full(3, 5.0)
    np.testing.assert_array_equal(rune.vjp(g_, v)[0], [0, 0, 0, 5, 5, 5])
    np.testing.assert_array_equal(rune.vmap(g_)(np.stack([v, 2 * v]))[1], [0, 0, 0, 10, 10, 10])


def test_reshape_of_a_strided_view_is_a_copy_as_in_numpy():
    def f(x):
        y = x * 1.0
        flat = y.T.reshape(-1)          # NumPy: a copy (y.T is not C-contiguous)
        flat[0] = 100.0
        r = y[:, ::2].ravel()           # a copy too
        r += 1.0
        q = y[:1].reshape(-1)           # a view: a C-contiguous block
        q[-1] = -1.0
        return np.concatenate([np.ravel(y), flat, r, q])

    x = np.arange(6.0).reshape(2, 3)
    want = f(x.copy())
    np.testing.assert_array_equal(rune.vjp(f, x)[0], want)
    rune.check_grads(f, x, order=2)
    check_vmap(f, np.stack([x, x + 1.0]))


def test_layout_of_new_arrays_follows_numpy():
    def f(x):
        z = np.sin(x.T)                 # NumPy: Fortran-ordered (order K), so ...
        z.reshape(-1)[0] = 100.0        # ... this reshape is a copy
        c = x.T.copy()                  # ndarray.copy(): C order, a view below
        c.reshape(-1)[0] = 100.0
        k = np.copy(x.T)                # np.copy: order K, a copy below
        k.reshape(-1)[0] = 100.0
        zl = np.zeros_like(x.T)         # order K
        zl.ravel()[1] = 7.0
        return np.concatenate([np.ravel(a) for a in (z, c, k, zl)])

    x = np.arange(6.0).reshape(2, 3) + 0.5
    want = f(x.copy())
    np.testing.assert_array_equal(rune.vjp(f, x)[0], want)
    np.testing.assert_array_equal(rune.jvp(f, (x,), (x,))[0], want)
    rune.check_grads(f, x, order=2)


def test_read_only_views_refuse_as_numpy():
    x = np.arange(4.0).reshape(2, 2)
    for write in (lambda d: d.__setitem__(0, 1.0), lambda d: d.__iadd__(1.0)):
        def f(x):
            d = np.diagonal(x * 1.0)
            write(d)
            return d
        with pytest.raises(ValueError, match="read-only"):
            f(x.copy())
        with pytest.raises(ValueError, match="np.fill_diagonal"):
            rune.vjp(f, x)
    with pytest.raises(ValueError, match="read-only"):
        rune.grad(lambda x: np.sum(np.broadcast_to(x, (3, 2, 2)).__setitem__(0, 1.0) or x))(x)
    with pytest.raises(ValueError, match="read-only"):
        rune.grad(lambda x: np.sum((x * 1.0).imag.__setitem__(0, 1.0) or x))(x)


def test_complex_parts_refuse_with_what_to_write():
    def f(x):
        z = x * (1.0 + 2.0j)
        z.real[0] = 0.0                 # NumPy writes z in place; rune refuses clearly
        return np.abs(z)

    with pytest.raises(NotImplementedError, match=r"z = v \+ 1j \* z.imag"):
        rune.vjp(f, np.arange(1.0, 3.0))


def test_inplace_operators_check_shape_and_casting():
    x = np.arange(3.0)
    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        y = x.copy()
        y += np.ones((2, 3))

    def grows(x):
        y = x * 1.0
        y += np.ones((2, 3))
        return y

    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        rune.vjp(grows, x)
    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        rune.vmap(grows)(np.ones((4, 3)))

    def int_plus_float(x):
        n = np.zeros_like(x, dtype=np.int64)
        n += 1.5
        return x

    with pytest.raises(TypeError, match="same_kind"):
        int_plus_float(x.copy())
    with pytest.raises(TypeError, match="same_kind"):
        rune.vjp(int_plus_float, x)

    def narrows(x):
        y = x.astype(np.float32)
        y += x                          # float64 into float32: same_kind, stays float32
        y[0] = 0.0
        return y

    out = rune.vjp(narrows, x)[0]
    assert out.dtype == narrows(x.copy()).dtype == np.float32
    np.testing.assert_array_equal(out, narrows(x.copy()))


def test_scalars_are_not_views():
    def f(x):
        y = x * 1.0
        r = y[1]                        # a NumPy scalar: immutable
        r += 5.0
        loss = np.sum(y ** 2)
        total = loss                    # aliases a scalar ...
        total += 1.0                    # ... which then rebinds: loss is unchanged
        e = y[1, ...] if y.ndim == 1 else y   # a 0-d *view*: writes go through
        e += 10.0
        return np.stack([loss, total, r, np.sum(y)])

    x = np.arange(3.0)
    want = f(x.copy())
    np.testing.assert_allclose(rune.vjp(f, x)[0], want)
    rune.check_grads(f, x, order=2)
    check_vmap(f, np.stack([x, 2 * x]))


def test_flat_and_copies():
    def f(x):
        y = x * 1.0
        y.T.flat[1] = 9.0 * x[0, 0]      # flat indexes the view's C order: y[1, 0]
        c = copy.copy(y)
        c[0, 0] = -1.0                   # copies never write back
        fl = y.flatten()
        fl[0] = -2.0
        y.flat = np.arange(3.0) * x[1, 1]   # repeated over y, as NumPy does
        return np.concatenate([np.ravel(y), np.ravel(c), fl])

    x = np.arange(1.0, 7.0).reshape(2, 3)
    want = f(x.copy())
    np.testing.assert_allclose(rune.vjp(f, x)[0], want)
    rune.check_grads(f, x, order=2)
    check_vmap(f, np.stack([x, -x]))


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.1.0",
                    reason="np.reshape(copy=) is new in NumPy 2.1")
def test_reshape_copy_flag_as_numpy():
    x = np.arange(6.0).reshape(2, 3)

    def f(x, copy):
        y = x * 1.0
        r = np.reshape(y.T, (6,), copy=copy)
        r[0] = 50.0
        return np.concatenate([np.ravel(y), r])

    with pytest.raises(ValueError, match="avoid creating a copy"):
        f(x.copy(), False)
    with pytest.raises(ValueError, match="avoid creating a copy"):
        rune.vjp(lambda x: f(x, False), x)
    np.testing.assert_array_equal(rune.vjp(lambda x: f(x, True), x)[0], f(x.copy(), True))


def test_views_under_vmap_with_the_batch_axis_inside():
    def f(x):
        y = x * 1.0
        y.reshape(-1)[2] = 0.0          # y is C-ordered per example in NumPy
        np.swapaxes(y, 0, 1)[0] += 1.0
        return y

    xs = np.arange(24.0).reshape(2, 3, 4)
    for ax in (0, 1, 2):
        check_vmap(f, np.moveaxis(xs, 0, ax), in_axes=ax)


def test_copies_keep_numpys_order():
    def f(x):
        y = x * 1.0
        fo = y.copy(order="F")          # Fortran order: its ravel is a copy
        fo.ravel()[0] = 100.0
        co = y.copy()                   # C order: its ravel is a view
        co.ravel()[0] = 100.0
        return np.concatenate([np.ravel(fo), np.ravel(co), np.ravel(y)])

    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(rune.vjp(f, x)[0], f(x.copy()))
    check_vmap(f, np.stack([x, x + 1.0]))


def test_unknown_layout_under_vmap_matches_or_refuses_by_name():
    def f(x):
        z = np.sin(x.T)                 # Fortran-ordered in NumPy: its reshape is a copy
        z.reshape(-1)[0] = 100.0
        return z

    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(rune.vjp(f, x)[0], f(x.copy()))
    try:
        got = rune.vmap(f)(np.stack([x, x + 1.0]))
    except NotImplementedError as e:
        assert "reshape" in str(e) and ".copy()" in str(e)
    else:
        np.testing.assert_array_equal(got, np.stack([f(x.copy()), f(x + 1.0)]))


def test_a_view_of_the_whole_array_is_still_read_only():
    def f(x):
        y = x * 1.0
        b = np.broadcast_to(y, y.shape)     # NumPy: a read-only view, even of the same shape
        b[0] = 5.0
        return y

    with pytest.raises(ValueError, match="read-only"):
        f(np.ones(3))
    with pytest.raises(ValueError, match="read-only"):
        rune.vjp(f, np.ones(3))


def test_views_under_nested_transformations():
    def f(x):
        y = x * 1.0
        y.reshape(-1)[1:3] = np.sin(y[0, :2]) * 2.0   # a view of a row-major block
        np.swapaxes(y, 0, 1)[0] *= y[:, 1]          # column 0 times column 1
        return np.sum(y ** 3)

    x = np.arange(1.0, 7.0).reshape(2, 3) / 4.0
    rune.check_grads(f, x, order=2)
    h = rune.hessian(f)(x)
    np.testing.assert_allclose(h, rune.jacfwd(rune.grad(f))(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h.reshape(6, 6), h.reshape(6, 6).T, rtol=1e-12, atol=1e-12)
    xs = np.stack([x, 2.0 * x])
    check_vmap(rune.grad(f), xs)
    v = np.ones_like(x)
    np.testing.assert_allclose(rune.hvp(f, (x,), (v,))[1][0], np.tensordot(h, v, 2),
                               rtol=1e-12, atol=1e-12)


def test_reshape_of_a_strided_view_refuses_writes_it_cannot_place():
    from numpy.lib.stride_tricks import sliding_window_view

    def f(x):
        w = sliding_window_view(x * 1.0, 3)        # read-only in NumPy
        flat = w.reshape(-1)                       # NumPy: a copy (overlapping windows)
        flat[0] = 7.0
        return flat

    x = np.arange(5.0)
    with pytest.raises((NotImplementedError, ValueError)) as info:
        rune.vjp(f, x)
    assert "copy" in str(info.value) or "read-only" in str(info.value)

    def g(x):
        y = x * 1.0
        v = y.view()                               # a true view, same layout
        v.reshape(5)[0] = 9.0
        return y

    np.testing.assert_array_equal(rune.vjp(g, x)[0], g(x.copy()))


def test_a_program_writing_through_many_kinds_of_views():
    def f(x):
        y = x * 1.0
        for col in y.T:                  # iterating a transpose: column views
            col *= 2.0
        a, b = np.split(y, 2)            # split pieces are views
        a[:] = np.sin(b)
        np.rot90(y)[0, 0] = 100.0 * x[0, 0]
        np.expand_dims(y, 0)[0, 1] = np.flip(y[1])
        m = np.moveaxis(y, 0, 1)
        m[...] = m ** 2
        return y

    x = np.arange(1.0, 7.0).reshape(2, 3) / 5
    np.testing.assert_allclose(rune.vjp(f, x)[0], f(x.copy()), rtol=1e-14)
    rune.check_grads(f, x, order=2)
    check_vmap(f, np.stack([x, -x]))
    check_vmap(f, np.moveaxis(np.stack([x, -x]), 0, 2), in_axes=2)


@pytest.mark.parametrize("name", ["tile", "take", "delete", "vander"])
def test_a_new_array_built_through_views_reshapes_to_views(name):
    """NumPy returns a new C-ordered array; rune computes np.tile as a broadcast and a
    reshape, np.take/np.delete as gathers: their reshapes must still be views (a write into
    the array reaches the reshape, as in NumPy), found by the random-program tester."""
    f = {"tile": lambda x: np.tile(x, 2), "take": lambda x: np.take(x, [0, 2, 1], axis=1),
         "delete": lambda x: np.delete(x, 1, axis=1), "vander": lambda x: np.vander(x[0], 3)}[name]

    def h(x):
        y = f(x)
        z = y.reshape(-1)
        y *= 2.0
        return z

    for x in (np.arange(12.0).reshape(3, 4), np.asfortranarray(np.arange(12.0).reshape(3, 4)),
              np.arange(4.0).reshape(2, 2, 1)):
        if name != "tile" and x.ndim != 2:
            continue
        want = h(x.copy())
        np.testing.assert_array_equal(rune.vjp(h, x.copy())[0], want)
        np.testing.assert_array_equal(rune.jvp(h, (x.copy(),), (np.ones_like(x),))[0], want)
