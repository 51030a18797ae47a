"""Every ufunc: finite differences, JVP/VJP identity, second order, batching, registry."""

import warnings

import numpy as np
import pytest

import rune
from rune import core
from rune.dispatch import UFUNCS
from helpers import check_all_axes, all_primitives

# Input domains: where each function is smooth (away from kinks and poles).
POS = (0.5, 2.0)
UNIT = (-0.8, 0.8)
DOMAINS = {
    "log": POS, "log2": POS, "log10": POS, "log1p": POS, "sqrt": POS, "reciprocal": POS,
    "arcsin": UNIT, "arccos": UNIT, "arctanh": UNIT, "arccosh": (1.5, 3.0), "cbrt": POS,
    "true_divide": (POS, POS), "power": (POS, (-1.5, 1.5)), "float_power": (POS, (-1.5, 1.5)),
    "remainder": ((2.1, 2.9), (0.7, 0.9)), "fmod": ((2.1, 2.9), (0.7, 0.9)),
    "hypot": (POS, POS), "arctan2": (POS, POS), "absolute": POS, "tan": UNIT,
}

DIFF_UFUNCS = sorted(
    {p.name: uf for uf, p in UFUNCS.items()
     if isinstance(p, core.Primitive) and not p.nondiff and p.name != "matmul"}.items())


def _sample(rng, dom, shape):
    lo, hi = dom if dom is not None else (-1.5, 1.5)
    return rng.uniform(lo, hi, size=shape)


def _args_for(name, uf, rng, shapes):
    dom = DOMAINS.get(name)
    if uf.nin == 1:
        return [_sample(rng, dom, shapes[0])]
    doms = dom if isinstance(dom, tuple) and isinstance(dom[0], tuple) else (dom, dom)
    return [_sample(rng, d, s) for d, s in zip(doms, shapes)]


@pytest.mark.parametrize("name,uf", DIFF_UFUNCS, ids=[n for n, _ in DIFF_UFUNCS])
def test_ufunc_derivatives(name, uf):
    rng = np.random.default_rng(0)
    shape_sets = [[(3,)], [(2, 3)]] if uf.nin == 1 else [[(3,), (3,)], [(2, 3), (3,)],
                                                           [(), (2, 1)]]
    for shapes in shape_sets:
        args = _args_for(name, uf, rng, shapes)
        if name == "ldexp":
            args[1] = np.resize(np.array([1, -2, 3]), np.shape(args[1]))
        elif name == "copysign":
            args[1] = np.where(args[1] == 0, 1.0, args[1])
        if name in ("maximum", "minimum", "fmax", "fmin") and uf.nin == 2:
            args[1] = args[1] + 0.3     # no ties: the kink is tested separately
        rune.check_grads(lambda *a: uf(*a), *args, order=2)


@pytest.mark.parametrize("name,uf", DIFF_UFUNCS, ids=[n for n, _ in DIFF_UFUNCS])
def test_ufunc_batching(name, uf):
    rng = np.random.default_rng(1)
    shapes = [(3, 2)] if uf.nin == 1 else [(3, 2), (2,)]
    args = _args_for(name, uf, rng, shapes)
    if name == "ldexp":
        args[1] = np.array([1, -2])
    if name == "arccosh":
        args[0] = args[0] + 1.0
    check_all_axes(lambda *a: uf(*a), *args)


NONDIFF = sorted({p.name: uf for uf, p in UFUNCS.items()
                  if isinstance(p, core.Primitive) and p.nondiff}.items())


@pytest.mark.parametrize("name,uf", NONDIFF, ids=[n for n, _ in NONDIFF])
def test_nondiff_ufuncs(name, uf):
    rng = np.random.default_rng(2)
    kind_int = name in ("bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift",
                        "right_shift", "gcd", "lcm", "bitwise_count")
    if name == "isnat":
        pytest.skip("datetime only")
    if kind_int:
        args = [rng.integers(1, 5, size=(3, 2)) for _ in range(uf.nin)]
        check_all_axes(lambda *a: uf(*a), *args)
        return
    args = [rng.uniform(-2, 2, size=(3, 2)) for _ in range(uf.nin)]
    check_all_axes(lambda *a: uf(*a), *args)
    # no derivative: a function using it differentiates as if it were constant
    g = rune.grad(lambda x: np.sum(uf(*([x] * uf.nin)) * x))(args[0])
    np.testing.assert_allclose(g, np.asarray(uf(*([args[0]] * uf.nin)), float))


def test_every_numpy_ufunc_has_a_rule():
    missing = [n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)
               and getattr(np, n) not in UFUNCS and n != "isnat"]
    assert missing == []


_all_primitives = all_primitives


def test_primitive_names_are_distinct():
    names = [p.name for p in _all_primitives()]
    assert sorted({n for n in names if names.count(n) > 1}) == []


# Primitives whose VJP mixes elements (a zero it passes on is arithmetic, not a branch not
# taken): they drop the structural-zero masks, on purpose (docs/design.md).
MIXES_ELEMENTS = {
    "matmul", "einsum", "convolve", "convolve_nd", "fft", "rfft", "irfft", "cumprod", "prod",
    "det", "slogdet", "inv", "pinv", "solve", "solve_triangular", "tri_solve", "lu",
    "lu_solve", "lu_solve_nested", "cholesky", "eig", "eigh", "svd", "svd_gauge_free", "qr",
    "expm", "logm", "sqrtm", "solve_sylvester", "linear_operator", "lfilter",
}


def test_structural_zero_declarations():
    """``masks``, ``layout`` and ``elementwise`` are declared where each primitive is
    defined; how structural zeros cross the tape relies on them.  Every differentiable
    primitive declares one, or is on the explicit list of those that mix elements."""
    prims = _all_primitives()
    assert {p.name for p in prims if p.masks} == {
        "maximum", "minimum", "fmax", "fmin", "where", "getitem", "setitem", "max", "min"}
    assert {p.name for p in prims if p.layout} == {
        "reshape", "transpose", "broadcast_to", "concatenate", "roll", "sum", "cumsum",
        "index_add", "permute", "scatter_add", "split"}
    ew = {p.name for p in prims if p.elementwise}
    assert {"sin", "add", "maximum", "absolute", "conjugate", "real", "imag", "astype"} <= ew
    assert not ew & {"where", "greater"}
    undeclared = {p.name for p in prims if not p.nondiff and p.vjp is not None
                  and not (p.masks or p.layout or p.elementwise)}
    assert undeclared - MIXES_ELEMENTS == set(), "declare masks/layout/elementwise, or list it"
    assert MIXES_ELEMENTS - undeclared <= {"convolve_nd", "lu_solve_nested"} | (
        MIXES_ELEMENTS - {p.name for p in prims}), "a listed primitive declares one now"


def test_every_primitive_has_all_rules():
    incomplete = []
    for p in _all_primitives():
        if p.impl is None or p.batch is None:
            incomplete.append(f"{p.name}: impl/batch")
        if not p.nondiff and (p.jvp is None or p.vjp is None):
            incomplete.append(f"{p.name}: jvp/vjp")
    assert incomplete == []


def test_kinks_and_ties():
    # abs: 1 at 0, as JAX (so |x| ** 2 has its true second derivative there)
    g = rune.grad(lambda x: np.sum(np.abs(x)))(np.array([-2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(g, [-1.0, 1.0, 1.0])
    g = rune.grad(lambda x, y: np.sum(np.minimum(x, y)), argnums=(0, 1))(
        np.array([1.0, 2.0]), np.array([1.0, 3.0]))
    np.testing.assert_array_equal(g[0], [0.5, 1.0])
    np.testing.assert_array_equal(g[1], [0.5, 0.0])


def test_singular_derivatives_with_zero_cotangent():
    x = np.array([0.0, 0.7, -1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for f in (np.sqrt, np.log, np.arcsin, np.cbrt, np.reciprocal):
            g = rune.grad(lambda x: np.sum(np.where(x > 0.5, f(x), 0.0)))(x)
            assert np.all(np.isfinite(g)), f
            assert g[0] == 0.0 and g[2] == 0.0


def test_broadcasting_scalars_and_python_numbers():
    f = lambda x: np.sum(2.0 * x + x / 3 - 1 + x ** 2 + 2 ** x)
    rune.check_grads(f, np.array([0.5, 1.5]), order=2)
    rune.check_grads(lambda x, y: np.sum(x * y), np.ones((2, 3)), np.arange(3.0), order=2)
    rune.check_grads(lambda x, y: np.sum(x * y), np.ones((2, 1)), np.arange(3.0), order=2)


def test_dtype_promotion_float32():
    x = np.array([1.0, 2.0], np.float32)
    g = rune.grad(lambda x: np.sum(x * np.float64(2.0) + x * np.arange(2.0)))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, [2.0, 3.0])
    out, t = rune.jvp(lambda x: x * 2, (x,), (np.ones(2, np.float32),))
    assert t.dtype == np.float32


def test_where_select_and_clip():
    rune.check_grads(lambda x, y: np.where(x > 0, x * y, y ** 2), np.array([-1.0, 2.0]),
                     np.array([0.5, 3.0]), order=2)
    g = rune.grad(lambda x: np.sum(np.clip(x, -1, 1)))(np.array([-2.0, 0.5, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.0])
    check_all_axes(lambda c, x: np.where(c > 0, x, -x), np.array([1.0, -1.0]), np.array([2.0, 3.0]))


def test_astype_and_divmod_modf():
    g = rune.grad(lambda x: np.sum(x.astype(np.float32) * 2))(np.array([1.5]))
    assert g.dtype == np.float64 and g[0] == 2.0
    out, t = rune.jvp(lambda x: x.astype(np.float32), (np.array([1.5]),), (np.array([3.0]),))
    assert t.dtype == np.float32 and t[0] == 3.0
    g = rune.grad(lambda x: np.sum(np.modf(x)[0] + divmod(x, 0.7)[1]))(np.array([1.3, 2.9]))
    np.testing.assert_allclose(g, [2.0, 2.0])
    g = rune.grad(lambda x: np.sum(x.astype(int) * x))(np.array([1.5, 2.5]))
    np.testing.assert_allclose(g, [1.0, 2.0])


def test_ufunc_where_refused_and_outer():
    with pytest.raises(NotImplementedError, match="where="):
        rune.grad(lambda x: np.sum(np.sin(x, where=x > 0)))(np.ones(2))
    rune.check_grads(lambda a, b: np.multiply.outer(a, b), np.arange(2.0), np.arange(3.0) + 1)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_square_under_a_transformation_is_numpys(dtype):
    """``x ** 2`` of a traced real array runs as np.square, as NumPy's own ``x ** 2`` does,
    and ``np.power(x, 2)`` as np.power (the two differ in the last bit on NumPy 2.0): the
    forward values are NumPy's bit for bit either way; the derivative is 2 x."""
    x = np.random.default_rng(0).standard_normal(257).astype(dtype) * 50
    seen = {}

    def f(x):
        y = x.copy()
        y **= 2
        seen["inplace"] = rune.stop_gradient(y)
        seen["op"] = rune.stop_gradient(x ** 2)
        seen["float"] = rune.stop_gradient(x ** 2.0)
        seen["power"] = rune.stop_gradient(np.power(x, 2))
        return np.sum(x ** 2)

    g = rune.grad(f)(x)
    np.testing.assert_array_equal(seen["op"], x ** 2)
    y = x.copy()
    y **= 2
    np.testing.assert_array_equal(seen["inplace"], y)
    np.testing.assert_array_equal(seen["float"], x ** 2.0)
    np.testing.assert_array_equal(seen["power"], np.power(x, 2))
    np.testing.assert_array_equal(g, 2 * x)
    assert g.dtype == dtype
    rune.check_grads(lambda x: np.sum(np.sin(x) ** 2), x.astype(np.float64) / 50, order=2)


def test_sinc_is_exact_at_zero_to_every_order_and_from_lists():
    """NumPy's sinc substitutes 1e-20 for x == 0: right value, but a second derivative of 0
    there (true: -pi**2/3); rune's rule uses the series near 0, also for a list input."""
    want = -np.pi ** 2 / 3
    for f in (lambda x: np.sinc(x), lambda x: np.sinc([x, 1.0])[0]):
        assert abs(rune.grad(rune.grad(f))(0.0) - want) < 1e-12
        assert abs(rune.jacfwd(rune.jacfwd(f))(0.0) - want) < 1e-12
    x = np.array([0.0, 1e-4, 3e-3, 0.3, 2.0, -1.0])
    rune.check_grads(lambda x: np.sum(np.sinc(x)), x, order=3)
    np.testing.assert_allclose(rune.vjp(np.sinc, x)[0], np.sinc(x), rtol=1e-15, atol=1e-16)
