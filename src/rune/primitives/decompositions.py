"""Decomposition primitives: ``det``, ``slogdet``, ``eigh``, ``eig``, ``svd`` (reduced) and
``qr`` (reduced), each with its JVP, VJP and batching rule (one stacked NumPy call).

The conventions (JAX's complex convention, Hermitian parts, gauges, what happens at
repeated or zero eigen/singular values) are those of :mod:`rune.primitives.linalg`,
whose matrix helpers these rules use; ``docs/linalg.md`` has the details.
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive
from ._util import shape
from .linalg import (_T, _H, _is_complex, _eye, _diag, _diag_embed, _trace, _tril, _sym,
                     _expand2, _safe_recip, _gap_recip, _rsolve, _batch_stacked, inv_p,
                     solve_p)


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
                  batch=_batch_stacked(lambda: det_p, (2,)), residuals=("args", "out"))


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
    batch=_batch_stacked(lambda: slogdet_p, (2,)), residuals=("args", "out"))


# --------------------------------------------------------------------------
# eigh
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
    batch=_batch_stacked(lambda: eigh_p, (2,)), residuals=("out",))


# --------------------------------------------------------------------------
# eig (general square matrices)
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
    batch=_batch_stacked(lambda: eig_p, (2,)), residuals=("out",))


# --------------------------------------------------------------------------
# svd (reduced)
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
    batch=_batch_stacked(lambda: svd_p, (2,)), residuals=("out", "shapes"))


# The SVD with the phase term left out of its derivative (complex U and V then move off
# the real-diagonal gauge): only for functions invariant to the phases of U's and V's
# columns separately, such as the adjugate of det, where that term is 1/s at s ~ 0.
svd_gauge_free_p = Primitive(
    "svd_gauge_free", lambda a: tuple(np.linalg.svd(a, full_matrices=False)),
    jvp=(lambda t, out, a: _svd_jvp(t, out, a, False, phase=False),),
    vjp=(lambda ct, out, a: _svd_vjp(ct, out, a, False, phase=False),),
    multiple_results=True, batch=_batch_stacked(lambda: svd_gauge_free_p, (2,)),
    residuals=("out", "shapes"))


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
    batch=_batch_stacked(lambda: qr_p, (2,)), residuals=("args", "out"))
