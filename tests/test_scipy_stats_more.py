"""scipy.stats beyond densities: the discrete families' distribution functions (nbinom,
geom, with the existing ones), values off the support against SciPy's, the summary
statistics (zscore, zmap, skew, kurtosis, pearsonr, spearmanr) against SciPy's numbers and
finite differences, and reparameterised sampling with rvs."""

import warnings

import numpy as np
import pytest

import rune

st = pytest.importorskip("scipy.stats")

DISCRETE_METHODS = ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf")
# name -> (k, the fixed parameters, the differentiated ones (their values))
DISCRETE = {
    "nbinom": (np.array([0.0, 1.0, 2.0, 6.0]), (), (2.5, 0.4)),
    "geom": (np.array([1.0, 2.0, 3.0, 6.0]), (), (0.35,)),
    "poisson": (np.array([0.0, 1.0, 2.0, 6.0]), (), (2.2,)),
    "binom": (np.array([0.0, 1.0, 2.0, 6.0]), (8,), (0.3,)),
}
BETWEEN = 2.5       # the distribution functions between the integers too
# the regularized incomplete beta/gamma in their shape parameters: refused, not zero
SHAPE_REFUSED = {("nbinom", 0)}


@pytest.mark.parametrize("method", DISCRETE_METHODS)
@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_methods_in_their_parameters(name, method):
    dist = getattr(st, name)
    k, fixed, params = DISCRETE[name]
    params = [np.float64(p) for p in params]

    cdf_like = method not in ("logpmf", "pmf")
    if cdf_like:
        k = np.append(k, BETWEEN)

    def f(*p):
        return getattr(dist, method)(k, *fixed, *p)

    diff = [i for i in range(len(params)) if not (cdf_like and (name, i) in SHAPE_REFUSED)]

    def g(*d):
        p = list(params)
        for i, v in zip(diff, d):
            p[i] = v
        return f(*p)

    d0 = tuple(params[i] for i in diff)
    np.testing.assert_allclose(rune.jvp(g, d0, d0)[0], f(*params), rtol=1e-12)
    rune.check_grads(g, *d0, order=2)
    batch = np.array([params[-1], params[-1] * 0.9])
    np.testing.assert_allclose(rune.vmap(lambda p: f(*params[:-1], p))(batch),
                               [f(*params[:-1], b) for b in batch], rtol=1e-12)
    for i in range(len(params)):
        if cdf_like and (name, i) in SHAPE_REFUSED:
            with pytest.raises(NotImplementedError, match="no derivative with respect to"):
                rune.grad(lambda v: np.sum(f(*params[:i], v, *params[i + 1:])))(params[i])


@pytest.mark.parametrize("name,args", [("nbinom", (2.5, 0.4)), ("geom", (0.35,)),
                                       ("nbinom", (0.0, 0.4)), ("geom", (1.2,)),
                                       ("weibull_min", (1.5,)), ("weibull_min", (-1.0,))])
def test_off_the_support_and_invalid_parameters_match_scipy(name, args):
    dist = getattr(st, name)
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0])
    methods = DISCRETE_METHODS if name != "weibull_min" else (
        "logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf")
    for method in methods:
        xs = np.clip(x, 0, 1) * 0.9 if method == "ppf" else x
        want = getattr(dist, method)(xs, *args)
        got = rune.vmap(lambda x: getattr(dist, method)(x, *args))(xs)
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{name}.{method}")


def _data(rng):
    return rng.standard_normal((6, 4)), rng.standard_normal((6, 4))


def _check(f, *args, order=2):
    want = f(*args)                                  # SciPy's own numbers
    got = rune.jvp(f, args, args)[0]
    for w, g in zip(np.broadcast_arrays(*want) if isinstance(want, tuple) else [want],
                    np.broadcast_arrays(*got) if isinstance(got, tuple) else [got]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)
    rune.check_grads(f, *args, order=order)
    stacked = rune.vmap(f)(*[np.stack([a, 1.5 * a + 0.2]) for a in args])
    second = f(*[1.5 * a + 0.2 for a in args])
    for s, w in zip(stacked if isinstance(stacked, tuple) else [stacked],
                    second if isinstance(second, tuple) else [second]):
        np.testing.assert_allclose(s[1], w, rtol=1e-11)


MOMENT_FORMS = [dict(), dict(axis=1), dict(axis=None), dict(bias=False),
                dict(axis=1, bias=False, keepdims=True), dict(axis=None, keepdims=True)]


@pytest.mark.parametrize("kw", MOMENT_FORMS, ids=str)
def test_skew_and_kurtosis_match_scipy(kw, rng):
    x, _ = _data(rng)
    _check(lambda a: st.skew(a, **kw), x)
    _check(lambda a: st.kurtosis(a, **kw), x)
    _check(lambda a: st.kurtosis(a, fisher=False, **kw), x)


@pytest.mark.parametrize("kw", [dict(), dict(axis=1), dict(axis=None), dict(ddof=1)], ids=str)
def test_zscore_and_zmap_match_scipy(kw, rng):
    x, y = _data(rng)
    _check(lambda a: st.zscore(a, **kw), x)
    _check(lambda a, b: st.zmap(a, b, **kw), x, y)


@pytest.mark.parametrize("kw", [dict(), dict(axis=1), dict(alternative="less"),
                                dict(alternative="greater"), dict(axis=None)], ids=str)
def test_pearsonr_statistic_and_pvalue_match_scipy(kw, rng):
    x, y = _data(rng)
    _check(lambda a, b: tuple(st.pearsonr(a, b, **kw)), x, y)
    if kw.get("axis") != 1:
        _check(lambda a, b: tuple(st.pearsonr(a, b, **kw)), x[:, 0], y[:, 0])


def test_degenerate_inputs_give_scipy_nans(rng):
    const = np.ones(5)
    x = rng.standard_normal(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in (st.skew, st.kurtosis, st.zscore):
            want = f(const)
            got = rune.jvp(f, (const,), (x,))[0]
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        r = rune.jvp(lambda a: st.pearsonr(a, x).statistic, (const,), (x,))[0]
        assert np.isnan(r) and np.isnan(st.pearsonr(const, x).statistic)
    # n == 2: exactly +-1, p-value 1
    res = rune.jvp(lambda a: tuple(st.pearsonr(a, np.array([1.0, 3.0]))),
                   (np.array([0.0, 2.0]),), (np.ones(2),))[0]
    assert res[0] == 1.0 and res[1] == 1.0


def test_spearmanr_is_constant_and_matches_scipy(rng):
    x, y = _data(rng)
    want = st.spearmanr(x[:, 0], y[:, 0])
    got = rune.grad(lambda a: st.spearmanr(a, y[:, 0]).statistic)(x[:, 0])
    np.testing.assert_array_equal(got, np.zeros_like(x[:, 0]))
    val = rune.jvp(lambda a: st.spearmanr(a, y[:, 0]).statistic, (x[:, 0],), (x[:, 0],))
    assert val[0] == want.statistic and val[1] == 0
    with pytest.warns(rune.PerformanceWarning):
        per = rune.vmap(lambda a: st.spearmanr(a, y[:, 0]).statistic)(x.T)
    np.testing.assert_array_equal(per, [st.spearmanr(c, y[:, 0]).statistic for c in x.T])
    matrix = rune.jvp(lambda a: st.spearmanr(a).statistic, (x,), (x,))[0]
    np.testing.assert_array_equal(matrix, st.spearmanr(x).statistic)


@pytest.mark.parametrize("fname", ["skew", "kurtosis", "zscore", "spearmanr"])
def test_other_nan_policies_are_refused(fname, rng):
    x, _ = _data(rng)
    with pytest.raises(NotImplementedError, match=rf"scipy\.stats\.{fname}: nan_policy"):
        rune.grad(lambda a: np.sum(getattr(st, fname)(a, nan_policy="omit")[0]))(x)


@pytest.mark.parametrize("frozen", [False, True])
def test_rvs_is_reparameterised_in_loc_and_scale(frozen):
    def sample(loc, scale):
        if frozen:
            return st.norm(loc, scale).rvs(size=4, random_state=7)
        return st.norm.rvs(loc=loc, scale=scale, size=4, random_state=7)

    z = st.norm.rvs(size=4, random_state=7)          # the same draws, standardized
    out, tangent = rune.jvp(sample, (0.5, 2.0), (1.0, 0.0))
    np.testing.assert_array_equal(out, sample(0.5, 2.0))
    np.testing.assert_array_equal(tangent, np.ones(4))
    np.testing.assert_allclose(rune.jacrev(lambda s: sample(0.5, s))(2.0), z, rtol=1e-15)
    rune.check_grads(sample, 0.5, 2.0, order=2)
    # without size: the parameters' broadcast shape, as in SciPy
    locs = np.array([0.0, 1.0, 2.0])
    np.testing.assert_array_equal(
        rune.jvp(lambda m: st.norm.rvs(loc=m, random_state=3), (locs,), (locs,))[0],
        st.norm.rvs(loc=locs, random_state=3))


def test_rvs_of_other_families_and_refusals():
    g = rune.grad(lambda s: np.sum(st.gamma.rvs(2.5, loc=0.0, scale=s, size=3,
                                                random_state=1)))(2.0)
    np.testing.assert_allclose(g, np.sum(st.gamma.rvs(2.5, size=3, random_state=1)),
                               rtol=1e-14)
    k = rune.jvp(lambda m: st.poisson.rvs(3.0, loc=m, size=3, random_state=0), (1.0,), (1.0,))
    np.testing.assert_array_equal(k[0], st.poisson.rvs(3.0, loc=1, size=3, random_state=0))
    np.testing.assert_array_equal(k[1], np.ones(3))
    with pytest.raises(NotImplementedError, match=r"scipy\.stats\.gamma\.rvs: a traced shape"):
        rune.grad(lambda a: np.sum(st.gamma.rvs(a, size=3, random_state=0)))(1.5)
    with pytest.raises(ValueError, match="scale"):
        rune.grad(lambda s: np.sum(st.norm.rvs(scale=s, size=2, random_state=0)))(-1.0)


def test_plain_calls_are_scipys_own():
    # outside a transformation SciPy's function runs: its warning for a constant input
    # (which rune's replacement does not emit) is there
    with pytest.warns(st.ConstantInputWarning):
        st.pearsonr(np.ones(4), np.arange(4.0))


def test_docstring_examples_run():
    import doctest
    import rune.scipy.stats_more
    result = doctest.testmod(rune.scipy.stats_more)
    assert result.failed == 0 and result.attempted > 0
