"""scipy.linalg, unchanged, under every transformation: values against SciPy's own, finite
differences, JVP against VJP and second order (``check_grads``) in float64 and complex,
``vmap`` against a loop, and the registration (SciPy's functions are SciPy's own outside
transformations; a name imported with ``from scipy.linalg import ...`` works too).

Functions reading one triangle (``cholesky``, ``eigh``, ``solve(assume_a='pos')``, ...) are
checked in every direction, the other triangle included: their derivative is the one of
SciPy's function of that triangle.  Decompositions are checked through gauge-invariant
functions of their outputs only (eigenvalues, ``|v|^2``, projectors, ``L`` with its unit
diagonal).  Inputs are small and well conditioned, with fixed seeds.
"""

import subprocess
import sys

import numpy as np
import pytest

import rune

scipy_linalg = pytest.importorskip("scipy.linalg")
from scipy.linalg import cho_factor, cho_solve  # noqa: E402  (the user's idiom, tested below)
from helpers import check_vmap, rand, square  # noqa: E402

sla = scipy_linalg
F64, C128 = np.float64, np.complex128


def spd(shape, dtype=F64, seed=0):
    x = rand(shape, dtype, seed)
    n = shape[-1]
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def small(shape, dtype=F64, seed=0):
    return 0.3 * rand(shape, dtype, seed)


def herm_sum(w, v):
    """A gauge-invariant function of eigenvectors: ``V diag(exp(w / 4)) V^H``."""
    return (v * np.expand_dims(np.exp(w / 4), -2)) @ np.conj(np.swapaxes(v, -1, -2))


# name -> (function calling scipy.linalg, per-example argument (shape, maker)s, dtypes)
CASES = {
    "cholesky_upper": (lambda a: sla.cholesky(a), [((3, 3), spd)]),
    "cholesky_lower": (lambda a: sla.cholesky(a, lower=True), [((3, 3), spd)]),
    "cholesky_stack": (lambda a: sla.cholesky(a), [((2, 3, 3), spd)]),
    "cho_factor": (lambda a: sla.cho_factor(a)[0], [((3, 3), spd)]),
    "cho_factor_lower": (lambda a: sla.cho_factor(a, lower=True)[0], [((3, 3), spd)]),
    "cho_solve": (lambda a, b: sla.cho_solve(sla.cho_factor(a), b),
                  [((3, 3), spd), ((3, 2), rand)]),
    "cho_solve_lower_vec": (lambda a, b: sla.cho_solve(sla.cho_factor(a, lower=True), b),
                            [((3, 3), spd), ((3,), rand)]),
    "solve_triangular": (lambda a, b: sla.solve_triangular(a, b),
                         [((3, 3), square), ((3, 2), rand)]),
    "solve_triangular_lower_T": (lambda a, b: sla.solve_triangular(a, b, trans="T", lower=True),
                                 [((3, 3), square), ((3,), rand)]),
    "solve_triangular_C_unit": (lambda a, b: sla.solve_triangular(a, b, trans=2,
                                                                  unit_diagonal=True),
                                [((3, 3), square), ((3, 2), rand)]),
    "lu_factor": (lambda a: sla.lu_factor(a)[0], [((4, 4), rand)]),
    "lu": (lambda a: sla.lu(a), [((4, 4), rand)]),
    "lu_permute_l": (lambda a: sla.lu(a, permute_l=True), [((4, 4), rand)]),
    "lu_p_indices": (lambda a: sla.lu(a, p_indices=True)[1:], [((4, 4), rand)]),
    "lu_tall": (lambda a: sla.lu(a), [((5, 3), rand)]),
    "lu_wide_permute_l": (lambda a: sla.lu(a, permute_l=True), [((3, 5), rand)]),
    "lu_factor_tall": (lambda a: sla.lu_factor(a)[0], [((5, 3), rand)]),
    "lu_factor_wide": (lambda a: sla.lu_factor(a)[0], [((3, 5), rand)]),
    "lu_solve": (lambda a, b: sla.lu_solve(sla.lu_factor(a), b), [((4, 4), rand), ((4, 2), rand)]),
    "lu_solve_T": (lambda a, b: sla.lu_solve(sla.lu_factor(a), b, trans=1),
                   [((4, 4), rand), ((4,), rand)]),
    "lu_solve_C": (lambda a, b: sla.lu_solve(sla.lu_factor(a), b, trans=2),
                   [((4, 4), rand), ((4, 2), rand)]),
    "solve": (lambda a, b: sla.solve(a, b), [((3, 3), square), ((3, 2), rand)]),
    "solve_vector": (lambda a, b: sla.solve(a, b), [((3, 3), square), ((3,), rand)]),
    "solve_broadcast": (lambda a, b: sla.solve(a, b), [((2, 3, 3), square), ((3, 1), rand)]),
    "solve_transposed": (lambda a, b: sla.solve(a, b, transposed=True),
                         [((3, 3), square), ((3, 2), rand)]),
    "solve_sym": (lambda a, b: sla.solve(a, b, assume_a="sym"), [((3, 3), square), ((3,), rand)]),
    "solve_sym_lower": (lambda a, b: sla.solve(a, b, assume_a="symmetric", lower=True),
                        [((3, 3), square), ((3,), rand)]),
    "solve_her": (lambda a, b: sla.solve(a, b, assume_a="her"), [((3, 3), square), ((3,), rand)]),
    "solve_pos": (lambda a, b: sla.solve(a, b, assume_a="pos"), [((3, 3), spd), ((3, 2), rand)]),
    "solve_diagonal": (lambda a, b: sla.solve(a, b, assume_a="diagonal"),
                       [((3, 3), square), ((3,), rand)]),
    "solve_tridiagonal": (lambda a, b: sla.solve(a, b, assume_a="tridiagonal"),
                          [((4, 4), square), ((4,), rand)]),
    "solve_upper": (lambda a, b: sla.solve(a, b, assume_a="upper triangular"),
                    [((3, 3), square), ((3,), rand)]),
    "solve_lower": (lambda a, b: sla.solve(a, b, assume_a="lower triangular"),
                    [((3, 3), square), ((3, 2), rand)]),
    "inv": (lambda a: sla.inv(a), [((3, 3), square)]),
    "inv_pos": (lambda a: sla.inv(a, assume_a="pos", lower=True), [((3, 3), spd)]),
    "inv_sym": (lambda a: sla.inv(a, assume_a="sym"), [((3, 3), square)]),
    "inv_upper": (lambda a: sla.inv(a, assume_a="upper triangular"), [((3, 3), square)]),
    "det": (lambda a: sla.det(a), [((3, 3), square)]),
    "det_stack": (lambda a: sla.det(a), [((2, 3, 3), rand)]),
    "eigh_values": (lambda a: sla.eigh(a, eigvals_only=True), [((3, 3), rand)]),
    "eigh_upper": (lambda a: herm_sum(*sla.eigh(a, lower=False)), [((3, 3), rand)]),
    "eigh_subset": (lambda a: np.abs(sla.eigh(a, subset_by_index=[1, 2])[1]) ** 2,
                    [((3, 3), rand)]),
    "eigh_generalized": (lambda a, b: herm_sum(*sla.eigh(a, b)), [((3, 3), rand), ((3, 3), spd)]),
    "eigh_type2": (lambda a, b: sla.eigh(a, b, type=2)[0], [((3, 3), rand), ((3, 3), spd)]),
    "eigh_type3": (lambda a, b: herm_sum(*sla.eigh(a, b, type=3)),
                   [((3, 3), rand), ((3, 3), spd)]),
    "svd_values": (lambda a: sla.svd(a, compute_uv=False), [((4, 3), rand)]),
    "svd_square": (lambda a: (lambda u, s, vh: u @ vh)(*sla.svd(a)), [((3, 3), square)]),
    "svd_economic": (lambda a: (lambda u, s, vh: (u * s**2) @ vh)(
        *sla.svd(a, full_matrices=False)), [((4, 3), rand)]),
    "qr_r": (lambda a: sla.qr(a, mode="r")[0] ** 2, [((4, 3), rand)]),
    "qr_economic": (lambda a: (lambda q, r: (q @ q.T, r.T @ r))(*sla.qr(a, mode="economic")),
                    [((4, 3), rand)]),
    "qr_full_wide": (lambda a: (lambda q, r: np.abs(q) + np.abs(r)[:, :1])(*sla.qr(a)),
                     [((3, 4), rand)]),
    "expm": (lambda a: sla.expm(a), [((3, 3), small)]),
    "expm_stack": (lambda a: sla.expm(a), [((2, 3, 3), small)]),
    "sqrtm": (lambda a: sla.sqrtm(a), [((3, 3), spd)]),
    "logm": (lambda a: sla.logm(a), [((3, 3), spd)]),
    "block_diag": (lambda a, b, c: sla.block_diag(a, b, c, 2.0),
                   [((2, 2), rand), ((1, 3), rand), ((2,), rand)]),
}
COMPLEX = ["cholesky_upper", "cho_solve", "solve_triangular_C_unit", "lu_solve_C", "solve_her",
           "solve_pos", "inv", "det", "eigh_values", "eigh_upper", "expm", "sqrtm",
           "block_diag"]


def make_args(name, dtype=F64):
    return [maker(shape, dtype, seed=k) for k, (shape, maker) in enumerate(CASES[name][1])]


def _values_match(f, args):
    want = f(*args)      # SciPy's own function: no transformation is active
    got = rune.jvp(f, tuple(args), tuple(np.zeros_like(a) for a in args))[0]
    rune.tree.map(lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12),
                  got, want)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients(name):
    f = CASES[name][0]
    args = make_args(name)
    _values_match(f, args)
    rune.check_grads(f, *args, order=2)


@pytest.mark.parametrize("name", COMPLEX)
def test_complex(name):
    f = CASES[name][0]
    args = make_args(name, C128)
    _values_match(f, args)
    rune.check_grads(f, *args, order=1)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_against_loop(name):
    f = CASES[name][0]
    rng = np.random.default_rng(3)
    args = [np.stack([a + 0.05 * rng.standard_normal(a.shape) for _ in range(3)])
            for a in make_args(name)]
    check_vmap(f, *args)
    if len(args) > 1:    # one operand batched, the others shared
        check_vmap(f, args[0], *[a[0] for a in args[1:]],
                   in_axes=(0,) + (None,) * (len(args) - 1))
        check_vmap(f, *[a[0] for a in args[:-1]], args[-1],
                   in_axes=(None,) * (len(args) - 1) + (0,))


@pytest.mark.parametrize("name", ["cho_solve", "lu_solve", "expm", "eigh_upper",
                                  "solve_triangular"])
def test_vmap_of_grad(name):
    f = CASES[name][0]
    args = [np.stack([a, a * 1.01]) for a in make_args(name)]

    def loss(*xs):
        return np.sum(f(*xs) ** 2)
    check_vmap(rune.grad(loss), *args)


def test_hessian_of_cholesky_log_det_matches_inverse_square():
    a = spd((3, 3))

    def logdet(a):
        return 2 * np.sum(np.log(np.diag(sla.cholesky(a, lower=True))))
    h = rune.hessian(logdet)(a)
    # d^2 log det(A)[E, F] = -tr(A^-1 E A^-1 F), on the lower triangle read (symmetrized)
    ai = np.linalg.inv(a)
    e = np.tril(rand((3, 3), seed=5))
    e = e + np.tril(e, -1).T
    f = np.tril(rand((3, 3), seed=6))
    f_full = f + np.tril(f, -1).T
    np.testing.assert_allclose(np.einsum("ij,ijkl,kl", np.tril(e), h, np.tril(f)),
                               -np.trace(ai @ e @ ai @ f_full), rtol=1e-8)


def test_inverse_of_diagonal_is_the_documented_one():
    a = np.diag([2.0, 4.0, 5.0])
    got = rune.jvp(lambda a: sla.inv(a, assume_a="diagonal"), (a,), (np.eye(3),))
    np.testing.assert_allclose(got[0], sla.inv(a, assume_a="diagonal"))
    np.testing.assert_allclose(got[1], -np.eye(3) / np.diag(a) ** 2)


# --------------------------------------------------------------------------
# Registration and errors
# --------------------------------------------------------------------------

def test_name_imported_from_scipy_linalg_works():
    """``from scipy.linalg import cho_factor, cho_solve`` at the top of a module."""
    a, b = spd((3, 3)), rand((3,))

    def f(a):
        return np.sum(cho_solve(cho_factor(a), b))
    rune.check_grads(f, a)


def test_scipy_is_scipy_outside_transformations():
    before = sla.cho_solve, sla.det
    rune.grad(lambda a: sla.det(a))(square((3, 3)))
    assert (sla.cho_solve, sla.det) == before
    assert cho_solve is sla._decomp_cholesky.cho_solve
    assert sla.det(np.eye(2)) == 1.0


def test_import_rune_does_not_import_scipy():
    code = "import sys, rune; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": ":".join(sys.path)}, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("call, match", [
    (lambda a: sla.svd(a[:, :2]), "scipy.linalg.svd"),
    (lambda a: sla.qr(a[:, :2]), "scipy.linalg.qr"),
    (lambda a: sla.qr(a, pivoting=True), "scipy.linalg.qr"),
    (lambda a: sla.eigh(a, subset_by_value=(0, 1)), "scipy.linalg.eigh"),
])
def test_unsupported_options_name_scipys_function(call, match):
    with pytest.raises(NotImplementedError, match=match):
        rune.grad(lambda a: np.sum(call(a)[0]))(square((3, 3)))


@pytest.mark.parametrize("call, match", [
    (lambda a: sla.cho_solve(a, a), "scipy.linalg.cho_solve"),
    (lambda a: sla.solve(a, a[:2]), "scipy.linalg.solve"),
    (lambda a: sla.solve(a, a, assume_a="triangular"), "scipy.linalg.solve"),
    (lambda a: sla.solve_triangular(a, a, trans=3), "scipy.linalg.solve_triangular"),
    (lambda a: sla.inv(a[:2]), "scipy.linalg.inv"),
    (lambda a: sla.cholesky(a * np.nan), "scipy.linalg.cholesky.*infs or NaNs"),
])
def test_bad_inputs_name_scipys_function(call, match):
    with pytest.raises(ValueError, match=match):
        rune.grad(lambda a: np.sum(call(a)))(square((3, 3)))


def test_gaussian_process_example_runs(capsys):
    import pathlib
    import runpy
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "gaussian_process_scipy.py"
    runpy.run_path(str(path), run_name="__main__")
    assert "finite differences" in capsys.readouterr().out


def test_docstring_examples_run():
    import doctest
    import scipy.signal  # noqa: F401  (so the first transformation imports both surfaces)
    import rune.scipy.linalg
    import rune.scipy.signal
    for module in (rune.scipy.linalg, rune.scipy.signal):
        result = doctest.testmod(module)
        assert result.attempted and not result.failed, module.__name__
