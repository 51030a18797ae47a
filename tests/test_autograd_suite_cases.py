"""Cases found by running HIPS autograd's own test suite against rune (through a shim that
maps autograd's API onto rune's).  Each test names the autograd test it comes from;
every derivative is checked with ``rune.check_grads``."""

import warnings

import numpy as np
import pytest

import rune
from helpers import check_vmap

R = np.random.default_rng(7)


# --- np.imag's VJP on a NumPy scalar cotangent (autograd: test_complex.py::test_angle_complex)
# ``-1j * ct`` with ``ct`` a np.float64 is a Python complex, which the engine cannot fit.

@pytest.mark.parametrize("f", [
    np.angle,
    lambda z: np.sin(np.imag(z)),
    lambda z: np.imag(z) * np.real(z),
    lambda z: np.arctan2(np.imag(z), 1.0),
])
def test_imag_vjp_with_scalar_cotangent(f):
    z = 0.3 + 0.4j
    g = rune.grad(f)(z)
    assert isinstance(g, complex)
    rune.check_grads(f, z)
    rune.check_grads(f, np.complex128(z))
    rune.check_grads(f, np.array([0.3 + 0.4j, -1.2 + 0.5j]) if f is not np.angle else z)


def test_angle_matches_hand_derivative():
    # angle(x + iy) = atan2(y, x): d/dx = -y/r^2, d/dy = x/r^2; grad = d/dx - i d/dy
    x, y = 0.3, 0.4
    r2 = x * x + y * y
    np.testing.assert_allclose(rune.grad(np.angle)(x + 1j * y), -y / r2 - 1j * x / r2,
                               rtol=1e-14)


# --- Tuples inside an index tuple are sequences, as in NumPy
#     (autograd: test_fft.py::test_rfftn_subset, test_irfftn_subset)

INDICES = [((0, 1, 0), (2, 2, 1)), (0, (1, 2)), ((0, 1),), (Ellipsis, (0, 3)),
           (slice(None), (2, 0), 1)]


@pytest.mark.parametrize("idx", INDICES, ids=str)
def test_tuple_inside_index_reads(idx):
    x = R.normal(size=(2, 3, 4))
    np.testing.assert_array_equal(rune.vjp(lambda a: a[idx], x)[0], x[idx])
    rune.check_grads(lambda a: a[idx] ** 2, x)
    check_vmap(lambda a: a[idx], np.stack([x, 2 * x]))


@pytest.mark.parametrize("idx", INDICES, ids=str)
def test_tuple_inside_index_writes(idx):
    x = R.normal(size=(2, 3, 4))

    def f(a, v):
        b = a.copy()
        b[idx] = v
        return b * a

    v = 1.5
    want = x.copy()
    want[idx] = v
    np.testing.assert_allclose(rune.vjp(f, x, v)[0], want * x)
    rune.check_grads(f, x, v)


def test_rfftn_subset():
    x = R.normal(size=(4, 4, 4)) / 10
    rune.check_grads(lambda a: np.fft.rfftn(a)[(0, 1, 0), (3, 2, 2)], x)


# --- np.std over axes of length 1 (autograd: test_systematic.py::test_std)
# One element per result: the std is identically 0, a constant, so its derivative is 0
# (not sqrt'(0) * 0 = NaN).  Over more elements that happen to be equal it stays NaN.

STD_CASES = [
    (lambda x: np.std(x[0, 0]), (2, 3)),
    (lambda x: np.std(x, axis=0), (1, 3)),
    (lambda x: np.std(x, axis=0, keepdims=True), (1, 3)),
    (lambda x: np.std(x, axis=(0, 2)), (1, 3, 1)),
    (lambda x: x.std(axis=1), (3, 1)),
    (lambda x: np.std(x + 0.5j * x, axis=0), (1, 3)),
]


@pytest.mark.parametrize("case", range(len(STD_CASES)))
def test_std_of_one_element_has_zero_derivative(case):
    f, shape = STD_CASES[case]
    x = R.normal(size=shape)
    assert np.all(f(x) == 0)
    for jac in (rune.jacrev(f)(x), rune.jacfwd(f)(x)):
        np.testing.assert_array_equal(jac, 0.0)
    rune.check_grads(f, x, order=3)
    np.testing.assert_array_equal(rune.hessian(lambda x: np.sum(f(x)))(x), 0.0)


def test_std_of_one_element_vmap_and_ddof():
    x = R.normal(size=(4, 1, 3))
    check_vmap(lambda a: np.std(a, axis=0), x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.std(x[0], axis=0, ddof=1)
        got = rune.vjp(lambda a: np.std(a, axis=0, ddof=1), x[0])[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


def test_std_of_equal_elements_stays_nan():
    # a non-constant function at a point where sqrt's argument is 0: undefined, as in JAX
    with np.errstate(divide="ignore", invalid="ignore"):
        g = rune.grad(lambda x: np.std(x))(np.array([2.0, 2.0]))
    assert np.all(np.isnan(g))


# --- ravel(order='K'/'A') where it is C order (autograd: test_linalg.py::test_norm_list_of_boxes)
# NumPy's np.linalg.norm ravels with order='K' when given a list.

def test_norm_of_a_list_of_traced_values():
    assert rune.grad(lambda x: np.linalg.norm([x, x + 2]))(0.0) == 1.0
    assert rune.grad(lambda x: np.linalg.norm((x, x + 2)))(0.0) == 1.0
    rune.check_grads(lambda x: np.linalg.norm([x, 2 * x + 1, np.sin(x)]), 0.7)


@pytest.mark.parametrize("order", ["K", "A"])
def test_ravel_memory_order_of_c_contiguous(order):
    x = R.normal(size=(2, 3))
    np.testing.assert_array_equal(rune.vjp(lambda a: np.ravel(a, order=order), x)[0],
                                  np.ravel(x, order=order))
    rune.check_grads(lambda a: a.ravel(order) * a.ravel(), x)

    def write(a):
        b = a.copy()
        b.ravel(order)[1] = 0.0         # a view of b, as in NumPy
        return b * a

    want = x.copy()
    want.ravel(order)[1] = 0.0
    np.testing.assert_allclose(rune.vjp(write, x)[0], want * x)
    rune.check_grads(write, x)


def test_ravel_memory_order_of_a_transpose_is_numpys():
    a = R.normal(size=(2, 3))
    f = lambda a: np.ravel(a.T, order="K")      # noqa: E731  (memory order: a's C order)
    np.testing.assert_array_equal(rune.vjp(f, a)[0], f(a))
    rune.check_grads(lambda a: np.sum(np.sin(f(a)) * np.arange(6)), a, order=2)
    with pytest.raises(NotImplementedError, match="order='K'"):     # strided: refused
        rune.vjp(lambda a: np.ravel(a[:, ::2].T, order="K"), np.ones((2, 5)))


# --- scipy.special's Bessel functions of any order, and gammasgn
#     (autograd: test_scipy.py::test_jn, test_yn, test_j0 ... test_iv, test_ive, test_gammasgn)

sc = pytest.importorskip("scipy.special")

BESSEL_OF_ORDER = {          # name -> (orders, domain of x)
    "jv": ([0.0, 0.5, 2.0, 3.7], (0.1, 6.0)), "jn": ([0, 1, 4], (-6.0, 6.0)),
    "yv": ([0.0, 0.5, 2.0, 3.7], (0.3, 6.0)), "yn": ([0, 1, 4], (0.3, 6.0)),
    "iv": ([0.0, 0.5, 2.0, 3.7], (0.1, 4.0)), "ive": ([0.0, 1.0, 2.0, 30.0], (-4.0, 4.0)),
    "kv": ([0.0, 0.5, 2.0, 3.7], (0.3, 4.0)), "kve": ([0.0, 0.5, 2.0, 3.7], (0.3, 4.0)),
}


@pytest.mark.parametrize("name", sorted(BESSEL_OF_ORDER))
def test_bessel_of_any_order_in_x(name):
    f = getattr(sc, name)
    orders, (lo, hi) = BESSEL_OF_ORDER[name]
    x = R.uniform(lo, hi, 5)
    if name == "ive":
        x = x[np.abs(x) > 0.1]           # |x| has a kink at 0
    for v in orders:
        rune.check_grads(lambda x: f(v, x), x, order=2)
    v = np.array(orders)[:, None]          # an array of orders, broadcast against x
    rune.check_grads(lambda x: f(v, x), x, order=1)
    check_vmap(lambda x: f(v, x), np.stack([x, x * 0.9]))


def test_bessel_derivatives_by_hand():
    x = np.array([0.0, 0.7, 2.5])
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(sc.j0(x)))(x), -sc.j1(x))
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(sc.j1(x)))(x),
                               [0.5, *(sc.j0(x[1:]) - sc.j1(x[1:]) / x[1:])], rtol=1e-13)
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(sc.iv(1.0, x)))(x)[0], 0.5)
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(sc.yn(0, x)))(x[1:]), -sc.y1(x[1:]))


def test_bessel_order_has_no_derivative():
    with pytest.raises(NotImplementedError, match=r"jv has no derivative with respect to v in "
                                                  r"rune \(no closed form in the order\)"):
        rune.grad(lambda v: sc.jv(v, 1.5))(0.5)
    # a constant order is fine
    assert rune.grad(lambda x: sc.jv(0.5, x))(1.5) == pytest.approx(
        (sc.jv(-0.5, 1.5) - sc.jv(1.5, 1.5)) / 2, rel=1e-14)


def test_gammasgn_has_zero_derivative():
    x = np.array([-2.5, -0.5, 0.3, 2.0])
    np.testing.assert_array_equal(rune.grad(lambda x: np.sum(sc.gammasgn(x) * x))(x),
                                  sc.gammasgn(x))
    np.testing.assert_array_equal(rune.jvp(sc.gammasgn, (x,), (np.ones(4),))[1], 0.0)


# --- scipy.stats: chi2, and the cdf/sf of the discrete families
#     (autograd: test_scipy.py::test_chi2_*, test_poisson_cdf, test_poisson_cdf_broadcast)

st = pytest.importorskip("scipy.stats")


def _method(dist, name):
    # looked up inside the transformation (rune replaces the method while one is active)
    return lambda *a: getattr(getattr(st, dist), name)(*a)


@pytest.mark.parametrize("name", ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"])
def test_chi2(name):
    f = _method("chi2", name)
    x, df = R.uniform(0.5, 4.0, 4), R.uniform(1.5, 4.0, 4)
    np.testing.assert_allclose(rune.vjp(lambda x: f(x, df), x)[0], f(x, df), rtol=1e-12)
    rune.check_grads(lambda x: f(x, df), x)
    rune.check_grads(lambda x: f(x, df[:, None], 0.3, 1.7), x)        # broadcast, loc, scale
    check_vmap(lambda x: f(x, df), np.stack([x, x + 0.5]))
    if name in ("pdf", "logpdf"):
        rune.check_grads(lambda d: f(x, d), df)


K = np.array([-1.0, 0.0, 1.0, 2.5, 3.0, 7.0, 10.0])
DISCRETE = {"poisson": lambda a: (K, a), "binom": lambda a: (K, 8.0, a),
            "bernoulli": lambda a: (K, a)}


@pytest.mark.parametrize("dist", sorted(DISCRETE))
@pytest.mark.parametrize("name", ["cdf", "logcdf", "sf", "logsf"])
def test_discrete_cdf_and_sf(dist, name):
    f = _method(dist, name)
    args = DISCRETE[dist]
    par = R.uniform(0.5, 5.0, K.size) if dist == "poisson" else R.uniform(0.1, 0.9, K.size)
    with np.errstate(divide="ignore"):
        want = f(*args(par))
        got = rune.vjp(lambda a: f(*args(a)), par)[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)     # the tails too
    ok = np.isfinite(want) & (want != 0)
    rune.check_grads(lambda a: f(*args(a))[ok], par)


def test_poisson_cdf_broadcast_and_unsupported_family():
    k, mu = np.round(R.normal(size=(4, 3)) ** 2), R.normal(size=(4, 1)) ** 2 + 1.1
    rune.check_grads(lambda m: st.poisson.cdf(k, m), mu)
    with pytest.raises(NotImplementedError, match=r"scipy\.stats\.zipf\.cdf has no rule"):
        rune.grad(lambda a: st.zipf.cdf(2.0, a))(2.3)


# --- scipy.linalg: sqrtm at matrices with negative eigenvalues (second order), and
#     solve_sylvester, solve_banded (autograd: test_scipy.py::test_sqrtm,
#     test_solve_sylvester, test_solve_banded)

sla = pytest.importorskip("scipy.linalg")


def _sym(x):
    return 0.5 * (x + x.T)


@pytest.mark.parametrize("seed", [0, 2, 4])
def test_sqrtm_second_order_with_negative_eigenvalues(seed):
    # sqrtm is complex there; the rules solve S dS + dS S = dA in SciPy's computed S (the
    # block matrix [[A, E], [0, A]] gave reverse-over-reverse results off by 1e6)
    b = np.random.default_rng(seed).normal(size=(3, 3))
    assert np.linalg.eigvalsh(_sym(b)).min() < 0
    f = lambda x: sla.sqrtm(_sym(x))          # noqa: E731
    np.testing.assert_allclose(rune.vjp(f, b)[0], sla.sqrtm(_sym(b)), rtol=1e-13)
    rune.check_grads(f, b, order=2)
    h = rune.hessian(lambda x: np.real(np.sum(f(x) ** 2)))(b)
    np.testing.assert_allclose(h, rune.jacfwd(rune.jacfwd(lambda x: np.real(np.sum(f(x) ** 2))))(b),
                               rtol=1e-8, atol=1e-10)


def test_sqrtm_of_positive_definite_and_stacks():
    b = R.normal(size=(2, 3, 3))
    a = b @ np.swapaxes(b, -1, -2) + np.eye(3)
    rune.check_grads(lambda x: sla.sqrtm(x[0]), a, order=2)
    s = rune.vjp(lambda x: sla.sqrtm(x[1]), a)[0]
    np.testing.assert_allclose(s @ s, a[1], rtol=1e-12)
    check_vmap(lambda x: sla.sqrtm(x), a, rtol=1e-12)


def test_solve_sylvester():
    a, b, q = R.normal(size=(3, 3)), R.normal(size=(2, 2)), R.normal(size=(3, 2))
    sylv = lambda a, b, q: sla.solve_sylvester(a, b, q)        # noqa: E731
    x = rune.vjp(sylv, a, b, q)[0]
    np.testing.assert_allclose(x, sla.solve_sylvester(a, b, q), rtol=1e-13)
    np.testing.assert_allclose(a @ x + x @ b, q, atol=1e-12)
    rune.check_grads(sylv, a, b, q, order=2)
    rune.check_grads(sylv, a + 0.5j * R.normal(size=(3, 3)), b, q, order=2)
    check_vmap(sylv, np.stack([a, a + 1]), np.stack([b, 2 * b]), np.stack([q, -q]))


@pytest.mark.parametrize("l_and_u, rhs", [((1, 1), (5,)), ((1, 2), (5, 2)), ((0, 0), (4,)),
                                          ((2, 0), (6, 3))])
def test_solve_banded(l_and_u, rhs):
    lo, up = l_and_u
    n = rhs[0]
    ab = R.normal(size=(lo + up + 1, n))
    ab[up] += 4.0                      # the diagonal: well conditioned
    b = R.normal(size=rhs)
    f = lambda ab, b: sla.solve_banded(l_and_u, ab, b)       # noqa: E731
    np.testing.assert_allclose(rune.vjp(f, ab, b)[0], sla.solve_banded(l_and_u, ab, b),
                               rtol=1e-12)
    rune.check_grads(f, ab, b, order=2)
    g = rune.grad(lambda ab: np.sum(f(ab, b)))(ab)
    for k in range(1, up + 1):          # LAPACK's unused corners of the band storage
        np.testing.assert_array_equal(g[up - k, :k], 0.0)
    with pytest.raises(ValueError, match="does not equal ab.shape"):
        rune.grad(lambda ab: np.sum(sla.solve_banded((lo + 1, up), ab, b)))(ab)


# --- multivariate_normal with allow_singular=True (autograd: test_scipy.py::test_mvn_sing_cov)

def _mvn_logpdf(x, mean, cov):
    return st.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)


def test_mvn_singular_covariance():
    cov = np.zeros((4, 4))
    cov[0, 0] = cov[1, 1] = 1.0
    mean = np.concatenate([R.normal(size=2), np.zeros(2)])
    x = np.concatenate([R.normal(size=2), np.zeros(2)])

    def on_support(x, m):
        return _mvn_logpdf(np.concatenate([x[:2], m[2:]]), m, cov)

    np.testing.assert_allclose(rune.vjp(on_support, x, mean)[0], on_support(x, mean),
                               rtol=1e-13)
    rune.check_grads(on_support, x, mean, order=2)
    rune.check_grads(lambda x, m: np.exp(on_support(x, m)), x, mean, order=2)
    off = x + np.array([0.0, 0.0, 1.0, 0.0])          # reaches the null space
    assert rune.vjp(lambda x: _mvn_logpdf(x, mean, cov), off)[0] == -np.inf == \
        _mvn_logpdf(off, mean, cov)


def test_mvn_rank_deficient_and_full_rank_with_allow_singular():
    b = R.normal(size=(4, 2))
    low_rank = b @ b.T
    pts = R.normal(size=(5, 2)) @ b.T + 0.3
    m = np.full(4, 0.3)
    np.testing.assert_allclose(rune.vjp(lambda p: _mvn_logpdf(p, m, low_rank), pts)[0],
                               _mvn_logpdf(pts, m, low_rank), rtol=1e-9)
    # moves of the mean along the support (any other leaves it: -inf)
    rune.check_grads(lambda c: _mvn_logpdf(pts, m + b @ c, low_rank), R.normal(size=2), order=2)
    c = R.normal(size=(4, 4))
    full = c @ c.T + 0.5 * np.eye(4)                   # distinct eigenvalues
    np.testing.assert_allclose(rune.vjp(lambda p: _mvn_logpdf(p, m, full), pts)[0],
                               st.multivariate_normal.logpdf(pts, m, full), rtol=1e-12)
    rune.check_grads(lambda p, m, s: _mvn_logpdf(p, m, _sym(s)), pts, m, full, order=2)
    check_vmap(lambda p: _mvn_logpdf(p, m, full), pts, rtol=1e-12)
