"""NumPy coverage, part B: bincount/histogram weights, unique, searchsorted under vmap,
np.vectorize, apply_along_axis, piecewise, select, reductions with where=/initial=,
every quantile method and the nan-family: values against NumPy, derivatives against
finite differences (second order), vmap against a loop."""

import warnings

import numpy as np
import pytest

import rune
from helpers import check_vmap, check_all_axes


def _x(shape, seed=0, lo=0.2, hi=1.5):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def test_bincount_weights():
    idx = np.array([0, 3, 3, 1, 0, 3])
    w = _x((6,))
    f = lambda w: np.bincount(idx, weights=w, minlength=6)   # noqa: E731
    np.testing.assert_allclose(f(w), np.bincount(idx, weights=w, minlength=6))
    rune.check_grads(lambda w: f(w) ** 2, w, order=2)
    check_all_axes(f, w)
    with warnings.catch_warnings():      # batched labels: a per-example size, a loop
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        labels = np.array([[0, 1, 1, 2, 0, 1], [2, 2, 2, 0, 1, 0]])
        check_vmap(lambda w, i: np.bincount(i, weights=w, minlength=3),
                   np.stack([w, 2 * w]), labels)
    with pytest.raises(ValueError, match="negative"):
        rune.grad(lambda w: np.sum(np.bincount([0, -1], weights=w)))(np.ones(2))


@pytest.mark.parametrize("kw", [{"bins": 4}, {"bins": [0.0, 0.5, 0.9, 1.6]},
                                {"bins": 3, "range": (0.3, 1.2)}, {"bins": 5, "density": True}])
def test_histogram_weights(kw):
    a, w = _x((20,)), _x((20,), 1)
    f = lambda w: np.histogram(a, weights=w, **kw)[0]   # noqa: E731
    want, edges = np.histogram(a, weights=w, **kw)
    np.testing.assert_allclose(f(w), want)
    np.testing.assert_allclose(rune.jvp(lambda a: np.histogram(a, weights=w, **kw)[1],
                                        (a,), (a,))[0], edges)
    rune.check_grads(lambda w: f(w) ** 2, w, order=2)
    check_all_axes(f, w)


def test_unique_values_inverse_counts():
    x = np.array([0.5, 1.5, 0.5, 2.0, 1.5, 0.5])

    def f(x):
        u, inv, cnt = np.unique(x, return_inverse=True, return_counts=True)
        return np.sum(u * cnt) + np.sin(u[inv])
    t = x ** 2          # a direction that keeps tied values tied: the derivative exists
    eps = 1e-6
    fd = (f(x + eps * t) - f(x - eps * t)) / (2 * eps)
    val, tan = rune.jvp(f, (x,), (t,))
    np.testing.assert_allclose(val, f(x))
    np.testing.assert_allclose(tan, fd, rtol=1e-6)
    xs = np.array([0.3, 1.1, 2.5, 0.7])     # distinct values: every rule applies
    rune.check_grads(f, xs, order=2)
    rune.check_grads(lambda x: np.unique(x) * np.unique_values(x[::-1]), xs, order=2)
    np.testing.assert_allclose(rune.jvp(np.unique, (x,), (t,))[0], np.unique(x))
    np.testing.assert_allclose(rune.jvp(np.unique, (x,), (t,))[1], np.unique(x) ** 2)
    check_vmap(lambda x: np.unique(x, return_counts=True)[0], np.stack([x, x + 1]))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_vmap_is_vectorized(side):
    rng = np.random.default_rng(0)
    a = np.sort(rng.integers(0, 6, size=(4, 9)).astype(float), axis=1)   # with ties
    v = rng.integers(-1, 8, size=(4, 5)).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)   # no loop over the batch
        check_vmap(lambda a, v: np.searchsorted(a, v, side=side), a, v)
        check_vmap(lambda a: np.searchsorted(a, 2.0, side=side), a)
        check_vmap(lambda a, v: np.searchsorted(a, v, side=side), a, v[0], in_axes=(0, None))
        check_vmap(lambda a, v: np.searchsorted(a, v, side=side), a[0], v, in_axes=(None, 0))
    # interpolation through searchsorted: the derivative flows through the gathered values
    xs = np.linspace(0, 1, 7)

    def interp(y, t):
        k = np.clip(np.searchsorted(xs, t) - 1, 0, 5)
        s = (t - xs[k]) / (xs[k + 1] - xs[k])
        return y[k] * (1 - s) + y[k + 1] * s
    t = np.array([0.05, 0.5, 0.93])
    y = _x((7,))
    np.testing.assert_allclose(interp(y, t), np.interp(t, xs, y))
    rune.check_grads(lambda y: interp(y, t), y, order=2)
    check_vmap(lambda y: interp(y, t), np.stack([y, 2 * y]))


def test_vectorize_and_apply_along_axis():
    x = _x((2, 3))
    vf = np.vectorize(lambda t, s: t * np.sin(t) + s ** 2)
    f = lambda x: vf(x, x[0])   # noqa: E731
    np.testing.assert_allclose(f(x), x * np.sin(x) + x[0] ** 2)
    rune.check_grads(f, x, order=2)
    check_vmap(f, np.stack([x, 2 * x]))
    branchy = np.vectorize(lambda t: t ** 2 if t > 0.7 else -t, otypes=[np.float64])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        np.testing.assert_allclose(rune.grad(lambda x: np.sum(branchy(x)))(x),
                                   np.where(x > 0.7, 2 * x, -1.0))
    for axis in (0, 1, -1):
        g = lambda x: np.apply_along_axis(lambda r: r * np.sum(r), axis, x)   # noqa: E731
        np.testing.assert_allclose(g(x), np.apply_along_axis(lambda r: r * np.sum(r), axis, x))
        rune.check_grads(g, x, order=2)
        check_vmap(g, np.stack([x, 3 * x]))
        h = lambda x: np.apply_along_axis(lambda r: np.outer(r, r), axis, x)   # noqa: E731
        np.testing.assert_allclose(h(x), np.apply_along_axis(lambda r: np.outer(r, r), axis, x))
        rune.check_grads(h, x, order=2)
    with pytest.raises(TypeError, match="object"):
        rune.grad(lambda x: np.sum(x.astype(object)))(x)


def test_piecewise_and_select():
    x = np.linspace(-1.0, 1.0, 9) + 0.03
    pw = lambda x: np.piecewise(x, [x < -0.3, x > 0.4], [lambda t: t ** 2, np.sin, 0.5])  # noqa
    np.testing.assert_allclose(pw(x), np.piecewise(x, [x < -0.3, x > 0.4],
                                                   [lambda t: t ** 2, np.sin, 0.5]))
    rune.check_grads(pw, x, order=2)
    sel = lambda x: np.select([x < -0.3, x > 0.4], [x ** 2, np.sin(x)], x ** 3)   # noqa: E731
    rune.check_grads(sel, x, order=2)
    check_all_axes(sel, x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        check_vmap(pw, np.stack([x, x * 0.5]))


MASK = np.array([[True, False, True, True], [False, True, True, True],
                 [True, True, False, False]])
WHERE = {
    "sum": lambda x, ax: np.sum(x, axis=ax, where=MASK),
    "sum_initial": lambda x, ax: np.sum(x, axis=ax, where=MASK, initial=2.0),
    "prod": lambda x, ax: np.prod(x, axis=ax, where=MASK),
    "mean": lambda x, ax: np.mean(x, axis=ax, where=MASK),
    "var": lambda x, ax: np.var(x, axis=ax, where=MASK),
    "std_ddof1": lambda x, ax: np.std(x, axis=ax, where=MASK, ddof=1),
    "max": lambda x, ax: np.max(x, axis=ax, where=MASK, initial=0.1),
    "min": lambda x, ax: np.min(x, axis=ax, where=MASK, initial=5.0),
    "max_initial": lambda x, ax: np.max(x, axis=ax, initial=1.0),
    "nansum": lambda x, ax: np.nansum(x, axis=ax, where=MASK),
    "nanmean": lambda x, ax: np.nanmean(x, axis=ax, where=MASK),
    "nanvar": lambda x, ax: np.nanvar(x, axis=ax, where=MASK),
    "method": lambda x, ax: x.sum(axis=ax, where=MASK) + x.mean(axis=ax, where=MASK),
}


@pytest.mark.parametrize("name", sorted(WHERE))
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions_where(name, axis):
    f = WHERE[name]
    x = _x((3, 4))
    with np.errstate(all="ignore"):
        want = f(x, axis)
    np.testing.assert_allclose(rune.jvp(lambda x: f(x, axis), (x,), (x,))[0], want)
    if name == "nanmean" or name == "nanvar":
        x = x.copy()
        x[0, 2] = np.nan
        np.testing.assert_allclose(rune.jvp(lambda x: f(x, axis), (x,), (x,))[0], f(x, axis))
        x[0, 2] = 0.7
    rune.check_grads(lambda x: f(x, axis), x, order=2)
    check_all_axes(lambda x: f(x, axis), x)


def test_max_where_needs_initial():
    with pytest.raises(ValueError, match="initial"):
        rune.grad(lambda x: np.max(x, where=x > 0))(np.ones(3))


METHODS = ["inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("method", METHODS)
def test_quantile_every_method(method):
    x = _x((5, 7))
    for q in (0.0, 0.13, 0.5, 0.77, 1.0, [0.2, 0.9]):
        for axis in (None, 1):
            f = lambda x: np.quantile(x, q, axis=axis, method=method)   # noqa: E731
            np.testing.assert_allclose(rune.jvp(f, (x,), (x,))[0], f(x))
            p = lambda x: np.percentile(x, np.multiply(q, 100), axis=axis,   # noqa: E731
                                        method=method)
            np.testing.assert_allclose(rune.jvp(p, (x,), (x,))[0], p(x))
            xn = x.copy()
            xn[1, 3] = np.nan
            g = lambda x: np.nanquantile(x, q, axis=axis, method=method)   # noqa: E731
            np.testing.assert_allclose(rune.jvp(g, (xn,), (xn,))[0], g(xn))
    f = lambda x: np.quantile(x, [0.3, 0.8], axis=1, method=method)   # noqa: E731
    rune.check_grads(f, x, order=2)
    check_all_axes(f, x)


NAN_FAMILY = {
    "nanmedian": lambda x: np.nanmedian(x, axis=1),
    "nanpercentile": lambda x: np.nanpercentile(x, 30.0, axis=0),
    "nancumsum": lambda x: np.nancumsum(x, axis=1),
    "nancumprod": lambda x: np.nancumprod(x, axis=0),
    "nanargmax": lambda x: np.take_along_axis(x, np.nanargmax(x, axis=1)[:, None], 1),
    "nanargmin": lambda x: x.ravel()[np.nanargmin(x)],
    "nanmax": lambda x: np.nanmax(x, axis=0),
    "nanstd": lambda x: np.nanstd(x, axis=1, ddof=1),
    "nanprod": lambda x: np.nanprod(x, axis=1),
}


@pytest.mark.parametrize("name", sorted(NAN_FAMILY))
def test_nan_family(name):
    f = NAN_FAMILY[name]
    x = _x((3, 5))
    x[1, 2] = x[0, 4] = np.nan
    np.testing.assert_allclose(rune.jvp(f, (x,), (np.nan_to_num(x),))[0], f(x))
    g = rune.grad(lambda x: np.sum(f(x)))(x)
    assert g[1, 2] == 0 and g[0, 4] == 0
    check_vmap(f, np.stack([x, x * 2]))
    xf = np.nan_to_num(x, nan=0.9)
    rune.check_grads(f, xf, order=2)


def test_nanargmax_vectorized_and_nanmax_where():
    x = _x((3, 4))
    x[0, 1] = x[2, 3] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        check_vmap(np.nanargmax, x)
        check_vmap(lambda x: np.nanargmin(x, keepdims=True), x)
    x[1] = np.nan
    with pytest.raises(ValueError, match="All-NaN"):
        rune.vmap(np.nanargmax)(x)
    y = _x((3, 4), 2)
    f = lambda y: np.nanmax(y, axis=1, where=MASK, initial=0.1)   # noqa: E731
    np.testing.assert_allclose(rune.jvp(f, (y,), (y,))[0], f(y))
    rune.check_grads(f, y, order=2)
    check_all_axes(f, y)


def test_docstring_examples_run():
    import doctest
    import importlib
    for name in ("rune.numpy.ufunc_methods", "rune.numpy.counting", "rune.numpy.functional",
                 "rune.primitives.scatter"):
        result = doctest.testmod(importlib.import_module(name))
        assert result.attempted > 0 and result.failed == 0, name


@pytest.mark.parametrize("kw", [{"bins": [0.0, 0.5, 0.9, 1.6]}, {"bins": 3, "range": (0.3, 1.2)}])
def test_histogram_batched_values_is_vectorized(kw):
    a, w = _x((3, 20)), _x((3, 20), 1)
    a[0, :3] = [0.0, 1.6, 1.2]          # the edges themselves, and a value past the range
    with warnings.catch_warnings():
        warnings.simplefilter("error", rune.PerformanceWarning)
        check_vmap(lambda a, w: np.histogram(a, weights=w, **kw)[0], a, w)
        check_vmap(lambda a: np.histogram(a, weights=a, density=True, **kw)[0], a)
    rune.check_grads(lambda w: np.histogram(a[1], weights=w, **kw)[0] ** 2, w[1], order=2)


def test_flatten_is_a_copy_so_numpy_set_functions_do_not_sort_their_input():
    x = np.array([0.3, 1.2, -0.7, 2.1])

    def f(x):
        v = x[1:3]
        w = v.flatten()
        w.sort()                 # NumPy's _unique1d does this: it must not reach x
        return np.intersect1d(x, x[1:3]) + x[1:3]
    np.testing.assert_allclose(rune.jvp(f, (x,), (x,))[0], f(x))
    rune.check_grads(f, x, order=2)
