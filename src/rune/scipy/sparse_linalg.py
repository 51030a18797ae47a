"""``scipy.sparse.linalg``'s solvers and ``expm_multiply`` with a traced right-hand side.

The solution ``x = A^{-1} b`` of a constant matrix ``A`` is linear in ``b``: one primitive
(:data:`rune.primitives.linear_op.linear_op_p`) computed by SciPy's own function, whose
transpose is the same solve with ``A^T`` (``b``'s cotangent is ``A^{-T} x̄``) and whose
tangent is the solve of the tangent.  So every transformation and every order works:

* ``spsolve``, ``spsolve_triangular``, ``splu(A).solve(b, trans)``, ``spilu`` (the
  incomplete factor's own solve: exactly linear too), ``factorized(A)(b)``;
* the iterative solvers ``cg``, ``minres`` (``A`` symmetric: the transpose solve is the
  same solve), ``gmres``, ``bicgstab``, ``bicg``, ``cgs``, ``lgmres``, ``gcrotmk``,
  ``tfqmr``, ``qmr``: the tangent and cotangent solves run the *same* solver with the
  user's ``rtol``/``atol``/``maxiter``/preconditioner (transposed for the adjoint), so
  derivatives are as accurate as the solve (about ``rtol``), not exact.  ``x0`` and
  ``callback`` serve the primal solve only; ``info`` is that solve's.  A derivative solve
  that breaks down (the BiCG family often does on a unit right-hand side, as ``jacrev``
  asks) is redone by ``gmres`` at the same tolerance; one that still fails raises
  ``RuntimeError``.  A ``LinearOperator`` ``A`` needs ``rmatvec`` for reverse mode
  (nonsymmetric solvers);
* ``expm_multiply(A, B, ...)`` (also with ``start/stop/num``): the transpose of
  ``B -> exp(tA) B`` is ``exp(tA^T)``.

Derivatives with respect to ``A`` are not supported: a traced ``A`` (a sparse matrix with
traced values) raises ``NotImplementedError`` naming the function.  ``splu``/``spilu``/
``factorized`` return, inside a transformation, a small object that forwards to SciPy's
``SuperLU`` (its C ``solve`` cannot take a traced value).

>>> import numpy as np, scipy.sparse as sp, scipy.sparse.linalg as spl, rune
>>> A = sp.csc_matrix(np.array([[4.0, 1.0], [1.0, 3.0]]))
>>> g = rune.grad(lambda b: np.sum(spl.spsolve(A, b)))(np.array([1.0, 2.0]))
>>> np.round(g * 11, 12)
array([2., 3.])
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as _sp
import scipy.sparse.linalg as _spl

from ..core import Tracer, _peek
from ..dispatch import _iter_tracers, wrap_while_active
from ..primitives.linear_op import apply_linear
from .sparse import traced_data

__all__ = ["spsolve", "spsolve_triangular", "expm_multiply", "TracedSuperLU", "ITERATIVE"]


def _traced(*objs):
    """Whether ``objs`` hold a traced value, a sparse matrix with traced values included."""
    return any(True for _ in _iter_tracers(objs)) or any(
        traced_data(o) for group in objs for o in (
            group.values() if isinstance(group, dict) else group))


def _no_traced_matrix(name, *mats):
    for m in mats:
        if isinstance(m, Tracer) or traced_data(m):
            raise NotImplementedError(
                f"scipy.sparse.linalg.{name}: derivatives with respect to the matrix are "
                f"not supported by rune (only the right-hand side may be traced); pass "
                f"rune.stop_gradient of the matrix's values if no derivative is wanted")


def _rhs(name, b, n):
    if not isinstance(b, Tracer):
        b = np.asarray(b)
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise ValueError(f"scipy.sparse.linalg.{name}: matrix - rhs dimension mismatch "
                         f"({(n, n)} - {tuple(b.shape)})")
    return b


class _Solve:
    """``b -> solve(b)`` column by column on the leading axis, with its transpose."""

    def __init__(self, name, n, solve, solve_T, columns_at_once=True):
        self.name = f"scipy.sparse.linalg.{name}"
        self.in_shape = self.out_shape = (n,)
        self._solve, self._solve_T, self._block = solve, solve_T, columns_at_once

    def _run(self, f, x):
        rest = x.shape[1:]
        cols = x.reshape(x.shape[0], -1)
        if self._block:
            out = np.asarray(f(cols)).reshape(cols.shape[0], -1)
        else:
            out = np.stack([np.asarray(f(cols[:, j])) for j in range(cols.shape[1])], 1)
        return out.reshape((out.shape[0],) + rest)

    def apply(self, x):
        return self._run(self._solve, x)

    def apply_T(self, ct):
        return self._run(self._solve_T, ct)


# --------------------------------------------------------------------------
# Direct solvers
# --------------------------------------------------------------------------

def _copy(A):
    return A.copy() if _sp.issparse(A) or isinstance(A, np.ndarray) else A


def spsolve(A, b, permc_spec=None, use_umfpack=True):
    """``scipy.sparse.linalg.spsolve`` with a traced ``b``: SciPy's solve, transposed."""
    _no_traced_matrix("spsolve", A)
    b = _rhs("spsolve", b, A.shape[0])
    A = _copy(A)
    kw = dict(permc_spec=permc_spec, use_umfpack=use_umfpack)
    op = _Solve("spsolve", A.shape[1], lambda c: _spl.spsolve(A, c, **kw),
                lambda c: _spl.spsolve(A.T, c, **kw))
    x = apply_linear(op, b)
    return x[:, 0] if x.ndim == 2 and x.shape[1] == 1 else x


def spsolve_triangular(A, b, lower=True, overwrite_A=False, overwrite_b=False,
                       unit_diagonal=False):
    """``scipy.sparse.linalg.spsolve_triangular`` with a traced ``b``."""
    _no_traced_matrix("spsolve_triangular", A)
    b = _rhs("spsolve_triangular", b, A.shape[0])
    A = _copy(A)
    op = _Solve("spsolve_triangular", A.shape[1],
                lambda c: _spl.spsolve_triangular(A, c, lower=lower,
                                                  unit_diagonal=unit_diagonal),
                lambda c: _spl.spsolve_triangular(A.T, c, lower=not lower,
                                                  unit_diagonal=unit_diagonal))
    return apply_linear(op, b)


_FLIP = {"N": "T", "T": "N"}


class TracedSuperLU:
    """SciPy's ``SuperLU`` (from ``splu``/``spilu`` inside a transformation): every
    attribute is the factor's own; ``solve`` also takes a traced right-hand side."""

    def __init__(self, lu, name):
        self._lu, self._name = lu, name

    def __getattr__(self, attr):
        return getattr(self._lu, attr)

    def __repr__(self):
        return repr(self._lu)

    def solve(self, rhs, trans="N"):
        """``SuperLU.solve``: ``op(A)^{-1} rhs`` with ``op`` given by ``trans``."""
        if not isinstance(rhs, Tracer):
            return self._lu.solve(rhs, trans)
        if trans not in ("N", "T", "H"):
            raise ValueError(f"SuperLU.solve: trans must be 'N', 'T' or 'H' (got {trans!r})")
        lu = self._lu
        rhs = _rhs(f"{self._name}(...).solve", rhs, lu.shape[0])
        if trans == "H":      # A^{-H} b: its transpose is conj(A^{-1}) = conj o solve o conj
            op = _Solve(self._name, lu.shape[0], lambda c: lu.solve(np.asarray(c), "H"),
                        lambda c: np.conj(lu.solve(np.conj(c), "N")))
        else:
            op = _Solve(self._name, lu.shape[0], lambda c: lu.solve(np.asarray(c), trans),
                        lambda c: lu.solve(np.asarray(c), _FLIP[trans]))
        return apply_linear(op, rhs)


def _factor(name):
    def make(orig):
        @functools.wraps(orig)
        def factor(A, *args, **kwargs):
            _no_traced_matrix(name, A)
            return TracedSuperLU(orig(A, *args, **kwargs), name)
        return factor
    return make


def _factorized(orig):
    @functools.wraps(orig)
    def factorized(A):
        _no_traced_matrix("factorized", A)
        solve = orig(A)
        n = A.shape[0]
        A = _copy(A)
        transposed = []

        def solve_T(c):
            if not transposed:
                transposed.append(orig(A.T))
            return transposed[0](c)

        def traced_solve(b):
            if not isinstance(b, Tracer):
                return solve(b)
            b = _rhs("factorized(A)", b, n)
            return apply_linear(_Solve("factorized", n, solve, solve_T, False), b)
        return traced_solve
    return factorized


# --------------------------------------------------------------------------
# Iterative solvers
# --------------------------------------------------------------------------

SYMMETRIC = ("cg", "minres")
ITERATIVE = ("cg", "minres", "gmres", "bicgstab", "bicg", "cgs", "lgmres", "gcrotmk",
             "tfqmr", "qmr")


def _transpose(name, A):
    if A is None or _sp.issparse(A) or isinstance(A, np.ndarray):
        return None if A is None else A.T
    op = _spl.aslinearoperator(A)

    def rmatvec(v):
        try:
            return op.rmatvec(v)
        except NotImplementedError as e:
            raise NotImplementedError(
                f"scipy.sparse.linalg.{name}: reverse mode needs the transpose of the "
                f"LinearOperator (define rmatvec), or use forward mode (rune.jvp)") from e
    return _spl.LinearOperator(op.shape[::-1], matvec=rmatvec, rmatvec=op.matvec,
                               dtype=op.dtype)


class _IterativeSolve(_Solve):
    """The first application (the primal solve, every column of it) passes ``x0`` and
    ``callback`` and keeps SciPy's ``info``; the later ones (tangents, cotangents) check
    theirs, with GMRES at the same tolerance after a breakdown of a nonsymmetric one."""

    def __init__(self, name, n, run, A, AT, kw, kwT, x0, callback):
        super().__init__(name, n, lambda c: self._derivative(c, A, kw, "tangent"),
                         lambda c: self._derivative(c, AT, kwT, "adjoint (A^T)"), False)
        self._short, self._run_solver = name, run
        self._A, self._kw, self._x0, self._callback = A, kw, x0, callback
        self.info = None

    def apply(self, x):
        if self.info is not None:
            return super().apply(x)
        infos = []

        def primal(c):
            extra = {} if self._callback is None else {"callback": self._callback}
            out, info = self._run_solver(self._A, c, x0=self._x0, **extra, **self._kw)
            infos.append(info)
            return out
        out = self._run(primal, x)
        self.info = next((i for i in infos if i != 0), 0)
        return out

    def _derivative(self, c, A, kw, which):
        with np.errstate(all="ignore"):       # (a breakdown is handled below)
            x, info = self._run_solver(A, c, **kw)
        if info != 0 and self._short not in SYMMETRIC:      # a breakdown: GMRES instead
            x, info = _spl.gmres(A, c, rtol=kw.get("rtol", 1e-5), atol=kw.get("atol", 0.0),
                                 M=kw.get("M"))
        if info != 0:
            raise RuntimeError(
                f"scipy.sparse.linalg.{self._short}: the {which} solve that gives the "
                f"derivative did not converge (info={info}); rune differentiates the "
                f"solution x = A^-1 b by solving with the same solver and tolerance: "
                f"loosen rtol or raise maxiter")
        return x


def _concrete_x0(x0, n):
    if x0 is None:
        return None
    value, batched = _peek(x0) if isinstance(x0, Tracer) else (np.asarray(x0), False)
    return None if batched or np.shape(value) != (n,) else np.array(value)


def _iterative(name):
    def make(orig):
        @functools.wraps(orig)
        def solver(A, b, x0=None, **kwargs):
            M_names = ("M1", "M2") if name == "qmr" else ("M",)
            _no_traced_matrix(name, A, *(kwargs.get(m) for m in M_names))
            n = A.shape[0]
            b = _rhs(name, b, n)
            callback = kwargs.pop("callback", None)
            if name in SYMMETRIC:
                AT, kwT = A, kwargs
            else:
                AT, kwT = _transpose(name, A), dict(kwargs)
                if name == "qmr":
                    kwT["M1"], kwT["M2"] = (_transpose(name, kwargs.get("M2")),
                                            _transpose(name, kwargs.get("M1")))
                elif kwargs.get("M") is not None:
                    kwT["M"] = _transpose(name, kwargs["M"])
            A, AT = _copy(A), _copy(AT)
            kwargs = {k: _copy(v) if k in M_names else v for k, v in kwargs.items()}
            kwT = {k: _copy(v) if k in M_names else v for k, v in kwT.items()}
            op = _IterativeSolve(name, n, orig, A, AT, kwargs, kwT, _concrete_x0(x0, n),
                                 callback)
            x = apply_linear(op, b)
            return x, op.info
        return solver
    return make


# --------------------------------------------------------------------------
# expm_multiply
# --------------------------------------------------------------------------

class _ExpmMultiply:
    def __init__(self, A, kw, n, times):
        self.name = "scipy.sparse.linalg.expm_multiply"
        self.A, self.kw, self.times = A, kw, times
        self.in_shape = (n,)
        self.out_shape = (n,) if times is None else (len(times), n)

    def apply(self, x):
        rest = x.shape[1:]
        out = _spl.expm_multiply(self.A, x.reshape(x.shape[0], -1), **self.kw)
        return np.asarray(out).reshape(self.out_shape + rest)

    def apply_T(self, ct):
        AT = self.A.T if _sp.issparse(self.A) or isinstance(self.A, np.ndarray) else \
            _transpose("expm_multiply", self.A)
        trace = self.kw.get("traceA")
        if self.times is None:
            rest = ct.shape[1:]
            out = _spl.expm_multiply(AT, ct.reshape(ct.shape[0], -1), traceA=trace)
            return np.asarray(out).reshape(self.in_shape + rest)
        rest = ct.shape[2:]
        total = 0
        for t, c in zip(self.times, ct):
            c = c.reshape(c.shape[0], -1)
            total = total + np.asarray(_spl.expm_multiply(
                AT * t, c, traceA=None if trace is None else trace * t))
        return np.asarray(total).reshape(self.in_shape + rest)


def expm_multiply(A, B, start=None, stop=None, num=None, endpoint=None, traceA=None):
    """``scipy.sparse.linalg.expm_multiply`` with a traced ``B``."""
    _no_traced_matrix("expm_multiply", A)
    B = _rhs("expm_multiply", B, A.shape[0])
    kw = dict(start=start, stop=stop, num=num, endpoint=endpoint, traceA=traceA)
    times = None
    if not all(v is None for v in (start, stop, num, endpoint)):
        spacing = {k: v for k, v in (("num", num), ("endpoint", endpoint)) if v is not None}
        times = np.linspace(start, stop, **spacing)     # SciPy's time points
    return apply_linear(_ExpmMultiply(_copy(A), kw, A.shape[0], times), B)


# --------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------

def _traced_or_original(rune_fn):
    """A ``make_wrapper``: ``rune_fn`` when an argument holds a traced value, SciPy's
    function otherwise."""
    def make(orig):
        @functools.wraps(orig)
        def wrapper(*args, **kwargs):
            if _traced(args, kwargs):
                return rune_fn(*args, **kwargs)
            return orig(*args, **kwargs)
        return wrapper
    return make


for _name, _fn in (("spsolve", spsolve), ("spsolve_triangular", spsolve_triangular),
                   ("expm_multiply", expm_multiply)):
    wrap_while_active("scipy.sparse.linalg", _name, _traced_or_original(_fn))
for _name in ("splu", "spilu"):
    wrap_while_active("scipy.sparse.linalg", _name, _factor(_name))
wrap_while_active("scipy.sparse.linalg", "factorized", _factorized)
for _name in ITERATIVE:
    wrap_while_active("scipy.sparse.linalg", _name,
                      lambda orig, n=_name: _traced_or_original(_iterative(n)(orig))(orig))
