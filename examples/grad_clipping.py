"""Gradient clipping with ``rune.custom_vjp``.

``clip_gradient(lo, hi, x)`` is the identity on the way forward; on the way
back it clips the incoming cotangent to ``[lo, hi]``.  ``lo`` and ``hi`` are
static (``nondiff_argnums``), so ``bwd`` receives them first.  The rule is
plain NumPy code, so it is batched under ``vmap``: per-example gradients
``vmap(grad(f))`` and gradients of batched code ``grad(vmap(f))`` are both
clipped.
"""

from functools import partial

import numpy as np

import rune


@partial(rune.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, None                         # no residuals are needed


def clip_gradient_bwd(lo, hi, residuals, g):
    return (np.clip(g, lo, hi),)           # one cotangent per differentiable argument


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def loss(w, x, y, clip):
    """Squared error of a linear model; ``clip`` wraps the prediction."""
    pred = clip(x @ w)
    return np.sum((pred - y) ** 2)


no_clip = lambda p: p                                   # noqa: E731
clipped = lambda p: clip_gradient(-1.0, 1.0, p)         # noqa: E731

rng = np.random.default_rng(0)
X = rng.standard_normal((8, 3))
Y = 10.0 * rng.standard_normal(8)                       # large residuals: large gradients
w = np.zeros(3)

g_plain = rune.grad(loss)(w, X, Y, no_clip)
g_clip = rune.grad(loss)(w, X, Y, clipped)
print("gradient without clipping:", np.round(g_plain, 3))
print("gradient with clipping:   ", np.round(g_clip, 3))
# d loss / d pred = 2 (pred - y) is clipped to [-1, 1] before it reaches w
assert np.allclose(g_clip, X.T @ np.clip(2 * (X @ w - Y), -1, 1))

# Per-example gradients: the rule runs batched.
per_example = rune.vmap(rune.grad(lambda w, x, y: loss(w, x, y, clipped)),
                        in_axes=(None, 0, 0))(w, X, Y)
print("per-example gradients:", per_example.shape)
assert np.allclose(per_example.sum(0), g_clip)

# grad of a vmapped function: the batched rule again.
g_vmapped = rune.grad(lambda w: np.sum(rune.vmap(lambda x, y: loss(w, x, y, clipped))(X, Y)))(w)
assert np.allclose(g_vmapped, g_clip)

# Plain gradient descent with clipped gradients stays stable.
lr = 0.05
for step in range(100):
    w = w - lr * rune.grad(loss)(w, X, Y, clipped)
print("loss after 100 clipped steps:", round(float(loss(w, X, Y, no_clip)), 3),
      "(from", round(float(loss(np.zeros(3), X, Y, no_clip)), 3), ")")
assert loss(w, X, Y, no_clip) < loss(np.zeros(3), X, Y, no_clip)

# Forward mode has no rule to use: jvp of a custom_vjp function is an error, as in JAX.
try:
    rune.jvp(lambda p: clip_gradient(-1.0, 1.0, p), (1.0,), (1.0,))
except TypeError as e:
    print("jvp refused:", str(e).split(":")[0])
