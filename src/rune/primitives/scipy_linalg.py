"""Primitives behind ``scipy.linalg`` that ``np.linalg`` lacks: triangular solves, the LU
factorization and the matrix functions ``expm``, ``sqrtm``, ``logm``.

Each has its impl (SciPy's own routine, so values match SciPy's), JVP, VJP and batching
rule side by side.  Every rule computes with ``np.*`` calls and primitives on the values
it is given, so rules nest (``hessian``, ``vmap(grad)``).  The other functions of
``scipy.linalg`` are compositions of these and of ``np.linalg``'s primitives (see
:mod:`rune.scipy.linalg`).  SciPy is imported here, so this module is imported only once
the user's code has imported ``scipy.linalg``.

* ``trisolve``: ``x = A^{-1} b`` with ``A`` triangular (only its triangle is read, and
  with ``unit`` its diagonal is taken as ones):
  ``dx = A^{-1} (db - tri(dA) x)``; ``grad_b = A^{-T} ct``, ``grad_A = -tri(grad_b x^T)``.
* ``lu``: ``A[perm] = L U`` (partial pivoting), returned as SciPy's packed ``lu`` with
  LAPACK's ``piv`` and the row permutation ``perm``.  With ``X = L^{-1} dA[perm] U^{-1}``:
  ``dL = L stril(X)``, ``dU = triu(X) U`` (Walter & Lehmann 2012; a rectangular ``A`` has
  ``L`` and ``U`` completed to square with identity blocks); the pivots are locally
  constant.
* ``expm``, ``logm``: for a primary matrix function ``f``, the Fréchet derivative
  is the upper right block of ``f([[A, E], [0, A]])`` (Higham 2008, Theorem 3.6), and its
  transpose under ``sum(G * L(A, E))`` is ``L(A^T, G)`` (``f(A^T) = f(A)^T``), so both rules
  are one call of the primitive on a matrix twice the size.
* ``solve_sylvester``: ``A X + X B = Q``; ``dX`` solves the same equation with right side
  ``dQ - dA X - X dB``, and the cotangent of ``Q`` solves ``A^T Y + Y B^T = G``.
* ``sqrtm``: ``S dS + dS S = dA``, a Sylvester equation in the computed ``S``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as _sla

from ..core import Primitive, _peek, stop_leaf

__all__ = ["trisolve_p", "lu_p", "piv_to_perm_p", "expm_p", "sqrtm_p", "logm_p", "sylvester_p",
           "T", "tri", "take_rows"]


def T(x):
    return np.swapaxes(x, -1, -2)


def tri(x, lower, k=0):
    """The lower (``lower``) or upper triangle of the last two axes, from diagonal ``k``
    (``k`` counted into the triangle: ``k=1`` leaves the diagonal out)."""
    n, m = x.shape[-2:]
    ones = np.ones((n, m), dtype=np.dtype(x.dtype.char.lower()) if x.dtype.kind in "fc"
                   else np.float64)
    mask = np.tril(ones, -k) if lower else np.triu(ones, k)
    return x * mask


def _batch_stacked(prim_ref, core_ranks):
    """A batching rule: batch axes to the front, stack dimensions lined up, one call."""
    def batch(args, bdims, **params):
        nds = [a.ndim - (b is not None) for a, b in zip(args, bdims)]
        lead = max(nd - c for nd, c in zip(nds, core_ranks))
        moved = []
        for a, b, nd, c in zip(args, bdims, nds, core_ranks):
            if b is not None:
                a = np.moveaxis(a, b, 0)
                pad = lead - (nd - c)
                if pad:
                    s = tuple(a.shape)
                    a = np.reshape(a, s[:1] + (1,) * pad + s[1:])
            moved.append(a)
        return prim_ref()(*moved, **params), 0
    return batch


# --------------------------------------------------------------------------
# Triangular solve
# --------------------------------------------------------------------------

def _trisolve_impl(a, b, lower, unit):
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    return _sla.solve_triangular(a, b, lower=lower, unit_diagonal=unit)


def _read(t, lower, unit):
    """The part of a tangent of ``A`` that a triangular solve reads."""
    return tri(t, lower, 1 if unit else 0)


def _trisolve_t(a, ct, lower, unit):
    """``A^{-T} ct``."""
    return trisolve_p(T(a), ct, lower=not lower, unit=unit)


trisolve_p = Primitive(
    "solve_triangular", _trisolve_impl,
    jvp=(lambda t, out, a, b, lower, unit: -trisolve_p(a, _read(t, lower, unit) @ out,
                                                       lower=lower, unit=unit),
         lambda t, out, a, b, lower, unit: trisolve_p(a, t, lower=lower, unit=unit)),
    vjp=(lambda ct, out, a, b, lower, unit: -_read(_trisolve_t(a, ct, lower, unit) @ T(out),
                                                   lower, unit),
         lambda ct, out, a, b, lower, unit: _trisolve_t(a, ct, lower, unit)),
    batch=_batch_stacked(lambda: trisolve_p, (2, 2)), residuals=(0, "out"))     # not b


# --------------------------------------------------------------------------
# LU with partial pivoting (square)
# --------------------------------------------------------------------------

def _perm_from_piv(piv, m=None):
    """LAPACK's row interchanges (``piv``, stacked) as the permutation ``perm`` of the
    ``m`` rows with ``A[perm] = L U``."""
    piv = np.asarray(piv)
    k = piv.shape[-1]
    m = k if m is None else m
    perm = np.broadcast_to(np.arange(m), piv.shape[:-1] + (m,)).copy()
    for row, p in zip(perm.reshape(-1, m), piv.reshape(-1, k)):
        for i, j in enumerate(p):
            row[i], row[j] = row[j], row[i]
    return perm


def _lu_impl(a):
    lu, piv = _sla.lu_factor(a)
    piv = np.asarray(piv, dtype=np.int32)
    return lu, piv, _perm_from_piv(piv, a.shape[-2])


def _lu_parts(lu):
    """``L`` (m x m, unit lower) and ``U`` (n x n, upper) of a packed ``lu`` (m x n), each
    made square with an identity block (Walter & Lehmann's rectangular case, as in JAX)."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    dt = np.dtype(lu.dtype.char.lower())
    low = tri(lu[..., :, :k], True, 1)
    up = tri(lu[..., :k, :], False)
    if m > k:
        low = low @ np.eye(k, m, dtype=dt)
    if n > k:
        up = np.eye(n, k, dtype=dt) @ up + np.diag((np.arange(n) >= k).astype(dt))
    return low + np.eye(m, dtype=dt), up


def _right_solve_upper(y, u):
    """``y U^{-1}``."""
    return T(trisolve_p(T(u), T(y), lower=True, unit=False))


def take_rows(x, perm):
    """``x[..., perm, :]``, ``perm`` a stack of permutations (integers: no derivative)
    broadcast against the stack dimensions of ``x``."""
    perm = stop_leaf(perm)
    batch = tuple(np.broadcast_shapes(tuple(perm.shape[:-1]), tuple(x.shape[:-2])))
    x = np.broadcast_to(x, batch + tuple(x.shape[-2:]))
    idx = np.broadcast_to(np.expand_dims(perm, -1), batch + tuple(x.shape[-2:]))
    return np.take_along_axis(x, idx, axis=-2)


def _lu_jvp(t, out, a):
    lu, _, perm = out
    low, up = _lu_parts(lu)
    x = _right_solve_upper(trisolve_p(low, take_rows(t, perm), lower=True, unit=True), up)
    return low @ tri(x, True, 1) + tri(x, False) @ up, None, None


def _lu_vjp(ct, out, a):
    g = ct[0]
    lu, _, perm = out
    low, up = _lu_parts(lu)
    g_x = tri(T(low) @ tri(g, True, 1), True, 1) + tri(tri(g, False) @ T(up), False)
    g_ap = trisolve_p(T(low), T(trisolve_p(up, T(g_x), lower=False, unit=False)),
                      lower=False, unit=True)
    return take_rows(g_ap, np.argsort(stop_leaf(perm), axis=-1))


piv_to_perm_p = Primitive("piv_to_perm", _perm_from_piv, nondiff=True,
                          batch=_batch_stacked(lambda: piv_to_perm_p, (1,)))
lu_p = Primitive("lu", _lu_impl, jvp=(_lu_jvp,), vjp=(_lu_vjp,), multiple_results=True,
                 batch=_batch_stacked(lambda: lu_p, (2,)), residuals=("out",))


# --------------------------------------------------------------------------
# Matrix functions: the Fréchet derivative from a block matrix
# --------------------------------------------------------------------------

def _max_abs(x):
    v, _ = _peek(x)
    v = np.abs(np.asarray(v))
    return float(np.max(v)) if v.size else 0.0


def frechet(prim, a, e):
    """``L_f(A, E)``, the upper right block of ``f([[A, E], [0, A]])``.

    ``E`` is scaled to the size of ``A`` first (``L`` is linear in ``E``, so the scale is
    exact whatever its value; it only keeps the block matrix balanced).
    """
    n = a.shape[-1]
    na, ne = _max_abs(a), _max_abs(e)
    s = na / ne if na > 0 and ne > 0 else 1.0
    dtype = np.result_type(a.dtype, e.dtype)
    zero = np.zeros(tuple(a.shape), dtype=dtype)
    big = np.concatenate([np.concatenate([a + zero, e * s + zero], axis=-1),
                          np.concatenate([zero, a + zero], axis=-1)], axis=-2)
    return prim(big)[..., :n, n:] / s


def _matfun(name, impl):
    prim = Primitive(name, impl,
                     jvp=(lambda t, out, a: frechet(prim, a, t),),
                     vjp=(lambda ct, out, a: frechet(prim, T(a), ct),),
                     batch=_batch_stacked(lambda: prim, (2,)), residuals=("args",))
    return prim


def _sqrtm_impl(a):
    return _sla.sqrtm(a)


expm_p = _matfun("expm", _sla.expm)
logm_p = _matfun("logm", _sla.logm)


# --------------------------------------------------------------------------
# Sylvester equations, and sqrtm through them
# --------------------------------------------------------------------------

def _sylvester_impl(a, b, q):
    """``X`` with ``A X + X B = Q`` (SciPy's Bartels-Stewart), on stacks."""
    if a.ndim == b.ndim == q.ndim == 2:
        return _sla.solve_sylvester(a, b, q)
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], q.shape[:-2])
    a, b, q = (np.broadcast_to(x, lead + x.shape[-2:]) for x in (a, b, q))
    out = np.empty(lead + q.shape[-2:], dtype=np.result_type(a, b, q))
    for idx in np.ndindex(*lead):
        out[idx] = _sla.solve_sylvester(a[idx], b[idx], q[idx])
    return out


def _sylvester_ct(ct, a, b):
    """The cotangent of ``Q``: ``Y`` with ``A^T Y + Y B^T = ct`` (the transpose of
    ``Q -> X``; JAX's convention, no conjugation)."""
    return sylvester_p(T(a), T(b), ct)


# A dX + dX B = dQ - dA X - X dB
sylvester_p = Primitive(
    "solve_sylvester", _sylvester_impl,
    jvp=(lambda t, out, a, b, q: sylvester_p(a, b, -(t @ out)),
         lambda t, out, a, b, q: sylvester_p(a, b, -(out @ t)),
         lambda t, out, a, b, q: sylvester_p(a, b, t)),
    vjp=(lambda ct, out, a, b, q: -(_sylvester_ct(ct, a, b) @ T(out)),
         lambda ct, out, a, b, q: -(T(out) @ _sylvester_ct(ct, a, b)),
         lambda ct, out, a, b, q: _sylvester_ct(ct, a, b)),
    batch=_batch_stacked(lambda: sylvester_p, (2, 2, 2)), residuals=(0, 1, "out"))

# S = sqrtm(A): S dS + dS S = dA.  Solving with the computed S keeps every order on SciPy's
# branch, where the block matrix [[A, E], [0, A]] of ``frechet`` would be complex for an A
# with negative eigenvalues and could land on the other side of sqrt's branch cut.
sqrtm_p = Primitive(
    "sqrtm", _sqrtm_impl,
    jvp=(lambda t, out, a: sylvester_p(out, out, t),),
    vjp=(lambda ct, out, a: sylvester_p(T(out), T(out), ct),),
    batch=_batch_stacked(lambda: sqrtm_p, (2,)), residuals=("out",))
