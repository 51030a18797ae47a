"""Acceptance tests for SPEC section 3 (NumPy coverage): every listed operation under
``jvp`` (against our own central differences), ``vjp``/``grad`` (against the JVP, by
the identity <u, J v> = <J^T u, v>), ``vmap`` (against a Python loop, batch axis first
and last), and nested: forward-over-reverse and reverse-over-reverse Hessian-vector
products against each other and against finite differences of the gradient, and
``vmap(grad)`` against a loop.  Plain ``import numpy as np`` functions only.
"""

import warnings

import numpy as np
import numpy.polynomial as npoly
import pytest

import rune



EPS = 1e-6


def _fd(f, xs, vs, eps=EPS):
    plus = f(*[x + eps * v for x, v in zip(xs, vs)])
    minus = f(*[x - eps * v for x, v in zip(xs, vs)])
    return rune.tree.map(lambda a, b: (np.asarray(a) - np.asarray(b)) / (2 * eps), plus, minus)


def _close(a, b, rtol, atol, what):
    la, lb = rune.tree.leaves(a), rune.tree.leaves(b)
    assert len(la) == len(lb), what
    for x, y in zip(la, lb):
        assert np.shape(x) == np.shape(y), (what, np.shape(x), np.shape(y))
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=what)


def _dot(a, b):
    return sum(float(np.sum(np.asarray(x) * np.asarray(y)))
               for x, y in zip(rune.tree.leaves(a), rune.tree.leaves(b)))


def check_op(f, *xs, rtol=1e-5, atol=1e-7, nested=True, batch=True, seed=0, batch_last=True,
             dtypes=True):
    """Check ``f`` (a function of float64 arrays returning an array or a tree of arrays)."""
    rng = np.random.default_rng(seed)
    xs = tuple(np.asarray(x, dtype=float) for x in xs)
    y = f(*xs)
    vs = tuple(rng.normal(size=x.shape) for x in xs)

    # forward mode against finite differences
    out, t = rune.jvp(f, xs, vs)
    _close(out, y, 1e-12, 1e-12, "jvp primal")
    _close(t, _fd(f, xs, vs), rtol, atol, "jvp tangent vs finite differences")

    # reverse mode: shapes, dtypes, and <u, J v> == <J^T u, v>
    out2, pb = rune.vjp(f, *xs)
    _close(out2, y, 1e-12, 1e-12, "vjp primal")
    u = rune.tree.map(lambda o: rng.normal(size=np.shape(o)), y)
    gs = pb(u)
    assert type(gs) is tuple and len(gs) == len(xs)
    for g, x in zip(gs, xs):
        assert type(g) is np.ndarray and g.shape == x.shape and g.dtype == x.dtype
    lhs, rhs = _dot(gs, vs), _dot(u, t)
    assert abs(lhs - rhs) <= 1e-8 * (1 + abs(lhs) + abs(rhs)), (lhs, rhs)

    argnums = tuple(range(len(xs)))

    def h(*xs):
        return sum(np.sum(o * w) for o, w in zip(rune.tree.leaves(f(*xs)), rune.tree.leaves(u)))

    gh = rune.grad(h, argnums=argnums)(*xs)
    _close(gh, gs, 1e-10, 1e-12, "grad of <f, u> vs pullback")

    if batch:
        Xs = tuple(np.stack([x + 0.05 * rng.normal(size=x.shape) for _ in range(3)]) for x in xs)
        want = [f(*[X[i] for X in Xs]) for i in range(3)]
        want = rune.tree.map(lambda *o: np.stack(o), *want)
        _close(rune.vmap(f)(*Xs), want, 1e-10, 1e-12, "vmap (axis 0) vs loop")
        if batch_last:
            moved = tuple(np.moveaxis(X, 0, -1) for X in Xs)
            _close(rune.vmap(f, in_axes=-1)(*moved), want, 1e-10, 1e-12, "vmap (last axis)")
        if all(x.ndim >= 2 for x in xs):     # batch axis in the middle
            mid = tuple(np.moveaxis(X, 0, 1) for X in Xs)
            _close(rune.vmap(f, in_axes=1)(*mid), want, 1e-10, 1e-12, "vmap (axis 1)")
        # vmap of vmap: two batch axes
        XXs = tuple(np.stack([X, 1.1 * X]) for X in Xs)
        got2 = rune.vmap(rune.vmap(f))(*XXs)
        for i in (0, 1):
            for j in (0, 2):
                _close(rune.tree.map(lambda o: o[i, j], got2), f(*[XX[i, j] for XX in XXs]),
                       1e-10, 1e-12, "vmap(vmap)")
        if len(xs) > 1:    # first argument batched, the rest not
            want1 = rune.tree.map(lambda *o: np.stack(o),
                                  *[f(Xs[0][i], *xs[1:]) for i in range(3)])
            got1 = rune.vmap(f, in_axes=(0,) + (None,) * (len(xs) - 1))(Xs[0], *xs[1:])
            _close(got1, want1, 1e-10, 1e-12, "vmap (first argument only)")

    if dtypes:     # float32 in: NumPy's dtype out, float32 derivatives
        xs32 = tuple(x.astype(np.float32) for x in xs)
        y32 = f(*xs32)
        out32, t32 = rune.jvp(f, xs32, tuple(np.ones_like(x) for x in xs32))
        for o, oo, tt in zip(rune.tree.leaves(y32), rune.tree.leaves(out32),
                             rune.tree.leaves(t32)):
            assert np.asarray(oo).dtype == np.asarray(o).dtype, "jvp primal dtype"
            assert np.asarray(tt).dtype == np.asarray(o).dtype, "jvp tangent dtype"
        g32 = rune.grad(lambda *xs: sum(np.sum(o) for o in rune.tree.leaves(f(*xs))),
                        argnums=argnums)(*xs32)
        assert all(g.dtype == np.float32 for g in g32), [g.dtype for g in g32]

    if nested:
        grad_h = rune.grad(h, argnums=argnums)
        ws = tuple(rng.normal(size=x.shape) for x in xs)
        fwd_rev = rune.jvp(grad_h, xs, ws)[1]
        rev_rev = rune.grad(lambda *xs: _dot_traced(grad_h(*xs), ws), argnums=argnums)(*xs)
        _close(fwd_rev, rev_rev, 1e-7, 1e-9, "jvp(grad) vs grad(grad)")
        rev_fwd = rune.grad(lambda *xs: rune.jvp(h, xs, ws)[1], argnums=argnums)(*xs)
        _close(rev_fwd, fwd_rev, 1e-7, 1e-9, "grad(jvp) vs jvp(grad)")
        fd = _fd(grad_h, xs, ws, eps=1e-5)
        _close(fwd_rev, fd, 1e-4, 1e-6, "jvp(grad) vs finite differences of grad")
        if batch:
            got = rune.vmap(grad_h)(*Xs)
            want = [grad_h(*[X[i] for X in Xs]) for i in range(3)]
            want = rune.tree.map(lambda *o: np.stack(o), *want)
            _close(got, want, 1e-9, 1e-11, "vmap(grad) vs loop")


def _dot_traced(a, b):
    total = 0.0
    for x, y in zip(rune.tree.leaves(a), rune.tree.leaves(b)):
        total = total + np.sum(x * y)
    return total


R = np.random.default_rng(42)
P23 = R.uniform(0.2, 0.8, size=(2, 3))          # in (0, 1): every domain below
Q23 = R.uniform(0.2, 0.8, size=(2, 3))
N34 = R.normal(size=(3, 4))
M44 = R.normal(size=(4, 4)) + 4 * np.eye(4)     # well conditioned


# --------------------------------------------------------------------------
# ufuncs
# --------------------------------------------------------------------------

UNARY = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos,
    "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "arcsinh": np.arcsinh, "arctanh": np.arctanh, "arccosh": lambda x: np.arccosh(x + 1.5),
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "cbrt": np.cbrt,
    "square": np.square, "reciprocal": np.reciprocal, "negative": np.negative,
    "positive": np.positive, "absolute": lambda x: np.absolute(x - 0.5),
    "abs_op": lambda x: abs(x - 0.5), "fabs": lambda x: np.fabs(x - 0.5),
    "deg2rad": np.deg2rad, "rad2deg": np.rad2deg, "degrees": np.degrees,
    "radians": np.radians, "conjugate": np.conjugate, "neg_op": lambda x: -x,
    "pow_int": lambda x: x ** 3, "pow_float": lambda x: x ** 2.5, "rpow": lambda x: 2.0 ** x,
    "pow_neg": lambda x: np.power(x, -1.5), "float_power": lambda x: np.float_power(x, 1.7),
    "sinc": np.sinc, "chain": lambda x: np.exp(np.sin(x) * np.log1p(x)) / (1 + x ** 2),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_ufunc(name):
    check_op(UNARY[name], P23)


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "true_divide": np.true_divide, "power": np.power, "float_power": np.float_power,
    "arctan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp,
    "logaddexp2": np.logaddexp2, "maximum": np.maximum, "minimum": np.minimum,
    "fmax": np.fmax, "fmin": np.fmin, "copysign": lambda x, y: np.copysign(x, y - 0.5),
    "remainder": lambda x, y: np.remainder(5 * x, y + 0.35),
    "mod": lambda x, y: np.mod(5 * x, y + 0.35), "fmod": lambda x, y: np.fmod(5 * x, y + 0.35),
    "ops": lambda x, y: (x + y) * (x - y) / (x * y) ** 0.5 - x // 0.3 * y % 0.7,
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_ufunc(name):
    x, y = P23, Q23
    if name in ("maximum", "minimum", "fmax", "fmin"):
        y = np.where(np.abs(x - y) < 0.05, y + 0.1, y)     # no ties here (tested below)
    check_op(BINARY[name], x, y)


@pytest.mark.parametrize("name", ["add", "multiply", "divide", "power", "arctan2", "maximum",
                                  "hypot", "logaddexp"])
@pytest.mark.parametrize("yshape", [(3,), (2, 1), (1, 3), ()])
def test_binary_ufunc_broadcasting(name, yshape):
    y = R.uniform(0.85, 0.95, size=yshape) if yshape else np.float64(0.9)
    check_op(BINARY[name], P23, np.asarray(y), nested=(yshape == (2, 1)), batch_last=False)


ZERO_DERIV = {
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
    "round": lambda x: np.round(x, 1), "around": lambda x: np.around(x), "fix": np.fix,
    "sign": lambda x: np.sign(x - 0.5), "heaviside": lambda x: np.heaviside(x - 0.5, 0.5),
    "floor_divide": lambda x: np.floor_divide(x, 0.3), "spacing_like": lambda x: x // 0.25,
}


@pytest.mark.parametrize("name", list(ZERO_DERIV))
def test_rounding_and_sign_have_zero_derivative(name):
    f = ZERO_DERIV[name]
    x = P23 * 3 + 0.01
    g = rune.grad(lambda x: np.sum(f(x) * x))(x)
    np.testing.assert_allclose(g, f(x))                     # only the product rule's x part
    _, t = rune.jvp(f, (x,), (np.ones_like(x),))
    assert np.all(np.asarray(t) == 0)
    np.testing.assert_allclose(rune.vmap(f)(x), f(x))


COMPARE = {
    "greater": np.greater, "greater_equal": np.greater_equal, "less": np.less,
    "less_equal": np.less_equal, "equal": np.equal, "not_equal": np.not_equal,
    "logical_and": lambda x, y: np.logical_and(x > 0.5, y > 0.5),
    "logical_or": lambda x, y: np.logical_or(x > 0.5, y > 0.5),
    "logical_xor": lambda x, y: np.logical_xor(x > 0.5, y > 0.5),
    "logical_not": lambda x, y: np.logical_not(x > y), "isclose": np.isclose,
    "signbit": lambda x, y: np.signbit(x - y), "isfinite": lambda x, y: np.isfinite(x / y),
    "isnan": lambda x, y: np.isnan(x - y), "isinf": lambda x, y: np.isinf(x),
    "ops": lambda x, y: (x > y) & (x < 0.6) | ~(y >= 0.3),
}


@pytest.mark.parametrize("name", list(COMPARE))
def test_comparison_and_logical_ufuncs(name):
    f = COMPARE[name]
    x, y = P23, np.where(np.arange(6).reshape(2, 3) % 2 == 0, P23, Q23)
    seen = []

    def loss(x, y):
        c = f(x, y)
        seen.append(c)
        return np.sum(np.where(c, x * y, x))

    rune.grad(loss, argnums=(0, 1))(x, y)
    rune.jvp(loss, (x, y), (np.ones_like(x), np.ones_like(y)))
    for c in seen:
        assert type(c) is np.ndarray and c.dtype == np.bool_
        np.testing.assert_array_equal(c, f(x, y))
    got = rune.vmap(f)(x, y)
    np.testing.assert_array_equal(got, f(x, y))
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(rune.vmap(f, in_axes=(1, None))(x, y[:, 0]),
                                  np.stack([f(x[:, i], y[:, 0]) for i in range(3)]))


# --------------------------------------------------------------------------
# reductions
# --------------------------------------------------------------------------

REDUCE = {
    "sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min,
    "amax": np.amax, "amin": np.amin, "var": np.var, "std": np.std,
    "var_ddof": lambda x, **k: np.var(x, ddof=1, **k),
    "std_ddof": lambda x, **k: np.std(x, ddof=1, **k),
    "logaddexp.reduce": lambda x, axis=None, keepdims=False: np.logaddexp.reduce(
        x, axis=axis if axis is not None else 0, keepdims=keepdims) if axis is not None
    else np.logaddexp.reduce(x.ravel()),
    "add.reduce": lambda x, axis=None, keepdims=False: np.add.reduce(x, axis=axis,
                                                                      keepdims=keepdims),
    "method_sum": lambda x, **k: x.sum(**k), "method_mean": lambda x, **k: x.mean(**k),
    "method_max": lambda x, **k: x.max(**k), "method_prod": lambda x, **k: x.prod(**k),
    "method_std": lambda x, **k: x.std(**k),
}
X3 = R.permutation(24).reshape(2, 3, 4) / 24.0 + 0.3    # distinct values: no ties


@pytest.mark.parametrize("name", list(REDUCE))
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_axis_keepdims(name, axis, keepdims):
    if name == "logaddexp.reduce" and isinstance(axis, tuple):
        pytest.skip("ufunc.reduce over several axes is not a section 3 promise")
    f = REDUCE[name]
    if name == "logaddexp.reduce" and axis is None:
        fn = lambda x: f(x)
    else:
        fn = lambda x: f(x, axis=axis, keepdims=keepdims)
    want_shape = np.shape(fn(X3))
    check_op(fn, X3, nested=(axis in (None, 1)), batch_last=(axis is None))
    assert np.shape(rune.vmap(fn)(np.stack([X3, X3]))) == (2,) + want_shape


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "method_cumsum", "add.accumulate"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cumulative(name, axis):
    f = {"cumsum": lambda x: np.cumsum(x, axis=axis), "cumprod": lambda x: np.cumprod(x, axis=axis),
         "method_cumsum": lambda x: x.cumsum(axis=axis),
         "add.accumulate": lambda x: np.add.accumulate(x, axis=axis if axis is not None else 0)}[name]
    check_op(f, X3, nested=axis in (None, 1))


@pytest.mark.parametrize("ord_", [None, 1, 2, np.inf, -np.inf, 3, 0.5])
def test_vector_norm(ord_):
    x = np.array([0.3, -1.2, 0.7, 2.1])
    check_op(lambda x: np.linalg.norm(x, ord=ord_), x)
    check_op(lambda x: np.linalg.norm(x, ord=ord_, axis=1, keepdims=True), N34, nested=False)


@pytest.mark.parametrize("ord_", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norm(ord_):
    check_op(lambda A: np.linalg.norm(A, ord=ord_), N34, rtol=1e-4,
             nested=ord_ in (None, "fro", "nuc", 2))
    if ord_ in ("fro", 2, None):
        check_op(lambda A: np.linalg.norm(A, ord=ord_, axis=(1, 2)),
                 np.stack([N34, N34 * 0.5]), nested=False, batch_last=False)


def test_max_min_ties_split_evenly():
    x = np.array([1.0, 3.0, 3.0])
    np.testing.assert_allclose(rune.grad(np.max)(x), [0.0, 0.5, 0.5])
    np.testing.assert_allclose(rune.grad(np.amax)(x), [0.0, 0.5, 0.5])
    np.testing.assert_allclose(rune.grad(lambda x: x.max())(x), [0.0, 0.5, 0.5])
    np.testing.assert_allclose(rune.grad(np.min)(np.array([2.0, 2.0, 2.0, 5.0])),
                               [1 / 3, 1 / 3, 1 / 3, 0.0])
    A = np.array([[1.0, 1.0], [0.0, 2.0]])
    np.testing.assert_allclose(rune.grad(lambda A: np.sum(np.max(A, axis=1)))(A),
                               [[0.5, 0.5], [0.0, 1.0]])
    np.testing.assert_allclose(rune.grad(lambda A: np.sum(np.amin(A, axis=0, keepdims=True)))(A),
                               [[0.0, 1.0], [1.0, 0.0]])
    # np.maximum / np.minimum at ties
    gx, gy = rune.grad(lambda x, y: np.sum(np.maximum(x, y)), argnums=(0, 1))(
        np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 0.0]))
    np.testing.assert_allclose(gx, [0.5, 0.0, 1.0])
    np.testing.assert_allclose(gy, [0.5, 1.0, 0.0])
    gx, gy = rune.grad(lambda x, y: np.sum(np.minimum(x, y)), argnums=(0, 1))(
        np.array([1.0, 2.0]), np.array([1.0, 5.0]))
    np.testing.assert_allclose(gx, [0.5, 1.0])
    np.testing.assert_allclose(gy, [0.5, 0.0])
    # forward mode is the transpose of the same linear map
    _, t = rune.jvp(np.max, (x,), (np.array([1.0, 2.0, 4.0]),))
    assert t == pytest.approx(3.0)
    # per-example under vmap
    np.testing.assert_allclose(rune.vmap(rune.grad(np.max))(np.array([[1.0, 1.0], [0.0, 2.0]])),
                               [[0.5, 0.5], [0.0, 1.0]])


def test_reduction_dtypes_float32():
    x = X3.astype(np.float32)
    for f in (np.sum, np.mean, np.prod, np.max, np.var, np.std, np.linalg.norm,
              lambda x: np.cumsum(x)[-1], lambda x: np.logaddexp.reduce(x.ravel())):
        assert rune.grad(f)(x).dtype == np.float32
        assert np.asarray(rune.jvp(f, (x,), (np.ones_like(x),))[1]).dtype == np.float32
        assert rune.vmap(f)(x).dtype == np.float32


# --------------------------------------------------------------------------
# contractions
# --------------------------------------------------------------------------

A23, B34, v3, w3 = R.normal(size=(2, 3)), R.normal(size=(3, 4)), R.normal(size=3), R.normal(size=3)
CONTRACT = {
    "matmul_op": (lambda a, b: a @ b, (A23, B34)),
    "matmul": (np.matmul, (A23, B34)),
    "matmul_mv": (lambda a, v: a @ v, (A23, v3)),
    "matmul_vm": (lambda v, b: v @ b, (v3, B34)),
    "matmul_vv": (lambda v, w: v @ w, (v3, w3)),
    "matmul_batched": (lambda a, b: a @ b, (R.normal(size=(2, 2, 3)), B34)),
    "rmatmul_const": (lambda a: np.ones((4, 2)) @ a, (A23,)),
    "dot": (np.dot, (A23, B34)), "dot_mv": (np.dot, (A23, v3)), "dot_vv": (np.dot, (v3, w3)),
    "dot_scalar": (lambda a, s: np.dot(a, s), (A23, np.array(1.5))),
    "method_dot": (lambda a, b: a.dot(b), (A23, B34)),
    "vdot": (np.vdot, (A23, R.normal(size=(2, 3)))),
    "inner": (np.inner, (A23, R.normal(size=(4, 3)))), "inner_vv": (np.inner, (v3, w3)),
    "outer": (np.outer, (v3, R.normal(size=4))), "outer_2d": (np.outer, (A23, v3)),
    "tensordot_1": (lambda a, b: np.tensordot(a, b, axes=1), (A23, B34)),
    "tensordot_0": (lambda a, b: np.tensordot(a, b, axes=0), (v3, w3)),
    "tensordot_2": (lambda a, b: np.tensordot(a, b, axes=2), (A23, R.normal(size=(2, 3)))),
    "tensordot_pairs": (lambda a, b: np.tensordot(a, b, axes=([1, 0], [0, 2])),
                        (A23, R.normal(size=(3, 4, 2)))),
    "einsum_mm": (lambda a, b: np.einsum("ij,jk->ik", a, b), (A23, B34)),
    "einsum_implicit": (lambda a, b: np.einsum("ij,jk", a, b), (A23, B34)),
    "einsum_trace": (lambda m: np.einsum("ii->", m), (M44,)),
    "einsum_diag": (lambda m: np.einsum("ii->i", m), (M44,)),
    "einsum_T": (lambda a: np.einsum("ij->ji", a), (A23,)),
    "einsum_batch": (lambda a, b: np.einsum("bij,bjk->bik", a, b),
                     (R.normal(size=(2, 2, 3)), R.normal(size=(2, 3, 4)))),
    "einsum_ell": (lambda a, v: np.einsum("...ij,...j->...i", a, v),
                   (R.normal(size=(2, 2, 3)), R.normal(size=(2, 3)))),
    "einsum_dot": (lambda v, w: np.einsum("i,i->", v, w), (v3, w3)),
    "einsum_3": (lambda a, b, c: np.einsum("ij,jk,k->i", a, b, c), (A23, B34, R.normal(size=4))),
    "einsum_sq": (lambda a: np.einsum("ij,ij->i", a, a), (A23,)),
}


@pytest.mark.parametrize("name", list(CONTRACT))
def test_contractions(name):
    f, args = CONTRACT[name]
    check_op(f, *args)


def test_matmul_float32_and_jacobian():
    a, b = A23.astype(np.float32), B34.astype(np.float32)
    ga, gb = rune.grad(lambda a, b: np.sum(a @ b), argnums=(0, 1))(a, b)
    assert ga.dtype == gb.dtype == np.float32
    J = rune.jacrev(lambda a: a @ B34)(A23)
    assert J.shape == (2, 4, 2, 3)
    np.testing.assert_allclose(J, np.einsum("ik,jl->ijkl", np.eye(2), B34.T))


# --------------------------------------------------------------------------
# shape and layout
# --------------------------------------------------------------------------

X234 = R.normal(size=(2, 3, 4))
SHAPE = {
    "reshape": (lambda x: np.reshape(x, (4, 6)), (X234,)),
    "reshape_-1": (lambda x: x.reshape(-1, 2), (X234,)),
    "reshape_method_args": (lambda x: x.reshape(6, 4), (X234,)),
    "ravel": (np.ravel, (X234,)), "flatten": (lambda x: x.flatten(), (X234,)),
    "transpose": (np.transpose, (X234,)),
    "transpose_axes": (lambda x: np.transpose(x, (1, 0, 2)), (X234,)),
    "T": (lambda x: x.T, (X234,)), "method_transpose": (lambda x: x.transpose(2, 0, 1), (X234,)),
    "swapaxes": (lambda x: np.swapaxes(x, 0, 2), (X234,)),
    "moveaxis": (lambda x: np.moveaxis(x, 0, -1), (X234,)),
    "expand_dims": (lambda x: np.expand_dims(x, 1), (X234,)),
    "squeeze": (lambda x: np.squeeze(x[:, :1]), (X234,)),
    "squeeze_axis": (lambda x: np.squeeze(x[:1], axis=0), (X234,)),
    "broadcast_to": (lambda x: np.broadcast_to(x[:, :1], (2, 5, 4)), (X234,)),
    "concatenate": (lambda x, y: np.concatenate([x, y, x], axis=1), (X234, X234[:, :2] * 2)),
    "concatenate_none": (lambda x, y: np.concatenate([x, y], axis=None), (X234, v3)),
    "stack": (lambda x, y: np.stack([x, y]), (X234, X234 * 3)),
    "stack_last": (lambda x, y: np.stack([x, y], axis=-1), (X234, X234 * 3)),
    "hstack": (lambda x, y: np.hstack([x, y]), (A23, R.normal(size=(2, 2)))),
    "vstack": (lambda x, y: np.vstack([x, y]), (A23, v3)),
    "split": (lambda x: [p * (i + 1) for i, p in enumerate(np.split(x, 2, axis=2))], (X234,)),
    "split_idx": (lambda x: tuple(np.split(x, [1, 3], axis=1)), (X234,)),
    "array_split": (lambda x: np.array_split(x, 3, axis=2), (X234,)),
    "tile": (lambda x: np.tile(x, (2, 1, 3)), (X234,)),
    "repeat": (lambda x: np.repeat(x, 2, axis=1), (X234,)),
    "repeat_array": (lambda x: np.repeat(x, [1, 0, 3], axis=1), (X234,)),
    "repeat_none": (lambda x: np.repeat(x, 2), (A23,)),
    "flip": (lambda x: np.flip(x, axis=1), (X234,)), "flip_all": (np.flip, (X234,)),
    "roll": (lambda x: np.roll(x, 2, axis=2), (X234,)),
    "roll_none": (lambda x: np.roll(x, -3), (X234,)),
    "pad_constant": (lambda x: np.pad(x, ((0, 1), (2, 0), (1, 1)), constant_values=0.5), (X234,)),
    "pad_edge": (lambda x: np.pad(x, 2, mode="edge"), (A23,)),
    "pad_reflect": (lambda x: np.pad(x, ((1, 1), (2, 2)), mode="reflect"), (A23,)),
    "where": (lambda x, y: np.where(x > 0, x, y), (A23, R.normal(size=(2, 3)))),
    "where_scalar": (lambda x: np.where(x > 0, x ** 2, -x), (A23,)),
    "clip": (lambda x: np.clip(x, -0.5, 0.5), (A23 + 0.013,)),
    "clip_traced_bounds": (lambda x, lo, hi: np.clip(x, lo, hi),
                           (np.array([-2.0, 0.1, 3.0]), np.array(-1.0), np.array(1.0))),
    "method_clip": (lambda x: x.clip(min=-0.5), (A23 + 0.013,)),
    "diag_1d": (lambda v: np.diag(v, k=1), (v3,)), "diag_2d": (lambda m: np.diag(m, k=-1), (M44,)),
    "diagonal": (lambda x: np.diagonal(x, offset=1, axis1=1, axis2=2), (X234,)),
    "trace": (lambda m: np.trace(m, offset=1), (M44,)), "trace_3d": (
        lambda x: np.trace(x, axis1=0, axis2=2), (X234,)),
    "triu": (lambda m: np.triu(m, k=1), (M44,)), "tril": (lambda m: np.tril(m), (M44,)),
    "tril_batch": (lambda x: np.tril(x, -1), (X234,)),
    "sort": (lambda x: np.sort(x, axis=1), (X234,)), "sort_none": (
        lambda x: np.sort(x, axis=None), (X234,)),
    "method_sort": (lambda x: (lambda y: (y.sort(), y)[1])(x * 1.0), (X234,)),
    "take": (lambda x: np.take(x, [2, 0, 2], axis=1), (X234,)),
    "take_flat": (lambda x: np.take(x, np.array([[5, 1], [0, 5]])), (X234,)),
    "take_along_axis": (lambda x: np.take_along_axis(x, np.argsort(x, axis=2), axis=2), (X234,)),
    "take_along_axis_const": (lambda x: np.take_along_axis(
        x, np.array([[[0], [3], [1]], [[2], [2], [0]]]), axis=2), (X234,)),
    "atleast_2d": (lambda v: np.atleast_2d(v), (v3,)),
    "fliplr": (np.fliplr, (A23,)), "rot90": (np.rot90, (A23,)),
}


@pytest.mark.parametrize("name", list(SHAPE))
def test_shape_and_layout(name):
    f, args = SHAPE[name]
    check_op(f, *args)


INDEX = {
    "int": lambda x: x[1], "neg_int": lambda x: x[-1, 2],
    "slice": lambda x: x[:, 1:3], "step": lambda x: x[::-1, ::2], "ellipsis_none": lambda x: x[..., None],
    "none_mid": lambda x: x[:, None, 1], "idx_array": lambda x: x[np.array([2, 0, 2])],
    "idx_list": lambda x: x[[1, 1, 0]], "mask": lambda x: x[x > 0],
    "mask_const": lambda x: x[np.array([True, False, True, True])],
    "two_arrays": lambda x: x[np.array([0, 3]), np.array([1, 2])],
    "mixed": lambda x: x[1:, np.array([2, 0])], "mixed_nonadjacent": lambda x: x[np.array([0, 2]), :, None],
    "scalar_elem": lambda x: x[2, 1] * x[0, 0], "broadcast_idx": lambda x: x[np.array([[0], [3]]), np.array([0, 2])],
    "getitem_chain": lambda x: x[1:][0][1:],
}


@pytest.mark.parametrize("name", list(INDEX))
def test_indexing(name):
    x = R.normal(size=(4, 3))
    check_op(INDEX[name], x, batch_last=name not in ("mask",))


def test_repeated_index_gradient_accumulates():
    g = rune.grad(lambda x: np.sum(x[np.array([0, 0, 2, 0])] * np.array([1.0, 2.0, 3.0, 4.0])))(
        np.zeros(3))
    np.testing.assert_allclose(g, [7.0, 0.0, 3.0])
    g = rune.grad(lambda x: np.sum(np.take(x, [1, 1, 1])))(np.zeros(3))
    np.testing.assert_allclose(g, [0.0, 3.0, 0.0])


def test_sort_gradient_through_the_permutation():
    x = np.array([3.0, 1.0, 2.0])
    w = np.array([10.0, 20.0, 30.0])
    g = rune.grad(lambda x: np.sum(np.sort(x) * w))(x)
    np.testing.assert_allclose(g, [30.0, 10.0, 20.0])


# --------------------------------------------------------------------------
# linear algebra
# --------------------------------------------------------------------------

def spd(x):
    return x @ x.T + 3 * np.eye(x.shape[0])


def sym(x):
    return (x + x.T) / 2


LINALG = {
    "inv": (np.linalg.inv, (M44,)),
    "solve_vec": (np.linalg.solve, (M44, R.normal(size=4))),
    "solve_mat": (np.linalg.solve, (M44, R.normal(size=(4, 2)))),
    "det": (np.linalg.det, (M44,)),
    "slogdet": (lambda m: np.linalg.slogdet(m)[1], (M44 * np.array([1, -1, 1, 1]),)),
    "slogdet_sign": (lambda m: np.linalg.slogdet(m).sign * m[0, 0], (M44,)),
    "cholesky": (lambda x: np.linalg.cholesky(spd(x)), (N34,)),
    "eigh_vals": (lambda x: np.linalg.eigh(sym(x))[0], (M44,)),
    "eigh_vecs": (lambda x: np.linalg.eigh(sym(x))[1] ** 2, (M44,)),
    "eigh_named": (lambda x: np.linalg.eigh(sym(x)).eigenvalues, (M44,)),
    "svd_vals": (lambda x: np.linalg.svd(x, compute_uv=False), (N34,)),
    "svd_thin": (lambda x: [s * (u ** 2).sum(0) for s, u in [np.linalg.svd(x, full_matrices=False)[1::-1]]]
                 + [np.linalg.svd(x, full_matrices=False)[2] ** 2], (N34,)),
    "svd_reconstruct": (lambda x: (lambda u, s, vt: (u * s) @ vt)(*np.linalg.svd(x, full_matrices=False)),
                        (N34,)),
    "qr": (lambda x: list(np.linalg.qr(x)), (N34.T,)),
    "qr_square": (lambda x: np.linalg.qr(x)[0] @ np.diag(np.diag(np.linalg.qr(x)[1])), (M44,)),
    "inv_batched": (np.linalg.inv, (np.stack([M44, M44.T + np.eye(4)]),)),
    "det_batched": (np.linalg.det, (np.stack([M44, M44.T]),)),
}


@pytest.mark.parametrize("name", list(LINALG))
def test_linalg(name):
    f, args = LINALG[name]
    check_op(f, *args, rtol=1e-4, atol=1e-6, batch_last=False)


# --------------------------------------------------------------------------
# library code (NumPy's Python implementations, SciPy)
# --------------------------------------------------------------------------

OBS = R.normal(size=(3, 6))
LIB = {
    "cov": (np.cov, (OBS,)), "cov_rowvar": (lambda x: np.cov(x, rowvar=False), (OBS.T,)),
    "cov_ddof": (lambda x: np.cov(x, ddof=0), (OBS,)),
    "cov_xy": (lambda x, y: np.cov(x, y), (OBS[0], OBS[1])),
    "corrcoef": (np.corrcoef, (OBS,)),
    "polyval_coef": (lambda c: np.polyval(c, np.array([0.5, 2.0])), (np.array([1.0, -2.0, 3.0]),)),
    "polyval_x": (lambda x: np.polyval([1.0, -2.0, 3.0, 0.5], x), (np.array([0.5, 2.0, -1.0]),)),
    "polyval_both": (np.polyval, (np.array([1.0, -2.0, 3.0]), np.array([0.5, 2.0]))),
    "trapezoid_y": (lambda y: np.trapezoid(y, dx=0.5), (R.normal(size=5),)),
    "trapezoid_xy": (np.trapezoid, (R.normal(size=5), np.cumsum(R.uniform(0.5, 1, 5)))),
    "trapezoid_axis": (lambda y: np.trapezoid(y, axis=0), (OBS,)),
    "polynomial.polyval": (lambda x, c: npoly.polynomial.polyval(x, c),
                           (np.array([0.5, -1.0]), np.array([1.0, 2.0, 3.0]))),
    "chebval": (lambda x, c: npoly.chebyshev.chebval(x, c), (np.array([0.5, -0.3]), v3)),
    "legval": (lambda x, c: npoly.legendre.legval(x, c), (np.array([0.5, -0.3]), v3)),
    "hermval": (lambda x, c: npoly.hermite.hermval(x, c), (np.array([0.5, -0.3]), v3)),
    "lagval": (lambda x, c: npoly.laguerre.lagval(x, c), (np.array([0.5, -0.3]), v3)),
    "Polynomial_call": (lambda x: npoly.Polynomial([1.0, -2.0, 0.5])(x), (np.array([0.5, 1.5]),)),
    "Chebyshev_call": (lambda x: npoly.Chebyshev([1.0, -2.0, 0.5])(x), (np.array([0.5, 0.2]),)),
    "polyval2d": (lambda x: npoly.polynomial.polyval2d(x, x * 2, np.ones((2, 2))), (v3,)),
}


@pytest.mark.parametrize("name", list(LIB))
def test_library_code(name):
    f, args = LIB[name]
    check_op(f, *args, batch_last=False)


def test_scipy_rosen_matches_rosen_der_and_hess():
    from scipy.optimize import rosen, rosen_der, rosen_hess, rosen_hess_prod
    x = np.array([0.3, 0.7, 1.1, -0.5, 0.9])
    np.testing.assert_allclose(rune.grad(rosen)(x), rosen_der(x), rtol=1e-12)
    np.testing.assert_allclose(rune.hessian(rosen)(x), rosen_hess(x), rtol=1e-12)
    v = np.arange(5.0)
    np.testing.assert_allclose(rune.hvp(rosen, (x,), (v,))[1][0], rosen_hess_prod(x, v),
                               rtol=1e-12)
    np.testing.assert_allclose(rune.jacfwd(rosen_der)(x), rosen_hess(x), rtol=1e-12)
    X = np.stack([x, 2 * x, -x])
    np.testing.assert_allclose(rune.vmap(rosen)(X), [rosen(r) for r in X])
    np.testing.assert_allclose(rune.vmap(rune.grad(rosen))(X), np.stack([rosen_der(r) for r in X]),
                               rtol=1e-12)
    assert rune.grad(rosen)(x.astype(np.float32)).dtype == np.float32


def test_coercion_inside_library_code_keeps_tracing():
    def lib(x):
        x = np.asarray(x)
        y = np.asanyarray(x)
        z = np.array(x, dtype=np.float64)
        w = np.array(x, copy=True)
        w[0] = 0.0            # the copy is independent of x
        c = np.ascontiguousarray(x)
        return np.sum(x * y * z) + np.sum(w) + np.sum(c)

    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(rune.grad(lib)(x), 3 * x ** 2 + np.array([0.0, 1.0, 1.0]) + 1)
    np.testing.assert_allclose(rune.jvp(lib, (x,), (np.ones(3),))[1], np.sum(3 * x ** 2) + 2 + 3)
    np.testing.assert_allclose(rune.vmap(lib)(np.stack([x, x])), [lib(x)] * 2)
    # np.array(x, dtype=float32) is a traced cast
    g = rune.grad(lambda x: np.sum(np.array(x, dtype=np.float32) ** 2))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * x)
    # lists of traced scalars become traced arrays
    g = rune.grad(lambda x: np.sum(np.asarray([x[0], x[1] * 2, 1.0]) ** 2))(x)
    np.testing.assert_allclose(g, [2.0, 16.0, 0.0])


def test_array_api_compat_namespace_coercion():
    aac = pytest.importorskip("scipy._lib.array_api_compat")
    xp = aac.array_namespace(np.ones(2))
    g = rune.grad(lambda x: np.sum(xp.asarray(x) ** 2))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [2.0, 4.0])
    g = rune.grad(lambda x: np.sum(xp.asarray(x, dtype=xp.float64) * x))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [2.0, 4.0])


@pytest.mark.parametrize("name", ["logsumexp", "log_softmax"])
def test_scipy_logsumexp(name):
    from scipy.special import logsumexp, log_softmax
    x = np.array([0.5, 1.0, -2.0])
    if name == "logsumexp":
        np.testing.assert_allclose(rune.grad(logsumexp)(x), np.exp(x - logsumexp(x)))
    else:
        np.testing.assert_allclose(rune.grad(lambda x: log_softmax(x)[0])(x),
                                   np.eye(3)[0] - np.exp(x - logsumexp(x)))


def test_scipy_c_code_gives_a_clear_rune_error():
    import scipy.linalg
    with pytest.raises((NotImplementedError, rune.TracerConversionError)):
        rune.grad(lambda A: np.sum(scipy.linalg.schur(A)[0]))(2 * np.eye(2))
    # scipy.linalg.solve has rune's implementation (tests/test_scipy_linalg.py)
    np.testing.assert_allclose(
        rune.grad(lambda A: np.sum(scipy.linalg.solve(A, np.ones(2))))(2 * np.eye(2)),
        -np.full((2, 2), 0.25))


def test_matrix_function_composition_under_every_transformation():
    # a realistic function: Gaussian negative log-likelihood with a Cholesky factor
    def nll(L_raw, mu, X):
        L = np.tril(L_raw, -1) + np.diag(np.exp(np.diag(L_raw)))
        S = L @ L.T + 1e-3 * np.eye(L.shape[0])
        d = X - mu
        sign, logdet = np.linalg.slogdet(S)
        return 0.5 * np.mean(np.sum(d * np.linalg.solve(S, d.T).T, axis=1)) + 0.5 * logdet

    X = R.normal(size=(5, 3))
    L_raw, mu = 0.3 * R.normal(size=(3, 3)), R.normal(size=3)
    check_op(lambda L, m: nll(L, m, X), L_raw, mu, rtol=1e-4, atol=1e-6, batch_last=False)


def _numpy_functions_with_out():
    import inspect
    found = []
    for mod, prefix in ((np, "np."), (np.linalg, "np.linalg.")):
        for name in sorted(dir(mod)):
            f = getattr(mod, name)
            if isinstance(f, (np.ufunc, type)) or not callable(f) or name.startswith("_"):
                continue
            try:
                params = inspect.signature(f).parameters
            except (TypeError, ValueError):
                continue
            if "out" in params:
                found.append((prefix + name, f))
    return found


def test_out_keyword_never_silently_ignored():
    """Every NumPy function taking out= either refuses it on a traced value
    (NotImplementedError) or really writes it -- never returns with ``out`` untouched."""
    x = np.array([[0.3, 1.7, 2.2], [0.9, -1.4, 0.5]])
    silently_ignored, checked = [], 0
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for name, f in _numpy_functions_with_out():
            args = ref = None
            for cand in ((x,), (x, x), (x, 1)):
                try:
                    ref = np.asarray(f(*cand))
                    args = cand
                    break
                except Exception:
                    continue
            if args is None:
                continue
            buf = np.zeros(ref.shape, ref.dtype)
            buf[...] = True if ref.dtype.kind == "b" else 7
            keep = buf.copy()

            def g(x):
                f(x, *args[1:], out=buf)
                return np.sum(x)
            try:
                rune.grad(g)(x)
            except NotImplementedError as e:
                assert "out" in str(e), (name, str(e))
            except Exception:
                pass
            else:     # written: it must hold the result (which may equal the old fill)
                if not np.allclose(buf, ref, equal_nan=True):
                    silently_ignored.append(name)
            checked += 1
    assert checked > 30
    assert not silently_ignored, silently_ignored


# --------------------------------------------------------------------------
# complex inputs (JAX's convention: grad of a real h is dh/dx - i dh/dy)
# --------------------------------------------------------------------------

_RC = np.random.default_rng(3)
ZC = _RC.normal(size=(3, 3)) + 1j * _RC.normal(size=(3, 3)) + 3 * np.eye(3)
WC = _RC.normal(size=50) + 1j * _RC.normal(size=50)


def _herm(z):
    return (z + z.conj().T) / 2


COMPLEX = {
    "sin": np.sin, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "abs": np.abs,
    "conj": np.conj, "real": np.real, "imag": np.imag, "square": np.square,
    "mul": lambda z: z * z.T, "div": lambda z: z / (z.T + 5), "pow": lambda z: z ** 3,
    "abs2": lambda z: np.abs(z) ** 2, "angle": np.angle, "sum": np.sum,
    "mean": lambda z: np.mean(z, axis=0), "prod": lambda z: np.prod(z, axis=1),
    "cumsum": lambda z: np.cumsum(z, axis=1), "var": lambda z: np.var(z, axis=0), "std": np.std,
    "norm": np.linalg.norm, "norm_axis": lambda z: np.linalg.norm(z, axis=1),
    "nuc": lambda z: np.linalg.norm(z, "nuc"), "norm2": lambda z: np.linalg.norm(z, 2),
    "matmul": lambda z: z @ z, "einsum": lambda z: np.einsum("ij,jk->ik", z, z.T),
    "dot": lambda z: np.dot(z, z[0]), "vdot": lambda z: np.vdot(z, z.T),
    "outer": lambda z: np.outer(z[0], z[1]), "inner": lambda z: np.inner(z, z),
    "inv": np.linalg.inv, "solve": lambda z: np.linalg.solve(z, z[:, 0]), "det": np.linalg.det,
    "slogdet": lambda z: np.linalg.slogdet(z)[1], "slogdet_sign": lambda z: np.linalg.slogdet(z)[0],
    "eigh_vals": lambda z: np.linalg.eigh(_herm(z))[0],
    "eigh_vecs_abs": lambda z: np.abs(np.linalg.eigh(_herm(z))[1]),
    "svd_vals": lambda z: np.linalg.svd(z, compute_uv=False),
    "cholesky": lambda z: np.linalg.cholesky(z @ z.conj().T + np.eye(3)),
    "qr_R_abs": lambda z: np.abs(np.linalg.qr(z)[1]),
    "where": lambda z: np.where(np.abs(z) > 1, z, 0), "index": lambda z: z[[0, 2], 1:],
    "concat": lambda z: np.concatenate([z, z.conj()]), "trace": np.trace, "diag": np.diag,
}


@pytest.mark.parametrize("name", list(COMPLEX))
def test_complex_inputs(name):
    f = COMPLEX[name]

    def h(z):
        o = f(z)
        ww = WC[:np.size(o)].reshape(np.shape(o))
        return np.sum(np.real(o * np.conj(ww))) if np.iscomplexobj(o) else np.sum(o * ww.real)

    z, eps = ZC, 1e-6
    g = rune.grad(h)(z)
    assert g.dtype == np.complex128 and g.shape == z.shape
    gx, gy = np.zeros(z.shape), np.zeros(z.shape)
    for i in np.ndindex(z.shape):
        e = np.zeros(z.shape, complex)
        e[i] = eps
        gx[i] = (h(z + e) - h(z - e)) / (2 * eps)
        gy[i] = (h(z + 1j * e) - h(z - 1j * e)) / (2 * eps)
    np.testing.assert_allclose(g, gx - 1j * gy, rtol=1e-5, atol=1e-6)
    v = _RC.normal(size=z.shape) + 1j * _RC.normal(size=z.shape)
    out, t = rune.jvp(f, (z,), (v,))
    np.testing.assert_allclose(out, f(z))
    np.testing.assert_allclose(t, (np.asarray(f(z + eps * v)) - np.asarray(f(z - eps * v)))
                               / (2 * eps), rtol=1e-5, atol=1e-6)
    batch = np.stack([z, z * 1.1])
    np.testing.assert_allclose(rune.vmap(f)(batch), np.stack([f(z), f(z * 1.1)]))
    np.testing.assert_allclose(rune.vmap(rune.grad(h))(batch),
                               np.stack([rune.grad(h)(z), rune.grad(h)(z * 1.1)]), rtol=1e-10)
    hv = rune.jvp(rune.grad(h), (z,), (v,))[1]
    np.testing.assert_allclose(hv, (rune.grad(h)(z + eps * v) - rune.grad(h)(z - eps * v))
                               / (2 * eps), rtol=1e-4, atol=1e-5)


def test_power_with_zero_exponent_has_zero_derivative_at_zero():
    # x ** 0 == 1 everywhere (NumPy: 0 ** 0 == 1), so its derivative is 0, not 0 * 0**-1 = NaN
    with np.errstate(all="ignore"):
        for f in (lambda x: x ** 0, lambda x: np.power(x, 0.0), lambda x: np.float_power(x, 0)):
            assert rune.grad(f)(0.0) == 0.0
            assert rune.jvp(f, (0.0,), (1.0,))[1] == 0.0
        g = rune.grad(lambda x: np.sum(x ** np.array([0.0, 1.0, 2.0])))(np.zeros(3))
        np.testing.assert_array_equal(g, [0.0, 1.0, 0.0])
        assert rune.hessian(lambda x: x ** 2)(0.0) == 2.0
        np.testing.assert_array_equal(
            rune.vmap(rune.grad(lambda x, y: x ** y))(np.zeros(2), np.array([0.0, 2.0])), [0.0, 0.0])
