"""Numerical compositions: cov, corrcoef, polyval, trapezoid, interp and
numpy.polynomial's evaluators: values against NumPy, derivatives, batching."""

import numpy as np
import numpy.polynomial.chebyshev as C
import numpy.polynomial.hermite as H
import numpy.polynomial.hermite_e as HE
import numpy.polynomial.laguerre as LA
import numpy.polynomial.legendre as L
import numpy.polynomial.polynomial as P
import pytest

import rune
from helpers import check_all_axes


def _x(shape, seed=0, lo=-1.5, hi=1.5):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def _check(f, *args, order=2):
    """Values under a transformation are NumPy's, and derivatives pass ``check_grads``."""
    want = f(*args)
    got = rune.jvp(f, args, tuple(np.ones_like(a) for a in args))[0]
    rune.tree.map(lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13),
                  got, want)
    rune.tree.map(lambda g, w: np.testing.assert_equal(np.shape(g), np.shape(w)), got, want)
    rune.check_grads(f, *args, order=order)


# --------------------------------------------------------------------------
# cov, corrcoef
# --------------------------------------------------------------------------

FW = np.array([1, 2, 1, 3, 1, 2])


@pytest.mark.parametrize("kwargs", [
    {}, {"rowvar": False}, {"bias": True}, {"ddof": 2}, {"fweights": FW},
    {"fweights": FW, "ddof": 0}, {"dtype": np.float64},
], ids=["default", "rowvar", "bias", "ddof", "fweights", "fweights-ddof0", "dtype"])
def test_cov(kwargs):
    m = _x((3, 6))
    if kwargs.get("rowvar") is False:
        m = m.T.copy()
    _check(lambda m: np.cov(m, **kwargs), m)


def test_cov_shapes_y_and_aweights():
    m, y = _x((2, 6)), _x((6,), seed=1)
    aw = _x((6,), seed=2, lo=0.5, hi=2.0)
    _check(lambda v: np.cov(v), _x((5,)))                  # one variable: a 0-d result
    _check(lambda m, y: np.cov(m, y), m, y)
    _check(lambda m, aw: np.cov(m, aweights=aw), m, aw)     # derivative w.r.t. aweights
    _check(lambda m, aw: np.cov(m, aweights=aw, fweights=FW, ddof=1), m, aw)
    _check(lambda m, aw: np.cov(m, y, aweights=aw, bias=True), m, aw)
    with pytest.raises(ValueError, match="negative"):
        rune.grad(lambda m: np.sum(np.cov(m, aweights=-aw)))(m)
    with pytest.raises(ValueError, match="more than 2"):
        rune.grad(lambda m: np.sum(np.cov(m)))(_x((2, 2, 2)))


def test_corrcoef():
    m = _x((3, 6))
    _check(lambda m: np.corrcoef(m), m)
    _check(lambda m: np.corrcoef(m, rowvar=False), m.T.copy())
    _check(lambda a, b: np.corrcoef(a, b), _x((6,), seed=3), _x((6,), seed=4))
    g = rune.grad(lambda m: np.trace(np.corrcoef(m)))(m)
    np.testing.assert_allclose(g, 0, atol=1e-12)          # the diagonal is constant


# --------------------------------------------------------------------------
# polyval, trapezoid
# --------------------------------------------------------------------------

def test_polyval():
    p, x = _x((4,)), _x((5,), seed=1)
    _check(lambda p, x: np.polyval(p, x), p, x)
    _check(lambda x: np.polyval([1, -2, 3], x), x)          # integer coefficients
    _check(lambda p: np.polyval(p, 0.7), p)
    _check(lambda p: np.polyval(np.poly1d([1.0, 2.0]) * 0 + np.poly1d([2.0, 1.0]), p), p)
    _check(lambda p, x: np.polyval(p, x), _x((3, 2)), _x((2,), seed=2))   # 2-d p
    # d/dx of x^3 - 2x at 2 is 10
    assert rune.grad(lambda x: np.polyval(np.array([1.0, 0.0, -2.0, 0.0]), x))(2.0) == 10.0


def test_trapezoid():
    y = _x((3, 5))
    x1 = np.cumsum(_x((5,), seed=1, lo=0.1, hi=1.0))
    _check(lambda y: np.trapezoid(y), y)
    _check(lambda y, x: np.trapezoid(y, x), y, x1)
    _check(lambda y: np.trapezoid(y, axis=0, dx=0.3), y)
    _check(lambda y, dx: np.trapezoid(y, dx=dx, axis=-2), y, 0.25)
    _check(lambda y, x: np.trapezoid(y, x, axis=1), y, np.cumsum(_x((3, 5), seed=2), axis=1))
    if hasattr(np, "trapz"):
        _check(lambda y: np.trapz(y), y)


# --------------------------------------------------------------------------
# interp
# --------------------------------------------------------------------------

XP = np.array([-1.0, -0.2, 0.5, 1.1, 2.0])
FP = np.array([0.3, -1.0, 2.0, 0.5, 1.5])
XQ = np.array([-1.7, -0.6, 0.13, 0.9, 1.45, 2.6])     # away from the knots


def test_interp_values_and_derivatives():
    _check(lambda fp: np.interp(XQ, XP, fp), FP)
    _check(lambda x: np.interp(x, XP, FP), XQ)
    _check(lambda xp: np.interp(XQ, xp, FP), XP)
    _check(lambda x, fp: np.interp(x, XP, fp, left=-3.0, right=4.0), XQ, FP)
    _check(lambda fp: np.interp(XP, XP, fp), FP)            # exactly at the knots
    _check(lambda fp: np.interp(0.4, XP, fp), FP)           # a scalar x
    _check(lambda fp: np.interp(XQ, XP[:1], fp), FP[:1])    # one sample point
    _check(lambda fp: np.interp(XQ * 3, XP, fp, period=2.5), FP)
    fc = FP + 1j * FP[::-1]
    got = rune.jvp(lambda fp: np.interp(XQ, XP, fp), (fc,), (fc,))[0]
    np.testing.assert_allclose(got, np.interp(XQ, XP, fc))
    # the weights on fp at x = 0.13: (0.5 - 0.13) / 0.7 and (0.13 + 0.2) / 0.7
    g = rune.grad(lambda fp: np.interp(0.13, XP, fp))(FP)
    np.testing.assert_allclose(g, [0, 0.37 / 0.7, 0.33 / 0.7, 0, 0])
    # outside the range: the slope in x is 0
    assert rune.grad(lambda x: np.interp(x, XP, FP))(5.0) == 0.0
    with pytest.raises(ValueError, match="same length"):
        rune.grad(lambda fp: np.sum(np.interp(XQ, XP, fp)))(FP[:3])


def test_interp_batching():
    check_all_axes(lambda fp: np.interp(XQ, XP, fp), FP)
    check_all_axes(lambda x: np.interp(x, XP, FP), XQ)
    check_all_axes(lambda x, fp: np.interp(x, XP, fp), XQ, FP)
    got = rune.vmap(rune.grad(lambda x: np.sum(np.interp(x, XP, FP))))(np.stack([XQ, XQ / 2]))
    want = np.stack([rune.grad(lambda x: np.sum(np.interp(x, XP, FP)))(x)
                     for x in (XQ, XQ / 2)])
    np.testing.assert_allclose(got, want)


# --------------------------------------------------------------------------
# numpy.polynomial
# --------------------------------------------------------------------------

# Looked up when called, as ``P.polyval(x, c)`` is: rune replaces these names while a
# transformation is active (a reference taken earlier keeps NumPy's function, which
# handles a traced x only with one-dimensional coefficients).
VAL = [(P, "polyval"), (C, "chebval"), (L, "legval"), (H, "hermval"), (HE, "hermeval"),
       (LA, "lagval")]
VAL_IDS = [name for _, name in VAL]


@pytest.mark.parametrize("mod,name", VAL, ids=VAL_IDS)
def test_polynomial_evaluators(mod, name):
    def val(*args, **kwargs):
        return getattr(mod, name)(*args, **kwargs)
    x, c = _x((5,)), _x((4,), seed=1)
    c2 = _x((4, 3), seed=2)
    _check(lambda x, c: val(x, c), x, c)
    _check(lambda x: val(x, c2), x)                       # tensor=True broadcasting
    _check(lambda x, c2: val(x, c2), _x((2, 3)), c2)
    _check(lambda x, c2: val(x, c2, tensor=False), _x((3,)), c2)
    _check(lambda x: val(x, [1, 2, 3]), x)                 # integer coefficients
    check_all_axes(lambda x, c: val(x, c), x, c)
    check_all_axes(lambda x: val(x, c2), x)
    # a reference taken before the transformation: fine with 1-d coefficients
    early = getattr(mod, name)
    _check(lambda x, c: early(x, c), x, c)


@pytest.mark.parametrize("mod", [P, C, L, H, HE, LA],
                         ids=["poly", "cheb", "leg", "herm", "herme", "lag"])
def test_polynomial_multivariate(mod):
    pre = mod.__name__.rsplit(".", 1)[-1]
    pre = {"polynomial": "poly", "chebyshev": "cheb", "legendre": "leg", "hermite": "herm",
           "hermite_e": "herme", "laguerre": "lag"}[pre]
    val2d, val3d = getattr(mod, pre + "val2d"), getattr(mod, pre + "val3d")
    grid2d = getattr(mod, pre + "grid2d")
    x, y, z = _x((4,)), _x((4,), seed=1), _x((4,), seed=2)
    c2, c3 = _x((3, 2), seed=3), _x((2, 3, 2), seed=4)
    _check(lambda x, y: val2d(x, y, c2), x, y)
    _check(lambda x, c2: val2d(x, y, c2), x, c2)
    _check(lambda x, y, z: val3d(x, y, z, c3), x, y, z)
    _check(lambda x, y: grid2d(x, y, c2), x, _x((3,), seed=5))
    check_all_axes(lambda x, y: val2d(x, y, c2), x, y)


def test_polynomial_classes_and_roots():
    x = _x((5,))
    c = np.array([0.5, -1.0, 2.0])
    for cls in (P.Polynomial, C.Chebyshev, L.Legendre):
        p = cls(c, domain=[-2, 3])
        _check(lambda x: p(x), x)
    r2 = _x((3, 2), seed=1)
    _check(lambda x: P.polyvalfromroots(x, c), x)
    _check(lambda x: P.polyvalfromroots(x, r2), x)
    _check(lambda r: P.polyvalfromroots(x, r), r2)


def test_polynomial_wrapper_is_a_pass_through_outside_transformations():
    rune.grad(lambda x: P.polyval(x, [1.0, 2.0]))(0.5)
    wrapped = P.polyval
    orig = getattr(wrapped, "__wrapped__", wrapped)
    assert P.polyval is wrapped              # installed once: the same object every call
    rune.grad(lambda x: P.polyval(x, [1.0, 2.0]))(0.5)
    assert P.polyval is wrapped and C.chebval.__name__ == "chebval"
    c = np.array([[1.0, 2.0], [0.5, 3.0]])
    for x in (0.5, np.array([1.0, 2.0]), [1.0, 2.0]):
        a, b = P.polyval(x, c), orig(x, c)
        assert type(a) is type(b) and np.array_equal(a, b)
    np.testing.assert_allclose(P.polyval(np.array([1.0, 2.0]), np.eye(2)),
                               np.array([[1.0, 1.0], [1.0, 2.0]]))
