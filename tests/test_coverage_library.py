"""Acceptance sweep of SPEC section 3 (NumPy coverage), linear algebra, library code (NumPy's
Python implementations, SciPy), out= and complex inputs: every listed operation
through ``helpers.check_op`` (jvp against central differences, vjp/grad against the jvp,
vmap against a Python loop, float32, and second order through nesting)."""

import warnings

import numpy as np
import numpy.polynomial as npoly
import pytest

import rune
from helpers import check_op


R = np.random.default_rng(42)
N34 = R.normal(size=(3, 4))
M44 = R.normal(size=(4, 4)) + 4 * np.eye(4)     # well conditioned
v3 = R.normal(size=3)


# linear algebra

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


# library code (NumPy's Python implementations, SciPy)

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


# complex inputs (JAX's convention: grad of a real h is dh/dx - i dh/dy)

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
    want = np.asarray(f(z))    # to rounding (solve: a LAPACK solve other than NumPy's)
    np.testing.assert_allclose(out, want, atol=1e-14 * np.max(np.abs(want), initial=1))
    np.testing.assert_allclose(t, (np.asarray(f(z + eps * v)) - np.asarray(f(z - eps * v)))
                               / (2 * eps), rtol=1e-5, atol=1e-6)
    batch = np.stack([z, z * 1.1])
    np.testing.assert_allclose(rune.vmap(f)(batch), np.stack([f(z), f(z * 1.1)]))
    np.testing.assert_allclose(rune.vmap(rune.grad(h))(batch),
                               np.stack([rune.grad(h)(z), rune.grad(h)(z * 1.1)]), rtol=1e-10,
                               atol=1e-14)    # solve: zeros to rounding, LAPACK's or NumPy's
    hv = rune.jvp(rune.grad(h), (z,), (v,))[1]
    np.testing.assert_allclose(hv, (rune.grad(h)(z + eps * v) - rune.grad(h)(z - eps * v))
                               / (2 * eps), rtol=1e-4, atol=1e-5)
