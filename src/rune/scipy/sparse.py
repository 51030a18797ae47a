"""``scipy.sparse``'s matrices and arrays with traced operands.

* **A constant sparse matrix times a traced vector or matrix**, either side: ``A @ x``,
  ``x @ A``, ``A.dot(x)``, ``A.T @ x``, and ``A * x`` / ``x * A`` of the ``spmatrix``
  classes (a matrix product there).  The product is linear in ``x``: one primitive
  (:data:`rune.primitives.linear_op.linear_op_p`) whose transpose is the product with
  ``A.T``, computed by SciPy.  ``A`` is copied when the product is recorded, so a later
  write into it cannot change a derivative.
* **A sparse matrix with traced values**: ``csr_matrix((data, indices, indptr))``,
  ``csc_*``, ``coo_matrix((data, (i, j)))``, ``csr_array((data, (i, j)))`` (duplicates
  summed, as SciPy does: the values are a constant 0/1 matrix times ``data``) and the
  conversions between these three formats.  A traced *dense* array is refused
  (``NotImplementedError``): SciPy stores its nonzeros only, so the derivative with
  respect to its zeros would be lost.  The object is
  SciPy's own class with a traced ``.data``; its products (with a plain or traced
  operand), ``.T``, ``toarray()``, scalar multiples and SciPy's elementwise methods
  that only rewrite ``.data`` work.  Operations that reach SciPy's compiled code with
  the traced values (``A + B``, ``A.sum_duplicates()``, ``scipy.sparse.linalg`` solves)
  raise ``TracerConversionError``.

A traced value stands for a NumPy array, so its operators give way to sparse matrices
as an ndarray's do (``x @ A`` is ``A.__rmatmul__(x)``).  Registered with
:func:`rune.dispatch.wrap_while_active` on the classes' methods (their code, so every
subclass and every reference sees it), only while a transformation is active.

>>> import numpy as np, scipy.sparse as sp, rune
>>> A = sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 3.0]]))
>>> rune.grad(lambda x: np.sum((A @ x) ** 2))(np.ones(2))
array([ 6., 30.])
>>> f = lambda d: np.sum(sp.csr_array((d, [0, 1, 1], [0, 2, 3]), shape=(2, 2)) @ np.ones(2))
>>> rune.grad(f)(np.array([1.0, 2.0, 3.0]))
array([1., 1., 1.])
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as _sp

from ..core import Tracer
from ..dispatch import asarray_traced, contains_tracer, wrap_while_active
from ..primitives.linear_op import apply_linear

__all__ = ["SparseProduct", "traced_data", "sparse_times", "product_op"]


class SparseProduct:
    """The linear operator ``x -> A @ x`` on the leading axis of ``x`` (a copy of ``A``
    in CSR form; its transpose is made when first needed)."""

    def __init__(self, A, name="scipy.sparse matrix product", copy=True):
        self.A = A.tocsr(copy=copy)
        self._AT = None
        self.name = name
        self.in_shape, self.out_shape = (A.shape[1],), (A.shape[0],)

    @staticmethod
    def _product(A, x):
        rest = x.shape[1:]
        out = A @ x.reshape(x.shape[0], -1)
        return np.asarray(out).reshape((A.shape[0],) + rest)

    def apply(self, x):
        return self._product(self.A, x)

    def apply_T(self, ct):
        if self._AT is None:
            self._AT = self.A.T.tocsr()
        return self._product(self._AT, ct)


def product_op(A):
    """:class:`SparseProduct` of a constant sparse matrix (or a dense 0/1 pattern)."""
    return SparseProduct(A)


def traced_data(A):
    """Whether the sparse matrix ``A`` holds traced values."""
    return isinstance(getattr(A, "data", None), Tracer)


def _entries(A):
    """``(rows, cols)`` of the stored entries of ``A``, in the order of ``A.data``."""
    fmt = A.format
    if A.ndim != 2:
        raise NotImplementedError(f"a {A.ndim}-d scipy.sparse array with traced values")
    if fmt == "coo":
        return np.asarray(A.coords[0]), np.asarray(A.coords[1])
    if fmt in ("csr", "csc"):
        major = np.repeat(np.arange(len(A.indptr) - 1), np.diff(A.indptr))
        minor = np.asarray(A.indices)
        return (major, minor) if fmt == "csr" else (minor, major)
    raise NotImplementedError(
        f"scipy.sparse: a {fmt!r} matrix with traced values (rune supports csr, csc and "
        f"coo; convert with .tocsr() before the values are traced)")


def _scatter(index, size):
    """The constant operator ``v -> y`` with ``y[index[k]] += v[k]``."""
    n = len(index)
    P = _sp.csr_matrix((np.ones(n), (np.asarray(index), np.arange(n))), shape=(size, n))
    return SparseProduct(P, "scipy.sparse scatter", copy=False)


# --------------------------------------------------------------------------
# Products
# --------------------------------------------------------------------------

def _as_operand(other):
    if isinstance(other, Tracer):
        return other
    if type(other) in (list, tuple) and contains_tracer(other):
        return asarray_traced(other)
    return np.asarray(other)


def sparse_times(A, x):
    """``A @ x`` for a 2-d sparse ``A`` (constant or with traced values) and a dense
    ``x`` of shape ``(n,)`` or ``(n, k)``, with SciPy's checks and result shapes."""
    M, N = A.shape
    x = _as_operand(x)
    if x.ndim == 0:
        return A._mul_scalar(x)
    if x.ndim > 2:
        raise ValueError("could not interpret dimensions")
    if x.shape[0] != N:
        sig = "(n,k={}),(k={},1?)->(n,1?)" if x.ndim == 1 else "(n,k={}),(k={},m)->(n,m)"
        raise ValueError("matmul: dimension mismatch with signature " +
                         sig.format(N, x.shape[0]))
    if not traced_data(A):
        return apply_linear(SparseProduct(A), x)
    rows, cols = _entries(A)
    data = A.data
    taken = x[cols]
    v = data * taken if x.ndim == 1 else np.expand_dims(data, 1) * taken
    return apply_linear(_scatter(rows, M), v)


def _matmul_dispatch(orig):
    def _matmul_dispatch(self, other):
        if isinstance(other, Tracer) or traced_data(self) or (
                type(other) in (list, tuple) and contains_tracer(other)):
            if _sp.issparse(other):
                raise NotImplementedError(
                    "scipy.sparse: a product of two sparse matrices, one with traced "
                    "values; convert one with .toarray()")
            if self.ndim != 2:
                raise NotImplementedError(
                    "scipy.sparse: products of 1-d sparse arrays with traced operands")
            return sparse_times(self, other)
        return orig(self, other)
    return _matmul_dispatch


# --------------------------------------------------------------------------
# Matrices with traced values
# --------------------------------------------------------------------------

def _placeholder(data, dtype):
    shape = getattr(data, "shape", np.shape(data))
    return np.ones(shape, dtype=np.result_type(dtype if dtype is not None else data.dtype))


def _set_data(self, data):
    if data.dtype != self.data.dtype:
        data = data.astype(self.data.dtype)
    self.data = data


def _compressed_init(orig):
    """``_cs_matrix.__init__`` (CSR and CSC) with traced values: SciPy builds the
    structure from stand-in values; the traced values are then put where SciPy's
    construction puts them (summed where entries repeat)."""
    def __init__(self, arg1, *args, **kwargs):
        _refuse_dense(self, arg1)
        if _sp.issparse(arg1) and traced_data(arg1):
            coo = arg1 if arg1.format == "coo" else arg1.tocoo()
            arg1 = (coo.data, tuple(coo.coords))
            kwargs.setdefault("shape", coo.shape)
            args = ()
        if not (isinstance(arg1, tuple) and len(arg1) in (2, 3)
                and isinstance(arg1[0], Tracer)):
            return orig(self, arg1, *args, **kwargs)
        data = arg1[0]
        if data.ndim != 1:
            raise ValueError(f"{type(self).__name__}: data must be 1-d, got shape "
                             f"{tuple(data.shape)}")
        dtype = kwargs.get("dtype", args[1] if len(args) > 1 else None)
        orig(self, (_placeholder(data, dtype),) + tuple(arg1[1:]), *args, **kwargs)
        if len(arg1) == 3:                            # (data, indices, indptr): as given
            _set_data(self, data[:self.nnz])
            return
        rows, cols = (np.asarray(c) for c in arg1[1])
        M, N = self.shape
        major, minor = _entries(self)
        if self.format == "csr":
            out_keys, in_keys = major * N + minor, rows * N + cols
        else:
            out_keys, in_keys = minor * M + major, cols * M + rows
        if np.any(np.diff(out_keys) <= 0):    # SciPy sums duplicates and sorts: always so
            raise NotImplementedError(f"{type(self).__name__}: traced values in a "
                                      f"non-canonical structure")
        pos = np.searchsorted(out_keys, in_keys)
        _set_data(self, apply_linear(_scatter(pos, len(out_keys)), data))
    return __init__


def _refuse_dense(self, arg1):
    if isinstance(arg1, Tracer) and arg1.dtype.kind in "fc":
        raise NotImplementedError(
            f"{type(self).__name__}(a traced dense array): which entries are stored would "
            f"depend on the traced values (the zeros are dropped), so the derivative with "
            f"respect to them would be lost; build it from its entries, "
            f"{type(self).__name__}((data, (row, col)), shape=...), with the pattern fixed")


def _coo_init(orig):
    def __init__(self, arg1, *args, **kwargs):
        _refuse_dense(self, arg1)
        return orig(self, arg1, *args, **kwargs)
    return __init__


def _to_compressed(fmt):
    def make(orig):
        def convert(self, copy=False):
            if traced_data(self):
                coo = self if self.format == "coo" else self.tocoo()
                container = self._csr_container if fmt == "csr" else self._csc_container
                return container(coo)
            return orig(self, copy=copy)
        return convert
    return make


def _toarray(orig):
    def toarray(self, order=None, out=None):
        if not traced_data(self):
            return orig(self, order=order, out=out)
        if out is not None:
            raise NotImplementedError(
                f"{type(self).__name__}.toarray(out=...) with traced values: a traced "
                f"result cannot be written into a plain array; call toarray() without out")
        if self.ndim != 2:
            raise NotImplementedError("toarray of a 1-d sparse array with traced values")
        rows, cols = _entries(self)
        M, N = self.shape
        flat = apply_linear(_scatter(rows * N + cols, M * N), self.data)
        return np.reshape(flat, (M, N))
    return toarray


def _divide(orig):
    """``A / s`` for a traced 0-d ``s`` (SciPy's test for a scalar does not know a traced
    one): ``A`` times ``1 / s``; a traced array ``x``: ``A.multiply(1 / x)``, as SciPy."""
    def _divide(self, other, *, rdivide=False):
        if isinstance(other, Tracer) and not rdivide:
            other = 1.0 / other
            A = self.astype(np.float64) if np.can_cast(self.dtype, np.float64) else self
            return A._mul_scalar(other) if other.ndim == 0 else A.multiply(other)
        return orig(self, other, rdivide=rdivide)
    return _divide


wrap_while_active("scipy.sparse", "csr_matrix._divide", _divide)
for _cls in ("csr_matrix", "coo_matrix"):
    wrap_while_active("scipy.sparse", f"{_cls}._matmul_dispatch", _matmul_dispatch)
    wrap_while_active("scipy.sparse", f"{_cls}.toarray", _toarray)
wrap_while_active("scipy.sparse", "csr_matrix.__init__", _compressed_init)
wrap_while_active("scipy.sparse", "coo_matrix.__init__", _coo_init)
wrap_while_active("scipy.sparse", "coo_matrix.tocsr", _to_compressed("csr"))
wrap_while_active("scipy.sparse", "coo_matrix.tocsc", _to_compressed("csc"))
wrap_while_active("scipy.sparse", "csr_matrix.tocsc", _to_compressed("csc"))
wrap_while_active("scipy.sparse", "csc_matrix.tocsr", _to_compressed("csr"))
