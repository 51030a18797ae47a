"""ufunc methods (at, accumulate, reduceat, outer, reduce with where=/initial=), out= into
traced buffers, 0-d traced indexing and scalar casts: values against NumPy, derivatives
against finite differences (second order), vmap against a loop, errors."""

import warnings

import numpy as np
import pytest

import rune
from helpers import check_vmap, check_all_axes


def _x(shape, seed=0, lo=0.2, hi=1.5):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def _at(ufunc, idx, x_shape=(6,)):
    """f(a, b): ufunc.at on a traced copy of a, then a smooth function of it."""
    def f(a, b):
        y = a * 1.0
        ufunc.at(y, idx, b)
        return y
    return f


IDX_REPEATED = np.array([0, 2, 2, 5, 2, 0])
AT_CASES = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "maximum": np.maximum, "minimum": np.minimum, "logaddexp": np.logaddexp,
    "divide": np.divide, "power": np.power, "hypot": np.hypot,
}


@pytest.mark.parametrize("name", sorted(AT_CASES))
def test_at_values_and_derivatives(name):
    ufunc = AT_CASES[name]
    a, b = _x((6,), 0), _x((6,), 1)
    f = _at(ufunc, IDX_REPEATED)
    want = a.copy()
    ufunc.at(want, IDX_REPEATED, b)
    np.testing.assert_allclose(f(a, b), want, rtol=1e-13)
    np.testing.assert_allclose(rune.jvp(lambda a: f(a, b), (a,), (a,))[0], want, rtol=1e-13)
    rune.check_grads(f, a, b, order=2)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "divide"])
def test_at_nd_index_broadcast_value(name):
    ufunc = AT_CASES[name]
    a, b = _x((4, 3), 0), _x((3,), 1)
    idx = (np.array([0, 3, 0]),)
    f = _at(ufunc, idx)
    want = a.copy()
    ufunc.at(want, idx, b)
    np.testing.assert_allclose(f(a, b), want, rtol=1e-13)
    rune.check_grads(f, a, b, order=2)
    check_vmap(f, np.stack([a, 2 * a]), np.stack([b, b + 1]))


def test_at_unary_and_scalar_index():
    a = _x((5,))

    def f(a):
        y = a * 1.0
        np.negative.at(y, [1, 1, 3])
        np.square.at(y, 4)
        return y
    want = a.copy()
    np.negative.at(want, [1, 1, 3])
    np.square.at(want, 4)
    np.testing.assert_allclose(f(a), want)
    rune.check_grads(f, a, order=2)


def test_add_at_into_traced_buffer_vmap_and_batched_indices():
    v = _x((4, 6))
    idx = np.array([[0, 1, 1, 3, 0, 2], [2, 2, 2, 2, 0, 1], [3, 3, 0, 1, 1, 1],
                    [0, 0, 0, 0, 0, 0]])

    def f(v, i):
        buf = np.zeros_like(v, shape=(4,))
        np.add.at(buf, i, v)
        return buf
    check_vmap(f, v, idx)                    # batched values and batched indices
    check_vmap(lambda v: f(v, idx[1]), v)    # batched values only
    rune.check_grads(lambda v: f(v, idx[0]), v[0], order=2)
    g = rune.vmap(rune.grad(lambda v, i: np.sum(f(v, i) ** 2)))(v, idx)
    for k in range(4):
        np.testing.assert_allclose(g[k], rune.grad(lambda v: np.sum(f(v, idx[k]) ** 2))(v[k]))


def test_maximum_at_batched_indices_runs_per_example():
    a, b = _x((3, 5)), _x((3, 4), 2)
    idx = np.array([[0, 0, 1, 4], [2, 2, 2, 2], [1, 3, 1, 3]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        check_vmap(lambda a, b, i: _at(np.maximum, i)(a, b), a, b, idx)


def test_add_at_negative_and_out_of_bounds_indices():
    v = _x((4,))
    i = np.array([0, -1, -4, 3])
    f = lambda v: _at(np.add, i)(np.zeros_like(v), v)   # noqa: E731
    want = np.zeros(4)
    np.add.at(want, i, v)
    np.testing.assert_allclose(f(v), want)
    rune.check_grads(f, v, order=2)
    for bad in ([0, 4], [-5, 1]):
        with pytest.raises(IndexError, match="out of bounds"):
            rune.grad(lambda v: np.sum(_at(np.add, np.array(bad))(np.zeros_like(v), v[:2])))(v)


def test_at_on_plain_array_is_a_clear_error():
    buf = np.zeros(3)       # made outside the function (one made inside takes the write)

    def f(v):
        np.add.at(buf, [0, 0], v)
        return buf
    with pytest.raises(rune.TracerConversionError, match=r"np\.add\.at") as e:
        rune.grad(lambda v: np.sum(f(v)))(np.ones(2))
    assert "+=" not in str(e.value)      # x[idx] += v is wrong with repeated indices


ACC = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
       "minimum": np.minimum, "logaddexp": np.logaddexp, "subtract": np.subtract,
       "divide": np.divide, "fmax": np.fmax}


@pytest.mark.parametrize("name", sorted(ACC))
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((3, 5), 1), ((4, 3), 0), ((2, 3, 4), -1)])
def test_accumulate(name, shape, axis):
    ufunc = ACC[name]
    x = _x(shape)
    f = lambda x: ufunc.accumulate(x, axis=axis)   # noqa: E731
    np.testing.assert_allclose(f(x), ufunc.accumulate(x, axis=axis), rtol=1e-12)
    rune.check_grads(f, x, order=2)
    check_all_axes(f, x)


REDUCEAT = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
            "minimum": np.minimum, "logaddexp": np.logaddexp}


@pytest.mark.parametrize("name", sorted(REDUCEAT))
@pytest.mark.parametrize("indices", [[0, 2, 5], [0, 4, 1, 6], [3], [0, 1, 2, 3, 4, 5, 6, 7]])
def test_reduceat(name, indices):
    ufunc = REDUCEAT[name]
    x = _x((8, 3))
    for axis in (0, 1) if max(indices) < 3 else (0,):
        f = lambda x: ufunc.reduceat(x, indices, axis=axis)   # noqa: E731
        np.testing.assert_allclose(f(x), ufunc.reduceat(x, indices, axis=axis), rtol=1e-12)
        rune.check_grads(f, x, order=2)
        check_all_axes(f, x)


def test_reduceat_out_of_bounds():
    with pytest.raises(IndexError, match="out-of-bounds"):
        rune.grad(lambda x: np.sum(np.add.reduceat(x, [0, 9])))(np.ones(4))


@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.subtract, np.maximum, np.hypot,
                                   np.arctan2, np.power])
def test_outer(ufunc):
    a, b = _x((3,)), _x((2, 2), 1)
    f = lambda a, b: ufunc.outer(a, b)   # noqa: E731
    np.testing.assert_allclose(f(a, b), ufunc.outer(a, b))
    rune.check_grads(f, a, b, order=2)
    check_all_axes(f, a, b)


@pytest.mark.parametrize("ufunc,initial", [(np.add, 1.5), (np.multiply, 2.0),
                                           (np.maximum, 0.7), (np.minimum, 0.6),
                                           (np.logaddexp, 0.3), (np.add, None)])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_reduce_where_initial(ufunc, initial, axis):
    x = _x((3, 4))
    mask = np.array([[True, False, True, True]] * 3)
    kw = {} if initial is None else {"initial": initial}
    f = lambda x: ufunc.reduce(x, axis=axis, where=mask, **kw)   # noqa: E731
    np.testing.assert_allclose(f(x), ufunc.reduce(x, axis=axis, where=mask, **kw))
    rune.check_grads(f, x, order=2)
    check_all_axes(f, x)
    g = lambda x: ufunc.reduce(x, axis=axis, **kw)   # noqa: E731
    np.testing.assert_allclose(g(x), ufunc.reduce(x, axis=axis, **kw))
    rune.check_grads(g, x, order=2)


def test_reduce_where_without_identity_needs_initial():
    with pytest.raises(ValueError, match="initial"):
        rune.grad(lambda x: np.maximum.reduce(x, where=x > 0))(np.ones(3))


# --------------------------------------------------------------------------
# out=
# --------------------------------------------------------------------------

def test_out_into_traced_buffers():
    A, B = _x((3, 3)), _x((3, 3), 1)

    def f(A, B):
        buf = np.zeros_like(A)
        r = np.add(A, B, out=buf)
        assert r is buf
        np.multiply(buf, A, out=buf)            # in place: out is an input
        C = np.empty_like(A)
        np.matmul(buf, B, out=C)
        s = np.zeros_like(A[0])
        np.sum(C, axis=0, out=s)
        np.exp(s, out=s, where=s < 3.0)
        m = np.zeros_like(A[:, 0])
        np.mean(C, axis=1, out=m)
        return s + m
    want = f(A, B)
    np.testing.assert_allclose(rune.jvp(lambda A: f(A, B), (A,), (A,))[0], want)
    rune.check_grads(f, A, B, order=2)
    check_vmap(f, np.stack([A, B]), np.stack([B, A]))


def test_out_into_plain_array_is_a_clear_error():
    buf = np.zeros(2)       # made outside the function (one made inside takes the write)

    def f(x):
        np.multiply(x, x, out=buf)
        return buf
    with pytest.raises(rune.TracerConversionError, match=r"np\.multiply.*out="):
        rune.grad(lambda x: np.sum(f(x)))(np.ones(2))
    with pytest.raises(NotImplementedError, match="out="):
        rune.grad(lambda x: np.sum(f(x)))(np.ones(2))


def test_out_dtype_casting_rule():
    def f(x):
        buf = np.zeros_like(x, dtype=np.int64)
        np.add(x, x, out=buf)
        return x
    with pytest.raises(TypeError, match="same_kind"):
        rune.grad(lambda x: np.sum(f(x)))(np.ones(2))


# --------------------------------------------------------------------------
# 0-d traced values and scalar casts
# --------------------------------------------------------------------------

def test_zero_d_indexing_and_writes():
    x = _x((3,))

    def f(x):
        s = np.sum(x * x)
        t = s[()] + s[...] * 2 + s[None][0]
        v = np.zeros_like(s)
        v[...] = t
        v[()] += s
        return v
    np.testing.assert_allclose(f(x), 5 * np.sum(x * x))
    rune.check_grads(f, x, order=2)
    check_vmap(f, np.stack([x, 2 * x]))


def test_zero_d_written_into_plain_array_keeps_the_clear_error():
    a = np.zeros(3)         # made outside the function (one made inside takes the write)

    def f(x):
        a[0] = np.sum(x)
        return a
    with pytest.raises(rune.TracerConversionError):
        rune.grad(lambda x: np.sum(f(x)))(np.ones(2))
    with pytest.raises(TypeError, match="not iterable"):
        rune.grad(lambda x: sum(t for t in np.sum(x)))(np.ones(2))


def test_scalar_casts_refuse_and_numpys_types_stay_numpys():
    """SPEC 3: np.float64(x) & co. on a value being differentiated raise
    TracerConversionError saying what to write instead; NumPy's scalar types are never
    replaced (inside the function too), and integer values still convert."""
    x = _x((3,))
    for cast in (np.float64, np.float32, np.complex128):
        with pytest.raises(rune.TracerConversionError, match=r"astype\(np.float32\)") as ei:
            rune.grad(lambda x: np.sum(x) * cast(x[0]))(x)
        assert "rune.stop_gradient" in str(ei.value)
    with pytest.raises(rune.TracerConversionError):
        rune.jvp(lambda x: np.float64(np.sum(x)), (x,), (x,))
    float64 = np.float64

    def types(x):
        assert np.float64 is float64 and type(np.float64(1.0)) is float64
        assert x.dtype in (np.float64,) and x.dtype.type is np.float64
        assert np.int64(np.argmax(x)) == np.argmax(x)       # integers carry no derivative
        return x * (1.0 if x.dtype in (np.float64,) else 2.0)
    np.testing.assert_array_equal(rune.grad(lambda x: np.sum(types(x)))(x), np.ones(3))
    np.testing.assert_array_equal(rune.vmap(types)(np.stack([x, x])), np.stack([x, x]))
    # the explicit ways: a cast that keeps the derivative, a value that drops it
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(x.astype(np.float32)))(x),
                               np.ones(3))
    assert rune.grad(lambda x: np.sum(x) + np.float64(rune.stop_gradient(x[0])))(x)[0] == 1.0


def test_scipy_scalar_results():
    from scipy.special import logsumexp
    from scipy.optimize import minimize_scalar
    x = _x((4,))
    np.testing.assert_allclose(rune.grad(logsumexp)(x), np.exp(x - logsumexp(x)))

    def argmin_value(c):
        r = minimize_scalar(lambda t: (t - 1.0) ** 2 + c * t, bounds=(-5, 5),
                            method="bounded")
        return rune.stop_gradient(r.x) + c
    np.testing.assert_allclose(rune.grad(argmin_value)(0.5), 1.0)


def test_where_without_out_is_refused():
    with pytest.raises(NotImplementedError, match="where="):
        rune.grad(lambda x: np.sum(np.exp(x, where=x > 0)))(np.ones(2))
    with pytest.raises(NotImplementedError, match="where="):
        rune.grad(lambda x: np.sum(np.multiply.outer(x, x, where=x > 0)))(np.ones(2))
