"""Linear solves that factor their matrix once: ``np.linalg.solve`` under a transformation.

The derivatives of ``x = A^{-1} b`` solve with ``A`` again (Giles 2008):
``dx = A^{-1} (db - dA x)``; ``grad_b = A^{-T} ct``, ``grad_A = -grad_b x^T`` (JAX's complex
convention: a plain transpose, no conjugation).  ``np.linalg.solve`` itself keeps no
factorization, so a rule written with it factors ``A`` (or ``A^T``) once more for every
tangent or cotangent.  The two primitives here solve with what the forward pass made:

* ``lu_solve(a, lu, piv, b, trans)``: ``op(A)^{-1} b``, ``op`` the identity (``trans=0``)
  or the transpose (``trans=1``), by LAPACK's ``getrs`` on ``(lu, piv)``, ``A``'s LU
  factors (``getrf``, computed once from ``A``'s value by :func:`lu_factor`).  The factors
  are constants at every order: the derivative of a solve needs ``A^{-1}`` only, never the
  derivative of a factorization.  So the rules differentiate in ``a`` and solve with
  ``lu``.  The tape keeps ``lu``, ``piv`` and ``x`` in place of ``A``, and ``a`` itself only
  where a transformation below the recording one traces it (then that transformation
  differentiates the rules in ``a``: higher order); that is a second primitive,
  ``lu_solve_nested``, with the same rules, picked by :func:`lu_solve`.
* ``tri_solve(a, b, lower, trans)``: the same solve for an ``A`` whose entries above
  (``lower``) or below the diagonal are exactly zero, by ``trtrs``: no factorization at all.
  Its derivative is still the general solve's, in every entry of ``dA`` (``A`` is
  triangular at this point, which says nothing of its perturbations): unlike
  ``scipy.linalg.solve_triangular``, no triangle of the tangent is dropped.

SciPy's LAPACK wrappers are imported on the first such solve, never by ``import rune``;
without SciPy (:func:`lapack` is None), ``np.linalg.solve``'s own primitive is used.
Both primitives take one matrix ``a`` (2-D) and a right-hand side ``(..., n, k)``
whose stack dimensions become columns of one LAPACK call.
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive, Tracer, top_trace
from ._util import shape, to_front
from .linalg import _T, _batch_stacked, solve_p

__all__ = ["lapack", "lu_factor", "lu_solve", "tri_solve_p", "lu_solve_p",
           "lu_solve_nested_p"]

_LAPACK = []
_PREFIX = {"f": "s", "d": "d", "F": "c", "D": "z"}


def lapack():
    """``scipy.linalg.lapack``, imported on first use; None when SciPy is not installed."""
    if not _LAPACK:
        try:
            from scipy.linalg import lapack as mod
        except ImportError:     # pragma: no cover - SciPy is in the test environment
            mod = None
        _LAPACK.append(mod)
    return _LAPACK[0]


def _routine(name, dtype):
    return getattr(lapack(), _PREFIX[dtype.char] + name)


def _singular():
    return np.linalg.LinAlgError("Singular matrix")      # NumPy's own message


def lu_factor(a):
    """``(lu, piv)``, LAPACK's LU factors of the square matrix ``a`` (a concrete array of a
    LAPACK dtype; ``a`` is not overwritten).  An exactly singular ``a`` raises NumPy's
    ``LinAlgError``, as ``np.linalg.solve`` does."""
    lu, piv, info = _routine("getrf", a.dtype)(a)
    if info > 0:
        raise _singular()
    return lu, piv


def _lu_factor_batch(args, bdims):
    """Each example's factors, stacked (a stack of matrices has no LAPACK ``getrf``)."""
    a = to_front(args[0], bdims[0])
    lus, pivs = zip(*[lu_factor_p(a[k]) for k in range(shape(a)[0])])
    return (np.stack(lus), np.stack(pivs)), (0, 0)


lu_factor_p = Primitive("lu_factor", lu_factor, nondiff=True, multiple_results=True,
                        batch=_lu_factor_batch)


def _columns(b):
    """``b`` (``(..., n, k)``) as the columns of one ``(n, m)`` matrix, and the inverse."""
    if b.ndim == 2:
        return b, lambda x: x
    stack, (n, k) = b.shape[:-2], b.shape[-2:]
    cols = np.reshape(np.moveaxis(b, -2, 0), (n, -1))
    return cols, lambda x: np.moveaxis(np.reshape(x, (n,) + stack + (k,)), 0, -2)


def _lu_solve_impl(a, lu, piv, b, trans):      # ``a`` is not read: it may be Dropped
    dt = np.result_type(lu.dtype, b.dtype)
    if dt != lu.dtype:                          # real factors of a complex solve: exact
        lu = lu.astype(dt)
    cols, back = _columns(b.astype(dt, copy=False))
    x, info = _routine("getrs", dt)(lu, piv, cols, trans=trans)
    if info != 0:   # pragma: no cover - getrs checks its arguments only
        raise ValueError(f"getrs: illegal argument {-info}")
    return back(x)


def _tri_solve_impl(a, b, lower, trans):
    dt = np.result_type(a.dtype, b.dtype)
    a = a.astype(dt, copy=False)
    if not a.flags.f_contiguous:    # trtrs wants Fortran order: a C-ordered A is A^T in it
        a, lower, trans = a.T, not lower, 1 - trans
    cols, back = _columns(b.astype(dt, copy=False))
    x, info = _routine("trtrs", dt)(a, cols, lower=lower, trans=trans)
    if info > 0:
        raise _singular()
    return back(x)


def _op(x, trans):
    return _T(x) if trans else x


def _rhs(tangents, out, trans):
    """``db - op(dA) x``, the right-hand side of a tangent solve (``tangents``: those of
    ``a`` and ``b``, None for a zero)."""
    ta, tb = tangents
    if ta is None:
        return tb
    r = _op(ta, trans) @ out
    return -r if tb is None else tb - r


def _grad_a(gb, out, trans):
    """``grad_A`` from ``gb = op(A)^{-T} ct``: ``-gb x^T``, transposed for ``trans``
    (``-u v^T``: the minus on the thinner factor; one column: a broadcast product, which
    is 3x faster than a matmul with an inner dimension of 1)."""
    u, v = (out, gb) if trans else (gb, out)
    n, k = shape(u)[-2:]
    if k > n:
        return -(u @ _T(v))
    return (-u) * _T(v) if k == 1 else (-u) @ _T(v)


# --------------------------------------------------------------------------
# LU: factors once, solves with them in every rule
# --------------------------------------------------------------------------

def lu_solve(a, lu, piv, b, trans=0):
    """``op(A)^{-1} b`` with ``A``'s factors ``(lu, piv)``; the tape keeps ``a`` only where a
    transformation below the recording one traces it (see the module docstring)."""
    args = (a, lu, piv, b)
    top = top_trace(args, "solve")
    below = a._val if isinstance(a, Tracer) and a._trace is top else a
    prim = lu_solve_nested_p if isinstance(below, Tracer) else lu_solve_p
    return prim(*args, trans=trans)


def _lu_jvp(tangents, out, a, lu, piv, b, trans):
    ta, _, _, tb = tangents
    if ta is None and tb is None:
        return None
    return lu_solve(a, lu, piv, _rhs((ta, tb), out, trans), trans)


def _lu_vjp_a(ct, out, a, lu, piv, b, trans):
    return _grad_a(lu_solve(a, lu, piv, ct, 1 - trans), out, trans)


def _lu_vjp_b(ct, out, a, lu, piv, b, trans):
    return lu_solve(a, lu, piv, ct, 1 - trans)


_solve_stacked = _batch_stacked(lambda: solve_p, (2, 2))


def _general_batch(a, da, b, db, trans):
    """A batched matrix (never made by :func:`rune.numpy.linalg.solve`, which factors
    unbatched matrices only): ``np.linalg.solve``'s primitive on the stack."""
    if da is None and db is None:      # only the factors batched: the solve is not
        return solve_p(_op(a, trans), b), None
    a, da = (_op(a, trans), None) if da is None else (_op(to_front(a, da), trans), 0)
    return _solve_stacked([a, b], [da, db])


def _lu_batch(args, bdims, trans):
    a, lu, piv, b = args
    if bdims[0] is None and bdims[1] is None and bdims[2] is None:   # right-hand sides
        return lu_solve(a, lu, piv, to_front(b, bdims[3]), trans), 0
    return _general_batch(a, bdims[0], b, bdims[3], trans)


def _lu_primitive(name, keep_a):
    a = (0,) if keep_a else ()
    return Primitive(
        name, _lu_solve_impl, jvp=_lu_jvp, vjp=(_lu_vjp_a, None, None, _lu_vjp_b),
        batch=_lu_batch, residuals={0: a + (1, 2, "out"), 3: a + (1, 2)})


lu_solve_p = _lu_primitive("lu_solve", False)
lu_solve_nested_p = _lu_primitive("lu_solve_nested", True)


# --------------------------------------------------------------------------
# Exactly triangular: no factorization
# --------------------------------------------------------------------------

def _tri_jvp(tangents, out, a, b, lower, trans):
    if tangents[0] is None and tangents[1] is None:
        return None
    return tri_solve_p(a, _rhs(tangents, out, trans), lower=lower, trans=trans)


def _tri_vjp_a(ct, out, a, b, lower, trans):
    return _grad_a(tri_solve_p(a, ct, lower=lower, trans=1 - trans), out, trans)


def _tri_vjp_b(ct, out, a, b, lower, trans):
    return tri_solve_p(a, ct, lower=lower, trans=1 - trans)


def _tri_batch(args, bdims, lower, trans):
    a, b = args
    if bdims[0] is None:
        return tri_solve_p(a, to_front(b, bdims[1]), lower=lower, trans=trans), 0
    return _general_batch(a, bdims[0], b, bdims[1], trans)


tri_solve_p = Primitive(
    "tri_solve", _tri_solve_impl, jvp=_tri_jvp, vjp=(_tri_vjp_a, _tri_vjp_b),
    batch=_tri_batch, residuals={0: (0, "out"), 1: (0,)})
