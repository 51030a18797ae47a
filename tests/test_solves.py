"""``np.linalg.solve`` under a transformation factors its matrix once (issue 14): LU factors
made in the forward pass and reused by every tangent and cotangent solve, and an exactly
triangular matrix solved as one with no factorization, its derivative still the general
solve's.  Values against NumPy's (tolerances from the condition number), derivatives with
``check_grads`` to second order, vmap against a loop, the tape's residuals, the fallback
without SciPy and NumPy's errors.
"""

import subprocess
import sys

import numpy as np
import pytest

import rune
from rune.numpy import linalg as np_linalg
from rune.primitives import linalg, solves
from rune.residuals import Dropped
from rune.tape import ReverseTrace
from helpers import check_vmap, rand, square

F64, F32, C128 = np.float64, np.float32, np.complex128


def _matrix(kind, n=4, dtype=F64, seed=0):
    a = square((n, n), dtype, seed)
    if kind == "lower":
        return np.tril(a)
    if kind == "upper":
        return np.triu(a)
    return a


def _tol(a):
    """rtol of a computed solve: a few units of roundoff times the condition number."""
    return 50 * np.finfo(a.dtype).eps * np.linalg.cond(a)


class _Count:
    """Counts the calls of the primitives' implementations (and of NumPy's own solve)."""

    def __init__(self, monkeypatch):
        self.n = {}
        for p in (solves.tri_solve_p, solves.lu_solve_p, solves.lu_solve_nested_p,
                  linalg.solve_p):
            monkeypatch.setattr(p, "impl", self._wrap(p.name, p.impl))
        monkeypatch.setattr(solves.lu_factor_p, "impl",
                            self._wrap("getrf", solves.lu_factor_p.impl))

    def _wrap(self, name, f):
        def counted(*args, **kwargs):
            self.n[name] = self.n.get(name, 0) + 1
            return f(*args, **kwargs)
        return counted


KINDS = ["general", "lower", "upper"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [F64, F32, C128])
@pytest.mark.parametrize("bshape", [(4,), (4, 3), (2, 4, 1)])
def test_values_match_numpy(kind, dtype, bshape):
    a = _matrix(kind, dtype=dtype)
    b = rand(bshape, dtype, seed=1)
    a0, b0 = a.copy(), b.copy()
    got, _ = rune.vjp(np.linalg.solve, a, b)
    want = np.linalg.solve(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=_tol(a), atol=0)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)


def test_mixed_dtypes_take_numpys_result_type():
    a = _matrix("general")
    for ai, bi in [(a.astype(F32), np.ones(4)), (np.round(a * 4).astype(np.int64), np.ones(4)),
                   (a, np.arange(4)), (a, np.ones(4, C128) * 1j)]:
        got = rune.vjp(lambda b: np.linalg.solve(ai, b), bi)[0] if bi.dtype.kind != "i" \
            else rune.vjp(lambda a: np.linalg.solve(a, bi), ai)[0]
        want = np.linalg.solve(ai, bi)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if F32 in (ai.dtype, bi.dtype)
                                   else 1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [F64, C128])
def test_second_order(kind, dtype):
    a = _matrix(kind, dtype=dtype)
    b = rand((4, 2), dtype, seed=2)
    rune.check_grads(lambda a, b: np.sum(np.linalg.solve(a, b) ** 2), a, b, order=2)
    rune.check_grads(lambda a, b: np.sin(np.linalg.solve(a, b[:, 0])), a, b, order=2)
    # the transposed solve (trans=1) as the forward one too
    rune.check_grads(lambda a, b: np.linalg.solve(a.T, np.linalg.solve(a, b)), a, b, order=2)


@pytest.mark.parametrize("kind", KINDS)
def test_float32(kind):
    a = _matrix(kind, dtype=F32)
    b = rand((4, 2), F32, seed=3)
    g = rune.grad(lambda a, b: np.sum(np.linalg.solve(a, b) ** 2), argnums=(0, 1))(a, b)
    assert g[0].dtype == F32 and g[1].dtype == F32
    rune.check_grads(lambda a, b: np.sum(np.linalg.solve(a, b) ** 2), a, b, order=1)


def test_a_triangular_matrix_has_the_general_derivative_in_every_entry():
    """``A`` triangular here says nothing of its perturbations: the gradient in the zero
    triangle is ``-A^{-T} ct x^T`` there too, not dropped as solve_triangular's would be."""
    for kind in ("lower", "upper"):
        a = _matrix(kind)
        b = rand(4, seed=4)
        g = rune.grad(lambda a: np.sum(np.linalg.solve(a, b)))(a)
        x = np.linalg.solve(a, b)
        want = -np.outer(np.linalg.solve(a.T, np.ones(4)), x)
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)
        zero = (np.triu if kind == "lower" else np.tril)(np.ones((4, 4), bool), 1 if kind ==
                                                          "lower" else -1)
        assert np.all(np.abs(g[zero]) > 1e-6)
        t = np.zeros((4, 4))
        t[zero] = 1.0
        rune.check_grads(lambda s: np.linalg.solve(a + s * t, b), 0.0, order=2)


@pytest.mark.parametrize("kind", KINDS)
def test_one_factorization_per_solve(kind, monkeypatch):
    count = _Count(monkeypatch)
    a = _matrix(kind, n=6)
    b = rand((6, 2), seed=5)
    f = lambda a, b: np.sum(np.linalg.solve(a, b) ** 2)     # noqa: E731
    g = rune.grad(f, argnums=(0, 1))(a, b)
    jv = rune.jvp(f, (a, b), (np.ones_like(a), np.ones_like(b)))[1]
    assert count.n.get("solve", 0) == 0          # np.linalg.solve refactorizes: never run
    if kind == "general":
        assert count.n == {"getrf": 2, "lu_solve": 5}    # forward, two cotangents; jvp
    else:
        assert count.n == {"tri_solve": 5}
    x = np.linalg.solve(a, b)
    gb = np.linalg.solve(a.T, 2 * x)
    np.testing.assert_allclose(g[1], gb, rtol=1e-12)
    np.testing.assert_allclose(g[0], -gb @ x.T, rtol=1e-12)
    dx = np.linalg.solve(a, np.ones_like(b) - np.ones_like(a) @ x)
    np.testing.assert_allclose(jv, np.sum(2 * x * dx), rtol=1e-12)


def test_structure_is_checked_exactly():
    a = _matrix("lower", n=6)
    assert np_linalg._triangle(a) is True and np_linalg._triangle(a.T) is False
    assert np_linalg._triangle(_matrix("general", n=6)) is None
    a[1, 4] = 1e-300            # one tiny nonzero: not triangular, so LU
    assert np_linalg._triangle(a) is None
    a[1, 4] = -0.0
    assert np_linalg._triangle(a) is True
    a[1, 4] = np.nan
    assert np_linalg._triangle(a) is None
    d = np.diag(np.arange(1.0, 4.0))
    assert np_linalg._triangle(d) is True


def test_structure_of_big_matrices_in_blocks(monkeypatch):
    monkeypatch.setattr(np_linalg, "_MASK_MAX", 8)
    a = _matrix("lower", n=23)
    assert np_linalg._triangle(a) is True and np_linalg._triangle(a.T) is False
    for i, j in [(0, 22), (3, 4), (9, 21), (20, 22), (7, 8)]:
        b = a.copy()
        b[i, j] = 1.0
        assert np_linalg._triangle(b) is None and np_linalg._triangle(b.T) is None
    rune.check_grads(lambda a: np.linalg.solve(a, np.ones(23)), a, order=1)


@pytest.mark.parametrize("kind", KINDS)
def test_tape_keeps_the_factors_in_place_of_a(kind, monkeypatch):
    seen = []
    original = ReverseTrace.process

    def spy(self, prim, args, params):
        out = original(self, prim, args, params)
        if prim.name in ("lu_solve", "lu_solve_nested", "tri_solve"):
            seen.append((prim.name, self.tape[-1]))
        return out

    monkeypatch.setattr(ReverseTrace, "process", spy)
    a = _matrix(kind)
    b = rand(4, seed=6)
    rune.grad(lambda a, b: np.sum(np.linalg.solve(a, b) ** 2), argnums=(0, 1))(a, b)
    ((name, node),) = seen
    if kind == "general":
        assert name == "lu_solve"
        kept = node.args
        assert isinstance(kept[0], Dropped) and isinstance(kept[3], Dropped)
        assert kept[1].shape == (4, 4) and kept[2].shape == (4,)
        assert not isinstance(node.out, Dropped)
    else:
        assert name == "tri_solve"     # A is its own factorization: kept
        assert not isinstance(node.args[0], Dropped) and isinstance(node.args[1], Dropped)
    # only b traced: not even the solution is kept
    seen.clear()
    rune.grad(lambda b: np.sum(np.linalg.solve(a, b) ** 2))(b)
    ((name, node),) = seen
    assert isinstance(node.out, Dropped)


def test_nested_differentiation_keeps_a():
    """Under grad(grad), the inner tape keeps ``a``: the outer one differentiates the
    inner rules in it (a dropped ``a`` would lose that term silently)."""
    a = _matrix("general")
    b = rand(4, seed=7)
    seen = []
    original = ReverseTrace.process

    def spy(self, prim, args, params):
        if prim.name.startswith("lu_solve"):
            seen.append(prim.name)
        return original(self, prim, args, params)

    ReverseTrace.process = spy
    try:
        h = rune.hessian(lambda a: np.sum(np.linalg.solve(a, b) ** 3))(a)
    finally:
        ReverseTrace.process = original
    assert "lu_solve_nested" in seen
    g = rune.grad(lambda a: np.sum(np.linalg.solve(a, b) ** 3))
    rune.check_grads(g, a, order=1)         # the Hessian's entries, against differences
    np.testing.assert_allclose(h, rune.jacfwd(g)(a), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_vmap_against_a_loop(kind):
    a = _matrix(kind)
    A = np.stack([_matrix(kind, seed=s) for s in range(3)])
    B = rand((3, 4, 2), seed=8)
    f = lambda a, b: np.sum(np.linalg.solve(a, b) ** 2)       # noqa: E731
    check_vmap(np.linalg.solve, a, B, in_axes=(None, 0))
    check_vmap(np.linalg.solve, A, B)
    check_vmap(rune.grad(f, argnums=(0, 1)), a, B, in_axes=(None, 0))
    check_vmap(rune.grad(f, argnums=(0, 1)), A, B)
    check_vmap(rune.grad(f, argnums=(0, 1)), A, B[0], in_axes=(0, None))
    check_vmap(lambda b: rune.jvp(lambda a: np.linalg.solve(a, b), (a,), (np.ones((4, 4)),))[1],
               np.moveaxis(B, 0, 2), in_axes=2)
    jr, jf = rune.jacrev(np.linalg.solve)(a, B[0]), rune.jacfwd(np.linalg.solve)(a, B[0])
    np.testing.assert_allclose(jr, jf, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", ["general", "lower"])
def test_rules_under_vmap_with_a_batched(kind):
    """The batching rules' stack branch (a batched matrix, which the surface itself hands
    to ``np.linalg.solve``'s primitive) against a loop."""
    A = np.stack([_matrix(kind, seed=s) for s in range(3)])
    B = rand((3, 4, 2), seed=9)
    if kind == "general":
        def f(a, b):
            lu, piv = solves.lu_factor(np.eye(4))    # any factors: a batched a ignores them
            return solves.lu_solve(a, lu, piv, b, 1)
        op = np.swapaxes(A, 1, 2)
    else:
        def f(a, b):
            return solves.tri_solve_p(a, b, lower=True, trans=0)
        op = A
    np.testing.assert_allclose(rune.vmap(f)(A, B), np.linalg.solve(op, B), rtol=1e-12)
    np.testing.assert_allclose(rune.vmap(f, in_axes=(0, None))(A, B[0]),
                               np.linalg.solve(op, B[0]), rtol=1e-12)


def test_errors_are_numpys():
    for a in (np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([[1.0, 0.0], [3.0, 0.0]]),
              np.array([[0.0, 1.0], [0.0, 1.0]])):
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            np.linalg.solve(a, np.ones(2))
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            rune.grad(lambda a: np.sum(np.linalg.solve(a, np.ones(2))))(a)
    with pytest.raises(np.linalg.LinAlgError):
        rune.grad(lambda a: np.sum(np.linalg.solve(a, np.ones(2))))(np.ones((2, 3)))
    with pytest.raises(ValueError):
        rune.grad(lambda b: np.sum(np.linalg.solve(np.eye(3), b)))(np.ones(2))
    a = _matrix("general")
    out = rune.grad(lambda a: np.sum(np.linalg.solve(a, np.full(4, np.nan))))(a)
    assert np.all(np.isnan(out))


def test_without_scipy_numpys_solve(monkeypatch):
    monkeypatch.setattr(solves, "_LAPACK", [None])
    count = _Count(monkeypatch)
    a = _matrix("general")
    b = rand((4, 2), seed=10)
    rune.check_grads(lambda a, b: np.sum(np.linalg.solve(a, b) ** 2), a, b, order=2)
    assert set(count.n) == {"solve"}


def test_empty_and_one_by_one():
    g = rune.grad(lambda a: np.sum(np.linalg.solve(a, np.full((1, 2), 3.0))))(np.array([[2.0]]))
    np.testing.assert_allclose(g, [[-1.5]])     # d/da (2 * 3 / a) at a = 2
    out, _ = rune.vjp(lambda b: np.linalg.solve(np.eye(3), b), np.ones((3, 0)))
    assert out.shape == (3, 0)


def test_gp_program_gradient():
    """The Gaussian-process likelihood of the benchmarks (both solves triangular):
    second order against finite differences."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (12, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(12)

    def nlml(p):
        ell, sf, sn = np.exp(p)
        d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
        K = sf ** 2 * np.exp(-0.5 * d2 / ell ** 2) + (sn ** 2 + 1e-6) * np.eye(12)
        L = np.linalg.cholesky(K)
        alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
        return 0.5 * y @ alpha + np.sum(np.log(np.diag(L)))

    rune.check_grads(nlml, np.log(np.array([1.0, 1.0, 0.3])), order=2)


def test_import_rune_does_not_import_scipy():
    code = "import sys, rune; assert 'scipy' not in sys.modules, 'scipy imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
