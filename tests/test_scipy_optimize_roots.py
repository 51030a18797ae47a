"""scipy.optimize's root finders, least_squares and curve_fit under rune (issue 26).

References: closed forms (cube roots, the least-squares formula ``pinv(A)``), the implicit
function theorem written out by hand at SciPy's solution, and central differences of
problems polished to rounding.  Tolerances follow from the solution's accuracy.
"""

import warnings

import numpy as np
import pytest

import rune

so = pytest.importorskip("scipy.optimize")
from rune.scipy.implicit import NotConvergedWarning  # noqa: E402  (needs SciPy)


def cube_root_slope(k):
    return k ** (-2 / 3) / 3


# --------------------------------------------------------------------------
# Systems: F(x, k) = (x0^3 + x1 - k, x1 - x0 - k / 5); dx/dk = -J^{-1} dF/dk
# --------------------------------------------------------------------------

def system(x, k):
    return [x[0] ** 3 + x[1] - k, x[1] - x[0] - 0.2 * k]


def system_dk(x):
    jac = np.array([[3 * x[0] ** 2, 1.0], [-1.0, 1.0]])
    return np.linalg.solve(jac, [1.0, 0.2])


ROOT_METHODS = ["hybr", "lm", "broyden1", "broyden2", "anderson", "diagbroyden", "krylov",
                "df-sane"]


@pytest.mark.parametrize("method", ROOT_METHODS)
def test_root_every_method(method):
    tol = 1e-10 if method == "df-sane" else 1e-12      # (df-sane stops short of 1e-12 here)

    def solve(k):
        return so.root(system, np.ones(2), args=(k,), method=method, tol=tol)
    res = solve(1.0)
    assert res.success
    ref = system_dk(res.x)
    np.testing.assert_allclose(rune.jacfwd(lambda k: solve(k).x)(1.0), ref, rtol=1e-12)
    np.testing.assert_allclose(rune.jacrev(lambda k: solve(k).x)(1.0), ref, rtol=1e-12)
    x, _ = rune.jvp(lambda k: solve(k).x, (1.0,), (1.0,))
    assert np.array_equal(x, res.x)
    # the residual at the root stays zero to first order
    dfun = rune.jacfwd(lambda k: solve(k).fun)(1.0)
    assert np.abs(dfun).max() < 1e-6


@pytest.mark.parametrize("method", ["linearmixing", "excitingmixing"])
def test_root_methods_that_fail_here_warn(method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = so.root(system, np.ones(2), args=(1.0,), method=method)
    assert not res.success
    with pytest.warns(NotConvergedWarning, match=r"scipy\.optimize\.root did not converge"):
        rune.jacfwd(lambda k: so.root(system, np.ones(2), args=(k,), method=method).x)(1.0)


def test_root_second_order_and_shapes():
    def cube_root(k):
        return so.root(lambda x: x ** 3 - k, np.ones((2, 1)), tol=1e-12).x
    k = np.array([2.0, 5.0])
    x = cube_root(k)
    assert x.shape == (2,)        # hybr works on the flattened vector, as SciPy does
    delta = np.max(np.abs(x - k ** (1 / 3)) / k ** (1 / 3)) + 1e-16
    np.testing.assert_allclose(np.diagonal(rune.jacfwd(cube_root)(k)), cube_root_slope(k),
                               rtol=100 * delta)
    h = rune.hessian(lambda k: np.sum(cube_root(k)))(k)
    np.testing.assert_allclose(np.diagonal(h), -2 / 9 * k ** (-5 / 3), rtol=100 * delta)
    # a nonlinear method keeps x0's shape, as SciPy does
    xs = so.root(lambda x, k: x ** 3 - k, np.ones((1, 2)), args=(k.reshape(1, 2),),
                 method="broyden1", tol=1e-12).x
    np.testing.assert_allclose(xs[0], k ** (1 / 3), rtol=1e-14)
    jac = rune.jacrev(lambda k: so.root(lambda x: x ** 3 - k, np.ones((1, 2)),
                                        method="broyden1", tol=1e-12).x)(k.reshape(1, 2))
    assert jac.shape == (1, 2, 1, 2)
    np.testing.assert_allclose(jac[0, :, 0, :], np.diag(1 / (3 * xs[0] ** 2)), rtol=1e-12)


def test_root_singular_jacobian_is_an_error():
    with pytest.raises(np.linalg.LinAlgError, match=r"scipy\.optimize\.root: the Jacobian "
                                                     r"at the solution is singular"):
        rune.grad(lambda k: so.root(lambda x: [x[0] + x[1] - k, 2 * x[0] + 2 * x[1] - 2 * k],
                                    np.zeros(2), method="lm").x[0])(1.0)


def test_fsolve():
    x = so.fsolve(system, np.ones(2), args=(1.0,), xtol=1e-13)
    ref = system_dk(x)
    np.testing.assert_allclose(rune.jacfwd(lambda k: so.fsolve(system, np.ones(2), args=(k,),
                                                               xtol=1e-13))(1.0), ref, rtol=1e-12)
    full = rune.jacrev(lambda k: so.fsolve(system, np.ones(2), args=(k,), xtol=1e-13,
                                           full_output=True)[0])(1.0)
    np.testing.assert_allclose(full, ref, rtol=1e-12)
    with pytest.warns(NotConvergedWarning, match="fsolve"):
        rune.grad(lambda k: so.fsolve(system, np.ones(2), args=(k,), maxfev=3,
                                      full_output=True)[0][0])(1.0)


# --------------------------------------------------------------------------
# Scalar roots: x^3 = k, dx/dk = k^(-2/3) / 3
# --------------------------------------------------------------------------

BRACKETING = ["brentq", "brenth", "ridder", "bisect", "toms748"]


@pytest.mark.parametrize("name", BRACKETING)
def test_bracketing_solvers(name):
    fn = getattr(so, name)
    root = fn(lambda x: x ** 3 - 2.0, 0, 3, xtol=1e-15)
    assert abs(root - 2 ** (1 / 3)) < 1e-14
    by_args = rune.grad(lambda k: fn(lambda x, c: x ** 3 - c, 0, 3, args=(k,), xtol=1e-15))
    np.testing.assert_allclose(by_args(2.0), cube_root_slope(2.0), rtol=1e-13)
    full = rune.grad(lambda k: fn(lambda x: x ** 3 - k, 0, 3, xtol=1e-15,
                                  full_output=True)[1].root)
    np.testing.assert_allclose(full(2.0), cube_root_slope(2.0), rtol=1e-13)
    np.testing.assert_allclose(rune.grad(rune.grad(lambda k: fn(lambda x: x ** 3 - k, 0, 3,
                                                                xtol=1e-15)))(2.0),
                               -2 / 9 * 2.0 ** (-5 / 3), rtol=1e-12)
    ks = np.array([0.5, 2.0, 7.0])
    with pytest.warns(rune.PerformanceWarning, match=name):
        v = rune.vmap(rune.grad(lambda k: fn(lambda x: x ** 3 - k, 0, 3, xtol=1e-15)))(ks)
    np.testing.assert_allclose(v, cube_root_slope(ks), rtol=1e-12)


@pytest.mark.parametrize("full_output", [False, True])
def test_a_scalar_solve_that_did_not_converge_warns(full_output):
    def pick(out):
        return out[0] if full_output else out
    # disp=False: SciPy itself returns the last point without a word
    with pytest.warns(NotConvergedWarning, match=r"scipy\.optimize\.brentq did not converge"):
        rune.grad(lambda k: pick(so.brentq(lambda x: x ** 3 - k, 0, 3, maxiter=2, disp=False,
                                           full_output=full_output)))(2.0)
    with pytest.warns(NotConvergedWarning, match=r"scipy\.optimize\.newton did not converge"):
        rune.grad(lambda k: pick(so.newton(lambda x: x ** 3 - k, 1.0, maxiter=2, disp=False,
                                           full_output=full_output)))(2.0)
    with pytest.warns(NotConvergedWarning, match=r"1 of 2 roots did not converge"):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "some failed to converge")   # SciPy's own
            j = rune.jacfwd(lambda k: so.newton(lambda x: x ** 3 - k, np.array([1.0, 1.44]),
                                                maxiter=3, full_output=full_output))
            j(np.array([2.0, 3.0]))


@pytest.mark.parametrize("method", ["bisect", "brentq", "brenth", "ridder", "toms748",
                                    "newton", "secant", "halley"])
def test_root_scalar(method):
    def solve(k):
        kw = dict(bracket=(0, 3)) if method in BRACKETING + ["bisect"] else dict(x0=1.0, x1=1.5)
        if method in ("newton", "halley"):
            kw["fprime"] = lambda x: 3 * x ** 2
        if method == "halley":
            kw["fprime2"] = lambda x: 6 * x
        return so.root_scalar(lambda x: x ** 3 - k, method=method, xtol=1e-15, **kw)
    res = rune.jvp(lambda k: solve(k).root, (2.0,), (1.0,))
    assert res[0] == solve(2.0).root
    np.testing.assert_allclose(res[1], cube_root_slope(2.0), rtol=1e-12)


def test_root_scalar_with_fprime_in_the_function():
    def solve(k):
        return so.root_scalar(lambda x: (x ** 3 - k, 3 * x ** 2), x0=1.0, fprime=True,
                              method="newton").root
    np.testing.assert_allclose(rune.grad(solve)(2.0), cube_root_slope(2.0), rtol=1e-12)


def test_newton_scalar_vector_and_full_output():
    g = rune.grad(lambda k: so.newton(lambda x: x ** 3 - k, 1.0, tol=1e-14))(2.0)
    np.testing.assert_allclose(g, cube_root_slope(2.0), rtol=1e-12)
    g = rune.grad(lambda k: so.newton(lambda x: x ** 3 - k, 1.0, fprime=lambda x: 3 * x ** 2,
                                      full_output=True)[0])(2.0)
    np.testing.assert_allclose(g, cube_root_slope(2.0), rtol=1e-12)
    k = np.array([2.0, 3.0, 9.0])
    for jac in (rune.jacfwd, rune.jacrev):      # independent roots, elementwise
        j = jac(lambda k: so.newton(lambda x: x ** 3 - k, np.ones(3), tol=1e-14))(k)
        np.testing.assert_allclose(j, np.diag(cube_root_slope(k)), rtol=1e-12)
    out = so.newton(lambda x: x ** 3 - k, np.ones(3), full_output=True)
    res = rune.jvp(lambda k: so.newton(lambda x: x ** 3 - k, np.ones(3), full_output=True),
                   (k,), (np.ones(3),))
    assert res[0]._fields == out._fields and np.array_equal(res[0].root, out.root)
    assert res[0].converged.tolist() == out.converged.tolist()
    np.testing.assert_allclose(res[1].root, cube_root_slope(k), rtol=1e-12)


# --------------------------------------------------------------------------
# least_squares and curve_fit
# --------------------------------------------------------------------------

RNG = np.random.default_rng(0)
T = np.linspace(0, 1, 8)
A = np.stack([np.ones_like(T), T, T ** 2], 1)
Y = RNG.standard_normal(8)


@pytest.mark.parametrize("method", ["trf", "dogbox", "lm"])
def test_least_squares_of_a_linear_model_is_the_lstsq_formula(method):
    def fit(y):
        return so.least_squares(lambda p, yy: A @ p - yy, np.zeros(3), args=(y,),
                                method=method).x
    pinv = np.linalg.pinv(A)
    np.testing.assert_allclose(rune.jacfwd(fit)(Y), pinv, atol=1e-13)
    np.testing.assert_allclose(rune.jacrev(fit)(Y), pinv, atol=1e-13)
    cost = rune.grad(lambda y: so.least_squares(lambda p: A @ p - y, np.zeros(3),
                                                method=method).cost)(Y)
    np.testing.assert_allclose(cost, Y - A @ (pinv @ Y), atol=1e-12)   # -r at the solution


def rho_cauchy(z):
    """A user's loss: rho, rho', rho'' (cauchy's, written out)."""
    return np.stack([np.log1p(z), 1 / (1 + z), -1 / (1 + z) ** 2])


@pytest.mark.parametrize("loss", ["soft_l1", "huber", "cauchy", "arctan", "callable"])
def test_least_squares_robust_losses(loss):
    from scipy.optimize._lsq.least_squares import IMPLEMENTED_LOSSES
    s = 0.7                             # f_scale: cost = s^2/2 sum rho(r^2 / s^2)
    use = rho_cauchy if loss == "callable" else loss

    def rhos(r):
        z = (r / s) ** 2
        if loss == "callable":
            return z, rho_cauchy(z)
        rho = np.empty((3, z.size))
        IMPLEMENTED_LOSSES[loss](z, rho, cost_only=False)
        return z, rho

    def fit(y):
        return so.least_squares(lambda p: A @ p - y, np.zeros(3), loss=use, f_scale=s).x

    def by_hand(p, y):
        """The gradient A^T (rho' r) and Hessian A^T diag(w) A, w = rho' + 2 z rho''."""
        r = A @ p - y
        z, rho = rhos(r)
        w = rho[1] + 2 * z * rho[2]
        return A.T @ (rho[1] * r), A.T @ (w[:, None] * A), w
    p = fit(Y)
    exact = p.copy()
    for _ in range(6):                  # SciPy's fit polished to rounding by Newton steps
        g, h, _ = by_hand(exact, Y)
        exact = exact - np.linalg.solve(h, g)
    _, h, w = by_hand(exact, Y)
    ref = np.linalg.solve(h, A.T * w)   # the implicit function theorem at the exact fit
    # rune's derivative is the theorem's at SciPy's fit: off by O(|p - exact|) times the
    # change of the Hessian, relative to it (cond(h) bounds the amplification)
    delta = np.max(np.abs(p - exact)) * np.linalg.cond(h) + 1e-13
    for jac in (rune.jacfwd, rune.jacrev):
        np.testing.assert_allclose(jac(fit)(Y), ref, atol=100 * delta * np.abs(ref).max())


def test_least_squares_bounds_use_scipys_active_set():
    lb2 = (np.linalg.pinv(A) @ Y)[2] + 0.7   # above the unconstrained fit's p[2]
    x0 = np.array([0.0, 0.0, lb2 + 1.0])

    def fit(y):
        return so.least_squares(lambda p: A @ p - y, x0,
                                bounds=([-np.inf, -np.inf, lb2], np.inf)).x
    res = so.least_squares(lambda p: A @ p - Y, x0, bounds=([-np.inf, -np.inf, lb2], np.inf))
    assert res.active_mask.tolist() == [0, 0, -1]
    j = rune.jacfwd(fit)(Y)
    np.testing.assert_allclose(j[2], 0.0, atol=0)
    np.testing.assert_allclose(j[:2], np.linalg.pinv(A[:, :2]), atol=1e-12)
    g = rune.grad(lambda c: so.least_squares(lambda p: A @ p - Y, x0,
                                             bounds=(np.stack([-np.inf, -np.inf, c]),
                                                     np.inf)).x[0])(lb2)
    np.testing.assert_allclose(g, -(np.linalg.pinv(A[:, :2]) @ A[:, 2])[0], rtol=1e-10)
    with pytest.warns(NotConvergedWarning, match="least_squares"):
        rune.grad(lambda y: so.least_squares(lambda p: np.exp(A @ p) - y, np.zeros(3),
                                             max_nfev=1).x[0])(np.exp(Y))


X = np.linspace(0, 2, 20)


def model(x, a, b):
    return a * np.exp(-b * x)


YD = model(X, 2.0, 1.3) + 0.01 * RNG.standard_normal(20)


def _polished_fit(x, y, sigma):
    """curve_fit's answer polished to rounding by Newton steps on the weighted normal
    equations, written out by hand for the exponential model: a reference for central
    differences."""
    p = so.curve_fit(model, x, y, p0=[1.0, 1.0], sigma=sigma)[0]
    w = 1 / sigma ** 2
    for _ in range(8):
        a, b = p
        e = np.exp(-b * x)
        r = a * e - y
        ja, jb = e, -a * x * e
        g = np.array([np.sum(w * r * ja), np.sum(w * r * jb)])
        h = np.array([[np.sum(w * ja * ja), np.sum(w * (ja * jb - r * x * e))],
                      [np.sum(w * (ja * jb - r * x * e)), np.sum(w * (jb * jb + r * a * x ** 2 * e))]])
        p = p - np.linalg.solve(h, g)
    return p


def _central(f, x, h=1e-6):
    return np.stack([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)], -1)


@pytest.mark.parametrize("wrt", ["ydata", "xdata", "sigma"])
def test_curve_fit_of_an_exponential(wrt):
    sigma = 0.5 + X
    args = {"xdata": X, "ydata": YD, "sigma": sigma}

    def fit(v):
        return so.curve_fit(model, **{**args, wrt: v}, p0=[1.0, 1.0])[0]

    def exact(v):
        kw = {**args, wrt: v}
        return _polished_fit(kw["xdata"], kw["ydata"], kw["sigma"])
    p = fit(args[wrt])
    # SciPy's fit is accurate to delta; the derivative of what it returned is off by O(delta)
    delta = np.max(np.abs(p - exact(args[wrt]))) / np.max(np.abs(p)) + 1e-15
    ref = _central(exact, args[wrt])        # (truncation 1e-12, rounding 1e-10)
    tol = 1e-7 + 1e3 * delta
    for jac in (rune.jacfwd, rune.jacrev):
        np.testing.assert_allclose(jac(fit)(args[wrt]), ref, atol=tol * np.abs(ref).max())


def test_curve_fit_bounds_p0_and_full_output():
    def fit(y, **kw):
        return so.curve_fit(model, X, y, p0=[1.0, 1.0], bounds=([0, 0], [1.5, 5]), **kw)
    popt = fit(YD)[0]
    assert abs(popt[0] - 1.5) < 1e-12         # a held at its upper bound
    j = rune.jacfwd(lambda y: fit(y)[0])(YD)
    assert np.all(j[0] == 0)
    # b alone solves g(b, y) = sum r dr/db = 0, r = 1.5 e^{-bx} - y, dr/db = -1.5 x e^{-bx}:
    # db/dy = -(dg/dy) / (dg/db), by hand
    def g_and_dg(b):
        e = np.exp(-b * X)
        r = 1.5 * e - YD
        return np.sum(r * -1.5 * X * e), np.sum((1.5 * X * e) ** 2 + r * 1.5 * X ** 2 * e), e
    b = popt[1]
    for _ in range(5):                              # polished to rounding
        g, dg, _ = g_and_dg(b)
        b = b - g / dg
    _, dg_db, e = g_and_dg(b)
    delta = abs(b - popt[1]) / abs(b) + 1e-15      # SciPy's fit's accuracy
    np.testing.assert_allclose(j[1], -1.5 * X * e / dg_db, rtol=100 * delta)
    out = rune.jacrev(lambda y: fit(y, full_output=True)[0])(YD)
    np.testing.assert_allclose(out, j, rtol=1e-12)
    assert np.all(rune.jacfwd(lambda p0: so.curve_fit(model, X, YD, p0=p0)[0])(
        np.array([1.0, 1.0])) == 0)
    # pcov stays SciPy's plain array
    cov = rune.jvp(lambda y: so.curve_fit(model, X, y, p0=[1.0, 1.0])[1], (YD,),
                   (np.ones(20),))[1]
    assert np.all(cov == 0)


def test_root_jac_in_the_function_and_more_equations_than_unknowns():
    g = rune.grad(lambda k: so.root(lambda x: (x ** 3 - k, np.diag(3 * x ** 2)), np.ones(1),
                                    jac=True).x[0])(2.0)
    np.testing.assert_allclose(g, cube_root_slope(2.0), rtol=1e-12)
    # lm with two equations in one unknown: the least-squares solution x = 1.5 k
    g = rune.grad(lambda k: so.root(lambda x: [x[0] - k, x[0] - 2 * k], np.zeros(1),
                                    method="lm").x[0])(1.0)
    np.testing.assert_allclose(g, 1.5, rtol=1e-12)


def test_curve_fit_counts_the_parameters_from_the_model():
    x = np.linspace(0, 1, 10)
    j = rune.jacfwd(lambda y: so.curve_fit(lambda t, a, b: a + b * t, x, y)[0])(1 + 2 * x)
    np.testing.assert_allclose(j, np.linalg.pinv(np.stack([np.ones(10), x], 1)), atol=1e-12)


def test_curve_fit_covariance_sigma_and_omitted_nans():
    s = 0.5 + X

    def fit(y, sigma, **kw):
        return so.curve_fit(model, X, y, p0=[1.0, 1.0], sigma=sigma, **kw)[0]
    # a diagonal covariance is the same fit as its standard deviations
    by_std = rune.jacrev(lambda y: fit(y, s))(YD)
    by_cov = rune.jacrev(lambda y: fit(y, np.diag(s ** 2)))(YD)
    np.testing.assert_allclose(by_cov, by_std, rtol=1e-6, atol=1e-12)
    # nan_policy='omit': the NaN point is left out, as if it were not there
    y = YD.copy()
    y[3] = np.nan
    keep = np.arange(20) != 3
    j = rune.jacfwd(lambda y: fit(y, None, nan_policy="omit"))(y)
    ref = rune.jacfwd(lambda yk: so.curve_fit(model, X[keep], yk, p0=[1.0, 1.0])[0])(y[keep])
    assert np.all(j[:, 3] == 0)
    np.testing.assert_allclose(j[:, keep], ref, rtol=1e-6, atol=1e-12)
