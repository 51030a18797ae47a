"""scipy.stats under every transformation: densities, distribution functions and ppf in
x and every parameter against finite differences of SciPy's own values (second order),
values against SciPy's, vmap against a loop."""

import numpy as np
import pytest

import rune

st = pytest.importorskip("scipy.stats")

# name -> (x domain, loc, scale, shape domains); x chosen inside the support
FAMILIES = {
    "norm": ((-2.0, 2.0), 0.3, 1.5, ()),
    "t": ((-2.0, 2.0), 0.3, 1.5, ((2.0, 5.0),)),
    "gamma": ((0.5, 3.0), 0.1, 1.3, ((1.5, 3.0),)),
    "beta": ((0.1, 0.9), -0.1, 1.2, ((1.5, 3.0), (1.5, 3.0))),
    "expon": ((0.5, 3.0), 0.1, 1.3, ()),
    "laplace": ((0.5, 2.0), 0.1, 1.3, ()),
    "cauchy": ((-2.0, 2.0), 0.3, 1.5, ()),
    "logistic": ((-2.0, 2.0), 0.3, 1.5, ()),
    "lognorm": ((0.5, 3.0), 0.1, 1.3, ((0.5, 1.5),)),
    "uniform": ((0.3, 2.0), 0.1, 2.0, ()),
    "weibull_min": ((0.3, 2.5), 0.1, 1.3, ((0.7, 2.5),)),
    "chi2": ((0.5, 3.0), 0.1, 1.3, ((1.5, 4.0),)),
}
# the regularized incomplete functions have no derivative in their shape parameters
NO_SHAPE_DERIVATIVE = {"t", "gamma", "beta", "chi2"}
METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
HAS_PPF = ("norm", "expon", "laplace", "cauchy", "logistic", "lognorm", "uniform",
           "weibull_min", "t", "gamma", "beta", "chi2")


def draw(name, rng, n=3):
    xd, loc, scale, shapes = FAMILIES[name]
    x = rng.uniform(*xd, n)
    return x, np.float64(loc), np.float64(scale), [np.float64(rng.uniform(*d)) for d in shapes]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_continuous_check_grads_and_values(name, method, rng):
    dist = getattr(st, name)
    x, loc, scale, shapes = draw(name, rng)

    def f(x, loc, scale, *shapes):
        return getattr(dist, method)(x, *shapes, loc=loc, scale=scale)

    want = f(x, loc, scale, *shapes)          # SciPy's own values
    got, _ = rune.jvp(lambda x, loc, scale: f(x, loc, scale, *shapes), (x, loc, scale),
                      (x, loc, scale))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-300)
    if method in ("logpdf", "pdf") or name not in NO_SHAPE_DERIVATIVE:
        rune.check_grads(f, x, loc, scale, *shapes, order=2)
    else:
        rune.check_grads(lambda x, loc, scale: f(x, loc, scale, *shapes), x, loc, scale,
                         order=2)
        with pytest.raises(NotImplementedError, match="no derivative with respect to"):
            rune.grad(lambda s: np.sum(f(x, loc, scale, s, *shapes[1:])))(shapes[0])


@pytest.mark.parametrize("name", HAS_PPF)
def test_ppf(name, rng):
    dist = getattr(st, name)
    _, loc, scale, shapes = draw(name, rng)
    q = rng.uniform(0.1, 0.9, 3)

    def f(q, loc, scale, *shapes):
        return dist.ppf(q, *shapes, loc, scale)

    got, _ = rune.jvp(lambda q, loc, scale: f(q, loc, scale, *shapes), (q, loc, scale),
                      (q, loc, scale))
    np.testing.assert_allclose(got, f(q, loc, scale, *shapes), rtol=1e-10)
    if name not in NO_SHAPE_DERIVATIVE:
        rune.check_grads(f, q, loc, scale, *shapes, order=2)
        return
    # ppf' = 1 / pdf at the quantile; in a shape parameter it would need the cdf's
    # derivative there, which has no closed form: refused
    rune.check_grads(lambda q, loc, scale: f(q, loc, scale, *shapes), q, loc, scale, order=2)
    np.testing.assert_allclose(
        rune.grad(lambda q: np.sum(f(q, loc, scale, *shapes)))(q),
        1 / dist.pdf(f(q, loc, scale, *shapes), *shapes, loc, scale), rtol=1e-10)
    with pytest.raises(NotImplementedError, match="no derivative with respect to"):
        rune.grad(lambda s: np.sum(f(q, loc, scale, s, *shapes[1:])))(shapes[0])


def test_outside_the_support_and_invalid_parameters_match_scipy():
    x = np.array([-1.0, 0.0, 0.5, 2.0])
    for name, args in (("gamma", (2.0,)), ("beta", (2.0, 3.0)), ("expon", ()),
                       ("uniform", ()), ("lognorm", (0.7,))):
        dist = getattr(st, name)
        for method in METHODS:
            want = getattr(dist, method)(x, *args)
            got = rune.vmap(lambda x: getattr(dist, method)(x, *args))(x)
            np.testing.assert_allclose(got, want, rtol=1e-10, err_msg=f"{name}.{method}")
    got = rune.vmap(lambda x: st.norm.logpdf(x, 0.0, -1.0))(x)
    assert np.all(np.isnan(got)) and np.all(np.isnan(st.norm.logpdf(x, 0.0, -1.0)))


@pytest.mark.parametrize("name", ["norm", "gamma", "t"])
def test_vmap_against_a_loop_and_frozen_distributions(name, rng):
    dist = getattr(st, name)
    x, loc, scale, shapes = draw(name, rng, 4)
    locs = loc + rng.uniform(-0.05, 0.05, 4)

    def f(loc):
        return dist(*shapes, loc=loc, scale=scale).logpdf(x)

    g = rune.vmap(rune.grad(lambda l: np.sum(f(l))))(locs)
    want = [rune.grad(lambda l: np.sum(f(l)))(l) for l in locs]
    np.testing.assert_allclose(g, want, rtol=1e-12)
    np.testing.assert_allclose(rune.vmap(f)(locs), np.stack([f(l) for l in locs]), rtol=1e-12)


DISCRETE = {
    "poisson": (np.array([0.0, 1.0, 3.0]), [(0.5, 3.0)]),
    "binom": (np.array([0.0, 2.0, 5.0]), [5, (0.2, 0.8)]),
    "bernoulli": (np.array([0.0, 1.0, 1.0]), [(0.2, 0.8)]),
    "nbinom": (np.array([0.0, 2.0, 5.0]), [(1.5, 4.0), (0.2, 0.8)]),
    "geom": (np.array([1.0, 2.0, 5.0]), [(0.2, 0.8)]),
}


@pytest.mark.parametrize("method", ["logpmf", "pmf"])
@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_in_their_continuous_parameters(name, method, rng):
    dist = getattr(st, name)
    k, params = DISCRETE[name]
    fixed = [p for p in params if not isinstance(p, tuple)]
    cont = [np.float64(rng.uniform(*p)) for p in params if isinstance(p, tuple)]

    def f(*cont):
        return getattr(dist, method)(k, *fixed, *cont)

    got, _ = rune.jvp(f, tuple(cont), tuple(cont))
    np.testing.assert_allclose(got, f(*cont), rtol=1e-10)
    rune.check_grads(f, *cont, order=2)
    np.testing.assert_allclose(rune.vmap(lambda c0: f(c0, *cont[1:]))(np.array([cont[0]] * 2)),
                               [f(*cont)] * 2, rtol=1e-12)


def test_multivariate_normal(rng):
    x = rng.standard_normal((4, 3))
    m = rng.standard_normal(3)
    a = rng.standard_normal((3, 3)) * 0.3

    def f(x, m, a):
        return st.multivariate_normal.logpdf(x, m, a @ a.T + np.eye(3))

    np.testing.assert_allclose(rune.jvp(f, (x, m, a), (x, m, a))[0], f(x, m, a), rtol=1e-12)
    rune.check_grads(f, x, m, a, order=2)
    rune.check_grads(lambda x, m: st.multivariate_normal.pdf(x, m, np.eye(3) * 2.0),
                     x[0], m, order=2)
    np.testing.assert_allclose(rune.vmap(lambda m: f(x, m, a))(np.stack([m, m + 1])),
                               np.stack([f(x, m, a), f(x, m + 1, a)]), rtol=1e-12)


def test_dirichlet(rng):
    x = np.array([0.2, 0.5, 0.3])
    alpha = rng.uniform(1.0, 3.0, 3)
    for method in ("logpdf", "pdf"):
        def f(alpha):
            return getattr(st.dirichlet, method)(x, alpha)
        np.testing.assert_allclose(rune.jvp(f, (alpha,), (alpha,))[0], f(alpha), rtol=1e-12)
        rune.check_grads(f, alpha, order=2)


@pytest.mark.parametrize("with_q", [False, True])
@pytest.mark.parametrize("base", [None, 2.0])
def test_entropy(with_q, base, rng):
    p = rng.uniform(0.2, 1.0, (3, 2))
    q = rng.uniform(0.2, 1.0, (3, 2))

    def f(p, q):
        return st.entropy(p, q if with_q else None, base=base)

    np.testing.assert_allclose(rune.jvp(f, (p, q), (p, q))[0], f(p, q), rtol=1e-12)
    rune.check_grads(f, p, q, order=2)


def test_unsupported_distribution_is_named():
    with pytest.raises(NotImplementedError, match=r"scipy\.stats\.gompertz\.logpdf"):
        rune.grad(lambda c: st.gompertz.logpdf(1.0, c))(1.5)


@pytest.mark.parametrize("order", ["scipy first", "rune first"])
def test_import_order_of_scipy_stats_and_rune_does_not_matter(order):
    import os
    import subprocess
    import sys
    imports = ["from scipy.stats import norm", "import rune"]
    if order == "rune first":
        imports.reverse()
    code = "\n".join(imports + [
        "import rune, numpy as np",
        "print(rune.grad(lambda mu: norm.logpdf(1.0, mu, 2.0))(0.0))",
        "print(rune.grad(lambda s: norm(0.0, s).logpdf(1.0))(2.0))"])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0.25", "-0.375"]
