"""rune under a static type checker: ``mypy --strict examples/typed_usage.py`` passes
(``make typecheck`` runs it), so does ``pyright`` (tests/test_typing_checkers.py checks
a program like it where pyright is installed), and so does ``python examples/typed_usage.py``.

One typed use of each transformation, written as annotated user code would be:

* ``grad``, ``jacfwd``, ``jit``, ... keep the parameters of the function they transform
  (a ``ParamSpec``), so a wrong argument is a type error before it is a run-time one;
* ``vmap(f)`` takes a *batch* of ``f``'s arguments, whose types are not ``f``'s (a batch of
  ``float`` is an array), so the vmapped function accepts anything;
* ``vjp``, ``jvp`` and ``linearize`` give a pair, or a triple with ``has_aux=True``; with
  a ``has_aux`` known only at run time, a tuple of unknown length;
* ``checkpoint``, ``jit``, ``custom_vjp`` and ``custom_jvp`` keep the function's whole type,
  also when ``custom_vjp`` is applied through ``functools.partial`` (JAX's idiom);
* trees are ``rune.typing.PyTree``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

import rune
from rune.typing import PyTree

Array = npt.NDArray[np.float64]


@dataclass
class Params:
    w: Array
    b: Array


def loss(p: Params, x: Array, y: Array) -> np.floating[Any]:
    return np.mean((np.tanh(x @ p.w + p.b) - y) ** 2)


def per_example_loss(w: Array, x: float) -> float:
    """Annotated for one example: ``x`` is a float; vmap feeds it a batch."""
    return float(np.sum(w)) * x


@rune.checkpoint
def block(h: Array, w: Array) -> Array:
    return h + np.tanh(h @ w)


@rune.custom_vjp
def clip_gradient(x: Array) -> Array:
    return x


def _clip_fwd(x: Array) -> tuple[Array, None]:
    return x, None


def _clip_bwd(_: None, g: Array) -> tuple[Array]:
    return (np.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


@partial(rune.custom_vjp, nondiff_argnums=(1,))
def scaled(x: Array, scale: float) -> Array:
    return x * scale


def _scaled_fwd(x: Array, scale: float) -> tuple[Array, None]:
    return x * scale, None


def _scaled_bwd(scale: float, _: None, g: Array) -> tuple[Array]:
    return (g * scale,)


scaled.defvjp(_scaled_fwd, _scaled_bwd)


@rune.custom_jvp
def softplus(x: Array) -> Array:
    return np.logaddexp(x, 0.0)


@softplus.defjvp
def _softplus_jvp(primals: tuple[Array], tangents: tuple[Array]) -> tuple[Array, Array]:
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1.0 + np.exp(-x))


@rune.jit
def predict(p: Params, x: Array) -> Array:
    return np.tanh(x @ p.w + p.b)


def transformations(p: Params, x: Array, y: Array, with_aux: bool) -> None:
    """One call of each transformation, every result annotated as a user would."""
    g: Params = rune.grad(loss)(p, x, y)                 # parameters checked: (Params, x, y)
    value, g2 = rune.value_and_grad(loss)(p, x, y)
    gw, gb = rune.grad(loss, argnums=(0, 0))(p, x, y)
    z: complex = rune.grad(lambda u: u ** 2, holomorphic=True)(1.0 + 2.0j)

    out, pullback = rune.vjp(lambda w: x @ w, p.w)
    (ct,) = pullback(np.ones(8))
    out2, pullback2, aux2 = rune.vjp(lambda w: (x @ w, "aux"), p.w, has_aux=True)
    maybe_aux = rune.vjp(lambda w: (x @ w, 1.0), p.w, has_aux=with_aux)   # a bool variable
    primal, tangent = rune.jvp(np.tanh, (x,), (np.ones_like(x),))
    jvp_res = rune.jvp(lambda u: (np.tanh(u), 0), (x,), (x,), has_aux=with_aux)
    lin_out, f_jvp = rune.linearize(np.tanh, x)
    lin_tangent: Array = f_jvp(np.ones_like(x))
    (ct_t,) = rune.linear_transpose(lambda w: x @ w, p.w)(np.ones(8))

    per_example = rune.vmap(rune.grad(loss), in_axes=(None, 0, 0))(p, x, y)
    batch: Array = rune.vmap(per_example_loss, in_axes=(None, 0))(p.w, np.arange(4.0))
    jf: Array = rune.jacfwd(np.tanh)(p.w)
    jr: Array = rune.jacrev(np.tanh)(p.w)
    jb: Array = rune.jacobian(np.tanh)(p.w)
    hs: Array = rune.hessian(lambda w: np.sum(w ** 3))(p.w)
    grads, hv = rune.hvp(lambda w: np.sum(w ** 3), (p.w,), (np.ones(3),))
    eg: Array = rune.elementwise_grad(np.tanh)(p.w)
    sg: Array = rune.stop_gradient(p.w)

    h: Array = block(x, np.eye(3))                       # checkpoint keeps block's type
    clipped: Array = clip_gradient(x)                    # so does custom_vjp
    s: Array = scaled(x, 2.0)                            # ... through functools.partial
    sp: Array = softplus(x)                              # and custom_jvp
    pred: Array = predict(p, x)                          # and jit

    tree: PyTree = {"w": p.w, "b": (p.b,)}
    leaves, treedef = rune.tree.flatten(tree)
    flat, unravel = rune.tree.ravel(tree)
    rune.check_grads(loss, Params(np.full(3, 0.1), np.zeros(())), x, y, order=1)
    rune.check_grads(np.tanh, (p.w,), 1)                 # JAX's check_grads(f, args, order)

    assert isinstance(g, Params) and np.allclose(g.w, g2.w) and np.allclose(gw.w, gb.w)
    assert z == 2.0 + 4.0j and float(value) > 0
    assert ct.shape == (3,) and out.shape == out2.shape == (8,) and aux2 == "aux"
    assert len(maybe_aux) == (3 if with_aux else 2) and len(jvp_res) == (3 if with_aux else 2)
    assert callable(pullback2) and tangent.shape == primal.shape == x.shape
    assert lin_tangent.shape == lin_out.shape and ct_t.shape == (3,)
    assert per_example.w.shape == (8, 3) and batch.shape == (4,)
    assert np.allclose(jf, jr) and np.allclose(jr, jb) and hs.shape == (3, 3)
    assert np.allclose(hv[0], 6 * p.w) and len(grads) == 1 and eg.shape == sg.shape == (3,)
    assert h.shape == s.shape == sp.shape == x.shape and clipped is not None
    assert pred.shape == (8,) and len(leaves) == 2 and flat.shape == (4,)
    assert rune.tree.unflatten(treedef, leaves)["w"] is p.w and unravel(flat)["b"][0] == 0


def main() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 3)), rng.standard_normal(8)
    p = Params(w=np.zeros(3), b=np.zeros(()))
    value, g = rune.value_and_grad(loss)(p, x, y)
    transformations(Params(w=rng.standard_normal(3), b=np.zeros(())), x, y, with_aux=True)
    transformations(Params(w=rng.standard_normal(3), b=np.zeros(())), x, y, with_aux=False)
    print(f"loss {float(value):.4f}, |grad w| {float(np.linalg.norm(g.w)):.4f}")


if __name__ == "__main__":
    main()
