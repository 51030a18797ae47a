"""The quick start from the README: differentiate plain NumPy code over your own record."""

from dataclasses import dataclass

import numpy as np

import rune


@dataclass
class Params:
    w: np.ndarray
    b: np.ndarray


x = np.arange(12, dtype=np.float32).reshape(4, 3)
y = np.array([[0.], [1.], [2.], [3.]], dtype=np.float32)


def loss(p: Params):
    return np.mean(np.square(x @ p.w + p.b - y))


p = Params(w=np.zeros((3, 1), np.float32), b=np.zeros(1, np.float32))
g = rune.grad(loss)(p)          # g is a Params; g.w.dtype == float32

print("gradient type:", type(g).__name__)
for name in ("w", "b"):
    leaf = getattr(g, name)
    print(f"  g.{name}: shape {leaf.shape}, dtype {leaf.dtype}, values {leaf.ravel().tolist()}")

# A few steps of gradient descent, with per-example gradients and a Hessian on the side.
print("loss before:", float(loss(p)))
for step in range(200):
    g = rune.grad(loss)(p)
    p = rune.tree.map(lambda w, dw: w - 0.005 * dw, p, g)
print("loss after 200 steps:", float(loss(p)))

per_example = rune.vmap(rune.grad(lambda p, xi, yi: np.sum((xi @ p.w + p.b - yi) ** 2)),
                        in_axes=(None, 0, 0))(p, x, y)
print("per-example gradient of w:", per_example.w.shape)
print("Hessian of the loss in b:", rune.hessian(lambda b: loss(Params(p.w, b)))(p.b).tolist())
