"""np.linalg under every transformation: finite differences, JVP against VJP and second
order (``check_grads``) in float64, float32 and complex; ``vmap`` against a loop with one
stacked NumPy call; Hessians several ways; the documented behaviour at degenerate points.

Decompositions are tested through gauge-invariant functions of their outputs only
(eigenvalues, ``|v|^2``, projectors, ``U @ Vh``, ``QR`` with the diagonal of ``R`` made
positive): the sign/phase of an eigen- or singular vector is not a function of the input.
Inputs are small and well conditioned, with fixed seeds.
"""

import warnings

import numpy as np
import pytest

import rune
from rune.primitives import linalg, decompositions
from helpers import check_vmap, check_all_axes, rand, square

F64, F32, C128 = np.float64, np.float32, np.complex128


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def hpd(x):
    """A Hermitian positive definite matrix built from any square ``x`` (differentiably)."""
    n = x.shape[-1]
    return x @ H(x) + n * np.eye(n, dtype=x.real.dtype)


def herm(x):
    """The Hermitian part of ``x``, shifted: distinct eigenvalues, positive definite."""
    n = x.shape[-1]
    return (x + H(x)) / 2 + 2 * n * np.eye(n, dtype=x.real.dtype)


def qr_fixed(a, mode="reduced"):
    """QR with the diagonal of R made positive: unique, so a differentiable function of a."""
    q, r = np.linalg.qr(a)
    k = r.shape[-2]
    d = np.sum(r[..., :k] * np.eye(k, dtype=r.real.dtype), axis=-1)
    d = d / np.abs(d)
    return q * np.expand_dims(d, -2), np.expand_dims(np.conj(d), -1) * r


def svd_parts(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return s, u @ vh, np.abs(u) ** 2, np.abs(vh) ** 2, (u * np.expand_dims(s ** 2, -2)) @ vh


def eigh_parts(x):
    w, v = np.linalg.eigh(herm(x))
    return w, np.abs(v) ** 2, (v * np.expand_dims(np.exp(w / 4), -2)) @ H(v)


# name -> (function, per-example argument shapes, makers)
CASES = {
    "inv": (np.linalg.inv, [((3, 3), square)]),
    "inv_stack": (np.linalg.inv, [((2, 3, 3), square)]),
    "solve_vector": (np.linalg.solve, [((3, 3), square), ((3,), rand)]),
    "solve_matrix": (np.linalg.solve, [((3, 3), square), ((3, 2), rand)]),
    "solve_broadcast_b": (np.linalg.solve, [((3, 3), square), ((2, 3, 2), rand)]),
    "solve_broadcast_a": (np.linalg.solve, [((2, 3, 3), square), ((3, 1), rand)]),
    "det": (np.linalg.det, [((3, 3), square)]),
    "det_stack": (np.linalg.det, [((2, 2, 2), square)]),
    "slogdet": (np.linalg.slogdet, [((3, 3), square)]),
    "slogdet_stack": (np.linalg.slogdet, [((2, 3, 3), square)]),
    "cholesky": (lambda x: np.linalg.cholesky(hpd(x)), [((3, 3), rand)]),
    "cholesky_upper": (lambda x: np.linalg.cholesky(hpd(x), upper=True), [((3, 3), rand)]),
    "cholesky_herm": (lambda x: np.linalg.cholesky(herm(x)), [((2, 3, 3), rand)]),
    "eigh": (eigh_parts, [((3, 3), rand)]),
    "eigh_stack": (eigh_parts, [((2, 3, 3), rand)]),
    "eigh_upper": (lambda x: np.linalg.eigh(herm(x), UPLO="U")[0], [((3, 3), rand)]),
    "eigvalsh": (lambda x: np.linalg.eigvalsh(herm(x)), [((4, 4), rand)]),
    "eig": (lambda a: (np.linalg.eigvals(a), np.abs(np.linalg.eig(a)[1]) ** 2),
            [((3, 3), rand)]),
    "svd_tall": (svd_parts, [((4, 3), rand)]),
    "svd_wide": (svd_parts, [((2, 4), rand)]),
    "svd_square_stack": (svd_parts, [((2, 3, 3), rand)]),
    "svdvals": (lambda a: np.linalg.svd(a, compute_uv=False), [((3, 4), rand)]),
    "svd_hermitian": (lambda x: (lambda u, s, vh: (s, u @ vh, np.abs(u) ** 2))(
        *np.linalg.svd((x + H(x)) / 2, hermitian=True)), [((3, 3), rand)]),
    "qr_tall": (qr_fixed, [((4, 3), rand)]),
    "qr_square_stack": (qr_fixed, [((2, 3, 3), rand)]),
    "qr_wide": (qr_fixed, [((2, 4), rand)]),
    "qr_projector": (lambda a: (lambda q: q @ H(q))(np.linalg.qr(a)[0]), [((4, 2), rand)]),
    "qr_mode_r": (lambda a: np.abs(np.linalg.qr(a, mode="r")), [((4, 3), rand)]),
    "pinv_tall": (np.linalg.pinv, [((4, 3), rand)]),
    "pinv_wide": (np.linalg.pinv, [((2, 3), rand)]),
    "pinv_stack": (np.linalg.pinv, [((2, 3, 3), square)]),
    "pinv_hermitian": (lambda x: np.linalg.pinv((x + H(x)) / 2, hermitian=True),
                       [((3, 3), rand)]),
    "lstsq_tall": (lambda a, b: np.linalg.lstsq(a, b)[:2], [((5, 3), rand), ((5,), rand)]),
    "lstsq_tall_2d": (lambda a, b: np.linalg.lstsq(a, b)[:2], [((4, 2), rand), ((4, 2), rand)]),
    "lstsq_wide": (lambda a, b: (np.linalg.lstsq(a, b)[0], np.linalg.lstsq(a, b)[3]),
                   [((2, 3), rand), ((2,), rand)]),
    "matrix_power_5": (lambda a: np.linalg.matrix_power(a, 5), [((3, 3), lambda s, d, k:
                                                               rand(s, d, k) * 0.5)]),
    "matrix_power_-2": (lambda a: np.linalg.matrix_power(a, -2), [((2, 3, 3), square)]),
    "matrix_power_0_1": (lambda a: (np.linalg.matrix_power(a, 0), np.linalg.matrix_power(a, 1)),
                         [((2, 2), rand)]),
    "multi_dot": (lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]),
                  [((3,), rand), ((3, 4), rand), ((4, 2), rand), ((2, 5), rand)]),
    "multi_dot_3": (lambda a, b, c: np.linalg.multi_dot([a, b, c]),
                    [((2, 3), rand), ((3, 4), rand), ((4,), rand)]),
}

NORMS = [
    (None, None, False), (None, 1, True), (1, 0, False), (2, -1, True), (np.inf, 1, False),
    (-np.inf, 0, False), (3, 1, False), (0.5, 0, True),
    ("fro", None, False), ("nuc", None, False), (2, None, False), (-2, None, True),
    (1, None, False), (-1, None, False), (np.inf, None, True), (-np.inf, None, False),
    ("fro", (2, 0), False), ("nuc", (0, 2), True), (2, (1, 2), False), (1, (2, 1), True),
    (np.inf, (0, 1), False),
]
for _ord, _axis, _kd in NORMS:
    _shape = (3, 4) if not isinstance(_axis, tuple) else (3, 2, 4)
    CASES[f"norm_{_ord}_{_axis}_{_kd}"] = (
        lambda x, o=_ord, a=_axis, k=_kd: np.linalg.norm(x, o, a, k), [(_shape, rand)])
CASES["vector_norm"] = (lambda x: np.linalg.vector_norm(x, axis=(0, 2), ord=3, keepdims=True),
                        [((2, 3, 2), rand)])
CASES["matrix_norm"] = (lambda x: np.linalg.matrix_norm(x, ord="nuc"), [((2, 3, 4), rand)])
CASES["cond"] = (np.linalg.cond, [((3, 3), square)])
CASES["cond_-2"] = (lambda a: np.linalg.cond(a, -2), [((2, 3, 3), square)])
CASES["cond_fro"] = (lambda a: np.linalg.cond(a, "fro"), [((3, 3), square)])
CASES["cond_inf"] = (lambda a: np.linalg.cond(a, np.inf), [((3, 3), square)])
CASES["tensorsolve"] = (lambda a, b: np.linalg.tensorsolve(np.reshape(a, (2, 3, 2, 3)), b,
                                                           axes=(0, 1)),
                        [((6, 6), square), ((2, 3), rand)])
CASES["norm_all"] = (lambda x: np.linalg.norm(x, keepdims=True), [((2, 3, 2), rand)])


def make_args(case, dtype=F64, seed=0):
    _, specs = CASES[case]
    return [mk(s, dtype, seed + k) for k, (s, mk) in enumerate(specs)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_check_grads_float64(case):
    f = CASES[case][0]
    rune.check_grads(f, *make_args(case), order=2)


@pytest.mark.parametrize("case", sorted(c for c in CASES if not c.startswith("norm_")
                                        or "nuc" in c or "_2_" in c))
def test_check_grads_complex(case):
    f = CASES[case][0]
    rune.check_grads(f, *make_args(case, C128, seed=10), order=2)


@pytest.mark.parametrize("case", ["inv", "solve_matrix", "det", "slogdet", "cholesky", "eigh",
                                  "svd_tall", "qr_tall", "pinv_tall", "norm_nuc_None_False",
                                  "lstsq_tall"])
def test_check_grads_float32(case):
    f = CASES[case][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rune.check_grads(f, *make_args(case, F32, seed=20), order=1, rtol=5e-2, atol=5e-3)


@pytest.mark.parametrize("case", ["inv", "eigh", "svd_tall", "qr_tall", "cholesky"])
def test_check_grads_complex64(case):
    f = CASES[case][0]
    rune.check_grads(f, *make_args(case, np.complex64, seed=30), order=1, rtol=5e-2,
                     atol=5e-3)


@pytest.mark.parametrize("case", ["inv", "solve_matrix", "slogdet", "cholesky", "eigh", "eig",
                                  "svd_tall", "svd_wide", "qr_wide", "pinv_tall", "lstsq_tall"])
def test_inputs_are_read_only_safe(case):
    f = CASES[case][0]
    args = make_args(case)
    for a in args:
        a.setflags(write=False)
    copies = [a.copy() for a in args]
    loss = lambda *a: sum(np.sum(np.real(o)) for o in rune.tree.leaves(f(*a)))
    rune.grad(loss, argnums=tuple(range(len(args))))(*args)
    rune.jvp(f, tuple(args), tuple(np.ones_like(a) for a in args))
    rune.hessian(loss)(*args)
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)


def test_values_match_numpy_under_transformations():
    a = square((3, 3))
    out, _ = rune.vjp(lambda a: np.linalg.svd(a), a)
    assert type(out).__name__ == "SVDResult"
    for want, got in zip(np.linalg.svd(a), out):
        np.testing.assert_allclose(got, want)
    out, t = rune.jvp(np.linalg.slogdet, (a,), (np.ones_like(a),))
    assert type(out).__name__ == "SlogdetResult"
    np.testing.assert_allclose(out.logabsdet, np.linalg.slogdet(a).logabsdet)
    assert rune.grad(lambda a: np.linalg.det(a))(a.astype(F32)).dtype == F32


# --------------------------------------------------------------------------
# vmap: against a loop, batch axis first/last/middle and vmap(vmap(.)); one stacked call
# --------------------------------------------------------------------------

VMAP_CASES = sorted(c for c in CASES if not c.startswith("lstsq") and (
    not c.startswith("norm_") or c in ("norm_nuc_None_False", "norm_2_(1, 2)_False",
                                        "norm_None_1_True", "norm_inf_None_True")))


@pytest.mark.parametrize("case", VMAP_CASES)
def test_vmap_against_loop(case):
    f = CASES[case][0]
    check_all_axes(f, *make_args(case), rtol=1e-9, atol=1e-11)


def test_vmap_solve_unbatched_operands():
    a, b = square((4, 3, 3)), rand((4, 3, 2), seed=1)
    check_vmap(np.linalg.solve, a, b[0], in_axes=(0, None))
    check_vmap(np.linalg.solve, a[0], b, in_axes=(None, 0))
    check_vmap(np.linalg.solve, a, rand((2, 3, 1), seed=2), in_axes=(0, None))
    check_vmap(np.linalg.solve, square((2, 3, 3)), rand((4, 3), seed=3), in_axes=(None, 0))


def test_vmap_lstsq_falls_back_per_example():
    a, b = rand((3, 5, 2)), rand((3, 5), seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        check_vmap(lambda a, b: np.linalg.lstsq(a, b)[:2], a, b)


@pytest.mark.parametrize("prim,f,shape", [
    (linalg.inv_p, np.linalg.inv, (3, 3)),
    (decompositions.det_p, np.linalg.det, (3, 3)),
    (decompositions.slogdet_p, np.linalg.slogdet, (3, 3)),
    (linalg.cholesky_p, lambda x: np.linalg.cholesky(hpd(x)), (3, 3)),
    (decompositions.eigh_p, lambda x: np.linalg.eigh(herm(x)), (3, 3)),
    (decompositions.eig_p, np.linalg.eigvals, (3, 3)),
    (decompositions.svd_p, lambda a: np.linalg.svd(a, full_matrices=False), (4, 3)),
    (decompositions.qr_p, np.linalg.qr, (4, 3)),
    (linalg.pinv_p, np.linalg.pinv, (4, 3)),
    (linalg.solve_p, lambda a: np.linalg.solve(a, np.ones(3)), (3, 3)),
])
def test_vmap_is_one_stacked_call(monkeypatch, prim, f, shape):
    calls = []
    impl = prim.impl

    def counting(*args, **params):
        calls.append(np.shape(args[0]))
        return impl(*args, **params)

    monkeypatch.setattr(prim, "impl", counting)
    x = square((5,) + shape) if shape[0] == shape[1] else rand((5,) + shape)
    rune.vmap(f, in_axes=2)(np.moveaxis(x, 0, 2))
    assert len(calls) == 1 and calls[0][0] == 5
    calls.clear()
    rune.vmap(rune.vmap(f))(np.stack([x, x]))
    assert len(calls) == 1 and calls[0][:2] == (2, 5)


def test_per_example_gradients():
    a = square((4, 3, 3))
    g = rune.vmap(rune.grad(lambda a: np.linalg.slogdet(a)[1]))(a)
    np.testing.assert_allclose(g, np.swapaxes(np.linalg.inv(a), -1, -2))
    g = rune.vmap(rune.grad(lambda x: np.sum(np.linalg.cholesky(hpd(x)))))(a)
    for k in range(4):
        np.testing.assert_allclose(
            g[k], rune.grad(lambda x: np.sum(np.linalg.cholesky(hpd(x))))(a[k]))


# --------------------------------------------------------------------------
# Second order: the same Hessian several ways, and closed forms
# --------------------------------------------------------------------------

def test_hessian_of_logdet_closed_form():
    a = square((3, 3))
    h = rune.hessian(lambda a: np.linalg.slogdet(a)[1])(a)
    ainv = np.linalg.inv(a)
    want = -np.einsum("li,jk->ijkl", ainv, ainv)
    np.testing.assert_allclose(h, want, atol=1e-12)


@pytest.mark.parametrize("f", [
    np.linalg.det,
    lambda a: np.sum(np.linalg.inv(a) ** 2),
    lambda x: np.sum(np.linalg.cholesky(hpd(x)) ** 3),
    lambda x: np.sum(np.linalg.eigvalsh(herm(x)) ** 3),
    lambda a: np.linalg.norm(a, "nuc"),
    lambda a: np.sum(qr_fixed(a)[1] ** 2),
    lambda a: np.sum(np.linalg.pinv(a[:, :2]) ** 2),
])
def test_hessian_several_ways(f):
    a = square((3, 3), seed=4)
    ways = [rune.hessian(f), rune.jacfwd(rune.jacfwd(f)), rune.jacrev(rune.jacrev(f)),
            rune.jacrev(rune.jacfwd(f))]
    hs = [w(a) for w in ways]
    for h in hs[1:]:
        np.testing.assert_allclose(h, hs[0], rtol=1e-8, atol=1e-10)
    # the gradient's own derivatives against finite differences
    rune.check_grads(rune.grad(f), a, order=1)
    np.testing.assert_allclose(hs[0], np.swapaxes(np.swapaxes(hs[0], 0, 2), 1, 3),
                               rtol=1e-8, atol=1e-10)


# --------------------------------------------------------------------------
# Degenerate points: what rune returns there (docs/linalg.md)
# --------------------------------------------------------------------------

def test_repeated_eigenvalues_give_finite_subspace_derivatives():
    a = np.diag([1.0, 1.0, 2.0])
    # eigenvalues' sum of squares = trace(A^2): gradient 2A, even at a repeated eigenvalue
    g = rune.grad(lambda a: np.sum(np.linalg.eigvalsh(a) ** 2))(a)
    np.testing.assert_allclose(g, 2 * a, atol=1e-12)
    # the projector onto the repeated eigenspace: finite, and right (its derivative along
    # a perturbation inside the eigenspace is 0)
    def proj(a):
        v = np.linalg.eigh(a)[1][:, :2]
        return v @ v.T
    _, t = rune.jvp(proj, (a,), (np.array([[0.0, 1, 0], [1, 0, 0], [0, 0, 0]]),))
    np.testing.assert_allclose(t, 0, atol=1e-12)
    _, t = rune.jvp(proj, (a,), (np.array([[0.0, 0, 1], [0, 0, 0], [1, 0, 0]]),))
    np.testing.assert_allclose(t, [[0, 0, -1], [0, 0, 0], [-1, 0, 0]], atol=1e-12)


def test_repeated_singular_values():
    # the nuclear norm at the identity: gradient U Vh = I
    g = rune.grad(lambda a: np.linalg.norm(a, "nuc"))(np.eye(3))
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)
    g = rune.grad(lambda a: np.sum(np.linalg.svd(a, compute_uv=False) ** 2))(2 * np.eye(3))
    np.testing.assert_allclose(g, 4 * np.eye(3), atol=1e-12)


def test_norm_of_zero_has_zero_gradient():
    for f in (np.linalg.norm, lambda x: np.linalg.norm(x, axis=0),
              lambda x: np.linalg.norm(x, "fro"), lambda x: np.linalg.norm(x, 3, axis=1)):
        g = rune.grad(lambda x: np.sum(f(x)))(np.zeros((2, 3)))
        np.testing.assert_array_equal(g, 0)


def test_cholesky_and_eigh_gradients_are_hermitian():
    x = rand((3, 3), C128, seed=5)
    a = hpd(x)
    for f in (lambda a: np.real(np.sum(np.linalg.cholesky(a) * rand((3, 3), C128, 6))),
              lambda a: np.sum(np.linalg.eigvalsh(a) ** 3)):
        g = rune.grad(f)(a)
        np.testing.assert_allclose(g, H(g), atol=1e-12)


def test_det_at_exactly_singular_matrices():
    # the gradient of det is the cofactor matrix, also where inv/solve raise
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(rune.grad(np.linalg.det)(s), [[4, -2], [-2, 1]], atol=1e-12)
    want = np.zeros((2, 2, 2, 2))
    want[0, 0, 1, 1] = want[1, 1, 0, 0] = 1
    want[0, 1, 1, 0] = want[1, 0, 0, 1] = -1
    np.testing.assert_allclose(rune.hessian(np.linalg.det)(s), want, atol=1e-12)
    s3 = np.array([[1.0, 2, 3], [2, 4, 6], [0, 1, 5]])
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(s3)
    rune.check_grads(np.linalg.det, s3, order=2)
    rune.check_grads(np.linalg.det, s3 * (1 + 1j), order=2)
    rune.check_grads(np.linalg.det, np.outer([1.0, 2j], [3.0, 1.0]), order=2)
    rune.check_grads(np.linalg.det, np.zeros((3, 3)), order=1)    # rank n-2: first order
    g = rune.vmap(rune.grad(np.linalg.det))(np.stack([s, np.eye(2)]))
    np.testing.assert_allclose(g, [[[4, -2], [-2, 1]], np.eye(2)], atol=1e-12)


def test_matrix_rank_under_transformations():
    a = rand((3, 2))
    low = a @ a.T
    stack = np.stack([square((3, 3)), low])
    np.testing.assert_array_equal(rune.vmap(np.linalg.matrix_rank)(stack), [3, 2])
    np.testing.assert_array_equal(rune.vmap(lambda m: np.linalg.matrix_rank(m, hermitian=True))(
        stack[1:]), [2])
    g = rune.grad(lambda m: np.linalg.matrix_rank(m) * np.sum(m))(low)
    np.testing.assert_array_equal(g, np.full((3, 3), 2.0))


def test_refused_modes():
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        rune.grad(lambda a: np.sum(np.linalg.svd(a)[0]))(rand((3, 2)))
    with pytest.raises(NotImplementedError, match="reduced"):
        rune.grad(lambda a: np.sum(np.linalg.qr(a, mode="complete")[0]))(rand((3, 2)))
    # square inputs: the full and reduced forms coincide
    rune.check_grads(lambda a: np.linalg.svd(a)[1], square((3, 3)), order=1)
