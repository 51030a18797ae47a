"""np.convolve, np.correlate, np.kron, np.cross, np.vander: values against NumPy,
derivatives (finite differences, JVP/VJP identity, second order), vmap against a loop
with the batch axis anywhere, errors."""

import warnings

import numpy as np
import pytest

import rune
from helpers import check_vmap, check_all_axes

LENGTHS = [(7, 3), (6, 4), (3, 7), (4, 6), (5, 5), (1, 4), (4, 1)]
MODES = ["full", "same", "valid"]


def _vec(n, seed, complex_=False):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    return x + 1j * rng.standard_normal(n) if complex_ else x


def _values_match(f, *args):
    want = f(*args)
    got = rune.jvp(f, args, tuple(np.ones_like(a) for a in args))[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.shape(got) == np.shape(want) and got.dtype == want.dtype


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n,m", LENGTHS)
@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_convolve_correlate(name, n, m, mode, complex_):
    fn = getattr(np, name)
    f = lambda a, v: fn(a, v, mode)   # noqa: E731
    a, v = _vec(n, 0, complex_), _vec(m, 1, complex_)
    _values_match(f, a, v)
    rune.check_grads(f, a, v, order=2)
    rune.check_grads(lambda a: fn(a, v, mode), a, order=2)       # one operand plain
    rune.check_grads(lambda v: fn(a, v, mode), v, order=2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_convolve_vmap(name, mode):
    fn = getattr(np, name)
    f = lambda a, v: fn(a, v, mode)   # noqa: E731
    rng = np.random.default_rng(2)
    A, V = rng.standard_normal((3, 6)), rng.standard_normal((3, 4))
    check_vmap(f, A, V)                                      # both batched
    check_vmap(f, A.T, V, in_axes=(1, 0))
    check_vmap(f, A, V[0], in_axes=(0, None))                # one batched
    check_vmap(f, A[0], V.T, in_axes=(None, 1))
    check_vmap(f, V, A, in_axes=(0, 0))                      # shorter first
    AA, VV = rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 3, 4))
    got = rune.vmap(rune.vmap(f))(AA, VV)
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(got[i, j], f(AA[i, j], VV[i, j]), rtol=1e-12,
                                       atol=1e-12)
    got = rune.vmap(rune.vmap(f, in_axes=(None, 0)), in_axes=(0, None))(AA[0], VV[0])
    for i in range(3):
        for j in range(3):
            np.testing.assert_allclose(got[i, j], f(AA[0, i], VV[0, j]), rtol=1e-12,
                                       atol=1e-12)
    check_vmap(rune.grad(lambda a, v: np.sum(np.sin(f(a, v)))), A, V)


def test_convolution_gradient_is_a_correlation():
    a, v = _vec(50, 3), _vec(7, 4)
    c = np.cos(np.convolve(a, v))
    ga, gv = rune.grad(lambda a, v: np.sum(np.sin(np.convolve(a, v))), argnums=(0, 1))(a, v)
    np.testing.assert_allclose(ga, np.correlate(c, v, "valid"), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gv, np.correlate(c, a, "valid"), rtol=1e-12, atol=1e-12)


KRON_SHAPES = [((3,), (2,)), ((2, 3), (4,)), ((3,), (2, 2)), ((2, 1, 3), (2, 2)), ((), (3,))]


@pytest.mark.parametrize("sa,sb", KRON_SHAPES, ids=[str(s) for s in KRON_SHAPES])
def test_kron(sa, sb):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb) + 1j * rng.standard_normal(sb)
    _values_match(np.kron, a, b)
    rune.check_grads(np.kron, a, b, order=2)
    if sa:
        check_all_axes(np.kron, a, b.real)


CROSS_CASES = [
    ((3,), (3,), {}),
    ((4, 3), (3,), {}),
    ((3, 4), (2, 3, 1), {"axisa": 0, "axisb": 1, "axisc": 0}),
    ((3, 2), (2, 3), {"axisa": 0, "axisc": -1}),
    ((2, 3), (2, 3), {"axis": 1}),
    ((2,), (3,), {}),
    ((3, 2), (3, 3), {}),
    ((2,), (2,), {}),
    ((4, 2), (2,), {}),
]


@pytest.mark.parametrize("sa,sb,kw", CROSS_CASES, ids=[str(c) for c in CROSS_CASES])
def test_cross(sa, sb, kw):
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    f = lambda a, b: np.cross(a, b, **kw)   # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)    # 2-d vectors, as NumPy
        _values_match(f, a, b)
        rune.check_grads(f, a, b, order=2)
        rune.check_grads(f, a, b * (1 + 1j), order=2)
        check_all_axes(f, a, b)


def test_cross_warns_as_numpy_for_two_dimensional_vectors():
    a = np.array([1.0, 2.0])
    with pytest.warns(DeprecationWarning):
        rune.grad(lambda a: np.cross(a, a[::-1]))(a)


@pytest.mark.parametrize("kw", [{}, {"N": 4}, {"increasing": True}, {"N": 1}, {"N": 0}])
def test_vander(kw):
    x = np.array([0.0, -1.5, 0.7, 2.0])        # a zero: exact derivatives there too
    f = lambda x: np.vander(x, **kw)   # noqa: E731
    _values_match(f, x)
    rune.check_grads(f, x, order=2)
    rune.check_grads(f, x * (1 - 2j), order=2)
    check_all_axes(f, x)
    if kw.get("N", 4) >= 2:
        g = rune.jacfwd(lambda x: f(x)[0])(x)          # row of x[0] == 0
        np.testing.assert_array_equal(np.isfinite(g), True)


@pytest.mark.parametrize("call,err,match", [
    (lambda x: np.convolve(x, x[:0]), ValueError, "np.convolve: v cannot be empty"),
    (lambda x: np.correlate(x[:0], x), ValueError, "np.correlate: a cannot be empty"),
    (lambda x: np.convolve(x.reshape(2, 2), x), ValueError, "np.convolve: object too deep"),
    (lambda x: np.convolve(x, x, "middle"), ValueError, "np.convolve: mode must be"),
    (lambda x: np.cross(x, x), ValueError, "np.cross: incompatible dimensions"),
    (lambda x: np.cross(x[:3], x[:3], axisa=2), np.exceptions.AxisError, "np.cross: axisa 2"),
    (lambda x: np.vander(x.reshape(2, 2)), ValueError, "np.vander: x must be a one-dim"),
    (lambda x: np.vander(x, -1), ValueError, "np.vander: N must be non-negative"),
])
def test_errors_name_the_function(call, err, match):
    x = np.arange(4.0)
    with pytest.raises(err, match=match):
        rune.grad(lambda x: np.sum(call(x)))(x)


def test_inputs_not_mutated():
    a, v = _vec(6, 0), _vec(3, 1)
    for x in (a, v):
        x.flags.writeable = False
    loss = lambda a, v: np.sum(np.convolve(a, v) ** 2) + np.sum(np.correlate(a, v, "same"))  # noqa
    rune.grad(loss, argnums=(0, 1))(a, v)
    rune.grad(lambda a: np.sum(np.kron(a, v)) + np.sum(np.vander(a, 3)))(a)


# --------------------------------------------------------------------------
# matmul of a vector and a matrix: its VJPs are outer products (one einsum)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("vec_first", [True, False], ids=["v@M", "M@v"])
def test_vector_matrix_products_have_checked_derivatives(vec_first):
    rng = np.random.default_rng(3)
    v, M = rng.standard_normal(4), rng.standard_normal((4, 4))[:, :3]
    v = v if vec_first else v[:3]
    f = (lambda v, M: np.tanh(v @ M)) if vec_first else (lambda v, M: np.tanh(M @ v))
    rune.check_grads(f, v, M, order=2)
    loss = lambda v, M: np.sum(f(v, M) ** 2)                        # noqa: E731
    # per-example gradients in the matrix (vmap of the outer product) against a loop
    vs = rng.standard_normal((5,) + v.shape)
    got = rune.vmap(rune.grad(loss, argnums=1), in_axes=(0, None))(vs, M)
    want = np.stack([rune.grad(loss, argnums=1)(vi, M) for vi in vs])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    g32 = rune.grad(loss, argnums=(0, 1))(v.astype(np.float32), M.astype(np.float32))
    assert [g.dtype for g in g32] == [np.float32, np.float32]
    assert [g.shape for g in g32] == [v.shape, M.shape]
