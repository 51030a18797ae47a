"""``scipy.linalg`` on traced values, with SciPy's values and conventions.

While a transformation is active, SciPy's modules see these functions in place of
SciPy's own (registered with :func:`rune.dispatch.wrap_while_active`); each calls
rune's implementation when an argument is traced and SciPy's function otherwise.  The
user's code is unchanged: ``rune.grad(f)`` of an ``f`` that calls
``scipy.linalg.cho_solve`` just works.  This module is imported (and SciPy with it) only
when a transformation starts while ``scipy.linalg`` is already imported.

Everything is written, like user code, with ``np.linalg`` calls (whose rules rune has) and
the primitives of :mod:`rune.primitives.scipy_linalg` (triangular solves, LU, ``expm``,
``sqrtm``, ``logm``).  Functions that read one triangle of their input (``cholesky``,
``cho_factor``, ``eigh``, ``solve(assume_a='pos'|'sym'|'her')``, ``inv(assume_a=...)``,
``solve_triangular``, ``cho_solve``) are differentiated as SciPy computes them: as
functions of that triangle only, so their derivatives match finite differences of SciPy's
own function in every direction.  Decompositions are defined up to a gauge (the sign or
phase of an eigen- or singular vector): only gauge-invariant functions of them have a
meaningful derivative, as with ``np.linalg``.

>>> import numpy as np, scipy.linalg, rune
>>> a = np.array([[4.0, 1.0], [1.0, 3.0]])
>>> logdet = lambda a: 2 * np.sum(np.log(np.diag(scipy.linalg.cholesky(a))))
>>> rune.grad(logdet)(a) * 11 + 0.0     # the upper triangle is read: 2 inv(a) there
array([[ 3., -2.],
       [ 0.,  4.]])
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from ..concrete import decide
from ..core import Tracer, _peek, stop_leaf
from ..dispatch import _iter_tracers, wrap_while_active
from ..primitives.scipy_linalg import (trisolve_p, lu_p, piv_to_perm_p, expm_p, sqrtm_p,
                                       logm_p, sylvester_p, T, tri, take_rows)

__all__ = ["cholesky", "cho_factor", "cho_solve", "solve_triangular", "lu_factor",
           "lu_solve", "lu", "solve", "inv", "det", "eigh", "svd", "qr", "expm", "sqrtm",
           "logm", "block_diag", "solve_banded", "solve_sylvester"]


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

def _H(x):
    return np.conj(T(x)) if x.dtype.kind == "c" else T(x)


def _positive_definite(v):
    np.linalg.cholesky(v)       # (NumPy's LinAlgError when it is not, as SciPy's solve)
    return True


def _all_finite(v):
    return bool(np.all(np.isfinite(v)))


def _array(name, x, check_finite=False):
    """``x`` as an array (traced or plain) of a LAPACK dtype, as SciPy converts it."""
    if not isinstance(x, Tracer):
        x = np.asarray(x)
    if x.dtype.kind not in "fc":
        if x.dtype.kind not in "biu":
            raise TypeError(f"scipy.linalg.{name}: unsupported array dtype {x.dtype}")
        x = x.astype(np.float64)
    if check_finite:
        if not decide(_all_finite, x):
            raise ValueError(f"scipy.linalg.{name}: array must not contain infs or NaNs")
    return x


def _matrix(name, a, check_finite, square=True):
    a = _array(name, a, check_finite)
    if a.ndim < 2:
        raise ValueError(f"scipy.linalg.{name}: expected at least 2 dimensions, got "
                         f"an array of shape {tuple(a.shape)}")
    if square and a.shape[-1] != a.shape[-2]:
        raise ValueError(f"scipy.linalg.{name}: expected a square matrix, got shape "
                         f"{tuple(a.shape)}")
    return a


def _eye(n, x):
    return np.eye(n, dtype=np.dtype(x.dtype.char.lower()))


def _from_triangle(a, lower, hermitian=True):
    """The symmetric (Hermitian) matrix that the triangle ``lower`` of ``a`` stands for:
    what LAPACK reads (the imaginary part of a Hermitian diagonal is ignored)."""
    strict = tri(a, lower, 1)
    diag = a * _eye(a.shape[-1], a)
    if hermitian and a.dtype.kind == "c":
        return strict + _H(strict) + np.real(diag)
    return strict + T(strict) + diag


def _rhs(name, a, b, check_finite):
    """``b`` as a stack of columns lined up with ``a``, and whether it was a vector."""
    b = _array(name, b, check_finite)
    vector = b.ndim == 1
    if vector:
        b = np.expand_dims(b, -1)
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(f"scipy.linalg.{name}: incompatible shapes {tuple(a.shape)} "
                         f"and {tuple(b.shape)}")
    if a.dtype.kind == "c" and b.dtype.kind != "c":
        b = b.astype(a.dtype)
    return b, vector


def _out(x, vector):
    return np.squeeze(x, -1) if vector else x


def _trans(name, trans):
    t = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}.get(trans)
    if t is None:
        raise ValueError(f"scipy.linalg.{name}: invalid trans argument {trans!r}; use "
                         f"0/'N', 1/'T' or 2/'C'")
    return t


def _tsolve(a, b, lower, unit, trans=0):
    """``op(A)^{-1} b``, ``A`` triangular, ``op`` identity / transpose / conjugate transpose."""
    if trans == 0:
        return trisolve_p(a, b, lower=bool(lower), unit=bool(unit))
    a = T(a) if trans == 1 or a.dtype.kind != "c" else _H(a)
    return trisolve_p(a, b, lower=not lower, unit=bool(unit))


# --------------------------------------------------------------------------
# Cholesky
# --------------------------------------------------------------------------

def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cholesky``: the factor ``L`` (``lower``) or ``U = L^H`` of the
    Hermitian matrix stored in that triangle of ``a``."""
    a = _matrix("cholesky", a, check_finite)
    factor = np.linalg.cholesky(_from_triangle(a, lower))
    return factor if lower else _H(factor)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cho_factor``: ``(c, lower)``, the factor in that triangle of ``c`` and
    ``a``'s own entries in the other (as LAPACK leaves them)."""
    a = _matrix("cho_factor", a, check_finite)
    return cholesky(a, lower, check_finite=False) + tri(a, not lower, 1), bool(lower)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``scipy.linalg.cho_solve``: ``A^{-1} b`` from ``cho_factor``'s ``(c, lower)``."""
    try:
        c, lower = c_and_lower
    except (TypeError, ValueError):
        raise ValueError("scipy.linalg.cho_solve: c_and_lower must be the (c, lower) "
                         "tuple that cho_factor returns") from None
    c = _matrix("cho_solve", c, check_finite)
    b, vector = _rhs("cho_solve", c, b, check_finite)
    if lower:       # A = L L^H
        x = _tsolve(c, _tsolve(c, b, True, False), True, False, trans=2)
    else:           # A = U^H U
        x = _tsolve(c, _tsolve(c, b, False, False, trans=2), False, False)
    return _out(x, vector)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """``scipy.linalg.solve_triangular``: ``op(a)^{-1} b`` reading one triangle of ``a``."""
    a = _matrix("solve_triangular", a, check_finite)
    b, vector = _rhs("solve_triangular", a, b, check_finite)
    return _out(_tsolve(a, b, lower, unit_diagonal, _trans("solve_triangular", trans)),
                vector)


# --------------------------------------------------------------------------
# LU
# --------------------------------------------------------------------------

def _lu(name, a, check_finite):
    a = _matrix(name, a, check_finite, square=False)
    return a, lu_p(a)


def lu_factor(a, overwrite_a=False, check_finite=True):
    """``scipy.linalg.lu_factor``: ``(lu, piv)`` with LAPACK's pivot indices."""
    _, (packed, piv, _) = _lu("lu_factor", a, check_finite)
    return packed, stop_leaf(piv)


def _split(packed):
    """``L`` (m x k, unit lower) and ``U`` (k x n, upper) of a packed ``lu``, k = min(m, n)."""
    m, n = packed.shape[-2:]
    k = min(m, n)
    unit = np.eye(m, k, dtype=np.dtype(packed.dtype.char.lower()))
    return tri(packed[..., :, :k], True, 1) + unit, tri(packed[..., :k, :], False)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """``scipy.linalg.lu_solve``: ``op(A)^{-1} b`` from ``lu_factor``'s ``(lu, piv)``."""
    try:
        packed, piv = lu_and_piv
    except (TypeError, ValueError):
        raise ValueError("scipy.linalg.lu_solve: lu_and_piv must be the (lu, piv) tuple "
                         "that lu_factor returns") from None
    packed = _matrix("lu_solve", packed, check_finite)     # (square, as in SciPy)
    b, vector = _rhs("lu_solve", packed, b, check_finite)
    trans = _trans("lu_solve", trans)
    perm = piv_to_perm_p(stop_leaf(piv) if isinstance(piv, Tracer) else np.asarray(piv))
    if trans == 0:      # A[perm] = L U
        x = _tsolve(packed, _tsolve(packed, take_rows(b, perm), True, True), False, False)
    else:               # op(A) = op(U) op(L) Q with (Q x) = x[perm]
        y = _tsolve(packed, _tsolve(packed, b, False, False, trans), True, True, trans)
        x = take_rows(y, np.argsort(perm, axis=-1))
    return _out(x, vector)


def lu(a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    """``scipy.linalg.lu``: ``(P, L, U)`` with ``a = P @ L @ U`` (``(P @ L, U)`` with
    ``permute_l``; ``P`` as row indices ``p``, ``a = L[p] @ U``, with ``p_indices``)."""
    a, (packed, _, perm) = _lu("lu", a, check_finite)
    low, up = _split(packed)
    iperm = np.argsort(stop_leaf(perm), axis=-1)
    if permute_l:
        return take_rows(low, iperm), up
    if p_indices:
        return iperm, low, up
    m = a.shape[-2]
    p = np.expand_dims(stop_leaf(perm), -2) == np.expand_dims(np.arange(m), -1)
    p = p.astype(np.dtype(a.dtype.char.lower()))
    return p, low, up


# --------------------------------------------------------------------------
# solve, inv, det
# --------------------------------------------------------------------------

_STRUCTURES = {None: "gen", "general": "gen", "gen": "gen", "banded": "gen",
               "diagonal": "diagonal", "tridiagonal": "tridiagonal",
               "upper triangular": "upper", "lower triangular": "lower",
               "pos": "pos", "positive definite": "pos", "sym": "sym", "symmetric": "sym",
               "her": "her", "hermitian": "her"}


def _structure(name, assume_a, allowed):
    s = _STRUCTURES.get(assume_a) if isinstance(assume_a, (str, type(None))) else None
    if s is None or s not in allowed:
        raise ValueError(f"scipy.linalg.{name}: {assume_a!r} is not a recognized matrix "
                         f"structure")
    return s


def _structured(a, s, lower):
    """The matrix SciPy's solver for structure ``s`` reads (for the symmetric ones)."""
    if s in ("sym", "her", "pos"):
        return _from_triangle(a, lower, hermitian=s != "sym")
    if s == "tridiagonal":
        return tri(tri(a, True, -1), False, -1)
    return a


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a=None, transposed=False):
    """``scipy.linalg.solve``: ``a^{-1} b`` for every ``assume_a`` structure (each read as
    SciPy reads it: one triangle for ``'sym'``/``'her'``/``'pos'``, the band for
    ``'tridiagonal'``, the diagonal for ``'diagonal'``)."""
    s = _structure("solve", assume_a, set(_STRUCTURES.values()))
    a = _matrix("solve", a, check_finite)
    b, vector = _rhs("solve", a, b, check_finite)
    if transposed:
        if a.dtype.kind == "c":
            raise NotImplementedError("scipy.linalg.solve can currently not solve a^T x = b "
                                      "or a^H x = b for complex matrices.")
    if s in ("upper", "lower"):
        x = _tsolve(a, b, s == "lower", False, 1 if transposed else 0)
    elif s == "diagonal":
        d = np.sum(a * _eye(a.shape[-1], a), axis=-1)
        x = b / np.expand_dims(d, -1)
    else:
        m = _structured(a, s, lower)
        if s == "pos":      # SciPy factors it: a matrix that is not positive definite fails
            _, batched = _peek(m, False)
            if not batched:     # (under vmap each example is not at hand: not checked)
                decide(_positive_definite, m)
        x = np.linalg.solve(T(m) if transposed else m, b)
    return _out(x, vector)


def inv(a, overwrite_a=False, check_finite=True, *, assume_a=None, lower=False):
    """``scipy.linalg.inv``, for every ``assume_a`` structure (``'diagonal'`` gives the
    documented ``diag(1 / diag(a))``)."""
    s = _structure("inv", assume_a, {"gen", "diagonal", "upper", "lower", "pos", "sym", "her"})
    a = _matrix("inv", a, check_finite)
    n = a.shape[-1]
    if s == "diagonal":
        return (1 / np.sum(a * _eye(n, a), axis=-1))[..., None] * _eye(n, a)
    if s in ("upper", "lower"):
        return _tsolve(a, np.zeros(tuple(a.shape), a.dtype) + _eye(n, a), s == "lower", False)
    return np.linalg.inv(_structured(a, s, lower))


def det(a, overwrite_a=False, check_finite=True):
    """``scipy.linalg.det``."""
    return np.linalg.det(_matrix("det", a, check_finite))


# --------------------------------------------------------------------------
# eigh, svd, qr
# --------------------------------------------------------------------------

def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """``scipy.linalg.eigh``: standard and generalized (``b``, ``type`` 1, 2, 3) Hermitian
    eigenproblems, reading the triangle ``lower``; ``subset_by_index`` selects."""
    if subset_by_value is not None:
        raise NotImplementedError(
            "scipy.linalg.eigh(..., subset_by_value=...) is not supported on traced values "
            "(the number of eigenvalues returned depends on the values); compute all of "
            "them and select with np.where, or use subset_by_index")
    a = _from_triangle(_matrix("eigh", a, check_finite), lower)
    if b is None:
        w, v = np.linalg.eigh(a)
    else:
        if type not in (1, 2, 3):
            raise ValueError(f"scipy.linalg.eigh: type must be 1, 2 or 3, got {type!r}")
        b = _matrix("eigh", b, check_finite)
        fac = np.linalg.cholesky(_from_triangle(b, lower))
        if type == 1:       # A v = w B v: C = L^{-1} A L^{-H}, v = L^{-H} u
            c = _tsolve(fac, _H(_tsolve(fac, a, True, False)), True, False)
        else:               # A B v = w v / B A v = w v: C = L^H A L
            c = _H(fac) @ a @ fac
        w, u = np.linalg.eigh(_from_triangle(c, True))
        v = _tsolve(fac, u, True, False, trans=2) if type in (1, 2) else fac @ u
    if subset_by_index is not None:
        lo, hi = (operator.index(i) for i in subset_by_index)
        n = a.shape[-1]
        if not 0 <= lo <= hi < n:
            raise ValueError(f"scipy.linalg.eigh: requested eigenvalue indices "
                             f"{subset_by_index} are not valid for a matrix of size {n}")
        w, v = w[..., lo:hi + 1], v[..., lo:hi + 1]
    return w if eigvals_only else (w, v)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    """``scipy.linalg.svd`` (``full_matrices=True`` only for square matrices: the extra
    singular vectors of a non-square one are not unique, so not differentiable)."""
    if lapack_driver not in ("gesdd", "gesvd"):
        raise ValueError(f"scipy.linalg.svd: lapack_driver must be 'gesdd' or 'gesvd', got "
                         f"{lapack_driver!r}")
    a = _matrix("svd", a, check_finite, square=False)
    if not compute_uv:
        return np.linalg.svd(a, compute_uv=False)
    if full_matrices and a.shape[-1] != a.shape[-2]:
        raise NotImplementedError(
            "scipy.linalg.svd(a, full_matrices=True) of a non-square matrix is not "
            "differentiable (the extra singular vectors are not unique); use "
            "full_matrices=False")
    return tuple(np.linalg.svd(a, full_matrices=False))


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """``scipy.linalg.qr`` in modes ``'full'`` (for ``m <= n``), ``'economic'`` and ``'r'``."""
    if pivoting:
        raise NotImplementedError("scipy.linalg.qr(..., pivoting=True) is not supported on "
                                  "traced values (the pivots depend on the values)")
    if mode not in ("full", "economic", "r", "raw"):
        raise ValueError(f"scipy.linalg.qr: mode argument must be one of ['full', 'r', "
                         f"'economic', 'raw'], got {mode!r}")
    if mode == "raw":
        raise NotImplementedError("scipy.linalg.qr(..., mode='raw') (LAPACK's Householder "
                                  "reflectors) is not supported on traced values")
    a = _matrix("qr", a, check_finite, square=False)
    m, n = a.shape[-2:]
    q, r = np.linalg.qr(a)
    if mode == "r":
        if m > n:
            r = np.concatenate([r, np.zeros(tuple(r.shape[:-2]) + (m - n, n), r.dtype)], -2)
        return (r,)
    if mode == "full" and m > n:
        raise NotImplementedError(
            "scipy.linalg.qr(a, mode='full') of a tall matrix is not differentiable (the "
            "extra columns of Q are not unique); use mode='economic'")
    return q, r


# --------------------------------------------------------------------------
# Matrix functions and block_diag
# --------------------------------------------------------------------------

def expm(A):
    """``scipy.linalg.expm`` (its derivative is the Fréchet derivative)."""
    a = _array("expm", A)
    if a.ndim == 0 or a.shape[-1] != a.shape[-2]:
        raise ValueError("scipy.linalg.expm: expected a square matrix or a stack of them, "
                         f"got shape {tuple(a.shape)}")
    return expm_p(a)


def sqrtm(A, disp=None, blocksize=None):
    """``scipy.linalg.sqrtm``, the principal square root."""
    return sqrtm_p(_matrix("sqrtm", A, True))


def logm(A, disp=None):
    """``scipy.linalg.logm``, the principal logarithm."""
    return logm_p(_matrix("logm", A, True))


def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """``scipy.linalg.solve_banded``: ``ab`` in LAPACK's band storage
    (``ab[u + i - j, j] = a[i, j]``) made the dense ``a``, then solved; the entries of
    ``ab`` outside the band are not read, so their derivative is 0."""
    nlower, nupper = (operator.index(k) for k in l_and_u)
    ab = _array("solve_banded", ab, check_finite)
    if ab.ndim != 2 or ab.shape[0] != nlower + nupper + 1:
        raise ValueError(f"invalid values for the number of lower and upper diagonals: "
                         f"l+u+1 ({nlower + nupper + 1}) does not equal ab.shape[0] "
                         f"({ab.shape[0] if ab.ndim else ab.shape})")
    n = ab.shape[1]
    a = None
    for k in range(-nlower, nupper + 1):
        if abs(k) >= n:
            continue
        d = np.diag(ab[nupper - k, max(k, 0):n + min(k, 0)], k)
        a = d if a is None else a + d
    b, vector = _rhs("solve_banded", a, b, check_finite)
    return _out(np.linalg.solve(a, b), vector)


def solve_sylvester(a, b, q):
    """``scipy.linalg.solve_sylvester``: ``X`` with ``A X + X B = Q``."""
    a = _matrix("solve_sylvester", a, False)
    b = _matrix("solve_sylvester", b, False)
    q = _matrix("solve_sylvester", q, False, square=False)
    return sylvester_p(a, b, q)


def block_diag(*arrs):
    """``scipy.linalg.block_diag``: the arrays (as 2-D) on the diagonal of one matrix."""
    if not arrs:
        return np.empty((1, 0))
    blocks = []
    for k, x in enumerate(arrs):
        x = x if isinstance(x, Tracer) else np.asarray(x)
        if x.ndim > 2:
            raise ValueError(f"scipy.linalg.block_diag: arguments in the following "
                             f"positions have dimension greater than 2: [{k}]")
        blocks.append(np.reshape(x, (1,) * (2 - x.ndim) + tuple(x.shape)) if x.ndim < 2 else x)
    dtype = np.result_type(*[b.dtype for b in blocks])
    widths = [b.shape[1] for b in blocks]
    total = sum(widths)
    rows, start = [], 0
    for b, w in zip(blocks, widths):
        h = b.shape[0]
        rows.append(np.concatenate([np.zeros((h, start), dtype), b.astype(dtype),
                                    np.zeros((h, total - start - w), dtype)], axis=1))
        start += w
    return np.concatenate(rows, axis=0)


# --------------------------------------------------------------------------
# Registration: SciPy's modules see these while a transformation is active
# --------------------------------------------------------------------------

def _has_tracer(args, kwargs):
    for _ in _iter_tracers((args, kwargs)):
        return True
    return False


def traced_or_original(rune_fn):
    """A ``make_wrapper`` for :func:`wrap_while_active`: ``rune_fn`` when an argument is
    traced, SciPy's ``orig`` otherwise."""
    def make_wrapper(orig):
        @functools.wraps(orig)
        def wrapper(*args, **kwargs):
            if _has_tracer(args, kwargs):
                return rune_fn(*args, **kwargs)
            return orig(*args, **kwargs)
        return wrapper
    return make_wrapper


for _name in __all__:
    wrap_while_active("scipy.linalg", _name, traced_or_original(globals()[_name]))
