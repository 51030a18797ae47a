"""Reverse mode: grad, value_and_grad, vjp, stop_gradient, and SPEC section 1's promises."""

import numpy as np
import pytest

import rune
from helpers import assert_numpy_as_without_rune
from helpers import Params


def test_spec_quickstart():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.array([[0.], [1.], [2.], [3.]], dtype=np.float32)

    def loss(p):
        return np.mean(np.square(x @ p.w + p.b - y))

    p = Params(w=np.zeros((3, 1), np.float32), b=np.zeros(1, np.float32))
    g = rune.grad(loss)(p)
    assert isinstance(g, Params)
    assert g.w.dtype == np.float32 and g.b.dtype == np.float32
    r = x @ p.w + p.b - y
    np.testing.assert_allclose(g.w, 2 * x.T @ r / 4, rtol=1e-6)
    np.testing.assert_allclose(g.b, [2 * r.mean()], rtol=1e-6)


def test_mixed_dtypes_in_one_record():
    rec = {"h": np.array([1.0, 2.0], np.float16), "s": np.array([3.0], np.float32),
           "d": np.array([4.0]), "c": np.array([1 + 2j]), "i": np.array([1, 2]),
           "b": np.array([True])}

    def f(r):
        return (np.sum(r["h"].astype(np.float64) ** 2) + np.sum(r["s"] * 2) + np.sum(r["d"] ** 3)
                + np.sum(np.abs(r["c"]) ** 2) + np.sum(r["i"] * r["d"]))

    g = rune.grad(f)(rec)
    assert {k: v.dtype for k, v in g.items()} == {k: v.dtype for k, v in rec.items()}
    np.testing.assert_allclose(g["h"], [2.0, 4.0])
    np.testing.assert_allclose(g["s"], [2.0])
    np.testing.assert_allclose(g["d"], [3 * 16.0 + 3])
    np.testing.assert_allclose(g["c"], [2 * (1 - 2j)])      # JAX's convention: conj
    np.testing.assert_array_equal(g["i"], [0, 0])
    np.testing.assert_array_equal(g["b"], [False])


def test_python_scalars():
    g = rune.grad(lambda x, n: x ** n, argnums=(0, 1), allow_int=True)(3.0, 2)
    assert g == (6.0, 0) and type(g[0]) is float and type(g[1]) is int


def test_argnums_has_aux_value_and_grad():
    f = lambda a, b: (np.sum(a * b), {"a": a})
    (v, aux), (ga, gb) = rune.value_and_grad(f, argnums=(0, 1), has_aux=True)(
        np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    assert v == 11.0
    assert type(aux["a"]) is np.ndarray
    np.testing.assert_array_equal(ga, [3.0, 4.0])
    np.testing.assert_array_equal(gb, [1.0, 2.0])
    g, aux = rune.grad(f, argnums=1, has_aux=True)(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    np.testing.assert_array_equal(g, [1.0, 2.0])


def test_vjp_reusable_pullback():
    x = np.array([0.5, 1.5])
    out, pb = rune.vjp(lambda x: np.sin(x) * x, x)
    d = np.cos(x) * x + np.sin(x)
    (g1,) = pb(np.array([1.0, 0.0]))
    (g2,) = pb(np.array([0.0, 2.0]))
    np.testing.assert_allclose(g1, [d[0], 0.0])
    np.testing.assert_allclose(g2, [0.0, 2 * d[1]])
    (g3,) = pb(np.array([1.0, 0.0]))
    np.testing.assert_array_equal(g1, g3)


def test_vjp_multiple_primals_and_tree_output():
    out, pb = rune.vjp(lambda a, b: {"s": a * b, "t": (a + b,)}, np.array([2.0]), np.array([5.0]))
    ga, gb = pb({"s": np.array([1.0]), "t": (np.array([10.0]),)})
    np.testing.assert_array_equal(ga, [15.0])
    np.testing.assert_array_equal(gb, [12.0])


def test_nested_three_levels_and_perturbation_confusion():
    assert rune.grad(rune.grad(rune.grad(lambda x: x ** 4)))(2.0) == pytest.approx(48.0)
    assert rune.grad(lambda x: x * rune.grad(lambda y: x + y)(1.0))(1.0) == 1.0
    # d/dx [x * d/dy (x * y)] = d/dx x^2 = 2x
    assert rune.grad(lambda x: x * rune.grad(lambda y: x * y)(3.0))(2.0) == pytest.approx(4.0)


def test_stop_gradient():
    g = rune.grad(lambda x: np.sum(x * rune.stop_gradient(x)))(np.array([3.0, 4.0]))
    np.testing.assert_array_equal(g, [3.0, 4.0])
    t = rune.stop_gradient({"a": np.ones(2)})
    assert type(t["a"]) is np.ndarray


def test_where_trap_no_nan():
    g = rune.grad(lambda x: np.sum(np.where(x > 0, np.sqrt(x), 0.0)))(np.array([0.0, 4.0]))
    np.testing.assert_array_equal(g, [0.0, 0.25])
    with np.errstate(divide="ignore"):
        g = rune.grad(lambda x: np.sum(np.where(x > 0, np.log(x), 0.0)))(np.array([0.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5])


def test_writes_setitem_iadd_and_buffers():
    def f(x, v):
        b = np.zeros_like(x)
        b[0] = v * 2
        b[1:] = x[:2] ** 2
        c = x.copy()
        c[2] = v
        c += x
        e = np.empty_like(x)
        e[:] = c
        return np.sum(b) + np.sum(e * e)

    x, v = np.array([1.0, 2.0, 3.0]), 0.5
    xc = x.copy()
    gx, gv = rune.grad(f, argnums=(0, 1))(x, v)
    np.testing.assert_array_equal(x, xc)        # never mutated
    rune.check_grads(f, x, v, order=2)
    c = np.array([2.0, 4.0, v + 3.0])
    np.testing.assert_allclose(gx, [2 * 1 + 4 * c[0], 2 * 2 + 4 * c[1], 2 * c[2]])
    np.testing.assert_allclose(gv, 2 + 2 * c[2])


def test_write_into_plain_array_raises():
    buf = np.zeros(3)       # made outside the function (one made inside takes the write)

    def f(x):
        buf[0] = x[0]
        return np.sum(buf)
    with pytest.raises(rune.TracerConversionError, match="zeros_like"):
        rune.grad(f)(np.ones(3))


def test_inputs_read_only_are_fine():
    x = np.array([1.0, 2.0])
    x.setflags(write=False)
    g = rune.grad(lambda x: np.sum(x ** 2))(x)
    np.testing.assert_array_equal(g, [2.0, 4.0])
    g[0] = 5.0    # results are writable and do not alias the input
    out, pb = rune.vjp(lambda x: x, x)
    assert out is not x and not np.shares_memory(out, x)


def test_conversions():
    with pytest.raises(rune.TracerConversionError):
        rune.grad(lambda x: float(x))(1.0)
    with pytest.raises(rune.TracerConversionError):
        rune.grad(lambda x: int(np.sum(x)))(np.ones(2))
    import math
    with pytest.raises(rune.TracerConversionError):
        rune.grad(lambda x: math.sin(x))(1.0)
    seen = []

    def f(x):
        seen.append(x.item())
        return x * 2.0 if bool(x > 0) else x
    assert rune.grad(f)(3.0) == 2.0 and seen == [3.0]


def test_comparisons_are_plain_booleans():
    kinds = []

    def f(x):
        c = x > 1.0
        kinds.append(type(c))
        return np.sum(np.where(c, x, 0.0))
    rune.grad(f)(np.array([0.5, 2.0]))
    assert kinds == [np.ndarray]


def test_control_flow_while_and_recursion():
    def f(x):
        while np.sum(x) < 10:
            x = x * 2
        return np.sum(x)
    np.testing.assert_array_equal(rune.grad(f)(np.array([1.0, 2.0])), [4.0, 4.0])

    def power(x, n):
        return 1.0 if n == 0 else x * power(x, n - 1)
    assert rune.grad(power)(2.0, 5) == 80.0


def test_grad_errors():
    with pytest.raises(ValueError, match=r"shape \(3,\).*vjp.*jacrev"):
        rune.grad(lambda x: x * 2)(np.ones(3))
    with pytest.raises(TypeError, match="integer"):
        rune.grad(lambda x: np.sum(x > 0))(np.ones(3))
    with pytest.raises(TypeError, match="str"):
        rune.grad(lambda x: "nope")(1.0)


def test_unsupported_and_out_refused():
    out = np.empty(2)       # made outside the function (one made inside takes the write)
    with pytest.raises(NotImplementedError, match="out="):
        rune.grad(lambda x: np.sum(np.sin(x, out=out)))(np.ones(2))
    with pytest.raises(NotImplementedError, match="grad"):     # a ufunc no rule can know
        rune.grad(lambda x: np.sum(np.frompyfunc(abs, 1, 1)(x)))(np.ones(4))


def test_cotangent_mismatch_names_path():
    out, pb = rune.vjp(lambda x: {"a": x, "b": (x, x)}, np.ones(2))
    with pytest.raises(ValueError, match=r"out\['b'\]\[1\]"):
        pb({"a": np.ones(2), "b": (np.ones(2), np.ones(3))})
    with pytest.raises(ValueError, match="structure"):
        pb({"a": np.ones(2)})


def test_state_cleaned_after_user_error():
    def bad(x):
        raise KeyError("boom")
    with pytest.raises(KeyError, match="boom"):
        rune.grad(bad)(1.0)
    assert rune.grad(lambda x: x * x)(3.0) == 6.0


def test_scipy_rosen():
    scipy_optimize = pytest.importorskip("scipy.optimize")
    x = np.array([1.3, 0.7, 0.8, 1.9, 1.2])
    np.testing.assert_allclose(rune.grad(scipy_optimize.rosen)(x), scipy_optimize.rosen_der(x))
    # and NumPy behaves as NumPy afterwards
    assert_numpy_as_without_rune()


def test_asarray_inside_transformations():
    def f(x):
        y = np.asarray(x)
        z = np.array(x, dtype=np.float32)
        w = np.asarray([x[0], x[1] * 2])
        return np.sum(y) + np.sum(z) + np.sum(w)
    g = rune.grad(f)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [3.0, 4.0])


def test_max_ties_split_evenly():
    g = rune.grad(lambda x: np.max(x))(np.array([1.0, 3.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5])
    g = rune.grad(lambda x: np.sum(np.maximum(x, 1.0)))(np.array([1.0, 2.0, 0.0]))
    np.testing.assert_array_equal(g, [0.5, 1.0, 0.0])


def test_branch_not_taken_through_products_and_honest_nans():
    entropy = lambda p: np.sum(np.where(p > 0, p * np.log(p), 0.0))   # noqa: E731
    p = np.array([0.0, 0.5])
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(rune.grad(entropy)(p), [0.0, np.log(0.5) + 1])
        per = rune.vmap(rune.grad(entropy))(np.array([[0.0, 0.5], [0.25, 0.0]]))
        np.testing.assert_allclose(per, [[0.0, np.log(0.5) + 1], [np.log(0.25) + 1, 0.0]])
        # an infinite output keeps its NaN gradient: it is not the branch-not-taken case
        g = rune.grad(lambda x: np.log(1 + np.exp(x)))(1000.0)
        assert np.isnan(g)


def test_numpy_reductions_of_lists_of_traced_values():
    w = np.array([1.0, 2.0, 3.0])
    cases = [(lambda w: np.sum([w[0], w[1]]), [1.0, 1.0, 0.0]),
             (lambda w: np.max([w[0], 2 * w[1]]), [0.0, 2.0, 0.0]),
             (lambda w: np.mean([w[0], w[1]]), [0.5, 0.5, 0.0]),
             (lambda w: np.prod((w[0], w[2])), [3.0, 0.0, 1.0]),
             (lambda w: np.var([w[0], w[1]]), [-0.5, 0.5, 0.0])]
    for f, want in cases:
        np.testing.assert_allclose(rune.grad(f)(w), want)
        rune.check_grads(f, w, order=2)
    assert np.sum([1, 2]) == 3 and np.mean([1.0, 2.0]) == 1.5


def test_stop_gradient_array_and_tree():
    x = np.array([1.0, 2.0])
    g = rune.grad(lambda x: np.sum(x * rune.stop_gradient(x)))(x)
    np.testing.assert_allclose(g, x)
    _, t = rune.jvp(lambda x: x * rune.stop_gradient(x), (x,), (np.ones(2),))
    np.testing.assert_allclose(t, x)
    g = rune.grad(lambda d: np.sum(rune.stop_gradient(d)["a"] * d["a"]) + d["b"])(
        {"a": x, "b": 1.0})
    np.testing.assert_allclose(g["a"], x)
    # nested: stop_gradient inside the inner grad stops it in every enclosing transformation
    # inner: d/dy [sg(y) y x] = sg(y) x; at y = x the outer sees sg(x) x -> d/dx = sg(x) = 3
    h = rune.grad(lambda x: rune.grad(lambda y: rune.stop_gradient(y) * y * x)(x))(3.0)
    assert h == pytest.approx(3.0)
    # outside vmap (under grad, jvp, nested grad) it is a plain ndarray
    seen = []

    def f(x):
        s = rune.stop_gradient(x * 2)
        seen.append(type(s))
        return np.sum(x * s)
    rune.grad(f)(x)
    rune.jvp(f, (x,), (x,))
    rune.grad(lambda x: np.sum(rune.grad(f)(x)))(x)
    assert seen == [np.ndarray] * 3
    # outside any transformation: a plain ndarray
    out = rune.stop_gradient(x)
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, x)
    tree = rune.stop_gradient({"a": x, "b": (np.ones(1),)})
    assert type(tree) is dict and type(tree["b"][0]) is np.ndarray
    # under vmap: zero derivative through it, values right
    gs = rune.vmap(rune.grad(lambda x: x * rune.stop_gradient(x) ** 2))(x)
    np.testing.assert_allclose(gs, x ** 2)


@pytest.mark.parametrize("x", [np.linspace(0.1, 1.0, 4), np.linspace(0.1, 1.0, 4) + 0.5j,
                               np.float32([0.5, 2.0])])
def test_grad_of_one_array_takes_the_short_way_to_the_same_result(x):
    """``grad(f)(x)`` of one float array skips argnums and tree bookkeeping; the result
    is the general path's (``argnums=(0,)``) bit for bit, dtype included."""
    def f(x):
        return np.sum(np.real(np.sin(x) * x))
    g = rune.grad(f)(x)
    (g_general,) = rune.grad(f, argnums=(0,))(x)
    assert g.dtype == x.dtype
    np.testing.assert_array_equal(g, g_general)
    v, g2 = rune.value_and_grad(f)(x)
    np.testing.assert_array_equal(g2, g)
    assert v == f(x)


def test_grad_of_one_array_still_checks_what_the_general_path_checks():
    with pytest.raises(TypeError, match="floating"):
        rune.grad(lambda x: np.sum(x * 1.0))(np.arange(3))
    with pytest.raises(TypeError):
        rune.grad(lambda x: np.sum(x))(np.ma.masked_array([1.0, 2.0]))
    with pytest.raises(ValueError, match="scalar"):
        rune.grad(lambda x: x * 2.0)(np.ones(3))
    g, aux = rune.grad(lambda x: (np.sum(x ** 2), "aux"), has_aux=True)(np.ones(2))
    assert aux == "aux"
    np.testing.assert_array_equal(g, [2.0, 2.0])


_ONE_ARRAY_FUNS = {
    "identity of a 0-d array": (lambda x: x, np.array(1.5)),
    "sum of a product": (lambda x: np.sum(x * x), np.linspace(0.1, 1.0, 4)),
    "a constant": (lambda x: 3.0, np.ones(3)),
    "a plain 0-d result": (lambda x: np.float64(2.0), np.ones(3)),
    "mean over a reshape": (lambda x: np.mean(x.reshape(2, 2) ** 3), np.arange(4.0)),
    "an element": (lambda x: x[2] * x[0], np.arange(1.0, 4.0)),
    "max": (lambda x: np.max(x), np.array([1.0, 3.0, 3.0])),
    "float32": (lambda x: np.sum(np.sin(x)), np.float32([0.5, 2.0])),
}


@pytest.mark.parametrize("name", sorted(_ONE_ARRAY_FUNS))
def test_grad_of_one_array_short_way_returns_a_fresh_writable_gradient(name):
    """The one-array path (no trees, its own pull) against the general one: the same
    gradient bit for bit, never the input, the seed or a read-only view."""
    f, x = _ONE_ARRAY_FUNS[name]
    x0 = x.copy()
    g = rune.grad(f)(x)
    (g_general,) = rune.grad(f, argnums=(0,))(x)
    v, g2 = rune.value_and_grad(f)(x)
    for a in (g, g2):
        assert type(a) is np.ndarray and a.dtype == x.dtype and a.shape == x.shape
        np.testing.assert_array_equal(a, g_general)
        assert a.flags.writeable and not np.shares_memory(a, x)
    assert not np.shares_memory(g, g2)
    np.testing.assert_array_equal(x, x0)
    assert np.array_equal(v, f(x0))
    g[...] = -7.0                                   # the next call is not affected
    np.testing.assert_array_equal(rune.grad(f)(x), g_general)
