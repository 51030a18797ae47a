"""The ``np.linalg`` surface, in every mode, on stacks ``(..., m, n)``, real and complex.

Each function maps to a primitive of :mod:`rune.primitives.linalg` or
:mod:`rune.primitives.decompositions` (``inv``, ``solve``, ``det``, ``slogdet``,
``cholesky``, ``eigh``, ``eig``, ``svd``, ``qr``, ``pinv``), with NumPy's result
types, or is a composition of those and of the elementwise, reduction and
contraction primitives: ``eigvalsh``, ``eigvals``, ``svdvals``, ``norm``,
``vector_norm``, ``matrix_norm``, ``lstsq``, ``matrix_power``, ``multi_dot``,
``cond``, ``matrix_rank`` (no derivative) and ``tensorsolve``.
"""

from __future__ import annotations

import collections
import operator

import numpy as np

from ..dispatch import implements, OutRefusedError
from ..primitives._util import ndim, shape, normalize_axis
from ..concrete import decide, lowest
from ..core import _peek
from ..primitives import solves
from ..primitives.linalg import inv_p, solve_p, cholesky_p, pinv_p, real_dtype
from ..primitives.decompositions import det_p, slogdet_p, eigh_p, eig_p, svd_p, qr_p
from ._util import operand

try:   # NumPy >= 2: the named tuples NumPy itself returns
    from numpy.linalg._linalg import EigResult, EighResult, QRResult, SVDResult, SlogdetResult
except ImportError:  # pragma: no cover - NumPy 1.x
    EigResult = collections.namedtuple("EigResult", "eigenvalues eigenvectors")
    EighResult = collections.namedtuple("EighResult", "eigenvalues eigenvectors")
    QRResult = collections.namedtuple("QRResult", "Q R")
    SVDResult = collections.namedtuple("SVDResult", "U S Vh")
    SlogdetResult = collections.namedtuple("SlogdetResult", "sign logabsdet")


# --------------------------------------------------------------------------
# The primitives, with NumPy's argument handling and result types
# --------------------------------------------------------------------------

@implements(np.linalg.inv)
def inv(a):
    return inv_p(a)


@implements(np.linalg.solve)
def solve(a, b):
    """``np.linalg.solve`` under a transformation: one factorization of ``a``, made here,
    that the derivatives reuse (:mod:`rune.primitives.solves`), or none at all when ``a``
    is exactly triangular.

    >>> import numpy as np, rune
    >>> a = np.array([[4.0, 1.0], [2.0, 3.0]])
    >>> g = rune.grad(lambda a: np.sum(np.linalg.solve(a, np.ones(2))))(a)
    >>> bool(np.allclose(g, -np.linalg.solve(a.T, np.ones(2))[:, None]
    ...                  * np.linalg.solve(a, np.ones(2))))
    True
    """
    a, b = operand(a), operand(b)
    if ndim(b) == 1:     # NumPy 2: b is a vector only when it is 1-D
        return np.squeeze(_solve(a, np.expand_dims(b, -1)), -1)
    return _solve(a, b)


def _solve(a, b):
    """A single matrix of a LAPACK dtype, unbatched, with a matching right-hand side: an
    exactly triangular one is solved as such, any other through its LU factors (SciPy's
    LAPACK, when installed).  Everything else (stacks, vmap over ``a``, Dask, an error
    NumPy should raise): ``np.linalg.solve``'s own primitive."""
    av, batched = _peek(a, False)      # (their types and shapes: no decision on values)
    bv, _ = _peek(b, False)
    if (batched or type(av) is not np.ndarray or type(bv) is not np.ndarray or av.ndim != 2
            or bv.ndim < 2 or not 0 < av.shape[0] == av.shape[1] == bv.shape[-2]
            or bv.size == 0 or solves.lapack() is None):
        return solve_p(a, b)
    dt = np.result_type(av.dtype, bv.dtype)
    if dt.char not in "fdFD":
        return solve_p(a, b)
    code = decide(_triangle_code, a)        # (recorded and guarded under rune.jit)
    if code:
        return solves.tri_solve_p(a, b, lower=code == 1, trans=0)
    lu, piv = solves.lu_factor_p(lowest(a).astype(dt, copy=False))    # (recorded too)
    return solves.lu_solve(a, lu, piv, b)


def _triangle_code(v):
    """1 (2) when the square matrix ``v`` is exactly lower (upper) triangular, else 0."""
    lower = _triangle(v)
    return 0 if lower is None else 1 if lower else 2


def _triangle(v):
    """True (False) when every entry of the square matrix ``v`` above (below) its diagonal
    is exactly zero, else None: the corners first, so a full matrix costs nothing more."""
    n = v.shape[0]
    if n < 2:
        return None
    if v[0, n - 1] == 0 and _zero_above(v):
        return True
    if v[n - 1, 0] == 0 and _zero_above(v.T):
        return False
    return None


_MASKS = {}
_MASK_MAX = 2048     # bigger matrices are checked in blocks of rows (no n x n temporary)


def _zero_above(v):
    n = v.shape[0]
    if n <= _MASK_MAX:
        m = _MASKS.get(n)
        if m is None:
            if len(_MASKS) > 8:
                _MASKS.clear()
            m = _MASKS[n] = np.triu(np.ones((n, n), dtype=bool), 1)
        return not v[m].any()
    step = _MASK_MAX // 4
    for i in range(0, n, step):
        j = min(i + step, n)
        if v[i:j, j:].any() or np.triu(v[i:j, i:j], 1).any():
            return False
    return True


@implements(np.linalg.det)
def det(a):
    return det_p(a)


@implements(np.linalg.slogdet)
def slogdet(a):
    return SlogdetResult(*slogdet_p(a))


@implements(np.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    return cholesky_p(a, upper=bool(upper))


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


@implements(np.linalg.eig)
def eig(a):
    return EigResult(*eig_p(a))


@implements(np.linalg.eigvals)
def eigvals(a):
    return eig_p(a)[0]


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


def _svdvals(x):
    return svd_p(x, hermitian=False)[1]


if hasattr(np.linalg, "svdvals"):
    implements(np.linalg.svdvals)(lambda x, /: _svdvals(x))


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
# pinv, lstsq
# --------------------------------------------------------------------------

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
    a, b = operand(a), operand(b)
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
        resids = np.zeros((0,), dtype=real_dtype(np.empty(0, dtype)))
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
    arrays = [operand(x) for x in arrays]
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
        return np.sum(x != 0, axis=axis, keepdims=keepdims).astype(real_dtype(x))
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
    x = operand(x)
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
        x = operand(x)
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
        x = operand(x)
        if x.dtype.kind not in "fc":
            x = x.astype(float)
        nd = ndim(x)
        return _matrix_norm(x, ord, nd - 2, nd - 1, keepdims)


# --------------------------------------------------------------------------
# cond, matrix_rank, tensorsolve (compositions; NumPy's own versions call C directly)
# --------------------------------------------------------------------------

@implements(np.linalg.cond)
def cond(x, p=None):
    x = operand(x)
    if p is None or p == 2 or p == -2:
        s = _svdvals(x)
        big, small = np.max(s, axis=-1), np.min(s, axis=-1)
        return big / small if p != -2 else small / big
    return norm(x, p, axis=(-2, -1)) * norm(inv_p(x), p, axis=(-2, -1))


@implements(np.linalg.matrix_rank)
def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """The number of singular values above the tolerance (an integer: no derivative)."""
    A = operand(A)
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
    a, b = operand(a), operand(b)
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
