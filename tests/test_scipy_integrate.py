"""scipy.integrate, unchanged, under every transformation: ODE solutions (solve_ivp with
every method, odeint, dense output) and integrals (quad, quad_vec, trapezoid,
cumulative_trapezoid, simpson) against closed forms, finite differences, JVP against
VJP, second order, and vmap against a loop; the refusals; SciPy untouched outside.

Tolerances.  The solves run at ``rtol = atol = SOLVE`` (1e-10 .. 1e-12).  A solution's
global error is a modest multiple of the local tolerance (a few hundred steps at most
here), and so is its derivative's (the adjoint and sensitivity systems are solved at the
same tolerances): closed forms are met to ``CLOSED = 1e3 * SOLVE``.  Finite differences
use a step ``EPS = 1e-3``: their truncation error is ``~EPS**2`` relative to the third
derivative (order one here) and their solve noise ``~SOLVE / EPS``; ``FD_RTOL`` is their
sum with a factor ten of room.
"""

import functools
import tracemalloc
import warnings

import numpy as np
import pytest

import rune

integrate = pytest.importorskip("scipy.integrate")
import scipy.linalg  # noqa: E402
from scipy.integrate import solve_ivp, odeint, quad  # noqa: E402  (the user's idiom)
from helpers import check_vmap  # noqa: E402

SOLVE = 1e-11
TIGHT = dict(rtol=SOLVE, atol=SOLVE)
CLOSED = 1e3 * SOLVE
EPS = 1e-3
FD_RTOL = 10 * (EPS ** 2 + SOLVE / EPS)
METHODS = ["RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA"]
# RK23 (third order) needs many steps at 1e-11: it runs at 1e-9, and meets closed forms
# to 1e3 times that
LOOSE = {"RK23": 1e-9}


def fd_check(f, *args, order=1, modes=("fwd", "rev")):
    rune.check_grads(f, *args, order=order, modes=modes, eps=EPS, rtol=FD_RTOL,
                     atol=FD_RTOL)


def decay(k, y0, t1, method="RK45", **kw):
    tol = LOOSE.get(method, SOLVE)
    return solve_ivp(lambda t, y: -k * y, (0.0, t1), y0, method=method, rtol=tol,
                     atol=tol, **kw)


# --------------------------------------------------------------------------
# solve_ivp: closed forms, every method, both modes
# --------------------------------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_decay_closed_form_every_method(method):
    k, y0, t1 = 0.5, np.array([1.0, 2.0]), 1.3
    f = lambda k, y0, t1: decay(k, y0, t1, method).y[:, -1]   # noqa: E731
    e = np.exp(-k * t1)
    want = (-t1 * y0 * e, np.eye(2) * e, -k * y0 * e)
    bound = 1e3 * LOOSE.get(method, SOLVE)
    for jac in (rune.jacrev, rune.jacfwd):
        got = jac(f, argnums=(0, 1, 2))(k, y0, t1)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, atol=bound, rtol=0)


@pytest.mark.parametrize("method", ["RK45", "Radau", "LSODA"])
def test_linear_system_against_expm(method):
    """y' = A y: y(T) = expm(A T) y0, differentiated through rune's expm (Radau at 1e-9:
    its adjoint at 1e-11 takes seconds)."""
    tol = 1e-9 if method == "Radau" else SOLVE
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 3)) - 2 * np.eye(3)
    y0 = rng.normal(size=3)

    def ode(A, y0):
        return solve_ivp(lambda t, y: A @ y, (0.0, 0.7), y0, method=method, rtol=tol,
                         atol=tol).y[:, -1]

    def closed(A, y0):
        return scipy.linalg.expm(0.7 * A) @ y0

    np.testing.assert_allclose(ode(A, y0), closed(A, y0), atol=1e3 * tol)
    for jac in (rune.jacrev, rune.jacfwd):
        for g, w in zip(jac(ode, argnums=(0, 1))(A, y0), rune.jacrev(closed, (0, 1))(A, y0)):
            np.testing.assert_allclose(g, w, atol=1e3 * tol, rtol=0)


def test_t_eval_t0_and_the_evaluation_times():
    def f(k, t0, te):
        return solve_ivp(lambda t, y: -k * y, (t0, 2.0), np.ones(1), t_eval=te, **TIGHT).y[0]

    k, t0, te = 0.7, 0.1, np.array([0.5, 1.0, 1.7])
    e = np.exp(-k * (te - t0))
    want = (-(te - t0) * e, k * e, np.diag(-k * e))
    for jac in (rune.jacrev, rune.jacfwd):
        for g, w in zip(jac(f, argnums=(0, 1, 2))(k, t0, te), want):
            np.testing.assert_allclose(g, w, atol=CLOSED, rtol=0)


def test_backwards_in_time_and_a_time_dependent_system():
    def f(k, t0, t1):
        r = solve_ivp(lambda t, y: -k * y + np.sin(t), (t0, t1), np.array([1.0]), **TIGHT)
        return r.y[0, -1] + r.t[-1] * r.t[0] + r.y[0, 0]

    fd_check(f, 0.7, 1.2, 0.1)
    fd_check(f, 0.7, 0.1, 1.2)


def test_without_t_eval_the_steps_are_fixed_times():
    """Interior outputs are the solution at the solver's step times, held fixed: their
    derivatives are those of a t_eval solve at those times; t[0] and t[-1] follow t_span."""
    rhs = lambda k: lambda t, y: -k * y + np.sin(t)   # noqa: E731
    opts = dict(rtol=1e-8, atol=1e-8)
    steps = solve_ivp(rhs(0.7), (0.1, 1.2), np.ones(1), **opts).t
    ct = np.random.default_rng(0).normal(size=steps.size)
    for k_dot in (1.0,):
        got = rune.jvp(lambda k: solve_ivp(rhs(k), (0.1, 1.2), np.ones(1), **opts).y[0],
                       (0.7,), (k_dot,))[1]
        want = rune.jvp(lambda k: solve_ivp(rhs(k), (0.1, 1.2), np.ones(1), t_eval=steps,
                                            **opts).y[0], (0.7,), (k_dot,))[1]
        np.testing.assert_allclose(got, want, atol=1e3 * 1e-8)
    got = rune.grad(lambda k: solve_ivp(rhs(k), (0.1, 1.2), np.ones(1), **opts).y[0] @ ct)(0.7)
    np.testing.assert_allclose(got, want @ ct, atol=1e3 * 1e-8 * np.sum(np.abs(ct)))
    jt = rune.jacfwd(lambda s: solve_ivp(rhs(0.7), s, np.ones(1), **opts).t)(
        np.array([0.1, 1.2]))
    np.testing.assert_array_equal(jt[[0, -1]], np.eye(2))
    assert not jt[1:-1].any()


def lotka_volterra(theta, y0, t1, method="RK45"):
    def rhs(t, y, a, b):
        return np.stack([a * y[0] - b * y[0] * y[1], b * y[0] * y[1] - y[1]])
    return solve_ivp(rhs, (0.0, t1), y0, method=method, args=(theta[0], theta[1]),
                     t_eval=[0.5 * t1, t1], **TIGHT).y


@pytest.mark.parametrize("method", ["RK45", "BDF"])
def test_nonlinear_system_against_finite_differences(method):
    fd_check(functools.partial(lotka_volterra, method=method), np.array([1.1, 0.4]),
             np.array([1.0, 0.5]), 1.5)


def test_second_order():
    f = lambda k: decay(k, np.array([2.0]), 1.5).y[0, -1]      # noqa: E731
    want = 1.5 ** 2 * 2 * np.exp(-0.75)
    for h in (rune.grad(rune.grad(f)), rune.jacfwd(rune.grad(f)), rune.jacfwd(rune.jacfwd(f))):
        np.testing.assert_allclose(h(0.5), want, rtol=CLOSED)
    bdf = lambda k: solve_ivp(lambda t, y: -k * y, (0.0, 1.5), np.array([2.0, 1.0]),  # noqa
                              method="BDF", rtol=1e-9, atol=np.array([1e-10, 1e-11])).y[0, -1]
    np.testing.assert_allclose(rune.hessian(bdf)(0.5), want, rtol=1e3 * 1e-9)
    rune.check_grads(lambda k, y0: decay(k, y0, 0.8, "DOP853").y[:, -1], 0.5,
                     np.array([1.0, 2.0]), order=2, eps=EPS, rtol=FD_RTOL, atol=FD_RTOL)


def test_closure_partial_defaults_args_and_jac_find_the_traced_values():
    def with_default(k):
        def rhs(t, y, k=k):
            return -k * y
        return solve_ivp(rhs, (0, 1), [1.0], **TIGHT).y[0, -1]

    def partial(k):
        return solve_ivp(functools.partial(lambda t, y, k: -k * y, k=k), (0, 1), [1.0],
                         **TIGHT).y[0, -1]

    def args_tree(k):       # a dict in args=, Radau with a jac closing over k
        return solve_ivp(lambda t, y, p: -k * p["c"] * y, (0, 1), [1.0], method="Radau",
                         jac=lambda t, y, p: -k * p["c"] * np.eye(1), args=({"c": k},),
                         **TIGHT).y[0, -1]

    def y0_list(k):
        return solve_ivp(lambda t, y: -y, (0, 1), [k, 1.0], **TIGHT).y[0, -1]

    for f, want in ((with_default, -np.exp(-0.5)), (partial, -np.exp(-0.5)),
                    (args_tree, -2 * 0.5 * np.exp(-0.25)), (y0_list, np.exp(-1.0))):
        np.testing.assert_allclose(rune.grad(f)(0.5), want, atol=CLOSED)


def test_float32_state_gets_a_float32_gradient():
    g = rune.grad(lambda y: solve_ivp(lambda t, y: -y, (0, 1), y, **TIGHT).y[0, -1])(
        np.ones(1, np.float32))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, [np.exp(-1.0)], rtol=1e-6)


# --------------------------------------------------------------------------
# Dense output, odeint
# --------------------------------------------------------------------------

def test_dense_output_values_and_derivatives():
    def sol(k):
        return solve_ivp(lambda t, y: -k * y, (0.0, 2.0), np.array([2.0]), dense_output=True,
                         **TIGHT).sol

    ts = np.array([1.5, 0.3, 1.0])
    got = rune.jvp(lambda k: sol(k)(ts), (0.5,), (1.0,))
    np.testing.assert_array_equal(got[0], sol(0.5)(ts))       # SciPy's interpolant's values
    np.testing.assert_allclose(got[1][0], -ts * 2 * np.exp(-0.5 * ts), atol=CLOSED)
    fd_check(lambda k, t: sol(k)(t), 0.5, ts)
    fd_check(lambda k, t: sol(k)(t[0]), 0.5, np.array([1.5]))
    assert rune.grad(lambda k: sol(k).t_max * k)(1.0) == 2.0     # SciPy's attributes
    with pytest.raises(ValueError, match="outside the integration span"):
        rune.grad(lambda k: sol(k)(2.5)[0])(0.5)


def test_odeint_args_tfirst_dfun_and_full_output():
    def o(k, y0, t):
        return odeint(lambda y, t, k: -k * y + t, y0, t, args=(k,), rtol=SOLVE, atol=SOLVE)

    def o_tfirst(k, y0, t):
        return odeint(lambda t, y: -k * y + t, y0, t, tfirst=True,
                      Dfun=lambda t, y: -k * np.eye(2), rtol=SOLVE, atol=SOLVE)

    y0 = np.array([1.0, 2.0])
    fd_check(o, 0.5, y0, np.array([0.0, 0.5, 1.2]))
    fd_check(o_tfirst, 0.5, y0, np.array([1.0, 0.5, -1.2]))
    k = 0.5
    np.testing.assert_allclose(
        rune.grad(lambda k: odeint(lambda y, t: -k * y, 1.0, [0.0, 2.0], rtol=SOLVE,
                                   atol=SOLVE)[-1, 0])(k), -2 * np.exp(-2 * k), atol=CLOSED)
    seen = {}

    def with_info(k):
        y, seen["info"] = odeint(lambda y, t: -k * y, y0, [0.0, 1.0], full_output=1)
        return y

    y = rune.vmap(with_info)(np.array([0.5, 1.0]))
    np.testing.assert_allclose(y[:, -1], np.exp(-np.array([[0.5], [1.0]])) * y0, rtol=1e-6)
    assert seen["info"]["message"] == "Integration successful."


# --------------------------------------------------------------------------
# vmap
# --------------------------------------------------------------------------

def test_vmap_against_a_loop_and_composed():
    ks = np.array([0.3, 0.7, 1.1])
    f = lambda k: decay(k, np.array([2.0]), 1.5, t_eval=[0.5, 1.5]).y[0]  # noqa: E731
    check_vmap(f, ks)
    check_vmap(rune.grad(lambda k: f(k)[1]), ks)
    np.testing.assert_allclose(rune.jacrev(rune.vmap(f))(ks), rune.jacfwd(rune.vmap(f))(ks),
                               atol=CLOSED)
    h = rune.hessian(lambda k: np.sum(rune.vmap(f)(k)))(ks)
    t = np.array([0.5, 1.5])
    np.testing.assert_allclose(h, np.diag([np.sum(2 * t ** 2 * np.exp(-k * t)) for k in ks]),
                               atol=CLOSED)
    y0s = np.array([[1.0, 2.0], [3.0, 4.0]])    # batched state and t_span end together
    check_vmap(lambda y0, t1: decay(0.5, y0, t1, t_eval=[t1 / 2, t1]).y, y0s,
               np.array([1.0, 2.0]))


def test_vmap_without_t_eval_runs_per_example():
    """Each example takes its own steps: the per-example fallback (strict vmap refuses)."""
    ks = np.array([0.3, 0.7])
    f = lambda k: decay(k, np.array([2.0]), 1.5).y[0, -1]   # noqa: E731
    with pytest.warns(UserWarning, match="solve_ivp.*t_eval"):
        got = rune.vmap(f)(ks)
    np.testing.assert_allclose(got, 2 * np.exp(-1.5 * ks), atol=CLOSED)
    with pytest.raises(rune.BatchedControlFlowError, match="t_eval"):
        rune.vmap(f, strict=True)(ks)


# --------------------------------------------------------------------------
# quad, quad_vec
# --------------------------------------------------------------------------

def test_quad_closed_form_limits_and_parameters():
    def f(k, a, b):
        return quad(lambda t: np.exp(-k * t), a, b, epsabs=1e-13, epsrel=1e-13)[0]

    k, a, b = 0.5, 0.2, 1.3
    want = ((b * np.exp(-k * b) - a * np.exp(-k * a)) / k
            - (np.exp(-k * a) - np.exp(-k * b)) / k ** 2, -np.exp(-k * a), np.exp(-k * b))
    for jac in (rune.jacrev, rune.jacfwd):
        for g, w in zip(jac(f, argnums=(0, 1, 2))(k, a, b), want):
            np.testing.assert_allclose(g, w, rtol=1e-10)
    rune.check_grads(lambda k, a, b: quad(lambda t: np.exp(-k * t) * np.sin(t), a, b)[0],
                     k, a, b, order=2)


def test_quad_infinite_limits_args_weight_and_full_output():
    gauss = lambda k: quad(lambda t, k: np.exp(-k * t * t), -np.inf, np.inf,  # noqa: E731
                           args=(k,))[0]
    np.testing.assert_allclose(rune.grad(gauss)(0.5), -0.5 * np.sqrt(np.pi) * 0.5 ** -1.5,
                               rtol=1e-8)
    rune.check_grads(lambda k, a: quad(lambda t: np.exp(-k * t * t), a, np.inf)[0], 0.5, 0.2)
    rune.check_grads(lambda k, b: quad(lambda t: np.exp(-k * t), 0.0, b, weight="cos",
                                       wvar=3.0)[0], 0.5, 1.3)
    out = rune.jvp(lambda b: quad(lambda t: t, 0.0, b, full_output=1), (1.0,), (1.0,))
    assert len(out[0]) == 3 and out[0][2]["neval"] > 0 and out[1][0] == 1.0
    with pytest.raises(NotImplementedError, match="weight='alg'"):
        rune.grad(lambda b: quad(lambda t: t, 0.0, b, weight="alg", wvar=(0.5, 0.5))[0])(1.0)


def test_quad_vec_and_vmap():
    def f(k, a, b):
        return integrate.quad_vec(lambda t: np.exp(-k * t) * np.array([1.0, t, t * t]), a, b,
                                  epsrel=1e-12)[0]

    rune.check_grads(f, np.array(0.5), 0.2, 1.3, order=2)
    check_vmap(lambda k: f(k, 0.2, 1.3), np.array([0.3, 0.5, 0.8]))
    check_vmap(lambda k: quad(lambda t: np.exp(-k * t), 0, 1)[0], np.array([0.3, 0.8]))
    check_vmap(lambda b: quad(lambda t: np.abs(t - 1.0) * t, 0, b, points=[1.0])[0],
               np.array([0.5, 1.5, 2.0]))
    rune.check_grads(lambda k, b: quad(lambda t: np.abs(t - 1.0) * t ** k, 0, b,
                                       points=[1.0])[0],
                     0.7, 1.5, order=1)


# --------------------------------------------------------------------------
# trapezoid, cumulative_trapezoid (SciPy's code), simpson (rune's)
# --------------------------------------------------------------------------

Y = np.array([1.0, 2.0, 4.0, 3.0, 2.5])
X = np.array([0.0, 0.5, 1.5, 2.0, 2.7])


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_sampled_rules(n):
    y, x = Y[:n], X[:n]
    for fn in (integrate.trapezoid, integrate.simpson):
        rune.check_grads(lambda y, x: fn(y, x=x), y, x)
        rune.check_grads(lambda y, dx: fn(y, dx=dx), y, 0.3)
        yy = np.outer(y, Y)
        np.testing.assert_allclose(rune.jvp(lambda a: fn(a, x=x, axis=0), (yy,), (yy,))[0],
                                   fn(yy, x=x, axis=0), rtol=1e-14)
        check_vmap(lambda c: fn(c, x=x), yy, in_axes=1)
    rune.check_grads(lambda y, x: integrate.cumulative_trapezoid(y, x, initial=0), y, x)
    np.testing.assert_allclose(rune.jvp(lambda y: integrate.simpson(y, x=x), (y,), (y,))[0],
                               integrate.simpson(y, x=x), rtol=1e-14)


# --------------------------------------------------------------------------
# Refusals, warnings, constants, SciPy untouched
# --------------------------------------------------------------------------

class Holder:
    pass


def test_a_hidden_traced_value_is_named():
    def hidden(k):
        h = Holder()
        h.k = k
        return solve_ivp(lambda t, y: -h.k * y, (0, 1), np.ones(1)).y[0, -1]

    with pytest.raises(ValueError, match="solve_ivp.*args="):
        rune.grad(hidden)(0.5)
    with pytest.raises(ValueError, match="quad.*args="):
        h = Holder()
        rune.grad(lambda k: (setattr(h, "k", k), quad(lambda t: h.k * t, 0, 1)[0])[1])(0.5)


def test_refusals():
    f = lambda t, y, k: -k * y    # noqa: E731
    with pytest.raises(NotImplementedError, match="events="):
        rune.grad(lambda k: solve_ivp(f, (0, 1), [1.0], args=(k,),
                                      events=lambda t, y, k: y[0] - 0.5).y[0, -1])(0.5)
    with pytest.raises(NotImplementedError, match="complex"):
        rune.grad(lambda k: np.real(solve_ivp(f, (0, 1), [1.0 + 0j], args=(k,)).y[0, -1]))(0.5)
    with pytest.raises(ValueError, match="monotonically"):
        rune.grad(lambda k: odeint(lambda y, t: -k * y, [1.0], [0.0, 1.0, 0.5])[-1, 0])(0.5)


def test_a_failed_solve_warns_naming_the_solver_and_counts_stay_ints():
    def f(k):
        r = solve_ivp(lambda t, y: k * y ** 2, (0, 2), np.ones(1))
        assert not r.success and r.status == -1 and type(r.nfev) is int
        return r.y[0, -1]

    with pytest.warns(integrate_warning(), match=r"solve_ivp \(method RK45\) did not succeed"):
        rune.grad(f)(1.0)


def integrate_warning():
    from rune.scipy.integrate import SolverWarning
    return SolverWarning


def test_nothing_traced_gives_scipys_own_result_and_nothing_is_written():
    seen = {}
    y0 = np.array([1.0, 2.0])
    y0_copy = y0.copy()

    def f(x):
        seen["ivp"] = solve_ivp(lambda t, y: -y, (0, 1), y0)
        seen["quad"] = quad(np.sin, 0, 1)
        return x * solve_ivp(lambda t, y: -x * y, (0, 1), y0).y[0, -1]

    rune.grad(f)(1.0)
    plain = solve_ivp(lambda t, y: -y, (0, 1), y0)
    np.testing.assert_array_equal(seen["ivp"].y, plain.y)
    assert type(seen["ivp"]) is type(plain) and seen["quad"] == quad(np.sin, 0, 1)
    np.testing.assert_array_equal(y0, y0_copy)
    import inspect
    assert "t_eval" in inspect.signature(solve_ivp).parameters
    assert solve_ivp.__module__ == "scipy.integrate._ivp.ivp"


def _peak(loss, x):
    g = rune.grad(loss)
    g(x)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        g(x)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_adjoint_memory_does_not_grow_with_the_steps():
    """Explicit methods integrate y backwards too: the same memory for 10x the steps
    (oscillators: y is as stable backwards as forwards).  NumPy 2.4 fills a bounded
    cache of its own (~0.1 MB) as the calls grow: allowed for."""
    def loss(t1):
        def f(p):
            sol = solve_ivp(lambda t, y: np.concatenate([y[4:], -p * y[:4]]), (0.0, t1),
                            np.ones(8), t_eval=[t1], rtol=1e-8, atol=1e-8)
            return np.sum(sol.y)
        return f

    small, large = _peak(loss(5.0), np.ones(4)), _peak(loss(50.0), np.ones(4))
    assert large < 1.2 * small + 100_000, (small, large)


def test_an_unstable_backward_y_is_resolved_forwards():
    """Decays at rates 0.1 and 5 over t = 10: backwards, the fast one grows by e^50 and
    the backward y misses the forward solve's; the segment is solved again with y
    re-solved forwards between checkpoints (implicit methods always are)."""
    k, y0 = np.array([0.1, 5.0]), np.array([1.0, 1.0])

    def f(k, y0, method):
        return solve_ivp(lambda t, y: -k * y, (0.0, 10.0), y0, method=method,
                         **TIGHT).y[:, -1]

    e = np.exp(-10 * k)
    for method in ("RK45", "BDF"):
        gk, gy = rune.jacrev(f, argnums=(0, 1))(k, y0, method)
        np.testing.assert_allclose(gk, np.diag(-10 * y0 * e), atol=CLOSED)
        np.testing.assert_allclose(gy, np.diag(e), atol=CLOSED)

    def forced(t1):
        return lambda k: np.sum(solve_ivp(lambda t, y: -k * y + np.sin(8 * t), (0.0, t1),
                                          y0, method="BDF", t_eval=[t1], rtol=1e-6,
                                          atol=1e-8).y)

    short, longer = _peak(forced(1.0), k), _peak(forced(10.0), k)
    assert longer < 4 * short + 100_000, (short, longer)   # O(sqrt(steps)), not O(steps)


def test_doctests():
    import doctest
    import rune.scipy.integrate as mod
    import rune.scipy.integrate_quad as quad_mod
    for module in (mod, quad_mod):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_the_docs_page_runs():
    import pathlib
    import re
    page = pathlib.Path(__file__).resolve().parents[1] / "docs" / "solvers-integrate.md"
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)
    assert len(blocks) == 2
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k, code in enumerate(blocks):
            exec(compile(code, f"solvers-integrate.md[block {k}]", "exec"), namespace)


def test_no_warnings_on_the_common_path():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rune.grad(lambda k: decay(k, np.ones(1), 1.0, "BDF").y[0, -1])(0.5)
