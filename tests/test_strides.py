"""Strided views of traced arrays (sliding_window_view, as_strided, x.view()) and
np.einsum's interleaved form: values against NumPy, derivatives, vmap, writes."""

import numpy as np
import pytest

import rune
from helpers import check_vmap, check_all_axes

swv = np.lib.stride_tricks.sliding_window_view

SWV_CASES = [
    ((7,), 3, None),
    ((7,), 7, None),
    ((4, 5), (2, 3), None),
    ((4, 5), 2, 1),
    ((4, 5), 3, -2),
    ((6, 5), (2, 2), (0, 0)),           # the same axis twice, as NumPy allows
    ((3, 4, 5), (2, 2), (2, 0)),
]


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _values_match(f, x):
    want = f(x)
    got = rune.jvp(f, (x,), (np.ones_like(x),))[0]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape,window,axis", SWV_CASES, ids=[str(c) for c in SWV_CASES])
def test_sliding_window_view(shape, window, axis):
    f = lambda x: swv(x, window, axis) * 1.5   # noqa: E731
    x = _x(shape)
    _values_match(f, x)
    rune.check_grads(f, x, order=2)
    rune.check_grads(f, x * (1 + 0.5j), order=2)
    check_all_axes(f, x)


def test_sliding_window_gradient_counts_windows():
    g = rune.grad(lambda x: np.sum(swv(x, 3)))(np.zeros(6))
    np.testing.assert_array_equal(g, [1, 2, 3, 3, 2, 1])


AS_STRIDED_CASES = [
    ((6,), (4, 3), (8, 8)),              # sliding windows
    ((6,), (3,), (16,)),                  # every other element
    ((3, 4), (4, 3), (8, 32)),            # the transpose
    ((3, 4), (2, 2, 2), (64, 16, 8)),
    ((5,), (3, 4), (0, 8)),               # a broadcast (stride 0)
    ((4,), None, None),
]


@pytest.mark.parametrize("shape,out_shape,strides", AS_STRIDED_CASES,
                         ids=[str(c) for c in AS_STRIDED_CASES])
def test_as_strided_reads(shape, out_shape, strides):
    f = lambda x: np.lib.stride_tricks.as_strided(x, out_shape, strides) * 2.0  # noqa: E731
    x = _x(shape)
    want = np.lib.stride_tricks.as_strided(np.ascontiguousarray(x), out_shape, strides) * 2
    got = rune.jvp(f, (x,), (x,))[0]
    np.testing.assert_array_equal(got, want)
    rune.check_grads(f, x, order=2)
    check_all_axes(f, x)


def test_as_strided_with_strides_of_the_traced_array():
    x = _x((6,))

    def windows(x):
        s = x.strides[0]
        assert x.itemsize == 8 and x.nbytes == 48
        return np.lib.stride_tricks.as_strided(x, shape=(4, 3), strides=(s, s))

    np.testing.assert_array_equal(rune.jvp(windows, (x,), (x,))[0], swv(x, 3))
    rune.check_grads(windows, x, order=2)
    x32 = x.astype(np.float32)     # strides follow the itemsize
    w32 = lambda x: np.lib.stride_tricks.as_strided(x, (4, 3), (x.strides[0],) * 2)  # noqa: E731
    np.testing.assert_array_equal(rune.jvp(w32, (x32,), (x32,))[0], swv(x32, 3))


@pytest.mark.parametrize("call,err,match", [
    (lambda x: np.lib.stride_tricks.as_strided(x, (4,), (16,)), ValueError, "read outside"),
    (lambda x: np.lib.stride_tricks.as_strided(x, (2,), (-8,)), ValueError, "read outside"),
    (lambda x: np.lib.stride_tricks.as_strided(x, (2,), (4,)), ValueError, "multiples of"),
    (lambda x: swv(x, 7), ValueError, "sliding_window_view: window shape cannot be larger"),
    (lambda x: swv(x, (2, 2)), ValueError, "sliding_window_view: Since axis is"),
    (lambda x: x.view(np.int64), NotImplementedError, r"x.view\(int64\)"),
])
def test_errors(call, err, match):
    x = _x((6,))
    with pytest.raises(err, match=match):
        rune.grad(lambda x: np.sum(call(x)))(x)


def test_writes_into_strided_views_are_refused_and_reads_follow_the_base():
    x = _x((6,))

    def read_only(x):
        w = swv(x, 3)
        w[0, 0] = 1.0

    def write_through(x):
        w = np.lib.stride_tricks.as_strided(x, (4, 3), (8, 8))
        w[0, 0] = 1.0

    with pytest.raises(ValueError, match="read-only"):
        rune.grad(lambda x: np.sum(read_only(x)))(x)
    with pytest.raises(NotImplementedError, match="as_strided"):
        rune.grad(lambda x: np.sum(write_through(x)))(x)

    def follows(x):            # NumPy's views see later writes into their base
        y = x.copy()
        w = swv(y, 2)
        y[0] = 10.0 * y[1]
        return w[0]

    np.testing.assert_array_equal(rune.jvp(follows, (x,), (x,))[0], follows(x.copy()))
    rune.check_grads(follows, x, order=2)


def test_view_is_a_view_both_ways():
    def f(x):
        y = x.copy()
        v = y.view()
        v[0] = 2.0 * v[1]        # into the view: reaches y
        y[2] = 3.0 * y[3]        # into the base: reaches v
        return y * 1.0 + v * 10.0 + x.view(np.ndarray) + x.view(x.dtype)

    x = _x((5,))
    want = f(x.copy())
    np.testing.assert_array_equal(rune.jvp(f, (x,), (x,))[0], want)
    rune.check_grads(f, x, order=2)
    check_vmap(f, _x((3, 5)))


EINSUM_CASES = [
    (((3,), [0]), ((3,), [0]), []),
    (((3, 4), [0, 1]), ((4, 5), [1, 2]), None),
    (((3, 4), [0, 1]), ((4, 5), [1, 2]), [2, 0]),
    (((2, 3, 4), [Ellipsis, 1]), ((4,), [1]), [Ellipsis]),
    (((3, 3), [0, 0]), None, None),                 # a trace
    (((3, 4), [30, 1]), ((4,), [1]), None),         # labels past 25 (lower case)
    (((4, 3), [1, 0]), None, None),                 # implicit output: sorted labels
]


@pytest.mark.parametrize("a,b,out", EINSUM_CASES, ids=[str(c) for c in EINSUM_CASES])
def test_einsum_interleaved(a, b, out):
    xa = _x(a[0], 1)
    xb = None if b is None else _x(b[0], 2)

    def f(xa, xb=None):
        args = [xa, a[1]] + ([] if b is None else [xb, b[1]]) + ([] if out is None else [out])
        return np.einsum(*args)

    want = f(xa, xb) if b is not None else f(xa)
    args = (xa,) if b is None else (xa, xb)
    got = rune.jvp(f, args, args)[0]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    rune.check_grads(f, *args, order=2)
    check_all_axes(f, *args)


def test_einsum_sublist_errors():
    x = _x((3,))
    with pytest.raises(ValueError, match="np.einsum: subscript"):
        rune.grad(lambda x: np.einsum(x, ["i"], []))(x)
