"""Reductions: values against NumPy, derivatives (finite differences, second order),
ties, zeros in products, batching against a loop, nesting."""

import numpy as np
import pytest

import rune
from helpers import check_all_axes

# (shape, axis, keepdims): None, int, negative and tuple axes, keepdims
AXIS_CASES = [
    ((4,), None, False),
    ((3, 4), None, True),
    ((3, 4), 0, False),
    ((3, 4), -1, True),
    ((2, 3, 4), (0, 2), False),
    ((2, 3, 4), (-1, 0), True),
    ((2, 3, 4), 1, False),
]
AXIS_IDS = [f"{s}-{a}-{'keep' if k else 'drop'}" for s, a, k in AXIS_CASES]


def _x(shape, seed=0, lo=-1.5, hi=1.5):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def _with_nans(x, seed=1):
    """``x`` with about a quarter NaNs, never a whole slice of the last axis."""
    x = x.copy()
    mask = np.random.default_rng(seed).uniform(size=x.shape) < 0.25
    if x.ndim:
        mask[..., 0] = False
    x[mask] = np.nan
    return x


AXIS_FUNCS = {
    "sum": lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
    "mean": lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims),
    "prod": lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
    "max": lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
    "amin": lambda x, axis, keepdims: np.amin(x, axis=axis, keepdims=keepdims),
    "var": lambda x, axis, keepdims: np.var(x, axis=axis, keepdims=keepdims),
    "std_ddof1": lambda x, axis, keepdims: np.std(x, axis=axis, ddof=1, keepdims=keepdims),
    "ptp": lambda x, axis, keepdims: np.ptp(x, axis=axis, keepdims=keepdims),
    "add.reduce": lambda x, axis, keepdims: np.add.reduce(x, axis=axis, keepdims=keepdims),
    "multiply.reduce": lambda x, axis, keepdims: np.multiply.reduce(x, axis=axis,
                                                                    keepdims=keepdims),
    "logaddexp.reduce": lambda x, axis, keepdims: np.logaddexp.reduce(x, axis=axis,
                                                                      keepdims=keepdims),
    "average": lambda x, axis, keepdims: np.average(x, axis=axis, keepdims=keepdims),
    "method.prod": lambda x, axis, keepdims: x.prod(axis=axis, keepdims=keepdims),
    "median": lambda x, axis, keepdims: np.median(x, axis=axis, keepdims=keepdims),
    "quantile": lambda x, axis, keepdims: np.quantile(x, [0.3, 0.8], axis=axis,
                                                      keepdims=keepdims),
    "percentile": lambda x, axis, keepdims: np.percentile(x, 65.0, axis=axis,
                                                          keepdims=keepdims),
}

NAN_FUNCS = {
    "nansum": lambda x, axis, keepdims: np.nansum(x, axis=axis, keepdims=keepdims),
    "nanmean": lambda x, axis, keepdims: np.nanmean(x, axis=axis, keepdims=keepdims),
    "nanprod": lambda x, axis, keepdims: np.nanprod(x, axis=axis, keepdims=keepdims),
    "nanmax": lambda x, axis, keepdims: np.nanmax(x, axis=axis, keepdims=keepdims),
    "nanmin": lambda x, axis, keepdims: np.nanmin(x, axis=axis, keepdims=keepdims),
    "nanvar": lambda x, axis, keepdims: np.nanvar(x, axis=axis, keepdims=keepdims),
    "nanstd": lambda x, axis, keepdims: np.nanstd(x, axis=axis, ddof=1, keepdims=keepdims),
    "nanmedian": lambda x, axis, keepdims: np.nanmedian(x, axis=axis, keepdims=keepdims),
    "nanquantile": lambda x, axis, keepdims: np.nanquantile(x, [0.2, 0.9], axis=axis,
                                                            keepdims=keepdims),
    "nanpercentile": lambda x, axis, keepdims: np.nanpercentile(x, 40, axis=axis,
                                                                keepdims=keepdims),
}


def _values_match(f, x):
    """Under a transformation the value is NumPy's."""
    want = f(x)
    got, _ = rune.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.shape(got) == np.shape(want)


@pytest.mark.parametrize("name", sorted(AXIS_FUNCS))
@pytest.mark.parametrize("shape,axis,keepdims", AXIS_CASES, ids=AXIS_IDS)
def test_axis_reductions(name, shape, axis, keepdims):
    fn = AXIS_FUNCS[name]
    x = _x(shape)
    if name == "logaddexp.reduce" and axis is None:
        x = x * 20.0      # large values: the shifted form does not overflow
    f = lambda x: fn(x, axis, keepdims)   # noqa: E731
    _values_match(f, x)
    rune.check_grads(f, x, order=2)


@pytest.mark.parametrize("name", sorted(NAN_FUNCS))
@pytest.mark.parametrize("shape,axis,keepdims", AXIS_CASES, ids=AXIS_IDS)
def test_nan_reductions(name, shape, axis, keepdims):
    fn = NAN_FUNCS[name]
    x = _with_nans(_x(shape))
    f = lambda x: fn(x, axis, keepdims)   # noqa: E731
    _values_match(f, x)
    rune.check_grads(f, x, order=2)
    g = rune.grad(lambda x: np.sum(f(x)))(x)
    assert np.all(g[np.isnan(x)] == 0)


def test_nan_functions_all_nan_slices():
    x = np.array([[np.nan, np.nan], [1.0, np.nan]])
    for fn in (np.nanmax, np.nanmin, np.nanmedian):
        with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
            want = fn(x, axis=1)
        got = rune.jvp(lambda x: fn(x, axis=1), (x,), (np.ones_like(x),))[0]
        np.testing.assert_array_equal(got, want)
    g = rune.grad(lambda x: np.nansum(np.nanmax(x, axis=1)[1:]))(x)
    np.testing.assert_array_equal(g, [[0, 0], [1, 0]])


# --------------------------------------------------------------------------
# max/min ties, exact values
# --------------------------------------------------------------------------

def test_max_ties_split_evenly():
    np.testing.assert_array_equal(rune.grad(np.max)(np.array([1.0, 3.0, 3.0])), [0, .5, .5])
    np.testing.assert_array_equal(rune.grad(np.min)(np.array([2.0, 2.0, 2.0, 5.0])),
                                  [1 / 3, 1 / 3, 1 / 3, 0])
    x = np.array([[1.0, 4.0, 4.0], [2.0, 0.0, 2.0]])
    g = rune.grad(lambda x: np.sum(np.amax(x, axis=1) * np.array([1.0, 10.0])))(x)
    np.testing.assert_array_equal(g, [[0, .5, .5], [5, 0, 5]])
    t = rune.jvp(lambda x: np.max(x, axis=0), (x,), (np.ones_like(x),))[1]
    np.testing.assert_array_equal(t, [1, 1, 1])
    assert rune.jvp(np.max, (np.array([3.0, 3.0]),), (np.array([1.0, 0.0]),))[1] == 0.5


def test_reduction_methods_and_out_refused():
    x = _x((3, 4))
    g = rune.grad(lambda x: x.cumsum(axis=0).prod() + x.cumprod(axis=1).sum())(x)
    rune.check_grads(lambda x: x.cumsum(axis=0).prod() + x.cumprod(axis=1).sum(), x)
    assert g.shape == x.shape
    out0, out12 = np.zeros(()), np.zeros(12)     # made outside the functions (arrays
    with pytest.raises(NotImplementedError, match="out="):      # made inside take it)
        rune.grad(lambda x: np.prod(x, out=out0))(x)
    with pytest.raises(NotImplementedError, match="out="):
        rune.grad(lambda x: np.sum(np.cumsum(x, out=out12)))(x)
    # where= is a mask (rune.numpy.masked); out= into a plain array stays refused above
    rune.check_grads(lambda x: np.prod(x, where=x > 0.5), x, order=2)


# --------------------------------------------------------------------------
# prod with zeros: the product of the other elements, exact
# --------------------------------------------------------------------------

def _others(x):
    return np.array([np.prod(np.delete(x, i)) for i in range(len(x))])


def _hessian_of_prod(x):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                h[i, j] = np.prod(np.delete(x, [i, j]))
    return h


@pytest.mark.parametrize("x", [
    [2.0, 0.0, 3.0, -1.5],           # one zero
    [2.0, 0.0, 3.0, 0.0, 1.5],       # two zeros
    [0.0, 0.0, 0.0],                 # all zeros
    [0.0],
    [1.5, -2.0, 0.5],                # none
], ids=["one-zero", "two-zeros", "all-zeros", "single", "no-zero"])
def test_prod_with_zeros_exact(x):
    x = np.array(x)
    np.testing.assert_allclose(rune.grad(np.prod)(x), _others(x), rtol=1e-14)
    np.testing.assert_allclose(rune.hessian(np.prod)(x), _hessian_of_prod(x), rtol=1e-14)
    np.testing.assert_allclose(rune.jacfwd(rune.grad(np.prod))(x), _hessian_of_prod(x),
                               rtol=1e-14)
    rune.check_grads(np.prod, x, order=2)
    # a rank-2 input, zeros in several rows, reduced over each axis
    m = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [1.5, 2.0, -1.0]])
    for axis in (0, 1, (0, 1)):
        rune.check_grads(lambda m: np.prod(m, axis=axis), m, order=2)


def test_prod_third_order_at_zero():
    # d3/dx0 dx1 dx2 of x0 x1 x2 x3 = x3, also where x0 == x1 == 0
    x = np.array([0.0, 0.0, 2.0, 5.0])
    h3 = rune.jacfwd(rune.hessian(np.prod))(x)
    assert h3[0, 1, 2] == 5.0 and h3[0, 1, 3] == 2.0 and h3[2, 3, 0] == 0.0


def test_prod_integer_and_dtype():
    x = np.array([1.0, 2.0, 3.0])
    assert rune.grad(lambda x: np.prod(x, dtype=np.float64))(x).tolist() == [6, 3, 2]
    i = np.arange(1, 5, dtype=np.int8)
    got = rune.vmap(lambda i: np.prod(i))(np.stack([i, i]))
    np.testing.assert_array_equal(got, [24, 24])
    assert got.dtype == np.prod(i).dtype


# --------------------------------------------------------------------------
# cumsum, cumprod, accumulate, cumulative_*
# --------------------------------------------------------------------------

CUM_CASES = [((5,), None), ((3, 4), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1)]
CUM_FUNCS = {
    "cumsum": lambda x, axis: np.cumsum(x, axis=axis),
    "cumprod": lambda x, axis: np.cumprod(x, axis=axis),
    "nancumsum": lambda x, axis: np.nancumsum(x, axis=axis),
    "nancumprod": lambda x, axis: np.nancumprod(x, axis=axis),
    "add.accumulate": lambda x, axis: np.add.accumulate(x, axis=0 if axis is None else axis),
    "multiply.accumulate": lambda x, axis: np.multiply.accumulate(
        x, axis=0 if axis is None else axis),
    "cumulative_sum": lambda x, axis: np.cumulative_sum(
        x, axis=axis if x.ndim > 1 or axis is not None else None, include_initial=True)
    if x.ndim == 1 or axis is not None else np.cumulative_sum(np.ravel(x)),
    "cumulative_prod": lambda x, axis: np.cumulative_prod(
        x, axis=axis if x.ndim > 1 or axis is not None else None, include_initial=True)
    if x.ndim == 1 or axis is not None else np.cumulative_prod(np.ravel(x)),
}


@pytest.mark.parametrize("name", sorted(CUM_FUNCS))
@pytest.mark.parametrize("shape,axis", CUM_CASES, ids=[f"{s}-{a}" for s, a in CUM_CASES])
def test_cumulative(name, shape, axis):
    if name.startswith("cumulative") and not hasattr(np, name):
        pytest.skip(f"np.{name} is not in this NumPy")
    fn = CUM_FUNCS[name]
    x = _x(shape)
    if name.startswith("nan"):
        x = _with_nans(x)
    f = lambda x: fn(x, axis)   # noqa: E731
    _values_match(f, x)
    rune.check_grads(f, x, order=2)


@pytest.mark.parametrize("n", [1, 2, 3, 8, 13])
def test_cumprod_with_zeros_exact(n):
    rng = np.random.default_rng(n)
    x = rng.uniform(0.5, 1.5, n) * rng.choice([-1, 1], n)
    x[rng.uniform(size=n) < 0.35] = 0.0
    if n >= 3:
        x[1] = 0.0
    # Jacobian by hand: d y_i / d x_k = prod_{j <= i, j != k} x_j for k <= i
    jac = np.zeros((n, n))
    for i in range(n):
        for k in range(i + 1):
            jac[i, k] = np.prod(np.delete(x[:i + 1], k))
    np.testing.assert_allclose(rune.jacrev(np.cumprod)(x), jac, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(rune.jacfwd(np.cumprod)(x), jac, rtol=1e-13, atol=1e-300)
    rune.check_grads(np.cumprod, x, order=2)
    # second derivatives exact too: the Hessian of the last element is prod's
    np.testing.assert_allclose(rune.hessian(lambda x: np.cumprod(x)[-1])(x),
                               _hessian_of_prod(x), rtol=1e-13, atol=1e-300)


def test_cumsum_integer_and_bool():
    i = np.array([[1, 2], [3, 4]], dtype=np.int8)
    got = rune.vmap(np.cumsum)(i)
    np.testing.assert_array_equal(got, np.stack([np.cumsum(r) for r in i]))
    assert got.dtype == np.cumsum(i[0]).dtype
    b = np.array([[True, False, True]])
    np.testing.assert_array_equal(rune.vmap(np.cumsum)(b), [[1, 1, 2]])


def test_accumulate_and_cumulative_errors():
    x = _x((2, 3))
    with pytest.raises(np.exceptions.AxisError):
        rune.grad(lambda x: np.sum(np.cumsum(x, axis=2)))(x)
    if hasattr(np, "cumulative_sum"):
        with pytest.raises(ValueError, match="axis"):
            rune.grad(lambda x: np.sum(np.cumulative_sum(x)))(x)


# --------------------------------------------------------------------------
# logaddexp.reduce
# --------------------------------------------------------------------------

def test_logaddexp_reduce_is_stable():
    x = np.array([1000.0, 1000.0, -np.inf])
    val, g = rune.value_and_grad(lambda x: np.logaddexp.reduce(x))(x)
    assert val == pytest.approx(1000.0 + np.log(2.0))
    np.testing.assert_allclose(g, [0.5, 0.5, 0.0])
    x = _x((3, 4)) * 300
    g = rune.grad(lambda x: np.sum(np.logaddexp.reduce(x, axis=1)))(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(g, e / e.sum(axis=1, keepdims=True), rtol=1e-12)
    # ties at the maximum do not split anything: softmax
    g = rune.grad(lambda x: np.logaddexp.reduce(x))(np.array([2.0, 2.0, 0.0]))
    np.testing.assert_allclose(g, np.exp([2.0, 2.0, 0.0]) / np.exp([2.0, 2.0, 0.0]).sum())


# --------------------------------------------------------------------------
# average
# --------------------------------------------------------------------------

def test_average_weights_and_returned():
    x = _x((2, 3, 4))
    w1 = np.array([0.5, 1.0, 2.0, 1.5])
    w2 = _x((4, 2), seed=3, lo=0.5, hi=2.0)        # for axis=(2, 0): shape (4, 2)
    wf = _x((2, 3, 4), seed=4, lo=0.5, hi=2.0)
    cases = [
        lambda x, w: np.average(x, axis=-1, weights=w1),
        lambda x, w: np.average(x, axis=(2, 0), weights=w2, keepdims=True),
        lambda x, w: np.average(x, weights=wf),
        lambda x, w: np.average(x, axis=1, weights=w * 0 + wf),
        lambda x, w: np.average(x, axis=-1, weights=w)[0],
        lambda x, w: np.average(x, axis=-1, weights=w, returned=True),
        lambda x, w: np.average(x, axis=None, returned=True),
        lambda x, w: np.average(x, axis=(0, 1), returned=True, keepdims=True),
    ]
    for f in cases:
        want = f(x, w1)
        got = rune.jvp(lambda x, w: f(x, w), (x, w1), (x, w1))[0]
        rune.tree.map(lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-12), got, want)
        rune.check_grads(f, x, w1, order=2)
    with pytest.raises(TypeError, match="Axis must be specified"):
        rune.grad(lambda x: np.sum(np.average(x, weights=w1)))(x)
    with pytest.raises(ValueError, match="consistent"):
        rune.grad(lambda x: np.sum(np.average(x, axis=0, weights=w1)))(x)
    with pytest.raises(ZeroDivisionError):
        rune.grad(lambda x: np.sum(np.average(x, axis=-1, weights=w1 * 0)))(x)


# --------------------------------------------------------------------------
# median and quantiles
# --------------------------------------------------------------------------

METHODS = ["linear", "lower", "higher", "midpoint", "nearest", "weibull", "hazen",
           "median_unbiased", "normal_unbiased", "interpolated_inverted_cdf",
           "averaged_inverted_cdf"]


@pytest.mark.parametrize("method", METHODS)
def test_quantile_methods_match_numpy(method):
    x = _x((3, 7))
    q = np.array([0.0, 0.1, 0.5, 0.77, 1.0])
    for f in (lambda x: np.quantile(x, q, axis=1, method=method),
              lambda x: np.quantile(x, 0.3, method=method, keepdims=True),
              lambda x: np.nanquantile(_with_nans_traced(x), q, axis=-1, method=method)):
        _values_match(f, x)
        rune.check_grads(f, x, order=2)


def _with_nans_traced(x):
    return np.where(np.arange(np.shape(x)[-1]) % 3 == 1, np.nan, x)


def test_quantile_gradient_in_q_and_ties():
    x = _x((6,))
    rune.check_grads(lambda q: np.quantile(x, q), np.array([0.13, 0.61]), order=2)
    rune.check_grads(lambda x, q: np.percentile(x, q, axis=0), _x((5, 2)), 37.0, order=2)
    # median of an even count: half to each middle element
    g = rune.grad(np.median)(np.array([4.0, 1.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [0, 0, .5, .5])
    g = rune.grad(np.median)(np.array([5.0, 1.0, 3.0]))
    np.testing.assert_array_equal(g, [0, 0, 1])
    with pytest.raises(ValueError, match="range"):
        rune.grad(lambda x: np.quantile(x, 1.5))(x)
    with pytest.raises(ValueError, match="method"):
        rune.grad(lambda x: np.quantile(x, 0.5, method="no_such_method"))(x)


def test_median_nan_propagates():
    x = np.array([[1.0, np.nan, 2.0], [3.0, 1.0, 2.0]])
    with np.errstate(all="ignore"):
        want = np.median(x, axis=1)
    got = rune.jvp(lambda x: np.median(x, axis=1), (x,), (np.ones_like(x),))[0]
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------
# diff, ediff1d
# --------------------------------------------------------------------------

def test_diff_and_ediff1d():
    x = _x((3, 5))
    p = _x((3, 1), seed=5)
    cases = [
        lambda x: np.diff(x),
        lambda x: np.diff(x, n=2, axis=0),
        lambda x: np.diff(x, n=3, axis=-1, prepend=0.5, append=p),
        lambda x: np.diff(x, n=0),
        lambda x: np.diff(x, axis=0, prepend=x[:1] * 2),
        lambda x: np.ediff1d(x),
        lambda x: np.ediff1d(x, to_begin=[1.0, 2.0], to_end=x[0, :2]),
    ]
    for f in cases:
        _values_match(f, x)
        rune.check_grads(f, x, order=2)
    b = np.array([True, False, False])
    np.testing.assert_array_equal(rune.vmap(np.diff)(np.stack([b, b])), [np.diff(b)] * 2)
    with pytest.raises(ValueError, match="order"):
        rune.grad(lambda x: np.sum(np.diff(x, n=-1)))(x)


# --------------------------------------------------------------------------
# vmap against a loop (batch axis first, last, middle, and vmap of vmap)
# --------------------------------------------------------------------------

BATCH_FUNCS = {
    "prod": lambda x: np.prod(x, axis=0),
    "prod-tuple": lambda x: np.prod(x, axis=(0, 1), keepdims=True),
    "max": lambda x: np.max(x, axis=-1),
    "cumsum": lambda x: np.cumsum(x, axis=1),
    "cumsum-none": lambda x: np.cumsum(x),
    "cumprod": lambda x: np.cumprod(x, axis=0),
    "cumprod-zero": lambda x: np.cumprod(x * np.array([1.0, 0.0, 1.0, 1.0]), axis=-1),
    "logaddexp.reduce": lambda x: np.logaddexp.reduce(x, axis=1),
    "multiply.accumulate": lambda x: np.multiply.accumulate(x, axis=1),
    "average": lambda x: np.average(x, axis=1, weights=np.array([1.0, 2.0, 3.0, 4.0])),
    "nanmean": lambda x: np.nanmean(np.where(x > 1.0, np.nan, x), axis=0),
    "nanvar": lambda x: np.nanvar(np.where(x > 1.0, np.nan, x), axis=1),
    "nanmax": lambda x: np.nanmax(np.where(x > 1.0, np.nan, x), axis=1),
    "median": lambda x: np.median(x, axis=0),
    "quantile": lambda x: np.quantile(x, [0.25, 0.5], axis=1),
    "nanquantile": lambda x: np.nanquantile(np.where(x > 1.0, np.nan, x), 0.4, axis=1),
    "diff": lambda x: np.diff(x, axis=1, prepend=0.0),
    "ediff1d": lambda x: np.ediff1d(x, to_end=x[0, 0]),
}


@pytest.mark.parametrize("name", sorted(BATCH_FUNCS))
def test_batching(name):
    check_all_axes(BATCH_FUNCS[name], _x((3, 4)))


def test_batched_quantile_q():
    x = _x((5,))
    qs = np.array([0.1, 0.45, 0.9])
    got = rune.vmap(lambda q: np.quantile(x, q))(qs)
    np.testing.assert_allclose(got, np.quantile(x, qs))
    got = rune.vmap(lambda x: np.nanquantile(x, 0.5))(_with_nans(_x((3, 6))))
    np.testing.assert_allclose(got, np.nanquantile(_with_nans(_x((3, 6))), 0.5, axis=1))


# --------------------------------------------------------------------------
# Nesting
# --------------------------------------------------------------------------

NEST_FUNCS = {
    "prod": lambda x: np.prod(x),
    "cumprod": lambda x: np.sum(np.cumprod(x) ** 2),
    "cumsum": lambda x: np.sum(np.sin(np.cumsum(x))),
    "logsumexp": lambda x: np.logaddexp.reduce(x),
    "nanstd": lambda x: np.nanstd(x),
    "quantile": lambda x: np.sum(np.quantile(x * x, [0.2, 0.7])),
}


@pytest.mark.parametrize("name", sorted(NEST_FUNCS))
def test_nesting(name):
    f = NEST_FUNCS[name]
    xs = _x((3, 5), seed=7)
    xs[0, 2] = 0.0
    # vmap of grad against a loop
    got = rune.vmap(rune.grad(f))(xs)
    want = np.stack([rune.grad(f)(x) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    x = xs[1]
    v = _x((5,), seed=8)
    h = rune.hessian(f)(x)
    # jvp of grad = Hessian-vector product
    _, hv = rune.jvp(rune.grad(f), (x,), (v,))
    np.testing.assert_allclose(hv, h @ v, rtol=1e-10, atol=1e-12)
    # grad of grad (of a scalar projection) and jacrev of jacfwd agree with the Hessian
    gg = rune.grad(lambda x: np.sum(rune.grad(f)(x) * v))(x)
    np.testing.assert_allclose(gg, h.T @ v, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rune.jacrev(rune.jacfwd(f))(x), h, rtol=1e-10, atol=1e-12)
    # per-example Hessians
    hs = rune.vmap(rune.hessian(f))(xs)
    np.testing.assert_allclose(hs, np.stack([rune.hessian(f)(x) for x in xs]),
                               rtol=1e-10, atol=1e-12)


def test_float32_stays_float32():
    x = _x((3, 4)).astype(np.float32)
    x[1, 2] = np.nan
    fs = [lambda x: np.nanmean(x), lambda x: np.nanvar(x, axis=0), lambda x: np.nanstd(x),
          lambda x: np.nanmedian(x, axis=1), lambda x: np.nanpercentile(x, 30),
          lambda x: np.prod(np.nan_to_num(x)), lambda x: np.cumprod(np.nan_to_num(x)),
          lambda x: np.median(np.nan_to_num(x)), lambda x: np.quantile(np.nan_to_num(x), 0.3),
          lambda x: np.logaddexp.reduce(np.nan_to_num(x), axis=1)]
    for f in fs:
        want = f(x)
        got = rune.jvp(f, (x,), (np.ones_like(x),))[0]
        assert np.asarray(got).dtype == np.asarray(want).dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert rune.grad(lambda x: np.sum(f(x)))(x).dtype == np.float32
