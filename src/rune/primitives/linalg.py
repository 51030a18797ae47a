"""Linear algebra: ``np.linalg`` in every mode, on stacks ``(..., m, n)``, real and complex.

Primitives (each with its JVP, VJP and batching rule below): ``inv``,
``solve``, ``det``, ``slogdet``, ``cholesky``, ``eigh``, ``eig``, ``svd``
(reduced), ``qr`` (reduced) and ``pinv``.  Compositions of those and of the
elementwise, reduction and contraction primitives: ``eigvalsh``,
``eigvals``, ``svdvals``, ``norm``, ``vector_norm``, ``matrix_norm``,
``lstsq``, ``matrix_power``, ``multi_dot``, ``cond``, ``matrix_rank`` (no
derivative) and ``tensorsolve``.

Every decomposition already works on stacks of matrices, so every batching
rule is one stacked NumPy call: the batch axis moves to the front and the
primitive runs once on the whole stack (``solve`` first lines up the stack
dimensions of its two operands, as NumPy broadcasts them).

The rules are the published ones (Giles 2008, "An extended collection of
matrix derivative results"; Murray 2016 and Seeger et al. 2017 for
Cholesky; Townsend 2016 for the SVD; Walter, Lehmann & Lamour 2012 for
QR; Golub & Pereyra 1973 for the pseudo-inverse), in JAX's complex
convention: a VJP is the transpose of the JVP under the pairing
``Re(sum(ct * t))``, with no conjugation.  Each VJP below is derived from
its JVP step by step, and every rule computes with ``np.*`` calls on traced
values, so rules nest (``hessian`` of a function of ``det`` or ``eigh``).

Where the derivative is undefined or unstable (see ``docs/linalg.md``):

* ``cholesky``, ``eigh``, ``eigvalsh`` read one triangle of their input but
  stand for functions of a Hermitian matrix: their derivatives use the
  Hermitian part ``(dA + dA^H) / 2`` of a tangent, and their gradients are
  Hermitian (as in JAX and PyTorch).
* Repeated eigenvalues (``eigh``, ``eig``) or singular values (``svd``):
  the eigen/singular *vectors* are not differentiable there.  The terms
  ``1 / (w_j - w_i)`` (``1 / (s_j^2 - s_i^2)``) are set to 0 where the two
  values are exactly equal, which is right for functions that depend only
  on the whole eigenspace (projectors, eigenvalues, ``U @ Vh``); close but
  unequal values give large, inaccurate derivatives.
* Gauge: eigenvectors and singular vectors are defined up to a sign (real)
  or a phase (complex) per column.  The rules fix ``V^H dV`` to have a zero
  (``eigh``) or purely imaginary diagonal chosen as in JAX (``svd``,
  ``eig``); only gauge-invariant functions of them have a meaningful
  derivative.  ``qr`` follows LAPACK's gauge (a real diagonal of ``R``).
* Singular or rank-deficient inputs: ``inv``, ``solve``, ``slogdet`` need an
  invertible matrix; ``det``'s derivative at an exactly singular matrix (where
  ``solve`` raises) goes through the adjugate from the SVD instead (second
  derivatives there: right at rank ``n-1`` only);
  ``qr`` needs full column rank;
  ``svd`` of a non-square matrix divides by the singular values (a zero one
  gives 0 in its place); ``pinv``/``lstsq`` give the derivative along
  perturbations that keep the rank (Golub & Pereyra).
"""

from __future__ import annotations

import collections
import operator

import numpy as np

from ..core import Primitive, Tracer
from ..dispatch import implements, OutRefusedError
from .elementwise import ndim, shape
from .shape import to_front, normalize_axis

try:   # NumPy >= 2: the named tuples NumPy itself returns
    from numpy.linalg._linalg import EigResult, EighResult, QRResult, SVDResult, SlogdetResult
except ImportError:  # pragma: no cover - NumPy 1.x
    EigResult = collections.namedtuple("EigResult", "eigenvalues eigenvectors")
    EighResult = collections.namedtuple("EighResult", "eigenvalues eigenvectors")
    QRResult = collections.namedtuple("QRResult", "Q R")
    SVDResult = collections.namedtuple("SVDResult", "U S Vh")
    SlogdetResult = collections.namedtuple("SlogdetResult", "sign logabsdet")

# --------------------------------------------------------------------------
# Helpers: matrix views of traced values (all of them plain np.* calls)
# --------------------------------------------------------------------------


def _T(x):
    return np.swapaxes(x, -1, -2)


def _H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _is_complex(x):
    return x.dtype.kind == "c"


def _real_dtype(x):
    return np.dtype(x.dtype.char.lower())


def _eye(n, like):
    return np.eye(n, dtype=_real_dtype(like))


def _diag(x):
    """The diagonal of the last two axes: ``(..., k, k) -> (..., k)``."""
    return np.sum(x * _eye(shape(x)[-1], x), axis=-1)


def _diag_embed(v):
    """A vector on the diagonal of a matrix: ``(..., k) -> (..., k, k)``."""
    return np.expand_dims(v, -2) * _eye(shape(v)[-1], v)


def _trace(x):
    return np.sum(x * _eye(shape(x)[-1], x), axis=(-2, -1))


def _tril(x, k=0):
    n = shape(x)[-1]
    return x * np.tril(np.ones((shape(x)[-2], n), dtype=_real_dtype(x)), k)


def _sym(x):
    """The Hermitian part ``(x + x^H) / 2``."""
    return (x + _H(x)) * 0.5


def _expand2(v):
    return np.expand_dims(np.expand_dims(v, -1), -1)


def _safe_recip(d):
    """``1 / d``, but 0 where ``d`` is exactly 0."""
    zero = d == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(zero, 0, 1 / np.where(zero, 1, d))


def _gap_recip(w):
    """``F[..., i, j] = 1 / (w_j - w_i)``, 0 on the diagonal and where ``w_i == w_j``."""
    return _safe_recip(np.expand_dims(w, -2) - np.expand_dims(w, -1))


def _rsolve(b, a):
    """``b a^{-1}``."""
    return _T(solve_p(_T(a), _T(b)))


def _operand(x):
    return x if isinstance(x, Tracer) else np.asarray(x)


def _batch_stacked(prim_ref, core_ranks):
    """A batching rule: batch axes to the front, stack dimensions lined up, one call."""
    def batch(args, bdims, **params):
        nds = [ndim(a) - (b is not None) for a, b in zip(args, bdims)]
        lead = max(nd - c for nd, c in zip(nds, core_ranks))
        moved = []
        for a, b, nd, c in zip(args, bdims, nds, core_ranks):
            if b is not None:
                a = to_front(a, b)
                pad = lead - (nd - c)
                if pad:
                    s = shape(a)
                    a = np.reshape(a, s[:1] + (1,) * pad + s[1:])
            moved.append(a)
        return prim_ref()(*moved, **params), 0
    return batch


# --------------------------------------------------------------------------
# inv and solve
# --------------------------------------------------------------------------
# X = A^{-1}:  dX = -X dA X;  grad_A = -X^T ct X^T.
# x = A^{-1} b:  dx = A^{-1} (db - dA x);  grad_b = A^{-T} ct, grad_A = -grad_b x^T.

inv_p = Primitive(
    "inv", np.linalg.inv,
    jvp=(lambda t, out, a: -(out @ t @ out),),
    vjp=(lambda ct, out, a: -(_T(out) @ ct @ _T(out)),),
    batch=_batch_stacked(lambda: inv_p, (2,)))


def _solve_vjp_a(ct, out, a, b):
    return -(solve_p(_T(a), ct) @ _T(out))


solve_p = Primitive(
    "solve", np.linalg.solve,
    jvp=(lambda t, out, a, b: -solve_p(a, t @ out), lambda t, out, a, b: solve_p(a, t)),
    vjp=(_solve_vjp_a, lambda ct, out, a, b: solve_p(_T(a), ct)),
    batch=_batch_stacked(lambda: solve_p, (2, 2)))


@implements(np.linalg.inv)
def inv(a):
    return inv_p(a)


@implements(np.linalg.solve)
def solve(a, b):
    a, b = _operand(a), _operand(b)
    if ndim(b) == 1:     # NumPy 2: b is a vector only when it is 1-D
        return np.squeeze(solve_p(a, np.expand_dims(b, -1)), -1)
    return solve_p(a, b)


# --------------------------------------------------------------------------
# det and slogdet
# --------------------------------------------------------------------------
# d det = det * tr(A^{-1} dA);  grad_A = ct * det * A^{-T}.
# d log det = c = tr(A^{-1} dA): d logabsdet = Re(c), d sign = sign * i Im(c)
# (complex; a real sign is locally constant).  Transposed: the cotangent of
# c is ct_logabsdet + i Im(ct_sign * sign), and grad_A = that * A^{-T}.

# At an exactly singular A (solve/inv raise), the same derivative through the adjugate,
# d det = tr(adj(A) dA), with adj(A) = det(U) det(Vh) V diag(prod_{j != i} s_j) U^H from the
# SVD A = U diag(s) Vh (adj(XY) = adj(Y) adj(X), adj(U) = det(U) U^H for a unitary U).
# s is taken as diag(U^H A V): the same values, but this form is invariant to the phases of
# U's and V's columns separately, so it can use the SVD without its phase derivative (which
# is not defined at a zero singular value, and huge at a roundoff-sized one).

def _adjugate(a):
    u, _, vh = svd_gauge_free_p(a)
    s = _diag(_H(u) @ a @ _H(vh))
    eye = _eye(shape(s)[-1], s)
    others = np.prod(np.expand_dims(s, -2) * (1 - eye) + eye, axis=-1)
    scale = det_p(u) * det_p(vh)
    return _expand2(scale) * ((_H(vh) * np.expand_dims(others, -2)) @ _H(u))


def _det_jvp(t, out, a):
    try:
        return out * _trace(solve_p(a, t))
    except np.linalg.LinAlgError:
        return _trace(_adjugate(a) @ t)


def _det_vjp(ct, out, a):
    try:
        return _expand2(ct * out) * _T(inv_p(a))
    except np.linalg.LinAlgError:
        return _expand2(ct) * _T(_adjugate(a))


det_p = Primitive("det", np.linalg.det, jvp=(_det_jvp,), vjp=(_det_vjp,),
                  batch=_batch_stacked(lambda: det_p, (2,)))


def _slogdet_jvp(t, out, a):
    sign = out[0]
    c = _trace(solve_p(a, t))
    if _is_complex(a):
        return sign * (c - np.real(c)), np.real(c)     # c - Re(c) = i Im(c)
    return None, c


def _slogdet_vjp(ct, out, a):
    ct_sign, ct_logabs = ct
    g = ct_logabs
    if _is_complex(a):
        w = ct_sign * out[0]
        g = ct_logabs + (w - np.real(w))
    return _expand2(g) * _T(inv_p(a))


slogdet_p = Primitive(
    "slogdet", lambda a: tuple(np.linalg.slogdet(a)),
    jvp=(_slogdet_jvp,), vjp=(_slogdet_vjp,), multiple_results=True,
    batch=_batch_stacked(lambda: slogdet_p, (2,)))


@implements(np.linalg.det)
def det(a):
    return det_p(a)


@implements(np.linalg.slogdet)
def slogdet(a):
    return SlogdetResult(*slogdet_p(a))


# --------------------------------------------------------------------------
# cholesky
# --------------------------------------------------------------------------
# A = L L^H.  With S = (dA + dA^H)/2:  dL = L Phi(L^{-1} S L^{-H}), where
# Phi keeps the strict lower triangle and half the diagonal.
# Transposed: gZ = L^T gL;  gY = Phi(gZ);  gS = L^{-T} gY conj(L)^{-1};
# grad_A = (gS + gS^H)/2.

def _phi(x):
    n = shape(x)[-1]
    dt = _real_dtype(x)
    return x * (np.tril(np.ones((n, n), dtype=dt), -1) + 0.5 * np.eye(n, dtype=dt))


def _cholesky_jvp(t, out, a, upper):
    L = _H(out) if upper else out
    y = _rsolve(solve_p(L, _sym(t)), _H(L))
    dL = L @ _phi(y)
    return _H(dL) if upper else dL


def _cholesky_vjp(ct, out, a, upper):
    L = _H(out) if upper else out
    g_L = _H(ct) if upper else ct
    g_y = _phi(_T(L) @ g_L)
    g_s = _rsolve(solve_p(_T(L), g_y), np.conj(L))
    return _sym(g_s)


cholesky_p = Primitive(
    "cholesky", lambda a, upper: np.linalg.cholesky(a, upper=upper),
    jvp=(_cholesky_jvp,), vjp=(_cholesky_vjp,),
    batch=_batch_stacked(lambda: cholesky_p, (2,)))


@implements(np.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    return cholesky_p(a, upper=bool(upper))


# --------------------------------------------------------------------------
# eigh and eigvalsh
# --------------------------------------------------------------------------
# A V = V diag(w).  With S = (dA + dA^H)/2 and M = V^H S V:
#   dw = Re(diag(M)),  dV = V (F o M),  F_ij = 1 / (w_j - w_i) (0 for i == j).
# Transposed: GM = diag(gw) + F o (V^T gV);  gS = conj(V) GM V^T;
#   grad_A = (gS + gS^H)/2.

def _eigh_jvp(t, out, a, UPLO):
    w, v = out
    m = _H(v) @ _sym(t) @ v
    return np.real(_diag(m)), v @ (_gap_recip(w) * m)


def _eigh_vjp(ct, out, a, UPLO):
    g_w, g_v = ct
    w, v = out
    g_m = _diag_embed(g_w) + _gap_recip(w) * (_T(v) @ g_v)
    return _sym(np.conj(v) @ g_m @ _T(v))


eigh_p = Primitive(
    "eigh", lambda a, UPLO: tuple(np.linalg.eigh(a, UPLO=UPLO)),
    jvp=(_eigh_jvp,), vjp=(_eigh_vjp,), multiple_results=True,
    batch=_batch_stacked(lambda: eigh_p, (2,)))


def _uplo(UPLO):
    UPLO = UPLO.upper()
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return UPLO


@implements(np.linalg.eigh)
def eigh(a, UPLO="L"):
    return EighResult(*eigh_p(a, UPLO=_uplo(UPLO)))


@implements(np.linalg.eigvalsh)
def eigvalsh(a, UPLO="L"):
    return eigh_p(a, UPLO=_uplo(UPLO))[0]


# --------------------------------------------------------------------------
# eig and eigvals (general square matrices)
# --------------------------------------------------------------------------
# A V = V diag(w), columns of V of unit norm.  With K = V^{-1} dA V:
#   dw = diag(K),  dV0 = V (F o K),  dV = dV0 - V Re(diag(V^H dV0))
# (the last term keeps each column's norm; the phase is a gauge).
# Transposed: c = Re(sum(gV o V, rows));  gV0 = gV - conj(V) c;
#   GK = diag(gw) + F o (V^T gV0);  grad_A = V^{-T} GK V^T.

def _eig_jvp(t, out, a):
    w, v = out
    k = solve_p(v, t @ v)
    dv = v @ (_gap_recip(w) * k)
    dv = dv - v * np.real(np.sum(np.conj(v) * dv, axis=-2, keepdims=True))
    return _diag(k), dv


def _eig_vjp(ct, out, a):
    g_w, g_v = ct
    w, v = out
    c = np.real(np.sum(g_v * v, axis=-2, keepdims=True))
    g_v0 = g_v - np.conj(v) * c
    g_k = _diag_embed(g_w) + _gap_recip(w) * (_T(v) @ g_v0)
    return solve_p(_T(v), g_k) @ _T(v)


eig_p = Primitive(
    "eig", lambda a: tuple(np.linalg.eig(a)),
    jvp=(_eig_jvp,), vjp=(_eig_vjp,), multiple_results=True,
    batch=_batch_stacked(lambda: eig_p, (2,)))


@implements(np.linalg.eig)
def eig(a):
    return EigResult(*eig_p(a))


@implements(np.linalg.eigvals)
def eigvals(a):
    return eig_p(a)[0]


# --------------------------------------------------------------------------
# svd (reduced) and svdvals
# --------------------------------------------------------------------------
# A = U diag(s) Vh, k = min(m, n), V = Vh^H.  With P = U^H dA V (k x k),
# F_ij = 1 / (s_j^2 - s_i^2) (0 for i == j) and S = diag(s):
#   ds = Re(diag(P))
#   dU = U (F o (P S + S P^H) + diag(i Im(diag(P)) / s))  [+ (I - U U^H) dA V S^{-1} if m > n]
#   dV = V (F o (S P + P^H S))                           [+ (I - V V^H) dA^H U S^{-1} if n > m]
# Transposed (gV = gVh^H, GU = U^T gU, GV = V^T gV, gX = F o GU, gY = F o GV):
#   gP = diag(gs) + (gX + gX^H) S + S (gY + gY^H) + diag(i Im(diag(GU)) / s)
#   grad_A = conj(U) gP conj(Vh)  [+ (G - conj(U) U^T G) conj(Vh), G = gU S^{-1}, if m > n]
#                                 [+ conj(U) (G - G Vh^T conj(Vh)), G = S^{-1} gVh, if n > m]

def _svd_jvp(t, out, a, hermitian, phase=True):
    u, s, vh = out
    v = _H(vh)
    p = _H(u) @ t @ v
    ds = np.real(_diag(p))
    s_row = np.expand_dims(s, -2)
    s_col = np.expand_dims(s, -1)
    f = _safe_recip(s_row * s_row - s_col * s_col)
    s_inv = _safe_recip(s)
    ps = p * s_row
    sp = s_col * p
    du_core = f * (ps + _H(ps))
    if phase and _is_complex(p):
        du_core = du_core + _diag_embed(1j * np.imag(_diag(p)) * s_inv)
    du = u @ du_core
    dv = v @ (f * (sp + _H(sp)))
    m, n = shape(a)[-2:]
    if m > n:
        tv = t @ v
        du = du + (tv - u @ (_H(u) @ tv)) * np.expand_dims(s_inv, -2)
    if n > m:
        thu = _H(t) @ u
        dv = dv + (thu - v @ (vh @ thu)) * np.expand_dims(s_inv, -2)
    return du, ds, _H(dv)


def _svd_vjp(ct, out, a, hermitian, phase=True):
    g_u, g_s, g_vh = ct
    u, s, vh = out
    s_row = np.expand_dims(s, -2)
    s_col = np.expand_dims(s, -1)
    f = _safe_recip(s_row * s_row - s_col * s_col)
    s_inv = _safe_recip(s)
    gu_k = _T(u) @ g_u
    g_x = f * gu_k
    g_y = f * (np.conj(vh) @ _H(g_vh))  # V^T gV with V^T = conj(Vh), gV = gVh^H
    g_p = _diag_embed(g_s) + (g_x + _H(g_x)) * s_row + s_col * (g_y + _H(g_y))
    if phase and _is_complex(u):
        g_p = g_p + _diag_embed(1j * np.imag(_diag(gu_k)) * s_inv)
    ga = np.conj(u) @ g_p @ np.conj(vh)
    m, n = shape(a)[-2:]
    if m > n:
        g = g_u * np.expand_dims(s_inv, -2)
        ga = ga + (g - np.conj(u) @ (_T(u) @ g)) @ np.conj(vh)
    if n > m:
        g = g_vh * np.expand_dims(s_inv, -1)
        ga = ga + np.conj(u) @ (g - (g @ _T(vh)) @ np.conj(vh))
    return ga


svd_p = Primitive(
    "svd", lambda a, hermitian: tuple(np.linalg.svd(a, full_matrices=False,
                                                    hermitian=hermitian)),
    jvp=(_svd_jvp,), vjp=(_svd_vjp,), multiple_results=True,
    batch=_batch_stacked(lambda: svd_p, (2,)))


@implements(np.linalg.svd)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if not compute_uv:
        return svd_p(a, hermitian=bool(hermitian))[1]
    m, n = shape(a)[-2:]
    if full_matrices and m != n:
        raise NotImplementedError(
            "np.linalg.svd(a, full_matrices=True) of a non-square matrix is not "
            "differentiable (the extra singular vectors are not unique); use "
            "full_matrices=False")
    return SVDResult(*svd_p(a, hermitian=bool(hermitian)))


# The SVD with the phase term left out of its derivative (complex U and V then move off
# the real-diagonal gauge): only for functions invariant to the phases of U's and V's
# columns separately, such as the adjugate below, where that term is 1/s at s ~ 0.
svd_gauge_free_p = Primitive(
    "svd", lambda a: tuple(np.linalg.svd(a, full_matrices=False)),
    jvp=(lambda t, out, a: _svd_jvp(t, out, a, False, phase=False),),
    vjp=(lambda ct, out, a: _svd_vjp(ct, out, a, False, phase=False),),
    multiple_results=True, batch=_batch_stacked(lambda: svd_gauge_free_p, (2,)))


if hasattr(np.linalg, "svdvals"):
    @implements(np.linalg.svdvals)
    def svdvals(x, /):
        return svd_p(x, hermitian=False)[1]


def _svdvals(x):
    return svd_p(x, hermitian=False)[1]


# --------------------------------------------------------------------------
# qr (reduced)
# --------------------------------------------------------------------------
# m >= n, A = Q R, diag(R) real (LAPACK's gauge).  With B = dA R^{-1},
# C = Q^H B, L = tril(C, -1) and Om = L - L^H + i Im(diag(C)):
#   dQ = Q (Om - C) + B,  dR = (C - Om) R.
# Transposed: gK = gR R^T;  GQ = Q^T gQ;  gOm = GQ - gK;
#   gC = gK - GQ + tril(gOm - gOm^H, -1) + i Im(diag(gOm));
#   gB = gQ + conj(Q) gC;  grad_A = gB R^{-T}.
# m < n: A = Q [R1 R2] with X = A[:, :m] = Q R1 (square) and R2 = Q^H Y, so
# dR2 = dQ^H Y + Q^H dY, and the cotangents of X and Y follow.

def _qr_square_jvp(dx, q, r):
    b = _rsolve(dx, r)
    c = _H(q) @ b
    low = _tril(c, -1)
    om = low - _H(low)
    if _is_complex(c):
        om = om + _diag_embed(1j * np.imag(_diag(c)))
    return q @ (om - c) + b, (c - om) @ r


def _qr_square_vjp(g_q, g_r, q, r):
    g_k = g_r @ _T(r)
    gq_k = _T(q) @ g_q
    g_om = gq_k - g_k
    g_c = g_k - gq_k + _tril(g_om - _H(g_om), -1)
    if _is_complex(g_c):
        g_c = g_c + _diag_embed(1j * np.imag(_diag(g_om)))
    return _rsolve(g_q + np.conj(q) @ g_c, _T(r))


def _qr_jvp(t, out, a):
    q, r = out
    m, n = shape(a)[-2:]
    if m >= n:
        return _qr_square_jvp(t, q, r)
    dq, dr1 = _qr_square_jvp(t[..., :m], q, r[..., :m])
    dr2 = _H(dq) @ a[..., m:] + _H(q) @ t[..., m:]
    return dq, np.concatenate([dr1, dr2], axis=-1)


def _qr_vjp(ct, out, a):
    g_q, g_r = ct
    q, r = out
    m, n = shape(a)[-2:]
    if m >= n:
        return _qr_square_vjp(g_q, g_r, q, r)
    g_r2 = g_r[..., m:]
    g_y = np.conj(q) @ g_r2
    g_q = g_q + np.conj(a[..., m:]) @ _H(g_r2)
    g_x = _qr_square_vjp(g_q, g_r[..., :m], q, r[..., :m])
    return np.concatenate([g_x, g_y], axis=-1)


qr_p = Primitive(
    "qr", lambda a: tuple(np.linalg.qr(a, mode="reduced")),
    jvp=(_qr_jvp,), vjp=(_qr_vjp,), multiple_results=True,
    batch=_batch_stacked(lambda: qr_p, (2,)))


@implements(np.linalg.qr)
def qr(a, mode="reduced"):
    m, n = shape(a)[-2:]
    if mode == "complete" and m > n:
        raise NotImplementedError(
            "np.linalg.qr(a, mode='complete') of a tall matrix is not differentiable (the "
            "extra columns of Q are not unique); use mode='reduced'")
    if mode not in ("reduced", "complete", "r"):
        raise NotImplementedError(f"np.linalg.qr(a, mode={mode!r}) is not supported on "
                                  f"traced values; use mode='reduced' or 'r'")
    q, r = qr_p(a)
    return r if mode == "r" else QRResult(q, r)


# --------------------------------------------------------------------------
# pinv and lstsq
# --------------------------------------------------------------------------
# P = A^+ (Golub & Pereyra, at constant rank):
#   dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P
# Transposed: grad_A = -P^T g P^T + conj(I - A P) g^H conj(P P^H)
#                      + conj(P^H P) g^H conj(I - P A).

def _pinv_jvp(t, out, a, rcond, hermitian):
    p = out
    th = _H(t)
    return (-(p @ t @ p) + (p @ _H(p)) @ (th - (th @ a) @ p)
            + (th - p @ (a @ th)) @ (_H(p) @ p))


def _pinv_vjp(ct, out, a, rcond, hermitian):
    p = out
    gh = _H(ct)
    pc, ac = np.conj(p), np.conj(a)
    left = (gh - ac @ (pc @ gh)) @ np.conj(p @ _H(p))
    y = np.conj(_H(p) @ p) @ gh
    return -(_T(p) @ ct @ _T(p)) + left + (y - (y @ pc) @ ac)


pinv_p = Primitive(
    "pinv", lambda a, rcond, hermitian: np.linalg.pinv(a, rcond=rcond, hermitian=hermitian),
    jvp=(_pinv_jvp,), vjp=(_pinv_vjp,),
    batch=_batch_stacked(lambda: pinv_p, (2,)))


@implements(np.linalg.pinv)
def pinv(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    if rcond is None:
        if rtol is np._NoValue:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(shape(a)[-2:]) * np.finfo(a.dtype).eps
        else:
            rcond = rtol
    elif rtol is not np._NoValue:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    if np.ndim(rcond) != 0:
        raise NotImplementedError("np.linalg.pinv with an array rcond is not supported on "
                                  "traced values")
    return pinv_p(a, rcond=float(rcond), hermitian=bool(hermitian))


@implements(np.linalg.lstsq)
def lstsq(a, b, rcond=None):
    """``x = pinv(a) @ b`` (the minimum-norm solution), residuals, rank and singular values."""
    a, b = _operand(a), _operand(b)
    if ndim(a) != 2 or ndim(b) not in (1, 2):
        raise np.linalg.LinAlgError("lstsq: a must be 2-D and b 1-D or 2-D")
    m, n = shape(a)
    if shape(b)[0] != m:
        raise np.linalg.LinAlgError("Incompatible dimensions")
    dtype = np.result_type(a.dtype, b.dtype)
    if rcond is None:
        rcond = np.finfo(dtype).eps * max(m, n)
    s = _svdvals(a)
    rank = int(np.sum(s > rcond * np.max(s))) if min(m, n) else 0
    x = pinv_p(a, rcond=float(rcond), hermitian=False) @ b
    if rank == n and m > n:
        r = b - a @ x
        r = np.real(r * np.conj(r)) if np.iscomplexobj(r) else r * r
        resids = np.sum(r, axis=0)
        if ndim(b) == 1:
            resids = np.reshape(resids, (1,))
    else:
        resids = np.zeros((0,), dtype=_real_dtype(np.empty(0, dtype)))
    return x, resids, rank, s


# --------------------------------------------------------------------------
# matrix_power and multi_dot (compositions of matmul and inv)
# --------------------------------------------------------------------------

@implements(np.linalg.matrix_power)
def matrix_power(a, n):
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if ndim(a) < 2 or shape(a)[-1] != shape(a)[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    if n == 0:
        return np.zeros_like(a) + np.eye(shape(a)[-1], dtype=a.dtype)
    if n < 0:
        a = inv_p(a)
        n = -n
    z = result = None
    while n > 0:
        z = a if z is None else z @ z
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else result @ z
    return result


def _chain_order(dims):
    """The cheapest parenthesization of a matrix chain (the textbook dynamic program)."""
    k = len(dims) - 1
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = None
            for c in range(i, j):
                q = cost[i][c] + cost[c + 1][j] + dims[i] * dims[c + 1] * dims[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, c
    return split


@implements(np.linalg.multi_dot)
def multi_dot(arrays, *, out=None):
    if out is not None:
        raise OutRefusedError("np.linalg.multi_dot(..., out=...) is not supported on "
                                  "traced values")
    arrays = [_operand(x) for x in arrays]
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    if len(arrays) == 2:
        return np.dot(arrays[0], arrays[1])
    first_1d, last_1d = ndim(arrays[0]) == 1, ndim(arrays[-1]) == 1
    if first_1d:
        arrays[0] = np.expand_dims(arrays[0], 0)
    if last_1d:
        arrays[-1] = np.expand_dims(arrays[-1], -1)
    for x in arrays:
        if ndim(x) != 2:
            raise np.linalg.LinAlgError(f"{ndim(x)}-dimensional array given. Array must be "
                                        f"two-dimensional")
    split = _chain_order([shape(arrays[0])[0]] + [shape(x)[1] for x in arrays])

    def product(i, j):
        if i == j:
            return arrays[i]
        return product(i, split[i][j]) @ product(split[i][j] + 1, j)

    r = product(0, len(arrays) - 1)
    if first_1d and last_1d:
        return np.reshape(r, ())
    if first_1d:
        return np.squeeze(r, 0)
    if last_1d:
        return np.squeeze(r, -1)
    return r


# --------------------------------------------------------------------------
# Norms (compositions: elementwise + reductions + svd)
# --------------------------------------------------------------------------

def _abs2(x):
    return np.real(x * np.conj(x)) if np.iscomplexobj(x) else x * x


def _safe_sqrt(s):
    """``sqrt(s)`` with derivative 0 (not NaN) at ``s == 0``: the norm of 0 has gradient 0."""
    zero = s == 0
    return np.where(zero, 0, np.sqrt(np.where(zero, 1, s)))


def _vector_norm(x, ord, axis, keepdims):
    """A vector norm over the tuple of axes ``axis``."""
    if ord is None or ord == 2:
        return _safe_sqrt(np.sum(_abs2(x), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return np.max(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return np.sum(x != 0, axis=axis, keepdims=keepdims).astype(_real_dtype(x))
    if ord == 1:
        return np.sum(np.abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    total = np.sum(np.abs(x) ** ord, axis=axis, keepdims=keepdims)
    zero = total == 0
    return np.where(zero, 0, np.where(zero, 1, total) ** (1.0 / ord))


def _matrix_norm(x, ord, row, col, keepdims):
    """A matrix norm over the axes ``row`` and ``col`` (as ``np.linalg.norm``)."""
    if ord in (2, -2, "nuc"):
        s = _svdvals(np.moveaxis(x, (row, col), (-2, -1)))
        r = np.max(s, -1) if ord == 2 else np.min(s, -1) if ord == -2 else np.sum(s, -1)
    elif ord in (None, "fro", "f"):
        r = _safe_sqrt(np.sum(_abs2(x), axis=(row, col)))
    elif ord in (1, -1):
        c = col - 1 if col > row else col
        r = np.sum(np.abs(x), axis=row)
        r = np.max(r, axis=c) if ord == 1 else np.min(r, axis=c)
    elif ord in (np.inf, -np.inf):
        rr = row - 1 if row > col else row
        r = np.sum(np.abs(x), axis=col)
        r = np.max(r, axis=rr) if ord == np.inf else np.min(r, axis=rr)
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        s = list(shape(x))
        s[row] = s[col] = 1
        r = np.reshape(r, tuple(s))
    return r


@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    x = _operand(x)
    if x.dtype.kind not in "fc":
        x = x.astype(float)
    nd = ndim(x)
    if axis is None:
        if ord is None:
            r = _safe_sqrt(np.sum(_abs2(x)))
            return np.reshape(r, (1,) * nd) if keepdims else r
        if nd == 1:
            axis = (0,)
        elif nd == 2:
            axis = (0, 1)
        else:
            raise ValueError("Improper number of dimensions to norm.")
    elif not isinstance(axis, tuple):
        axis = (operator.index(axis),)
    axis = tuple(normalize_axis(a, nd) for a in axis)
    if len(axis) == 1:
        return _vector_norm(x, ord, axis, keepdims)
    if len(axis) == 2:
        if axis[0] == axis[1]:
            raise ValueError("Duplicate axes given.")
        return _matrix_norm(x, ord, axis[0], axis[1], keepdims)
    raise ValueError("Improper number of dimensions to norm.")


if hasattr(np.linalg, "vector_norm"):
    @implements(np.linalg.vector_norm)
    def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
        x = _operand(x)
        if x.dtype.kind not in "fc":
            x = x.astype(float)
        nd = ndim(x)
        if axis is None:
            axes = tuple(range(nd))
        elif isinstance(axis, tuple):
            axes = tuple(sorted(normalize_axis(a, nd) for a in axis))
        else:
            axes = (normalize_axis(axis, nd),)
        return _vector_norm(x, ord, axes, keepdims)

if hasattr(np.linalg, "matrix_norm"):
    @implements(np.linalg.matrix_norm)
    def matrix_norm(x, /, *, keepdims=False, ord="fro"):
        x = _operand(x)
        if x.dtype.kind not in "fc":
            x = x.astype(float)
        nd = ndim(x)
        return _matrix_norm(x, ord, nd - 2, nd - 1, keepdims)


# --------------------------------------------------------------------------
# cond, matrix_rank, tensorsolve (compositions; NumPy's own versions call C directly)
# --------------------------------------------------------------------------

@implements(np.linalg.cond)
def cond(x, p=None):
    x = _operand(x)
    if p is None or p == 2 or p == -2:
        s = _svdvals(x)
        big, small = np.max(s, axis=-1), np.min(s, axis=-1)
        return big / small if p != -2 else small / big
    return norm(x, p, axis=(-2, -1)) * norm(inv_p(x), p, axis=(-2, -1))


@implements(np.linalg.matrix_rank)
def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """The number of singular values above the tolerance (an integer: no derivative)."""
    A = _operand(A)
    if ndim(A) < 2:
        return np.any(A != 0).astype(int)
    s = np.abs(eigh_p(A, UPLO="L")[0]) if hermitian else _svdvals(A)
    if tol is None:
        if rtol is None:
            rtol = max(shape(A)[-2:]) * np.finfo(s.dtype).eps
        tol = np.max(s, axis=-1, keepdims=True) * rtol
    else:
        tol = np.expand_dims(tol, -1) if np.ndim(tol) else tol
    return np.sum(s > tol, axis=-1)


@implements(np.linalg.tensorsolve)
def tensorsolve(a, b, axes=None):
    a, b = _operand(a), _operand(b)
    an = ndim(a)
    if axes is not None:     # the axes of ``axes`` move to the end, in that order
        moved = [normalize_axis(k, an) for k in axes]
        a = np.transpose(a, [k for k in range(an) if k not in moved] + moved)
    old = tuple(shape(a)[ndim(b):])
    size = int(np.prod(old, dtype=np.int64))
    if int(np.prod(shape(a)[:ndim(b)], dtype=np.int64)) != size:
        raise np.linalg.LinAlgError("Input arrays must satisfy the requirement "
                                    "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    x = solve(np.reshape(a, (size, size)), np.reshape(b, (size,)))
    return np.reshape(x, old)
