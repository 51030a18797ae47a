"""Linear-algebra primitives, on stacks ``(..., m, n)``, real and complex.

Here: ``inv``, ``solve``, ``cholesky`` and ``pinv``, and the matrix helpers
(``_T``, ``_H``, ``_sym``, ...) that every linear-algebra rule uses.  The
decompositions (``det``, ``slogdet``, ``eigh``, ``eig``, ``svd``, ``qr``) are
in :mod:`rune.primitives.decompositions`; ``np.linalg``'s functions
(``norm``, ``lstsq``, ``eigvalsh``, ``matrix_power``, ...) are compositions in
:mod:`rune.numpy.linalg`.

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

import numpy as np

from ..core import Primitive
from ._util import ndim, shape, to_front

# --------------------------------------------------------------------------
# Helpers: matrix views of traced values (all of them plain np.* calls)
# --------------------------------------------------------------------------


def _T(x):
    return np.swapaxes(x, -1, -2)


def _H(x):
    t = np.swapaxes(x, -1, -2)
    return np.conj(t) if _is_complex(x) else t     # a real conj would be a copy


def _is_complex(x):
    return x.dtype.kind == "c"


def real_dtype(x):
    """The real dtype of ``x``'s precision (float64 for complex128)."""
    return np.dtype(x.dtype.char.lower())


def _eye(n, like):
    return np.eye(n, dtype=real_dtype(like))


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
    return x * np.tril(np.ones((shape(x)[-2], n), dtype=real_dtype(x)), k)


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
    batch=_batch_stacked(lambda: inv_p, (2,)), residuals=("out",))


def _solve_vjp_a(ct, out, a, b):
    return -(solve_p(_T(a), ct) @ _T(out))


solve_p = Primitive(
    "solve", np.linalg.solve,
    jvp=(lambda t, out, a, b: -solve_p(a, t @ out), lambda t, out, a, b: solve_p(a, t)),
    vjp=(_solve_vjp_a, lambda ct, out, a, b: solve_p(_T(a), ct)),
    batch=_batch_stacked(lambda: solve_p, (2, 2)), residuals=(0, "out"))     # not b


# --------------------------------------------------------------------------
# cholesky
# --------------------------------------------------------------------------
# A = L L^H.  With S = (dA + dA^H)/2:  dL = L Phi(L^{-1} S L^{-H}), where
# Phi keeps the strict lower triangle and half the diagonal.
# Transposed: gZ = L^T gL;  gY = Phi(gZ);  gS = L^{-T} gY conj(L)^{-1};
# grad_A = (gS + gS^H)/2.

def _phi(x):
    n = shape(x)[-1]
    weights = np.tri(n, n, -1, dtype=real_dtype(x))   # the strict lower triangle,
    np.fill_diagonal(weights, 0.5)                     # half the diagonal
    return x * weights


def _triangular_solver():
    """``solve(a, b, lower)``, ``a^{-1} b`` for a triangular ``a``: SciPy's triangular solve
    (a quarter of the work of a general ``solve`` with a matrix right-hand side, no
    pivoting) when SciPy is installed, imported on the first Cholesky derivative, never
    by ``import rune``; else ``np.linalg.solve``'s LU, which gives the same values."""
    if not _TRISOLVE:
        try:
            from .scipy_linalg import trisolve_p
            _TRISOLVE.append(lambda a, b, lower: trisolve_p(a, b, lower=lower, unit=False))
        except ImportError:
            _TRISOLVE.append(lambda a, b, lower: solve_p(a, b))
    return _TRISOLVE[0]


_TRISOLVE = []


def _cholesky_jvp(t, out, a, upper):
    L = _H(out) if upper else out
    tri = _triangular_solver()
    y = tri(L, _H(tri(L, _sym(t), True)), True)      # L^{-1} S L^{-H}: S is Hermitian
    dL = L @ _phi(y)
    return _H(dL) if upper else dL


def _cholesky_vjp(ct, out, a, upper):
    L = _H(out) if upper else out
    g_L = _H(ct) if upper else ct
    g_y = _phi(_T(L) @ g_L)
    tri = _triangular_solver()
    # g_s = L^{-T} g_y conj(L)^{-1} = L^{-T} (L^{-H} (L^{-T} g_y)^T)^T
    g_x = tri(_T(L), g_y, False)
    g_s = _T(tri(_H(L), _T(g_x), False))
    return _sym(g_s)


cholesky_p = Primitive(
    "cholesky", lambda a, upper: np.linalg.cholesky(a, upper=upper),
    jvp=(_cholesky_jvp,), vjp=(_cholesky_vjp,),
    batch=_batch_stacked(lambda: cholesky_p, (2,)), residuals=("out",))


# --------------------------------------------------------------------------
# pinv
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
    batch=_batch_stacked(lambda: pinv_p, (2,)), residuals=("args", "out"))
