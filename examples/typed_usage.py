"""rune under a static type checker: ``mypy --strict examples/typed_usage.py`` passes
(``make typecheck`` runs it), and so does ``python examples/typed_usage.py``.

The transformations keep the parameters of the function they transform (a
``ParamSpec``), so a wrong argument is a type error before it is a run-time one;
trees are ``rune.typing.PyTree``; ``checkpoint`` and ``custom_vjp`` keep the
function's whole type.
"""

from __future__ import annotations

from dataclasses import dataclass
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


def main() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 3)), rng.standard_normal(8)
    p = Params(w=np.zeros(3), b=np.zeros(()))

    g: Params = rune.grad(loss)(p, x, y)                 # parameters checked: (Params, x, y)
    value, g2 = rune.value_and_grad(loss)(p, x, y)
    out, pullback = rune.vjp(lambda w: x @ w, p.w)
    (ct,) = pullback(np.ones(8))
    primal, tangent = rune.jvp(np.tanh, (x,), (np.ones_like(x),))
    per_example = rune.vmap(rune.grad(loss), in_axes=(None, 0, 0))(p, x, y)
    h: Array = block(x, np.eye(3))                       # checkpoint keeps block's type
    clipped: Array = clip_gradient(x)                    # so does custom_vjp
    tree: PyTree = {"w": p.w, "b": (p.b,)}
    leaves, treedef = rune.tree.flatten(tree)
    rune.check_grads(loss, Params(np.full(3, 0.1), np.zeros(())), x, y, order=1)

    assert isinstance(g, Params) and np.allclose(g.w, g2.w)
    assert ct.shape == (3,) and tangent.shape == x.shape and per_example.w.shape == (8, 3)
    assert h.shape == x.shape and clipped is not None and len(leaves) == 2
    assert rune.tree.unflatten(treedef, leaves)["w"] is p.w
    print(f"loss {float(value):.4f}, |grad w| {float(np.linalg.norm(g.w)):.4f}")


if __name__ == "__main__":
    main()
