"""scipy.interpolate under every transformation: SciPy's values; derivatives in the data
values, the query points and (Hermite family, linear interp1d, np.interp) the abscissas
against finite differences, second order included; the Jacobian in ``y`` against SciPy's
own linear map (its interpolant of the identity's columns); vmap against a loop; the
refusals."""

import numpy as np
import pytest

import rune

si = pytest.importorskip("scipy.interpolate")
from scipy.interpolate import CubicSpline  # noqa: E402  (the user's idiom)
from helpers import check_vmap  # noqa: E402

RNG = np.random.default_rng(0)
X = np.sort(RNG.uniform(0, 5, 8))
Y = np.sin(X) + 0.3 * RNG.standard_normal(8)
Q = np.array([0.35, 1.7, 2.2, 3.3, 4.1])          # inside, away from the data points
Q = Q[(Q > X[0]) & (Q < X[-1])]
Q_OUT = np.array([X[0] - 0.7, 2.5, X[-1] + 0.4])


def same_values(f, *args):
    got = rune.jvp(f, args, tuple(np.zeros_like(a) for a in args))[0]
    np.testing.assert_allclose(got, f(*args), rtol=1e-11, atol=1e-12)


def jacobian_is_scipys_map(make, y, q):
    """``jacrev``/``jacfwd`` in ``y`` of ``make(y)(q)`` equal SciPy's interpolant of the
    identity's columns (the linear map itself), less its value at 0."""
    n = y.shape[0]
    base = make(np.zeros(n))(q)
    want = np.stack([make(np.eye(n)[j])(q) - base for j in range(n)], -1)
    for jac in (rune.jacrev, rune.jacfwd):
        np.testing.assert_allclose(jac(lambda y: make(y)(q))(y), want, rtol=1e-10,
                                   atol=1e-12)


def test_the_issue_example():
    x = np.arange(5.0)
    g = rune.grad(lambda y: CubicSpline(x, y)(2.5))(x ** 2)
    want = np.array([CubicSpline(x, e)(2.5) for e in np.eye(5)])
    np.testing.assert_allclose(g, want, rtol=1e-12)


BCS = ["not-a-knot", "natural", "clamped", ((1, 0.5), (2, -1.0)), "periodic"]


@pytest.mark.parametrize("bc", BCS, ids=str)
def test_cubic_spline(bc):
    y = Y.copy()
    if bc == "periodic":
        def f(y, q):       # the data, with the last value the first (SciPy requires it)
            return CubicSpline(X, np.concatenate([y, y[:1]]), bc_type=bc)(q)
        y = y[:-1]
    else:
        def f(y, q):
            return CubicSpline(X, y, bc_type=bc)(q)
    same_values(f, y, Q)
    rune.check_grads(f, y, Q, order=2)
    rune.check_grads(lambda y, q: f(y, q) ** 2, y, Q_OUT, order=2)   # extrapolated
    rune.check_grads(lambda y, q: CubicSpline(X, y if bc != "periodic" else np.concatenate(
        [y, y[:1]]), bc_type=bc).derivative(2)(q), y, Q, order=1)
    if bc != "periodic":
        jacobian_is_scipys_map(lambda y: CubicSpline(X, y, bc_type=bc), Y, Q)
        jacobian_is_scipys_map(lambda y: CubicSpline(X, y, bc_type=bc).derivative(), Y, Q)


def test_cubic_spline_periodic_last_value_reads_the_first():
    y = np.append(Y[:-1], Y[0])
    g = rune.grad(lambda y: CubicSpline(X, y, bc_type="periodic")(2.0))(y)
    free = rune.grad(lambda y: CubicSpline(X, np.append(y, y[0]), bc_type="periodic")(2.0))
    want = free(y[:-1])
    np.testing.assert_allclose(g, np.append(want, 0.0), rtol=1e-12)
    with pytest.raises(ValueError, match="identical"):
        rune.grad(lambda y: CubicSpline(X, y, bc_type="periodic")(2.0))(Y)


def test_cubic_spline_nd_axis_nu_extrapolate():
    Y2 = np.stack([Y, np.cos(X), X ** 2], 1)                  # (8, 3)
    f = lambda y, q: CubicSpline(X, y, axis=1)(q, 1)
    same_values(f, Y2.T.copy(), Q.reshape(-1, 1))
    rune.check_grads(f, Y2.T.copy(), Q.reshape(-1, 1), order=2)
    g = lambda y: CubicSpline(X, y, extrapolate=False)(Q_OUT)
    same_values(g, Y2)
    out = rune.jacrev(g)(Y2)        # outside: NaN whatever y is, so a zero derivative
    assert (out[0] == 0).all() and (out[2] == 0).all() and np.abs(out[1]).max() > 0.1
    h = lambda y, q: CubicSpline(X, y, bc_type="periodic" if False else "natural",
                                 extrapolate="periodic")(q)
    same_values(h, Y, Q_OUT)


@pytest.mark.parametrize("k", [0, 1, 2, 3, 5])
def test_make_interp_spline(k):
    q = Q + 0.01 if k == 0 else Q          # (a step function: away from its jumps)
    f = lambda y, q: si.make_interp_spline(X, y, k=k)(q)
    same_values(f, Y, q)
    rune.check_grads(f, Y, q, order=2 if k >= 3 else 1)
    jacobian_is_scipys_map(lambda y: si.make_interp_spline(X, y, k=k), Y, q)
    if k >= 2:
        d = lambda y, q: si.make_interp_spline(X, y, k=k).derivative()(q)
        same_values(d, Y, q)
        rune.check_grads(d, Y, q, order=1)
        rune.check_grads(lambda y, q: si.make_interp_spline(X, y, k=k)(q, k - 1), Y, q,
                         order=1)


@pytest.mark.parametrize("bc", ["natural", "clamped", ([(1, 2.0)], [(2, -1.0)]),
                                "periodic"], ids=str)
def test_make_interp_spline_boundary_conditions(bc):
    y = np.append(Y[:-1], Y[0]) if bc == "periodic" else Y
    make = lambda y: si.make_interp_spline(X, y, k=3, bc_type=bc)
    same_values(lambda y: make(y)(Q), y)
    if bc != "periodic":
        jacobian_is_scipys_map(make, y, Q)
    rune.check_grads(lambda q: make(y)(q), Q, order=2)


def test_make_lsq_spline_and_the_blocked_transpose():
    t = np.r_[[X[0]] * 4, X[3], [X[-1]] * 4]
    jacobian_is_scipys_map(lambda y: si.make_lsq_spline(X, y, t), Y, Q)
    n = 1100                       # the map's matrix is made in blocks past 32 MB
    x = np.linspace(0, 1, n)
    y = np.sin(7 * x)
    q = np.array([0.1234, 0.5, 0.987])
    g = rune.grad(lambda y: np.sum(CubicSpline(x, y)(q) * [1.0, -2.0, 3.0]))(y)
    v = RNG.standard_normal(n)
    dv = rune.jvp(lambda y: np.sum(CubicSpline(x, y)(q) * [1.0, -2.0, 3.0]), (y,), (v,))[1]
    np.testing.assert_allclose(g @ v, dv, rtol=1e-10)


@pytest.mark.parametrize("kind", ["pchip", "akima", "makima", "hermite"])
def test_hermite_family(kind):
    make = {"pchip": lambda x, y: si.PchipInterpolator(x, y),
            "akima": lambda x, y: si.Akima1DInterpolator(x, y),
            "makima": lambda x, y: si.Akima1DInterpolator(x, y, method="makima"),
            "hermite": lambda x, y: si.CubicHermiteSpline(x, y, np.cos(y))}[kind]
    f = lambda x, y, q: make(x, y)(q)
    same_values(f, X, Y, Q)
    rune.check_grads(f, X, Y, Q, order=2)
    d = lambda x, y, q: make(x, y).derivative()(q)
    same_values(d, X, Y, Q)
    rune.check_grads(d, X, Y, Q, order=1)
    flat = np.array([0.0, 1.0, 1.0, 1.0, 2.0, 1.5, 1.5, 3.0])   # ties and sign changes
    rune.check_grads(lambda y: make(X, y)(Q), flat + 1e-3 * np.arange(8), order=1)
    same_values(lambda y: make(X, y)(Q), flat)


def test_hermite_dydx_is_traced_too():
    f = lambda y, d, q: si.CubicHermiteSpline(X, y, d)(q)
    rune.check_grads(f, Y, np.cos(X), Q, order=2)


KINDS = ["linear", "nearest", "nearest-up", "previous", "next", "zero", "slinear",
         "quadratic", "cubic", 3]


@pytest.mark.parametrize("kind", KINDS)
def test_interp1d(kind):
    f = lambda y, q: si.interp1d(X, y, kind=kind)(q)
    same_values(f, Y, Q)
    rune.check_grads(f, Y, Q, order=1)
    Y2 = np.stack([Y, 2 * Y], 0)
    g = lambda y: si.interp1d(X[::-1], y[:, ::-1], kind=kind, bounds_error=False,
                              fill_value=(-1.0, 7.0))(Q_OUT)
    same_values(g, Y2)
    rune.check_grads(g, Y2, order=1)
    check_vmap(lambda y: si.interp1d(X, y, kind=kind)(Q), np.stack([Y, Y ** 2, -Y]))


def test_interp1d_extrapolation_and_abscissas():
    for kind, q in (("linear", Q_OUT), ("previous", Q_OUT[1:]), ("next", Q_OUT[:2]),
                    ("cubic", Q_OUT)):       # (previous: NaN below, next: NaN above)
        f = lambda y, q: si.interp1d(X, y, kind=kind, fill_value="extrapolate")(q)
        same_values(f, Y, Q_OUT)
        rune.check_grads(f, Y, q, order=1)
    f = lambda x, y: si.interp1d(x, y)(Q)
    rune.check_grads(f, X, Y, order=2)
    with pytest.raises(NotImplementedError, match="interp1d.*x"):
        rune.grad(lambda x: np.sum(si.interp1d(x, Y, kind="cubic")(Q)))(X)


def test_np_interp():
    f = lambda xp, fp, q: np.interp(q, xp, fp)
    rune.check_grads(f, X, Y, Q, order=2)
    rune.check_grads(lambda fp, q: np.interp(q, X, fp, left=-1.0, right=2.0), Y, Q_OUT)
    check_vmap(lambda fp, q: np.interp(q, X, fp), np.stack([Y, -Y]), np.stack([Q, Q + 0.1]))


GRID = (np.array([0.0, 0.7, 1.5, 2.0, 3.1]), np.array([-1.0, 0.0, 0.5, 2.0]))
V = RNG.standard_normal((5, 4, 2))
PTS = np.array([[0.3, -0.4], [2.6, 1.1], [1.2, 0.2]])


@pytest.mark.parametrize("method", ["linear", "nearest", "slinear", "pchip",
                                    "cubic_legacy"])
def test_regular_grid_interpolator(method):
    f = lambda v, p: si.RegularGridInterpolator(GRID, v, method=method)(p)
    v = V[..., 0] if method in ("pchip", "cubic_legacy") else V
    same_values(f, v, PTS)
    rune.check_grads(f, v, PTS, order=1)
    out = np.array([[-0.5, 0.0], [1.0, 0.1]])
    g = lambda v, p: si.RegularGridInterpolator(GRID, v, method=method, bounds_error=False,
                                                fill_value=None if method == "linear"
                                                else np.nan)(p)
    same_values(g, v, out)
    check_vmap(lambda v: f(v, PTS), np.stack([v, 2 * v, -v]))


def test_interpn_and_descending_grid():
    f = lambda v, p: si.interpn(GRID, v, p)
    same_values(f, V, PTS)
    rune.check_grads(f, V, PTS, order=1)
    g = lambda v: si.RegularGridInterpolator((GRID[0][::-1], GRID[1]), v)(PTS)
    same_values(g, V[::-1])
    rune.check_grads(g, V, order=1)


def test_ppoly_and_bspline_built_directly():
    c = RNG.standard_normal((4, 3, 2))
    for xb in (np.array([0.0, 1.0, 2.5, 4.0]), np.array([4.0, 2.5, 1.0, 0.0])):
        q = np.array([-0.5, 0.5, 1.0, 2.0, 3.9, 4.5])
        for nu in (0, 1, 3, 4):
            f = lambda c, q: si.PPoly(c, xb)(q, nu)
            same_values(f, c, q)
        rune.check_grads(lambda c, q: si.PPoly(c, xb, extrapolate=False)(q[[1, 3, 4]]), c, q,
                         order=2)
    t = np.r_[[0.0] * 4, 1.3, 2.0, [4.0] * 4]
    cb = RNG.standard_normal((6, 2))
    q = np.array([-0.3, 0.5, 1.9, 3.9, 4.2])
    for nu in (0, 1, 2, 4):
        same_values(lambda c, q: si.BSpline(t, c, 3)(q, nu), cb, q)
    same_values(lambda c, q: si.BSpline(t, c, 3, extrapolate=False)(q), cb, q)
    same_values(lambda c, q: si.BSpline(t, c, 3, extrapolate="periodic")(q), cb, q)
    rune.check_grads(lambda c, q: si.BSpline(t, c, 3).derivative()(q[1:-1]), cb, q, order=2)


@pytest.mark.parametrize("name", ["cubic", "make_interp_spline", "pchip", "bspline_nu"])
def test_vmap_against_loop(name):
    f = {"cubic": lambda y, q: CubicSpline(X, y)(q),
         "make_interp_spline": lambda y, q: si.make_interp_spline(X, y, k=2)(q),
         "pchip": lambda y, q: si.PchipInterpolator(X, y)(q),
         "bspline_nu": lambda y, q: si.make_interp_spline(X, y)(q, 2)}[name]
    ys = np.stack([Y, Y ** 2, np.cos(Y)])
    qs = np.stack([Q, Q + 0.05, Q - 0.05])
    check_vmap(f, ys, qs)
    check_vmap(f, ys, Q, in_axes=(0, None))
    check_vmap(f, Y, qs.T.copy(), in_axes=(None, 1))


def test_hessians_and_jacobians_agree():
    f = lambda q: np.sum(CubicSpline(X, Y)(q) ** 3)
    h = rune.hessian(f)(Q)
    np.testing.assert_allclose(h, np.diag(np.diag(h)), atol=1e-12)
    g = lambda y: si.PchipInterpolator(X, y)(Q)
    np.testing.assert_allclose(rune.jacfwd(g)(Y), rune.jacrev(g)(Y), rtol=1e-12)


def test_refusals_name_the_call():
    with pytest.raises(NotImplementedError, match="CubicSpline.*x"):
        rune.grad(lambda x: CubicSpline(x, Y)(2.0))(X)
    with pytest.raises(NotImplementedError, match="make_interp_spline.*t"):
        rune.grad(lambda t: si.make_interp_spline(X, Y, t=t)(2.0))(
            np.r_[[X[0]] * 4, X[2:-2], [X[-1]] * 4])
    with pytest.raises(NotImplementedError, match="cubic"):
        rune.grad(lambda v: np.sum(si.RegularGridInterpolator(GRID, v, method="cubic")(PTS)))(
            V[..., 0])
    bp = si.BPoly(np.ones((2, 1)), [0.0, 1.0])
    with pytest.raises(NotImplementedError, match="BPoly"):
        rune.grad(lambda q: bp(q))(0.5)
    with pytest.raises(ValueError, match="strictly increasing"):
        rune.grad(lambda x: si.PchipInterpolator(x, Y)(2.0))(X[::-1].copy())


def test_later_writes_into_the_inputs_change_nothing():
    x = X.copy()
    q = Q.copy()
    _, pull = rune.vjp(lambda y: CubicSpline(x, y)(q), Y)
    _, pull2 = rune.vjp(lambda y: si.make_interp_spline(x, y, k=2)(q), Y)
    want, want2 = pull(np.ones_like(Q))[0], pull2(np.ones_like(Q))[0]
    x[:] = np.arange(8.0)
    q[:] = 0.0
    np.testing.assert_array_equal(pull(np.ones_like(Q))[0], want)
    np.testing.assert_array_equal(pull2(np.ones_like(Q))[0], want2)
    np.testing.assert_allclose(want, [CubicSpline(X, e)(Q).sum() for e in np.eye(8)],
                               rtol=1e-12)


def test_untraced_objects_are_scipys():
    seen = []

    def f(q):
        spline = CubicSpline(X, Y)              # nothing traced: SciPy's own object
        seen.append(type(spline.c))
        return spline(q)
    np.testing.assert_allclose(rune.jvp(f, (Q,), (np.ones_like(Q),))[0], CubicSpline(X, Y)(Q))
    assert seen == [np.ndarray]
    assert type(CubicSpline(X, Y)(Q)) is np.ndarray


def test_docstring_examples_run():
    import doctest
    import rune.scipy.interpolate
    import rune.scipy._splines
    for module in (rune.scipy.interpolate, rune.scipy._splines):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__
