"""linspace/logspace/geomspace with traced endpoints and np.full/np.full_like with a
traced fill value: values against NumPy, derivatives, vmap against a loop, errors."""

import warnings

import numpy as np
import pytest

import rune
from helpers import check_vmap, check_all_axes

SPACE_CASES = [
    ("linspace", 0.5, 2.0, {}),
    ("linspace", 0.5, 2.0, {"num": 7, "endpoint": False}),
    ("linspace", 0.5, 2.0, {"num": 1}),
    ("linspace", 0.5, 2.0, {"num": 1, "endpoint": False}),
    ("linspace", 0.5, 2.0, {"num": 2}),
    ("linspace", [0.5, -1.0], [2.0, 3.0], {"num": 4, "axis": 1}),
    ("linspace", [[0.5], [1.5], [-1.0]], [2.0, 3.0], {"num": 5, "axis": -1}),
    ("linspace", [0.5, -1.0], 3.0, {"num": 3, "axis": 0}),
    ("linspace", 0.5 + 1j, 2.0 - 1j, {"num": 4}),
    ("logspace", 0.5, 2.0, {"num": 6}),
    ("logspace", [0.5, -1.0], [2.0, 1.0], {"num": 4, "base": 2.0, "axis": 1}),
    ("logspace", 0.5, 1.5, {"num": 5, "endpoint": False, "base": np.e}),
    ("geomspace", 0.5, 8.0, {"num": 5}),
    ("geomspace", -0.5, -8.0, {"num": 4}),
    ("geomspace", [1.0, 2.0], [16.0, 3.0], {"num": 3, "axis": 1}),
    ("geomspace", 1.0 + 1j, 4.0 + 2j, {"num": 4}),
    ("geomspace", 0.5, 8.0, {"num": 5, "endpoint": False}),
    ("geomspace", 0.5, 8.0, {"num": 1}),
]


def _values_match(f, *args):
    want = f(*args)
    got = rune.jvp(f, args, tuple(np.ones_like(a) for a in args))[0]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    assert np.shape(got) == np.shape(want) and got.dtype == want.dtype


@pytest.mark.parametrize("name,start,stop,kw", SPACE_CASES,
                         ids=[f"{c[0]}-{c[3]}" for c in SPACE_CASES])
def test_spaces(name, start, stop, kw):
    fn = getattr(np, name)
    start, stop = np.asarray(start), np.asarray(stop)
    f = lambda a, b: fn(a, b, **kw)   # noqa: E731
    _values_match(f, start, stop)
    rune.check_grads(f, start, stop, order=2)
    rune.check_grads(lambda a: fn(a, stop, **kw), start, order=2)   # one end plain
    rune.check_grads(lambda b: fn(start, b, **kw), stop, order=2)
    if start.dtype.kind == "f" and stop.dtype.kind == "f":
        check_all_axes(f, start, stop)
        check_vmap(f, np.stack([start, 1.5 * start]), stop, in_axes=(0, None))


def test_linspace_derivatives_and_exact_ends():
    d_start = rune.jacfwd(lambda a: np.linspace(a, 3.0, 5))(1.0)
    d_stop = rune.jacfwd(lambda b: np.linspace(1.0, b, 5))(3.0)
    np.testing.assert_allclose(d_start, [1, .75, .5, .25, 0], atol=1e-15)
    np.testing.assert_allclose(d_stop, [0, .25, .5, .75, 1], atol=1e-15)
    y = rune.jvp(lambda b: np.linspace(0.1, b, 7), (0.7,), (1.0,))[0]
    assert y[-1] == 0.7


def test_linspace_retstep_dtype_and_float32():
    f = lambda a: np.linspace(a, 10.0, 4, retstep=True)   # noqa: E731
    (y, step), (ty, tstep) = rune.jvp(f, (1.0,), (1.0,))
    np.testing.assert_allclose(y, np.linspace(1.0, 10.0, 4))
    assert step == 3.0 and tstep == -1 / 3
    rune.check_grads(lambda a: np.linspace(a, 10.0, 4, retstep=True)[1], 1.0)
    yi = rune.jvp(lambda a: np.linspace(a, 10.0, 4, dtype=int), (1.5,), (1.0,))[0]
    np.testing.assert_array_equal(yi, np.linspace(1.5, 10.0, 4, dtype=int))
    a32 = np.float32(0.25)
    y32 = rune.jvp(lambda a: np.linspace(a, 1.0, 3), (a32,), (np.float32(1),))[0]
    assert y32.dtype == np.linspace(a32, 1.0, 3).dtype
    g = rune.grad(lambda a: np.sum(np.geomspace(a, 4.0, 3)))(a32)
    assert np.isfinite(g)


def test_logspace_traced_base():
    base = np.array([2.0, 3.0])
    f = lambda b, a: np.logspace(a, 2.0, 4, base=b)   # noqa: E731
    _values_match(f, base, np.float64(0.5))
    rune.check_grads(f, base, np.float64(0.5), order=2)
    check_all_axes(lambda b: np.logspace(0.5, 2.0, 4, base=b), base)


@pytest.mark.parametrize("dtype", [None, np.float32, complex])
def test_full_traced_fill(dtype):
    x = np.array([1.5, -2.0])
    f = lambda v: np.full((3, 2), v, dtype=dtype)   # noqa: E731
    _values_match(f, x)
    if dtype is not np.float32:     # float32 values: finite differences of float64 don't apply
        rune.check_grads(f, x, order=2)
    check_all_axes(f, x)
    g = lambda v: np.full(4, v[0]) * v[1]   # noqa: E731
    _values_match(g, x)
    rune.check_grads(g, x, order=2)


def test_full_like_traced_fill():
    proto = np.zeros((2, 3))
    x = np.array([0.5, 2.0, -1.0])
    f = lambda v: np.full_like(proto, v) * proto.sum() + np.full_like(proto, v[1])  # noqa: E731
    _values_match(f, x)
    rune.check_grads(f, x, order=2)
    check_all_axes(f, x)
    ints = rune.jvp(lambda v: np.full_like(np.zeros(3, int), v), (x,), (x,))
    np.testing.assert_array_equal(ints[0], np.full_like(np.zeros(3, int), x))
    h = lambda v: np.full_like(v, v[0], shape=(2, 2))   # noqa: E731  (traced prototype)
    _values_match(h, x)
    rune.check_grads(h, x, order=2)


def test_plain_calls_unchanged_while_tracing():
    def f(x):
        assert np.full(2, 3.0).tolist() == [3.0, 3.0]
        assert np.full_like(np.zeros(2), 1.0).tolist() == [1.0, 1.0]
        return np.sum(x * np.linspace(0, 1, 3))
    np.testing.assert_allclose(rune.grad(f)(np.ones(3)), [0, .5, 1])


@pytest.mark.parametrize("call,err,match", [
    (lambda x: np.linspace(x[0], x[1], -1), ValueError, "np.linspace: number of samples"),
    (lambda x: np.geomspace(x[0] * 0, x[1]), ValueError, "np.geomspace: a geometric"),
    (lambda x: np.full((3,), x), ValueError, "np.full: could not broadcast"),
    (lambda x: np.full_like(np.zeros(3), x), ValueError, "np.full_like: could not broadcast"),
])
def test_errors(call, err, match):
    x = np.array([1.0, 2.0])
    with pytest.raises(err, match=match):
        rune.grad(lambda x: np.sum(call(x)))(x)


def test_geomspace_zero_check_under_vmap_is_vectorized():
    starts = np.array([1.0, 2.0, 0.0])
    with pytest.raises(ValueError, match="np.geomspace"):
        rune.vmap(lambda a: np.geomspace(a, 4.0, 3))(starts)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        check_vmap(lambda a: np.geomspace(a, 4.0, 3), starts[:2])
