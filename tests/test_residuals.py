"""The memory floor (issue 14): every primitive declares exactly the residuals its VJP
reads, and the tape keeps nothing else, at every array size.

There is no size threshold: what a primitive does not declare reaches its VJP rules as a
:class:`rune.residuals.Dropped` stand-in that raises :class:`rune.residuals.ResidualError`
when read, so the rule sweeps of the whole suite (small arrays) check the declarations,
and the sweep below runs one rule of each family to second order on tiny arrays.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import scipy.linalg

import rune
from helpers import all_primitives
from rune import core
from rune.residuals import Dropped, ResidualError, _Plan
from rune.tape import ReverseTrace



_all_primitives = all_primitives


def test_every_differentiable_primitive_declares_its_residuals():
    undeclared = sorted(p.name for p in _all_primitives()
                        if not p.nondiff and p.vjp is not None and p.residuals is None)
    assert undeclared == []
    for p in _all_primitives():
        if p.residuals is not None:
            _Plan(p)        # every entry is one the engine knows


@pytest.mark.parametrize("name, keeps", [
    ("tanh", ("out",)), ("matmul", {0: (1, "shapes"), 1: (0, "shapes")}), ("exp", ("out",)), ("sin", ("args",)),
    ("add", ()), ("multiply", {0: (1,), 1: (0,)}), ("sum", ("shapes",)), ("where", (0,)), ("cholesky", ("out",)),
    ("eigh", ("out",)), ("reshape", ("shapes",))])
def test_declarations_of_the_common_primitives(name, keeps):
    (p,) = [p for p in _all_primitives() if p.name == name]
    assert p.residuals == keeps


def test_an_undeclared_read_fails_clearly_on_a_small_array():
    from rune.primitives.elementwise import elementwise_primitive
    bad = elementwise_primitive("bad_square", np.square,
                                jvp=(lambda t, out, x: 2 * x * t,),
                                vjp=(lambda ct, out, x: 2 * x * ct,), residuals=("out",))
    with pytest.raises(ResidualError, match="bad_square.*read an argument"):
        rune.grad(lambda x: np.sum(bad(x)))(np.array([1.0, 2.0]))
    nothing = elementwise_primitive("bad_exp", np.exp, jvp=(lambda t, out, x: out * t,),
                                    vjp=(lambda ct, out, x: out * ct,), residuals=())
    with pytest.raises(ResidualError, match="bad_exp.*its output"):
        rune.grad(lambda x: np.sum(nothing(x)))(np.array([1.0]))


def test_a_bad_declaration_is_refused():
    p = core.Primitive("p", np.sin, vjp=(lambda ct, out, x: ct,), residuals="args")
    with pytest.raises(TypeError, match="'p'.*tuple"):
        rune.grad(lambda x: np.sum(p(x)))(np.ones(2))
    q = core.Primitive("q", np.sin, vjp=(lambda ct, out, x: ct,), residuals=("arg",))
    with pytest.raises(ValueError, match="'q'.*'arg'"):
        rune.grad(lambda x: np.sum(q(x)))(np.ones(2))


def test_dropped_keeps_shape_and_dtype_and_refuses_its_value():
    d = Dropped(np.zeros((2, 3), np.float32), "tanh", "its argument 0")
    assert d.shape == (2, 3) and d.dtype == np.float32 and d.ndim == 2 and d.size == 6
    for use in (lambda: d + 1, lambda: 1 - d, lambda: np.sin(d), lambda: np.reshape(d, 6),
                lambda: np.asarray(d), lambda: d[0], lambda: d.T, lambda: float(d)):
        with pytest.raises(ResidualError, match="'tanh' read its argument 0"):
            use()


def test_the_tape_frees_what_the_vjp_does_not_read():
    """Small arrays too: the pre-activation of tanh(W @ x) and the argument of exp are
    gone once the forward pass drops them, while the pullback still works."""
    refs = []

    def f(W, x):
        z = W @ x
        if isinstance(z, core.Tracer):
            refs.append(weakref.ref(z._val))
        h = z * 0.5
        if isinstance(h, core.Tracer):
            refs.append(weakref.ref(h._val))
        e = np.exp(h)
        return np.sum(np.tanh(e))

    W = np.full((3, 3), 0.1)
    x = np.arange(6.0).reshape(3, 2) / 10
    out, pullback = rune.vjp(f, W, x)
    gc.collect()
    assert len(refs) == 2 and all(r() is None for r in refs)
    gW, gx = pullback(1.0)
    rune.check_grads(f, W, x, order=1)


def _spy_on_tape(monkeypatch, note):
    """Call ``note(trace, prim)`` after each operation the reverse trace records, by
    either of its paths (``process``, and ``process_one`` for ``np.tanh(x)``, ``x * 1.5``)."""
    general, one = ReverseTrace.process, ReverseTrace.process_one

    def spy(self, prim, args, params):
        out = general(self, prim, args, params)
        note(self, prim)
        return out

    def spy_one(self, prim, args, j):
        out = one(self, prim, args, j)
        note(self, prim)
        return out

    monkeypatch.setattr(ReverseTrace, "process", spy)
    monkeypatch.setattr(ReverseTrace, "process_one", spy_one)


def test_tape_nodes_hold_only_declared_values(monkeypatch):
    """Each node's arguments and output are kept whole exactly where declared."""
    x = np.linspace(0.1, 0.9, 6).reshape(2, 3)
    seen = {}           # primitive name -> its last node

    def note(trace, prim):
        if trace.tape and trace.tape[-1].vjp is prim.vjp:
            seen[prim.name] = trace.tape[-1]
    _spy_on_tape(monkeypatch, note)
    rune.grad(lambda x: np.sum(np.tanh(x @ x.T) + np.exp(x).sum(axis=1)))(x)
    assert isinstance(seen["tanh"].args[0], Dropped) and not isinstance(seen["tanh"].out,
                                                                        Dropped)
    assert not any(isinstance(a, Dropped) for a in seen["matmul"].args[:2])    # x @ x.T
    assert isinstance(seen["matmul"].out, Dropped)
    assert isinstance(seen["sum"].args[0], Dropped) and isinstance(seen["sum"].out, Dropped)
    assert isinstance(seen["exp"].args[0], Dropped)


def test_per_argument_declarations_keep_only_what_the_traced_arguments_read():
    """``W @ x`` with only ``x`` traced keeps ``W`` (its rule reads it), not ``x``."""
    W = np.eye(3) * 2.0
    refs = []

    def f(x):
        h = np.sin(x)
        if isinstance(h, core.Tracer):
            refs.append(weakref.ref(h._val))
        return np.sum(W @ h) + np.sum(np.cos(x) * 3.0) + np.sum(2.0 / np.exp(x))

    x = np.linspace(0.1, 0.7, 6).reshape(3, 2)
    out, pullback = rune.vjp(f, x)
    gc.collect()
    assert len(refs) == 1 and refs[0]() is None
    rune.check_grads(f, x, order=2)


def _spd(n, rng):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


_rng = np.random.default_rng(7)
_A = _spd(3, _rng)
_G = _rng.standard_normal((3, 3)) + 3 * np.eye(3)
_v = _rng.uniform(0.2, 0.8, 4)
_m = _rng.uniform(0.2, 0.8, (3, 4))

# One or more rules of each family, on tiny arrays, differentiated to second order: a
# rule that read an undeclared residual would raise ResidualError here.
SWEEP = {
    "elementwise-unary": (lambda x: np.sum(np.tanh(x) + np.arcsinh(x) + np.log1p(x)
                                           + np.arctan(x) + np.cosh(x) + np.abs(x - 0.5)), _m),
    "elementwise-binary": (lambda x: np.sum(x / (x + 1) + x ** x + np.hypot(x, 2 * x)
                                            + np.logaddexp(x, 0.3) + np.arctan2(x, 1.5)
                                            + np.maximum(x, 0.5) + np.fmod(x, 0.3)), _m),
    "where": (lambda x: np.sum(np.where(x > 0.5, x * x, np.sin(x))), _m),
    "reductions": (lambda x: np.sum(np.max(x, axis=0) + np.prod(x, axis=1).sum()
                                    + np.cumprod(x, axis=1)[:, -1].sum()
                                    + np.cumsum(x, axis=0).min()), _m),
    "shape": (lambda x: np.sum(np.roll(np.concatenate([x, x.T.reshape(3, 4)], axis=0), 1)
                               * np.split(np.arange(24.0).reshape(6, 4), 2)[1].sum()), _m),
    "indexing": (lambda x: np.sum(x[[0, 2], 1:] ** 2) + np.sum(x[x > 0.5]), _m),
    "setitem": (lambda x: np.sum(_set(x) ** 2), _m),
    "sorting": (lambda x: np.sum(np.sort(x, axis=1) * np.arange(4.0)), _m),
    "matmul-einsum": (lambda x: np.sum(np.tanh(x @ x.T) + np.einsum("ij,kj->ik", x, x)), _m),
    "solve-inv": (lambda a: np.sum(np.linalg.solve(a, np.ones(3)) + np.linalg.inv(a)), _G),
    "det-slogdet": (lambda a: np.linalg.det(a) + np.linalg.slogdet(a)[1], _G),
    "cholesky-eigh": (lambda a: np.sum(np.linalg.cholesky((a + a.T) / 2))
                      + np.sum(np.linalg.eigh((a + a.T) / 2)[0] ** 2), _A),
    "svd-qr-pinv": (lambda a: np.sum(np.linalg.svd(a, compute_uv=False))
                    + np.sum(np.linalg.qr(a)[1] ** 2) + np.sum(np.linalg.pinv(a)), _G),
    "eig": (lambda a: np.sum(np.real(np.linalg.eigvals(a))), _A),
    "fft": (lambda x: np.sum(np.abs(np.fft.rfft(x)) ** 2) + np.sum(np.real(np.fft.fft(x)) ** 2), _v),
    "convolve": (lambda x: np.sum(np.convolve(x, x[:3]) ** 2), _v),
    "scipy-linalg": (lambda a: np.sum(scipy.linalg.solve_triangular(np.tril(a), np.ones(3),
                                                                    lower=True))
                     + np.sum(scipy.linalg.expm(a / 10)) + np.sum(scipy.linalg.lu(a)[2]), _G),
}


def _set(x):
    y = x * 1.0
    y[1, 1:3] = x[0, :2] ** 2
    y[0] += x[2]
    return y


@pytest.mark.parametrize("name", sorted(SWEEP))
def test_rule_sweep_with_every_residual_dropped_that_is_not_declared(name):
    f, x = SWEEP[name]
    rune.check_grads(f, x, order=2)
    # and under vmap, where the dropped values are traced
    xs = np.stack([x, x * 0.9])
    g = rune.vmap(rune.grad(f))(xs)
    np.testing.assert_allclose(g[1], rune.grad(f)(xs[1]), rtol=1e-12, atol=1e-12)


_C = np.array([[0.5], [2.0]])          # a plain array that broadcasts against x


@pytest.mark.parametrize("f", [
    lambda x: np.sin(x), lambda x: np.tanh(x), lambda x: np.exp(x), lambda x: x * 1.5,
    lambda x: 1.5 * x, lambda x: 1.5 - x, lambda x: x / _C, lambda x: _C ** x,
    lambda x: x ** 2, lambda x: x ** 3, lambda x: 2 ** x, lambda x: x + 1,
    lambda x: np.abs(x - 0.4), lambda x: np.maximum(x, 0.5) * (x > 0.3),
    lambda x: np.sin(x[0, 1]) * 2.0,                # 0-d: NumPy scalars come out
    lambda x: np.sqrt(x).astype(np.float32) * 3,    # float32 output
    lambda x: (x + 0j) * 2j,                        # complex
], ids=lambda f: "")
def test_fast_path_records_what_the_general_path_records(f, monkeypatch):
    """``np.sin(x)`` and ``x op c`` take :meth:`ReverseTrace.process_one`; its nodes keep
    exactly what the general path keeps (the same arguments dropped, the same output
    kept), and the gradients agree bit for bit, second order included."""
    x = np.linspace(0.1, 0.9, 6).reshape(2, 3)

    def loss(x):
        return np.sum(np.real(f(x)) ** 2)

    def record():
        """The gradient, and what each node keeps, seen from both recording paths."""
        seen, nodes = [], []

        def note(self, prim):
            node = self.tape[-1] if self.tape else None
            if node is not None and node.vjp is prim.vjp and not any(
                    n is node for n in nodes):
                nodes.append(node)
                seen.append((prim.name, [type(a) is Dropped for a in node.args],
                             type(node.out) is Dropped))
        with monkeypatch.context() as m:
            _spy_on_tape(m, note)
            g = rune.grad(loss)(x)
        return seen, g

    calls = []
    one = ReverseTrace.process_one
    with monkeypatch.context() as m:
        m.setattr(ReverseTrace, "process_one",
                  lambda self, *a: calls.append(a) or one(self, *a))
        fast_seen, fast_g = record()
    assert calls, "the fast path was not taken"
    fast_h = rune.hessian(loss)(x)
    with monkeypatch.context() as m:
        m.setattr(ReverseTrace, "process_one", core.Trace.process_one)   # the general path
        slow_seen, slow_g = record()
        slow_h = rune.hessian(loss)(x)
    np.testing.assert_array_equal(fast_g, slow_g)
    np.testing.assert_array_equal(fast_h, slow_h)
    assert fast_seen == slow_seen and slow_seen
    # the fast path's tape run with batched and traced cotangents: jacrev is vmap over
    # the pullback, and the pullback differentiated again
    def g(x):
        return np.real(f(x))
    tol = 1e-5 if g(x).dtype == np.float32 else 1e-12    # (float32's rounding in between)
    np.testing.assert_allclose(rune.jacrev(g)(x), rune.jacfwd(g)(x), rtol=tol, atol=tol)
    out, pullback = rune.vjp(g, x)
    u = np.cos(np.arange(np.size(out), dtype=float)).reshape(np.shape(out)).astype(out.dtype)
    grad_u = rune.grad(lambda u: np.sum(pullback(u)[0] ** 2))(u)
    np.testing.assert_allclose(grad_u, 2 * rune.jvp(g, (x,), (pullback(u)[0],))[1],
                               rtol=100 * tol, atol=100 * tol)
    if f(x).dtype != np.float32:        # (finite differences through float32: too coarse)
        rune.check_grads(loss, x, order=2)
