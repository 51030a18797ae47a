"""scipy.spatial.distance under every transformation: cdist, pdist and squareform for
every supported metric, and the single-pair functions.  Values against SciPy's own,
derivatives against finite differences and JVP against VJP (``check_grads``), ``vmap``
against a loop, the zero-distance convention, and the refusals."""

import numpy as np
import pytest

import rune

distance = pytest.importorskip("scipy.spatial.distance")
from scipy.spatial.distance import cdist  # noqa: E402  (the user's idiom)
from helpers import check_vmap  # noqa: E402

RNG = np.random.default_rng(1)
XA, XB = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3))
V = RNG.random(3) + 0.5
_M = RNG.standard_normal((3, 3))
VI = _M @ _M.T + np.eye(3)

CASES = {
    "euclidean": {}, "sqeuclidean": {}, "cityblock": {}, "chebyshev": {},
    "minkowski_3": {"p": 3.0}, "minkowski_1.5_w": {"p": 1.5, "w": V},
    "euclidean_w": {"w": V}, "cityblock_w": {"w": V}, "cosine": {}, "correlation": {},
    "seuclidean": {}, "seuclidean_V": {"V": V}, "mahalanobis": {}, "mahalanobis_VI": {"VI": VI},
}


def values(f, *args):
    return rune.jvp(f, args, args)[0]


@pytest.mark.parametrize("case", CASES)
def test_cdist_pdist(case):
    metric, kw = case.split("_")[0], CASES[case]
    def fc(a, b):
        return cdist(a, b, metric, **kw)
    def fp(x):
        return distance.pdist(x, metric, **kw)
    np.testing.assert_allclose(values(fc, XA, XB), fc(XA, XB), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(values(fp, XA), fp(XA), rtol=1e-13, atol=1e-14)
    order = 1 if metric in ("cityblock", "chebyshev") else 2    # kinks: 2nd order is 0 a.e.
    rune.check_grads(fc, XA, XB, order=order)
    rune.check_grads(fp, XA, order=order)
    check_vmap(fp, RNG.standard_normal((3, 4, 3)))


def test_metric_parameters_traced():
    rune.check_grads(lambda v: cdist(XA, XB, "seuclidean", V=v), V)
    rune.check_grads(lambda vi: distance.pdist(XA, "mahalanobis", VI=vi), VI)
    rune.check_grads(lambda w: cdist(XA, XB, "minkowski", p=3.0, w=w), V)


def test_single_pair_functions():
    u, v = XA[0], XB[0]
    for name, kw in [("euclidean", {}), ("sqeuclidean", {}), ("cityblock", {}),
                     ("chebyshev", {}), ("minkowski", {"p": 3}), ("cosine", {}),
                     ("correlation", {}), ("seuclidean", {"V": V}),
                     ("mahalanobis", {"VI": VI}), ("euclidean", {"w": V})]:
        fn = getattr(distance, name)
        def f(u, v):
            return fn(u, v, **kw)
        np.testing.assert_allclose(values(f, u, v), f(u, v), rtol=1e-13, err_msg=name)
        rune.check_grads(f, u, v, order=1)


def test_zero_distance_has_zero_derivative():
    x = np.array([[0.0, 0.0], [0.0, 0.0], [3.0, 4.0]])
    for metric, kw in [("euclidean", {}), ("minkowski", {"p": 3.0}),
                       ("seuclidean", {"V": np.ones(2)}), ("mahalanobis", {"VI": np.eye(2)})]:
        g = rune.grad(lambda x: np.sum(distance.pdist(x, metric, **kw)))(x)
        assert np.all(np.isfinite(g)), metric
        # the derivative is that of the two nonzero distances only (rows 0 and 1 each
        # pull along the unit vector toward row 2)
        if metric in ("euclidean", "seuclidean", "mahalanobis"):
            np.testing.assert_allclose(g, [[-0.6, -0.8], [-0.6, -0.8], [1.2, 1.6]],
                                       rtol=1e-12)
    gu = rune.grad(lambda u: distance.euclidean(u, u * 1.0))(np.ones(2))
    np.testing.assert_array_equal(gu, [0.0, 0.0])


def test_squareform_both_ways():
    v = distance.pdist(XA)
    s = distance.squareform(v)
    np.testing.assert_array_equal(values(distance.squareform, v), s)
    np.testing.assert_array_equal(values(distance.squareform, s), v)
    rune.check_grads(distance.squareform, v, order=1)
    rune.check_grads(lambda m: distance.squareform(m, checks=False), s, order=1)
    rune.check_grads(lambda x: distance.squareform(distance.pdist(x)), XA, order=1)
    check_vmap(distance.squareform, RNG.standard_normal((2, 6)))
    np.testing.assert_array_equal(values(distance.squareform, np.zeros(0)),
                                  distance.squareform(np.zeros(0)))
    with pytest.raises(ValueError, match="binomial"):
        rune.grad(lambda v: np.sum(distance.squareform(v)))(np.ones(4))
    with pytest.raises(ValueError, match="symmetric"):
        rune.grad(lambda m: np.sum(distance.squareform(m)))(np.triu(np.ones((3, 3)), 1))


def test_callable_metric_and_refusals():
    def manhattan(u, v):
        return np.sum(np.abs(u - v))
    np.testing.assert_allclose(values(lambda a, b: cdist(a, b, manhattan), XA, XB),
                               cdist(XA, XB, "cityblock"), rtol=1e-13)
    np.testing.assert_allclose(values(lambda x: distance.pdist(x, manhattan), XA),
                               distance.pdist(XA, "cityblock"), rtol=1e-13)
    with pytest.raises(NotImplementedError, match="'hamming'"):
        rune.grad(lambda a: np.sum(cdist(a, XB, "hamming")))(XA)
    with pytest.raises(NotImplementedError, match="out="):
        rune.grad(lambda a: np.sum(cdist(a, XB, out=np.empty((4, 5)))))(XA)
    with pytest.raises(ValueError, match="columns"):
        rune.grad(lambda a: np.sum(cdist(a, XB[:, :2])))(XA)
    with pytest.raises(ValueError, match="2-dimensional"):
        rune.grad(lambda a: np.sum(distance.pdist(a)))(XA[0])


def test_invisible_outside_transformations():
    assert distance.cdist is cdist and cdist.__module__ == "scipy.spatial.distance"
    np.testing.assert_array_equal(cdist(XA, XB), distance.cdist(XA, XB))


def test_docstring_examples_run():
    import doctest
    import rune.scipy.spatial
    result = doctest.testmod(rune.scipy.spatial)
    assert result.failed == 0 and result.attempted > 0
