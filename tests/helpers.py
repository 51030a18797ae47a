"""Shared test helpers: finite differences, vmap against a Python loop, the operation sweep
``check_op`` of SPEC section 3, and the records the spec's examples use."""

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

import rune


def _example(v):
    return np.asarray(v) if isinstance(v, np.generic) else v


def check_vmap(f, *args, in_axes=0, out_axes=0, rtol=1e-10, atol=1e-12):
    """``vmap(f)`` equals a Python loop over the batch, stacked at ``out_axes``."""
    got = rune.vmap(f, in_axes=in_axes, out_axes=out_axes)(*args)
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = []
    for i in range(size):
        # (a 0-d example as a 0-d array, as vmap hands it over: np.take gives a NumPy
        # scalar, whose "views" are fresh arrays, so writes through them differ)
        ex = [a if ax is None else _example(np.take(a, i, axis=ax)) for a, ax in zip(args, axes)]
        outs.append(f(*ex))
    want = rune.tree.map(lambda *xs: np.stack(xs, axis=out_axes), *outs)
    rune.tree.map(lambda g, w: np.testing.assert_allclose(g, w, rtol=rtol, atol=atol), got, want)
    return got


def check_all_axes(f, *args, rtol=1e-10, atol=1e-12):
    """``check_vmap`` with the batch axis of every argument first, last and in the middle,
    and under ``vmap(vmap(f))``.  ``args`` are per-example values; batches are built here."""
    rng = np.random.default_rng(1)
    batched = []
    for a in args:
        a = np.asarray(a)
        stack = np.stack([a + 0.1 * rng.standard_normal(a.shape).astype(a.dtype)
                          if a.dtype.kind == "f" else a for _ in range(3)])
        batched.append(stack)
    for pos in ("first", "last", "middle"):
        moved, axes = [], []
        for b in batched:
            ax = {"first": 0, "last": b.ndim - 1, "middle": (b.ndim - 1) // 2}[pos]
            moved.append(np.moveaxis(b, 0, ax))
            axes.append(ax)
        check_vmap(f, *moved, in_axes=tuple(axes), rtol=rtol, atol=atol)
    # vmap of vmap: two batch axes
    double = [np.stack([b, b * 0.5 if b.dtype.kind == "f" else b]) for b in batched]
    got = rune.vmap(rune.vmap(f))(*double)
    for i in range(2):
        for j in range(3):
            want = f(*[d[i, j] for d in double])
            rune.tree.map(lambda g, w: np.testing.assert_allclose(g, w, rtol=rtol, atol=atol),
                          rune.tree.map(lambda g: g[i, j], got), want)


def fd_grad(f, x, eps=1e-6):
    """Central-difference gradient of a scalar function of one float64 array."""
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def assert_numpy_as_without_rune():
    """Outside transformations NumPy behaves as without rune: its coercion functions are
    NumPy's own or rune's exact pass-throughs to them (``__wrapped__``), no transformation
    is active in this context, and NumPy's scalar types are NumPy's classes."""
    import rune
    from numpy._core import _multiarray_umath as mu
    assert rune.core.active_traces() == ()
    for name, orig in zip(("asarray", "array", "asanyarray"), pristine_asarray()):
        f = getattr(np, name)
        assert f is orig or getattr(f, "__wrapped__", None) is orig, name
    a = np.ones(3)
    assert np.asarray(a) is a and np.asanyarray(a) is a and np.array(a) is not a
    assert type(np.float64(1.0)) is mu.dtype(np.float64).type is np.float64


def pristine_asarray():
    """NumPy's own C coercion functions (``numpy._core._multiarray_umath``), to check that
    the names in ``numpy`` are these outside transformations."""
    from numpy._core import _multiarray_umath as mu
    return mu.asarray, mu.array, mu.asanyarray


@dataclass
class Params:
    """The record of the spec's example (SPEC 1)."""
    w: np.ndarray
    b: np.ndarray


class Dense(NamedTuple):
    w: np.ndarray
    b: np.ndarray


@dataclass
class MLP:
    layers: list
    scale: float
    activation: str = field(default="tanh", metadata={"static": True})


def mlp_loss(p, x, y):
    h = x
    for layer in p.layers:
        h = np.tanh(h @ layer.w + layer.b) if p.activation == "tanh" else h @ layer.w
    return p.scale * np.mean((h - y) ** 2)


def make_mlp(rng, sizes=(3, 4, 2)):
    return MLP([Dense(rng.normal(size=(m, n)), rng.normal(size=n))
                for m, n in zip(sizes[:-1], sizes[1:])], 1.5)


# --------------------------------------------------------------------------
# check_op: one operation under jvp, vjp/grad, vmap, float32 and nesting (SPEC 3)
# --------------------------------------------------------------------------

EPS = 1e-6


def _fd(f, xs, vs, eps=EPS):
    plus = f(*[x + eps * v for x, v in zip(xs, vs)])
    minus = f(*[x - eps * v for x, v in zip(xs, vs)])
    return rune.tree.map(lambda a, b: (np.asarray(a) - np.asarray(b)) / (2 * eps), plus, minus)


def _close(a, b, rtol, atol, what):
    la, lb = rune.tree.leaves(a), rune.tree.leaves(b)
    assert len(la) == len(lb), what
    for x, y in zip(la, lb):
        assert np.shape(x) == np.shape(y), (what, np.shape(x), np.shape(y))
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=what)


def _dot(a, b):
    return sum(float(np.sum(np.asarray(x) * np.asarray(y)))
               for x, y in zip(rune.tree.leaves(a), rune.tree.leaves(b)))


def check_op(f, *xs, rtol=1e-5, atol=1e-7, nested=True, batch=True, seed=0, batch_last=True,
             dtypes=True):
    """Check ``f`` (a function of float64 arrays returning an array or a tree of arrays)."""
    rng = np.random.default_rng(seed)
    xs = tuple(np.asarray(x, dtype=float) for x in xs)
    y = f(*xs)
    vs = tuple(rng.normal(size=x.shape) for x in xs)

    # forward mode against finite differences
    out, t = rune.jvp(f, xs, vs)
    _close(out, y, 1e-12, 1e-12, "jvp primal")
    _close(t, _fd(f, xs, vs), rtol, atol, "jvp tangent vs finite differences")

    # reverse mode: shapes, dtypes, and <u, J v> == <J^T u, v>
    out2, pb = rune.vjp(f, *xs)
    _close(out2, y, 1e-12, 1e-12, "vjp primal")
    u = rune.tree.map(lambda o: rng.normal(size=np.shape(o)), y)
    gs = pb(u)
    assert type(gs) is tuple and len(gs) == len(xs)
    for g, x in zip(gs, xs):
        assert type(g) is np.ndarray and g.shape == x.shape and g.dtype == x.dtype
    lhs, rhs = _dot(gs, vs), _dot(u, t)
    assert abs(lhs - rhs) <= 1e-8 * (1 + abs(lhs) + abs(rhs)), (lhs, rhs)

    argnums = tuple(range(len(xs)))

    def h(*xs):
        return sum(np.sum(o * w) for o, w in zip(rune.tree.leaves(f(*xs)), rune.tree.leaves(u)))

    gh = rune.grad(h, argnums=argnums)(*xs)
    _close(gh, gs, 1e-10, 1e-12, "grad of <f, u> vs pullback")

    if batch:
        Xs = tuple(np.stack([x + 0.05 * rng.normal(size=x.shape) for _ in range(3)]) for x in xs)
        want = [f(*[X[i] for X in Xs]) for i in range(3)]
        want = rune.tree.map(lambda *o: np.stack(o), *want)
        _close(rune.vmap(f)(*Xs), want, 1e-10, 1e-12, "vmap (axis 0) vs loop")
        if batch_last:
            moved = tuple(np.moveaxis(X, 0, -1) for X in Xs)
            _close(rune.vmap(f, in_axes=-1)(*moved), want, 1e-10, 1e-12, "vmap (last axis)")
        if all(x.ndim >= 2 for x in xs):     # batch axis in the middle
            mid = tuple(np.moveaxis(X, 0, 1) for X in Xs)
            _close(rune.vmap(f, in_axes=1)(*mid), want, 1e-10, 1e-12, "vmap (axis 1)")
        # vmap of vmap: two batch axes
        XXs = tuple(np.stack([X, 1.1 * X]) for X in Xs)
        got2 = rune.vmap(rune.vmap(f))(*XXs)
        for i in (0, 1):
            for j in (0, 2):
                _close(rune.tree.map(lambda o: o[i, j], got2), f(*[XX[i, j] for XX in XXs]),
                       1e-10, 1e-12, "vmap(vmap)")
        if len(xs) > 1:    # first argument batched, the rest not
            want1 = rune.tree.map(lambda *o: np.stack(o),
                                  *[f(Xs[0][i], *xs[1:]) for i in range(3)])
            got1 = rune.vmap(f, in_axes=(0,) + (None,) * (len(xs) - 1))(Xs[0], *xs[1:])
            _close(got1, want1, 1e-10, 1e-12, "vmap (first argument only)")

    if dtypes:     # float32 in: NumPy's dtype out, float32 derivatives
        xs32 = tuple(x.astype(np.float32) for x in xs)
        y32 = f(*xs32)
        out32, t32 = rune.jvp(f, xs32, tuple(np.ones_like(x) for x in xs32))
        for o, oo, tt in zip(rune.tree.leaves(y32), rune.tree.leaves(out32),
                             rune.tree.leaves(t32)):
            assert np.asarray(oo).dtype == np.asarray(o).dtype, "jvp primal dtype"
            assert np.asarray(tt).dtype == np.asarray(o).dtype, "jvp tangent dtype"
        g32 = rune.grad(lambda *xs: sum(np.sum(o) for o in rune.tree.leaves(f(*xs))),
                        argnums=argnums)(*xs32)
        assert all(g.dtype == np.float32 for g in g32), [g.dtype for g in g32]

    if nested:
        grad_h = rune.grad(h, argnums=argnums)
        ws = tuple(rng.normal(size=x.shape) for x in xs)
        fwd_rev = rune.jvp(grad_h, xs, ws)[1]
        rev_rev = rune.grad(lambda *xs: _dot_traced(grad_h(*xs), ws), argnums=argnums)(*xs)
        _close(fwd_rev, rev_rev, 1e-7, 1e-9, "jvp(grad) vs grad(grad)")
        rev_fwd = rune.grad(lambda *xs: rune.jvp(h, xs, ws)[1], argnums=argnums)(*xs)
        _close(rev_fwd, fwd_rev, 1e-7, 1e-9, "grad(jvp) vs jvp(grad)")
        fd = _fd(grad_h, xs, ws, eps=1e-5)
        _close(fwd_rev, fd, 1e-4, 1e-6, "jvp(grad) vs finite differences of grad")
        if batch:
            got = rune.vmap(grad_h)(*Xs)
            want = [grad_h(*[X[i] for X in Xs]) for i in range(3)]
            want = rune.tree.map(lambda *o: np.stack(o), *want)
            _close(got, want, 1e-9, 1e-11, "vmap(grad) vs loop")


def _dot_traced(a, b):
    total = 0.0
    for x, y in zip(rune.tree.leaves(a), rune.tree.leaves(b)):
        total = total + np.sum(x * y)
    return total


def rand(shape, dtype=np.float64, seed=0):
    """Standard normal entries of ``dtype`` (complex: real and imaginary parts)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def square(shape, dtype=np.float64, seed=0):
    """A well-conditioned square matrix (stack): noise plus a multiple of the identity."""
    n = shape[-1]
    return (rand(shape, dtype, seed) + n * np.eye(n)).astype(dtype)


def all_primitives():
    """Every primitive rune defines: those of ``rune.primitives``' modules (SciPy's when SciPy
    is installed) and those made in a loop and registered for a ufunc."""
    import importlib
    import pkgutil
    from rune import core, primitives
    from rune.dispatch import UFUNCS
    prims = {}
    for mod in pkgutil.iter_modules(primitives.__path__):
        try:
            m = importlib.import_module(f"rune.primitives.{mod.name}")
        except ModuleNotFoundError as e:    # special.py needs SciPy, which is optional
            if (e.name or "").split(".")[0] == "scipy":
                continue
            raise
        for v in vars(m).values():
            if isinstance(v, core.Primitive):
                prims[id(v)] = v
    for v in UFUNCS.values():
        if isinstance(v, core.Primitive):
            prims[id(v)] = v
    return list(prims.values())
