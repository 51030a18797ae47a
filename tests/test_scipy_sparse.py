"""scipy.sparse and scipy.sparse.linalg under every transformation: a constant sparse
matrix (every format, matrix and array classes) times a traced operand on either side,
sparse matrices with traced values, and the solvers with a traced right-hand side;
against SciPy's values, finite differences (with JVP = VJP and second order), the
transpose identity, vmap against a loop; and the refusals."""

import numpy as np
import pytest

import rune

sp = pytest.importorskip("scipy.sparse")
spl = pytest.importorskip("scipy.sparse.linalg")
from helpers import check_vmap  # noqa: E402

RNG = np.random.default_rng(0)
N = 6
A = (sp.random(N, N, density=0.4, random_state=1, format="csr") + 4 * sp.eye(N)).tocsr()
S = (A + A.T).tocsr()                      # symmetric positive definite
B = RNG.standard_normal(N)
M2 = RNG.standard_normal((N, 3))
FORMATS = ["csr", "csc", "coo", "bsr", "dia", "lil", "dok"]


def same_values(f, *args):
    got = rune.jvp(f, args, tuple(np.zeros_like(a) for a in args))[0]
    np.testing.assert_allclose(got, f(*args), rtol=1e-11, atol=1e-12)


def test_the_issue_example():
    g = rune.grad(lambda x: np.sum((A @ x) ** 2))(np.ones(N))
    np.testing.assert_allclose(g, 2 * A.T @ (A @ np.ones(N)), rtol=1e-13)


@pytest.mark.parametrize("cls", ["matrix", "array"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_products_every_format(fmt, cls):
    a = (sp.csr_matrix(A) if cls == "matrix" else sp.csr_array(A)).asformat(fmt)
    dense = A.toarray()
    cases = [(lambda x: a @ x, B, dense @ B), (lambda x: a @ x, M2, dense @ M2),
             (lambda x: x @ a, B, B @ dense), (lambda x: x @ a, M2.T.copy(), M2.T @ dense),
             (lambda x: a.dot(x), M2, dense @ M2), (lambda x: a.T @ x, B, dense.T @ B),
             (lambda x: a @ x, B.reshape(-1, 1), dense @ B.reshape(-1, 1))]
    if cls == "matrix":                     # spmatrix: * is the matrix product
        cases += [(lambda x: a * x, B, dense @ B), (lambda x: x * a, B, B @ dense)]
    for f, x, want in cases:
        got = rune.jvp(f, (x,), (np.zeros_like(x),))[0]
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
        rune.check_grads(f, x, order=2)
        np.testing.assert_allclose(rune.jacrev(f)(x), rune.jacfwd(f)(x), rtol=1e-13)


def test_traced_values_give_way_as_ndarrays_do():
    """A traced value's operators return NotImplemented where an ndarray's would: for a
    type with ``__array_ufunc__ = None`` or a legacy ``__array_priority__`` (sparse)."""
    class Opaque:
        __array_ufunc__ = None

        def __rmul__(self, other):
            return other * 3.0

        def __rmatmul__(self, other):
            return np.sum(other) * 2.0
    g = rune.grad(lambda x: np.sum(x * Opaque()) + x @ Opaque())(np.ones(3))
    np.testing.assert_allclose(g, [5.0, 5.0, 5.0])
    assert (np.ones(3) * Opaque() == 3.0).all()             # as NumPy itself


def test_transposes_are_exact_and_the_matrix_is_kept():
    a = A.copy()
    f = lambda x: a @ x
    _, pull = rune.vjp(f, B)
    a.data[:] = 0.0                 # a later write into the user's matrix changes nothing
    np.testing.assert_allclose(pull(M2[:, 0])[0], A.T @ M2[:, 0], rtol=1e-14)
    np.testing.assert_allclose(rune.jacrev(lambda x: A @ x)(B), A.toarray(), rtol=1e-14)


@pytest.mark.parametrize("cls", [sp.csr_matrix, sp.csc_array, sp.coo_array])
def test_traced_scalars_and_elementwise_operands(cls):
    a = cls(A)
    dense = A.toarray()
    cases = [(lambda s: (a * s) @ B, dense @ B), (lambda s: (s * a) @ B, dense @ B),
             (lambda s: (a / s) @ B, -dense @ B / 4.0),
             (lambda s: a.multiply(s * B).toarray(), dense * B)]
    for f, slope in cases:
        np.testing.assert_allclose(rune.jvp(f, (2.0,), (1.0,))[1], slope, rtol=1e-12)
        rune.check_grads(f, 2.0, order=2)
    f = lambda x: (a / x).toarray() if cls is not sp.csr_matrix else a.multiply(x).toarray()
    rune.check_grads(f, 1.0 + RNG.uniform(size=N), order=1)


def test_vmap_against_loop():
    xs = RNG.standard_normal((4, N))
    check_vmap(lambda x: A @ x, xs)
    check_vmap(lambda x: x @ A, xs)
    check_vmap(lambda x: A @ x, np.moveaxis(RNG.standard_normal((4, N, 2)), 0, 2), in_axes=2)
    check_vmap(lambda x: sp.csc_array(A) @ x + np.sin(x), xs)


# --------------------------------------------------------------------------
# Matrices with traced values
# --------------------------------------------------------------------------

ROWS, COLS = A.nonzero()
DATA = np.asarray(A[ROWS, COLS]).ravel()


@pytest.mark.parametrize("build", ["csr3", "csc3", "coo", "csr_ij", "csc_ij", "coo_array",
                                   "duplicates"])
def test_traced_values(build):
    if build == "duplicates":           # repeated entries are summed, as SciPy does
        r, c = np.r_[ROWS, ROWS[:3]], np.r_[COLS, COLS[:3]]
        d = np.r_[DATA, [1.0, -2.0, 0.5]]
    else:
        r, c, d = ROWS, COLS, DATA
    csc = A.tocsc()
    make = {"csr3": lambda d: sp.csr_matrix((d, A.indices, A.indptr), shape=(N, N)),
            "csc3": lambda d: sp.csc_array((d, csc.indices, csc.indptr), shape=(N, N)),
            "coo": lambda d: sp.coo_matrix((d, (r, c)), shape=(N, N)),
            "coo_array": lambda d: sp.coo_array((d, (r, c)), shape=(N, N)),
            "csr_ij": lambda d: sp.csr_array((d, (r, c)), shape=(N, N)),
            "csc_ij": lambda d: sp.csc_matrix((d, (r, c)), shape=(N, N)),
            "duplicates": lambda d: sp.csr_matrix((d, (r, c)), shape=(N, N))}[build]
    d = A.tocsc().data.copy() if build == "csc3" else (A.data.copy() if build == "csr3"
                                                        else d)
    for f in (lambda d, x: make(d) @ x, lambda d, x: x @ make(d),
              lambda d, x: make(d).T @ x, lambda d, x: (2.0 * make(d)) @ x,
              lambda d, x: make(d).toarray() * x, lambda d, x: make(d).tocsr() @ x,
              lambda d, x: make(d).tocsc().T.toarray() @ x,
              lambda d, x: make(d).tocoo() @ x, lambda d, x: abs(-make(d)).power(2) @ x):
        same_values(f, d, B)
        rune.check_grads(f, d, B, order=2)
    check_vmap(lambda d, x: make(d) @ x, np.stack([d, 2 * d, -d]), RNG.standard_normal((3, N)))


def test_traced_values_refusals():
    with pytest.raises(NotImplementedError, match="dense"):
        rune.grad(lambda m: np.sum(sp.csr_matrix(m) @ B))(A.toarray())
    with pytest.raises(NotImplementedError, match="dense"):
        rune.grad(lambda m: np.sum(sp.coo_array(m) @ B))(A.toarray())
    with pytest.raises(NotImplementedError, match="two sparse"):
        rune.grad(lambda d: np.sum((sp.csr_matrix((d, A.indices, A.indptr)) @ A).toarray()))(
            A.data.copy())
    with pytest.raises(NotImplementedError, match="spsolve.*matrix"):
        rune.grad(lambda d: np.sum(spl.spsolve(sp.csc_matrix((d, A.indices, A.indptr)).T,
                                               B)))(A.data.copy())
    with pytest.raises(rune.TracerConversionError):        # SciPy's C code on the values
        rune.grad(lambda d: np.sum((sp.csr_matrix((d, A.indices, A.indptr)) + A) @ B))(
            A.data.copy())


# --------------------------------------------------------------------------
# Solvers
# --------------------------------------------------------------------------

DIRECT = {
    "spsolve": lambda b: spl.spsolve(A.tocsc(), b),
    "spsolve_triangular": lambda b: spl.spsolve_triangular(sp.tril(A, format="csr"), b),
    "splu": lambda b: spl.splu(A.tocsc()).solve(b),
    "splu_T": lambda b: spl.splu(A.tocsc()).solve(b, "T"),
    "splu_H": lambda b: spl.splu(A.tocsc()).solve(b, "H"),
    "spilu": lambda b: spl.spilu(A.tocsc(), drop_tol=1e-2).solve(b),
    "factorized": lambda b: spl.factorized(A.tocsc())(b),
    "expm_multiply": lambda b: spl.expm_multiply(0.3 * A, b),
    "expm_multiply_grid": lambda b: spl.expm_multiply(0.3 * A, b, start=0.0, stop=1.0,
                                                      num=4),
}


@pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")
@pytest.mark.parametrize("name", sorted(DIRECT))
def test_direct_solvers(name):
    f = DIRECT[name]
    for b in (B, M2):
        if name == "factorized" and b.ndim == 2:
            continue        # (SciPy's factorized solve takes one right-hand side)
        same_values(f, b)
        rune.check_grads(f, b, order=2)
    rune.check_grads(lambda b: f(b) * np.sin(b), B)
    check_vmap(f, RNG.standard_normal((3, N)))
    if name != "spilu":
        np.testing.assert_allclose(rune.jacrev(f)(B), rune.jacfwd(f)(B), rtol=1e-10,
                                   atol=1e-12)


ITERATIVE = ["cg", "minres", "gmres", "bicgstab", "bicg", "cgs", "lgmres", "gcrotmk",
             "tfqmr", "qmr"]


@pytest.mark.parametrize("name", ITERATIVE)
def test_iterative_solvers(name):
    A_ = S if name in ("cg", "minres") else A
    solver = getattr(spl, name)
    kw = {"rtol": 1e-12} if name == "minres" else {"rtol": 1e-12, "atol": 0.0}
    f = lambda b: solver(A_, b, **kw)[0]
    x, info = rune.jvp(lambda b: solver(A_, b, **kw), (B,), (B,))[0]
    assert info == 0
    np.testing.assert_allclose(x, np.linalg.solve(A_.toarray(), B), rtol=1e-8)
    # the derivatives are solves at the same tolerance: finite differences of the
    # converged solve agree to about that tolerance
    rune.check_grads(f, B, order=2, rtol=1e-6, atol=1e-8)
    exact = np.linalg.inv(A_.toarray())
    np.testing.assert_allclose(rune.jacrev(f)(B), exact, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(rune.jacfwd(f)(B), exact, rtol=1e-7, atol=1e-9)
    check_vmap(f, RNG.standard_normal((3, N)), rtol=1e-7, atol=1e-9)


def test_a_derivative_solve_that_does_not_converge_raises():
    f = lambda b: spl.cg(S, b, rtol=1e-14, atol=0.0, maxiter=1)
    x, info = rune.vmap(f, in_axes=None, axis_size=1)(B)
    assert f(B)[1] > 0 and info == f(B)[1]    # the primal's own info, as SciPy reports it
    with pytest.raises(RuntimeError, match="cg: the tangent solve .* did not converge"):
        rune.jvp(lambda b: f(b)[0], (B,), (B,))
    with pytest.raises(RuntimeError, match="cg: the adjoint"):
        rune.grad(lambda b: np.sum(f(b)[0]))(B)
    xs, infos = rune.vmap(f)(RNG.standard_normal((3, N)))
    assert xs.shape == (3, N) and np.all(np.asarray(infos) > 0)


def test_iterative_preconditioner_x0_callback_and_linear_operator():
    M = sp.diags(1.0 / A.diagonal())
    calls = []
    f = lambda b: spl.gmres(A, b, x0=np.ones(N), M=M, rtol=1e-12, atol=0.0,
                            callback=lambda r: calls.append(r), callback_type="pr_norm")[0]
    g = rune.grad(lambda b: np.sum(f(b) ** 2))(B)
    x = np.linalg.solve(A.toarray(), B)
    np.testing.assert_allclose(g, np.linalg.solve(A.toarray().T, 2 * x), rtol=1e-7)
    assert calls                                 # the primal solve called back
    op = spl.LinearOperator((N, N), matvec=lambda v: A @ v, dtype=float)
    fwd = rune.jvp(lambda b: spl.bicgstab(op, b, rtol=1e-12, atol=0.0)[0], (B,), (B,))[1]
    np.testing.assert_allclose(fwd, x, rtol=1e-8)
    with pytest.raises(NotImplementedError, match="rmatvec"):
        rune.grad(lambda b: np.sum(spl.bicgstab(op, b, rtol=1e-12)[0]))(B)
    sym = spl.LinearOperator((N, N), matvec=lambda v: S @ v, dtype=float)
    np.testing.assert_allclose(rune.grad(lambda b: np.sum(spl.cg(sym, b, rtol=1e-12)[0]))(B),
                               np.linalg.solve(S.toarray(), np.ones(N)), rtol=1e-8)


def test_untraced_calls_are_scipys():
    seen = []

    def f(b):
        lu = spl.splu(A.tocsc())        # inside a transformation: forwards to SuperLU
        seen.append(lu.perm_r.shape)
        plain = spl.spsolve(A.tocsc(), B)
        seen.append(type(plain))
        return lu.solve(b) + plain
    rune.grad(lambda b: np.sum(f(b)))(B)
    assert seen == [(N,), np.ndarray]
    assert type(spl.splu(A.tocsc())).__name__ == "SuperLU"     # outside: SciPy's own
    assert type(A @ B) is np.ndarray


def test_the_docs_page_code_runs():
    import pathlib
    import re
    page = pathlib.Path(__file__).resolve().parents[1] / "docs" / \
        "solvers-interpolate-sparse-ndimage.md"
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)
    assert len(blocks) == 3
    for k, code in enumerate(blocks):
        exec(compile(code, f"{page.name}[block {k}]", "exec"), {})


def test_docstring_examples_run():
    import doctest
    import rune.primitives.linear_op
    import rune.scipy.sparse
    import rune.scipy.sparse_linalg
    for module in (rune.scipy.sparse, rune.scipy.sparse_linalg, rune.primitives.linear_op):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__
