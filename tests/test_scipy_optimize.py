"""scipy.optimize's minimizers under rune (issue 26): the solution's derivative by the
implicit function theorem, whatever way the traced value reaches the solver, in every mode.

References: closed forms, or the implicit function theorem written out by hand at SciPy's
own solution (``dx*/dk = H(x*)^{-1} b`` below), or central differences of problems solved
to rounding.  Tolerances are derived from the solution's accuracy: one Newton step from a
solution ``x*`` with error ``delta`` gives a derivative off by ``O(delta)`` (relative).
"""

import inspect
import warnings

import numpy as np
import pytest

import rune
from rune.core import Tracer

so = pytest.importorskip("scipy.optimize")
from rune.scipy.implicit import NotConvergedWarning, glue  # noqa: E402  (needs SciPy)

EPS = np.finfo(float).eps

# f(x; k) = x^T Q x / 2 - k b^T x + sum(x^4) / 4: g = Qx - kb + x^3, H = Q + 3 diag(x^2),
# so dx*/dk = H(x*)^{-1} b, written out by hand at the solution SciPy returns.
Q = np.array([[3.0, 1.0], [1.0, 2.0]])
B = np.array([1.0, 2.0])
K0 = 0.7


def quartic(x, k):
    return 0.5 * x @ Q @ x - k * B @ x + 0.25 * np.sum(x ** 4)


def quartic_grad(x, k):
    return Q @ x - k * B + x ** 3


def quartic_hess(x, k):
    return Q + 3 * np.diag(x ** 2)


def ift_dk(x):
    return np.linalg.solve(quartic_hess(x, K0), B)


SECOND_ORDER = ("Newton-CG", "dogleg", "trust-ncg", "trust-exact", "trust-krylov")
METHODS = ("Nelder-Mead", "Powell", "CG", "BFGS", "L-BFGS-B", "TNC", "COBYLA", "COBYQA",
           "SLSQP", "trust-constr") + SECOND_ORDER


def _solver(method, tol=1e-8):
    def solve(k):
        kw = {}
        if method in SECOND_ORDER:      # derivatives the solver needs, by rune, of the
            kw = dict(jac=rune.grad(quartic), hess=rune.hessian(quartic))  # traced problem
        return so.minimize(quartic, np.zeros(2), args=(k,), method=method, tol=tol, **kw)
    return solve


@pytest.mark.parametrize("method", METHODS)
def test_every_unconstrained_method(method):
    solve = _solver(method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        plain = solve(K0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", NotConvergedWarning)
            jf = rune.jacfwd(lambda k: solve(k).x)(K0)
            jr = rune.jacrev(lambda k: solve(k).x)(K0)
            x, dx = rune.jvp(lambda k: solve(k).x, (K0,), (1.0,))
            dfun = rune.grad(lambda k: solve(k).fun)(K0)
    ref = ift_dk(plain.x)
    np.testing.assert_allclose(jf, ref, rtol=1e-12)
    np.testing.assert_allclose(jr, ref, rtol=1e-12)
    np.testing.assert_allclose(dx, ref, rtol=1e-12)
    assert np.array_equal(x, plain.x)           # SciPy's solution, bit for bit
    # the optimum's value: d f(x*(k), k) / dk = g . dx*/dk - b^T x*, the envelope theorem's
    # -b^T x* up to the gradient SciPy left (the part that is not at rounding)
    np.testing.assert_allclose(dfun, quartic_grad(plain.x, K0) @ ref - B @ plain.x,
                               rtol=1e-12)
    warned = [w for w in caught if issubclass(w.category, NotConvergedWarning)]
    assert bool(warned) == (not plain.success), (method, plain.message)
    if warned:
        assert "scipy.optimize.minimize" in str(warned[0].message)
        assert warned[0].filename == __file__    # points at the user's call


def test_the_issue_examples():
    g = rune.grad(lambda k: so.minimize(lambda x: np.sum((x - k) ** 2), np.zeros(2)).x.sum())
    assert g(0.5) == 2.0
    g = rune.grad(lambda k: so.brentq(lambda x: x ** 3 - k, 0, 2))(0.5)
    np.testing.assert_allclose(g, (1 / 3) * 0.5 ** (-2 / 3), rtol=1e-12)
    g = rune.grad(lambda k: so.root(lambda x: x ** 3 - k, np.ones(1)).x[0])(0.5)
    np.testing.assert_allclose(g, (1 / 3) * 0.5 ** (-2 / 3), rtol=1e-8)


def test_nelder_mead_through_a_closure_and_args_agree():
    c = np.array([1.0, -2.0])

    def by_closure(k):
        return so.minimize(lambda x: np.sum((x - k * c) ** 2) + 0.1 * np.sum(x ** 4),
                           np.zeros(2), method="Nelder-Mead",
                           options={"xatol": 1e-12, "fatol": 1e-14}).x

    def by_args(k):
        return so.minimize(lambda x, kc: np.sum((x - kc) ** 2) + 0.1 * np.sum(x ** 4),
                           np.zeros(2), args=(k * c,), method="Nelder-Mead",
                           options={"xatol": 1e-12, "fatol": 1e-14}).x

    x = by_closure(K0)
    ref = np.linalg.solve(2 * np.eye(2) + 1.2 * np.diag(x ** 2), 2 * c)   # H^{-1} d(2kc)/dk
    np.testing.assert_allclose(rune.jacfwd(by_closure)(K0), ref, rtol=1e-10)
    np.testing.assert_allclose(rune.jacrev(by_args)(K0), ref, rtol=1e-10)


class Model:
    """A traced value reaching the objective through an object's attribute."""

    def __init__(self, k):
        self.k = k

    def loss(self, x):
        return np.sum((x - self.k) ** 2 * np.array([1.0, 3.0])) + np.sum(np.cosh(x))


def test_a_traced_attribute_and_finite_differences_of_a_tight_solve():
    def solve(k):
        m = Model(k)
        return so.minimize(m.loss, np.zeros(2), jac=rune.grad(m.loss),
                           hess=rune.hessian(m.loss), method="trust-exact",
                           options={"gtol": 1e-13}).x
    # trust-exact with exact derivatives reaches rounding: central differences (step 1e-6,
    # error 1e-12 / 1e-6) and the nested (second order) check hold at check_grads' tolerances
    rune.check_grads(solve, np.array([0.3, -0.4]), order=2)


def _cube_root_by_minimize(k):
    """x* = k^(1/3), as the minimizer of (x^3 - k)^2."""
    f = lambda x: np.sum((x ** 3 - k) ** 2)    # noqa: E731
    return so.minimize(f, np.ones(1), jac=rune.grad(f), hess=rune.hessian(f),
                       method="trust-exact", options={"gtol": 1e-14}).x[0]


def test_second_and_third_order_by_more_newton_steps():
    k = 2.0
    x = _cube_root_by_minimize(k)
    delta = abs(x - k ** (1 / 3)) / k ** (1 / 3) + EPS       # the solution's own error
    tol = 100 * delta
    np.testing.assert_allclose(rune.grad(_cube_root_by_minimize)(k), k ** (-2 / 3) / 3,
                               rtol=tol)
    d2 = -2 / 9 * k ** (-5 / 3)
    for second in (rune.hessian, lambda f: rune.grad(rune.grad(f)),
                   lambda f: rune.jacfwd(rune.jacrev(f)), lambda f: rune.jacrev(rune.jacfwd(f))):
        np.testing.assert_allclose(second(_cube_root_by_minimize)(k), d2, rtol=tol)
    d3 = 10 / 27 * k ** (-8 / 3)      # three levels: two steps are exact to order 3
    np.testing.assert_allclose(rune.grad(rune.grad(rune.grad(_cube_root_by_minimize)))(k),
                               d3, rtol=tol)


def test_one_newton_step_is_not_enough_for_second_order():
    """The rule's reason: with one step the second derivative would be wrong."""
    from rune.scipy import implicit
    real = implicit.newton_steps
    try:
        implicit.newton_steps = lambda: 1
        wrong = rune.hessian(_cube_root_by_minimize)(2.0)
    finally:
        implicit.newton_steps = real
    assert abs(wrong - (-2 / 9 * 2.0 ** (-5 / 3))) > 1e-3


# --------------------------------------------------------------------------
# Bounds
# --------------------------------------------------------------------------

C = np.array([1.0, 2.0, -1.0])
BOUNDS = [(0.0, 1.5), (None, 1.0), (-0.5, 3.0)]     # at k = 1: free, upper, lower


@pytest.mark.parametrize("method", ["L-BFGS-B", "TNC", "SLSQP", "Nelder-Mead", "Powell",
                                    "trust-constr", "COBYLA", "COBYQA"])
def test_bounds_active_and_inactive(method):
    def solve(k):
        f = lambda x: np.sum((x - k * C) ** 2) + 0.1 * np.sum((x - k * C) ** 4)  # noqa: E731
        return so.minimize(f, np.zeros(3), method=method, bounds=BOUNDS).x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)       # trust-constr's quasi-Newton note
        x = solve(1.0)      # default tolerances: Powell ends 6e-5 from a bound it is held at
        np.testing.assert_allclose(x, [1.0, 1.0, -0.5], atol=1e-4)
        for jac in (rune.jacfwd, rune.jacrev):      # the free coordinate follows k * C[0]
            np.testing.assert_allclose(jac(solve)(1.0), [1.0, 0.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("method", ["L-BFGS-B", "TNC", "SLSQP", "Powell"])   # (Nelder-Mead
#                                                   stops at the bound here, 1e-4 off)
def test_a_free_minimum_close_to_a_bound_stays_free(method):
    def solve(k):       # x* = k, 1e-4 inside the bound 1: the derivative is 1, not 0
        return so.minimize(lambda x: np.sum((x - k) ** 2), np.full(1, 0.5), method=method,
                           bounds=[(-1.0, 1.0)], tol=1e-10).x[0]
    assert abs(solve(1 - 1e-4) - (1 - 1e-4)) < 1e-6
    np.testing.assert_allclose(rune.grad(solve)(1 - 1e-4), 1.0, rtol=1e-10)
    assert rune.grad(solve)(1 + 1e-4) == 0.0      # and 1e-4 outside: held at the bound
    g = rune.grad(lambda k: so.minimize_scalar(lambda x: (x - k) ** 2, bounds=(-1, 1),
                                               method="bounded").x)(1 - 1e-3)
    np.testing.assert_allclose(g, 1.0, rtol=1e-10)


def test_traced_bounds_carry_their_derivative():
    def solve(c, method="L-BFGS-B"):
        f = lambda x: np.sum((x - np.array([1.0, 2.0])) ** 2)     # noqa: E731
        bounds = so.Bounds(np.array([-1.0, -1.0]), np.stack([c, 3 * c]))
        return so.minimize(f, np.zeros(2), bounds=bounds, method=method).x
    np.testing.assert_allclose(solve(0.5), [0.5, 1.5])
    np.testing.assert_allclose(rune.jacfwd(solve)(0.5), [1.0, 3.0])
    np.testing.assert_allclose(rune.jacrev(solve)(0.5), [1.0, 3.0])
    # pairs with traced entries, the bound inactive: no derivative
    g = rune.grad(lambda c: so.minimize(lambda x: np.sum((x - 0.2) ** 2), np.zeros(1),
                                        bounds=[(-c, c)]).x[0])(0.5)
    assert g == 0.0


def test_general_constraints_are_refused_only_when_something_is_traced():
    cons = {"type": "ineq", "fun": lambda x: 1.0 - np.sum(x)}

    def solve(k):
        return so.minimize(lambda x: np.sum((x - k) ** 2), np.zeros(2), constraints=cons).x
    with pytest.raises(NotImplementedError, match=r"scipy\.optimize\.minimize.*constraints="):
        rune.grad(lambda k: np.sum(solve(k)))(1.0)
    # nothing traced reaches the constrained problem: SciPy's answer
    out = rune.grad(lambda k: k * np.sum(solve(1.0)))(2.0)
    np.testing.assert_allclose(out, 1.0, atol=1e-6)


# --------------------------------------------------------------------------
# minimize_scalar
# --------------------------------------------------------------------------

@pytest.mark.parametrize("method,options", [("brent", {"xtol": 1e-12}),
                                            ("golden", {"xtol": 1e-12}),
                                            ("bounded", {"xatol": 1e-10})])
def test_minimize_scalar(method, options):
    def solve(k):
        kw = {"bounds": (-3, 3)} if method == "bounded" else {}
        return so.minimize_scalar(lambda x: (x - k) ** 2 + x ** 4, method=method,
                                  options=options, **kw)
    x = solve(0.5).x        # 2(x - k) + 4x^3 = 0: dx/dk = 2 / (2 + 12 x^2)
    np.testing.assert_allclose(rune.grad(lambda k: solve(k).x)(0.5), 2 / (2 + 12 * x ** 2),
                               rtol=1e-10)
    np.testing.assert_allclose(rune.grad(lambda k: solve(k).fun)(0.5), -2 * (x - 0.5),
                               rtol=1e-5)


def test_minimize_scalar_at_a_bound():
    def at_bound(k):
        return so.minimize_scalar(lambda x: (x - k) ** 2, bounds=(-1, 1), method="bounded").x
    assert abs(at_bound(2.0) - 1.0) < 1e-4
    assert rune.grad(at_bound)(2.0) == 0.0
    moving = rune.grad(lambda c: so.minimize_scalar(lambda x: (x - 2) ** 2, bounds=(-1, c),
                                                    method="bounded").x)(1.0)
    assert moving == 1.0
    assert rune.grad(at_bound)(0.3) == 1.0      # inside: x* = k


# --------------------------------------------------------------------------
# vmap, errors, warnings, and nothing changed outside
# --------------------------------------------------------------------------

def test_vmap_solves_each_example_against_a_loop():
    ks = np.array([0.3, 0.7, 1.5])
    solve = _solver("trust-exact")
    per = [rune.jacfwd(lambda k: solve(k).x)(k) for k in ks]
    with pytest.warns(rune.PerformanceWarning, match="scipy.optimize.minimize"):
        out = rune.vmap(rune.jacfwd(lambda k: solve(k).x))(ks)
    np.testing.assert_allclose(out, np.stack(per), rtol=1e-13)
    with pytest.warns(rune.PerformanceWarning):
        xs = rune.vmap(lambda k: solve(k).x)(ks)
    np.testing.assert_array_equal(xs, np.stack([solve(k).x for k in ks]))
    with pytest.raises(rune.BatchedControlFlowError, match="scipy.optimize.minimize"):
        rune.vmap(lambda k: solve(k).x, strict=True)(ks)
    # grad of the vmapped solve: the per-example fallback under an outer grad
    with pytest.warns(rune.PerformanceWarning):
        g = rune.grad(lambda k: np.sum(rune.vmap(lambda kk: solve(kk).x)(k * ks)))(1.0)
    np.testing.assert_allclose(g, sum(ks[i] * ift_dk(solve(k * 1.0).x).sum()
                                      for i, k in enumerate(ks)), rtol=1e-10)


def test_a_solve_that_did_not_converge_warns():
    def solve(k):
        return so.minimize(quartic, np.zeros(2), args=(k,), method="BFGS",
                           options={"maxiter": 2}).x
    with pytest.warns(NotConvergedWarning, match=r"scipy\.optimize\.minimize did not converge"):
        rune.grad(lambda k: np.sum(solve(k)))(K0)


def test_a_singular_hessian_is_an_error_naming_the_solver():
    def solve(k):
        return so.minimize(lambda x: (x[0] + x[1] - k) ** 2, np.zeros(2), method="BFGS").x
    with pytest.raises(np.linalg.LinAlgError,
                       match=r"scipy\.optimize\.minimize: the Hessian at the solution is "
                             r"singular: the solution is not a differentiable function"):
        rune.grad(lambda k: np.sum(solve(k)))(1.0)


def test_an_objective_rune_cannot_differentiate_in_x_says_why():
    def solve(k):
        return so.minimize(lambda x: (float(x[0]) - 1.0) ** 2 + np.sum((x - k) ** 2),
                           np.zeros(2)).x
    with pytest.raises(rune.TracerConversionError, match="implicit function theorem"):
        rune.grad(lambda k: np.sum(solve(k)))(1.0)


def _no_tracer(obj):
    if isinstance(obj, Tracer):
        return False
    if isinstance(obj, dict):
        return all(_no_tracer(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(_no_tracer(v) for v in obj)
    return True


def test_outside_transformations_scipy_is_untouched():
    rune.grad(lambda k: so.minimize(quartic, np.zeros(2), args=(k,)).x.sum())(K0)  # installed
    res = so.minimize(quartic, np.zeros(2), args=(K0,), method="BFGS")
    own = so.minimize._rune_original(quartic, np.zeros(2), args=(K0,), method="BFGS")
    assert type(res) is type(own) and _no_tracer(res)
    assert set(res) == set(own)
    for key in res:
        assert np.array_equal(res[key], own[key]) or res[key] == own[key], key
    assert inspect.signature(so.minimize) == inspect.signature(so.minimize._rune_original)


def test_inside_a_transformation_an_untraced_problem_is_scipys():
    seen = []

    def f(k):
        res = so.minimize(quartic, np.zeros(2), args=(K0,), method="BFGS")
        seen.append(res)
        return k * res.x.sum()
    own = so.minimize(quartic, np.zeros(2), args=(K0,), method="BFGS")
    np.testing.assert_array_equal(rune.grad(f)(1.0), own.x.sum())
    assert _no_tracer(seen[0]) and np.array_equal(seen[0].x, own.x)
    # a traced initial guess only: the solution does not depend on it
    assert rune.grad(lambda x0: so.minimize(quartic, x0, args=(K0,)).x.sum())(
        np.zeros(2)).tolist() == [0.0, 0.0]


def test_a_solver_inside_the_objective_bilevel():
    def inner(x):          # y(x) with y^3 + y = x
        return so.brentq(lambda y: y ** 3 + y - x, -10, 10)

    def outer(k):
        return so.minimize_scalar(lambda x: (inner(x) - k) ** 2 + 0.1 * x ** 2,
                                  method="brent", options={"xtol": 1e-13}).x
    k = 1.0
    x = outer(k)
    y = inner(x)
    yp = 1 / (3 * y ** 2 + 1)
    ypp = -6 * y * yp ** 3
    ref = 2 * yp / (2 * yp ** 2 + 2 * (y - k) * ypp + 0.2)     # -phi_xk / phi_xx
    np.testing.assert_allclose(rune.grad(outer)(k), ref, rtol=1e-7)


def test_glue_keeps_scipys_value_bit_for_bit():
    x = np.array([-0.0, 1.5, 1e-300, -3.25])
    out, dout = rune.jvp(lambda t: glue(x, t * np.array([1.0, 2.0, 3.0, 4.0])),
                         (np.array(0.1),), (np.array(1.0),))
    assert out.tobytes() == x.tobytes()         # -0.0 stays -0.0
    np.testing.assert_array_equal(dout, [1.0, 2.0, 3.0, 4.0])


def test_docstring_examples_run():
    import doctest
    import rune.scipy.implicit
    import rune.scipy.optimize
    for module in (rune.scipy.optimize, rune.scipy.implicit):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_the_docs_page_runs():
    import pathlib
    import re
    page = pathlib.Path(__file__).resolve().parents[1] / "docs" / "solvers-optimize.md"
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)
    assert len(blocks) == 2
    namespace = {"__name__": "docs_solvers_optimize"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k, code in enumerate(blocks):
            exec(compile(code, f"solvers-optimize.md[block {k}]", "exec"), namespace)
    np.testing.assert_allclose(namespace["dp_dy"].shape, (2, 40))


def test_the_ways_to_pass_derivatives_and_methods():
    def f(x, k):
        return np.sum((x - k) ** 2) + np.sum(x ** 4)
    x = so.minimize(f, np.zeros(2), args=(0.5,), method="L-BFGS-B", options={"gtol": 1e-12}).x
    ref = 2 / (2 + 12 * x[0] ** 2)         # per coordinate: 2(x - k) + 4x^3 = 0

    def fun_and_grad(x, k):                 # jac=True: the objective returns (f, grad)
        return f(x, k), 2 * (x - k) + 4 * x ** 3

    def with_hessp(k):
        g = rune.grad(f)
        return so.minimize(f, np.zeros(2), args=(k,), jac=g, method="Newton-CG",
                           hessp=lambda x, p, k: rune.hvp(lambda x: f(x, k), (x,), (p,))[1],
                           options={"xtol": 1e-14}).x

    def my_method(fun, x0, args=(), **kw):  # a callable method
        return so.minimize(fun, x0, args=args, method="L-BFGS-B", options={"gtol": 1e-12})
    for solve in (with_hessp,
                  lambda k: so.minimize(fun_and_grad, np.zeros(2), args=(k,), jac=True,
                                        method="L-BFGS-B", options={"gtol": 1e-12}).x,
                  lambda k: so.minimize(f, np.zeros(2), args=(k,), method=my_method).x):
        np.testing.assert_allclose(rune.jacfwd(solve)(0.5), [ref, ref], rtol=1e-6)


def test_bounds_and_constraints_a_method_ignores_are_ignored():
    # BFGS ignores bounds (SciPy warns): the solution, and its derivative, are unbounded
    with pytest.warns(RuntimeWarning, match="cannot handle bounds"):
        g = rune.grad(lambda k: so.minimize(lambda x: np.sum((x - k) ** 2), np.zeros(1),
                                            method="BFGS", bounds=[(0, 0.2)]).x[0])(0.5)
    np.testing.assert_allclose(g, 1.0)
    with pytest.warns(RuntimeWarning, match="cannot handle constraints"):
        g = rune.grad(lambda k: so.minimize(
            lambda x: np.sum((x - k) ** 2), np.zeros(1), method="BFGS",
            constraints={"type": "ineq", "fun": lambda x: 0.2 - x[0]}).x[0])(0.5)
    np.testing.assert_allclose(g, 1.0)


def test_args_reach_the_solve_as_plain_numbers():
    """Traced args= are stripped for SciPy's iterations (nothing recorded, no tangents
    carried); only the Newton step sees them traced."""
    calls = []

    def f(x, k):
        calls.append(isinstance(k, Tracer))
        return np.sum((x - k) ** 2)
    g = rune.grad(lambda k: so.minimize(f, np.zeros(2), args=(k,), method="Nelder-Mead",
                                        options={"xatol": 1e-10}).x.sum())(0.5)
    assert g == 2.0
    assert len(calls) > 100 and 0 < sum(calls) <= 3
