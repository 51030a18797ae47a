"""SciPy's optimizers over records, two ways: ``rune.optim.minimize`` (the bridge) and a
recipe with ``rune.tree.ravel`` by hand.  Three small fits; each way gives the same
answer, and the lines each way needs are what tell them apart.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.optimize

import rune

rng = np.random.default_rng(0)


# --- 1. a line through noisy points: a NamedTuple, L-BFGS-B -------------------------

class Line(NamedTuple):
    slope: float
    offset: float


x = np.linspace(0, 1, 30)
y = 2.0 * x - 0.5 + 0.05 * rng.normal(size=x.size)


def line_loss(p, x, y):
    return np.sum((p.slope * x + p.offset - y) ** 2)


bridge1 = rune.optim.minimize(line_loss, Line(0.0, 0.0), args=(x, y)).x

flat0, unravel = rune.tree.ravel(Line(0.0, 0.0))
vg = rune.value_and_grad(lambda v: line_loss(unravel(v), x, y))
recipe1 = unravel(scipy.optimize.minimize(vg, flat0, jac=True, method="L-BFGS-B").x)

print("1.", bridge1)
assert np.allclose(bridge1, recipe1, atol=1e-6) and isinstance(recipe1, Line)


# --- 2. non-negative weights: a dataclass with bounds on one field --------------------

@dataclass
class Mix:
    weights: np.ndarray        # >= 0
    bias: float                # free


A = rng.uniform(size=(50, 4))
target = A @ np.array([0.7, 0.0, 1.5, 0.0]) + 0.2 + 0.01 * rng.normal(size=50)


def mix_loss(p):
    return np.sum((A @ p.weights + p.bias - target) ** 2)


start = Mix(np.full(4, 0.5), 0.0)
bridge2 = rune.optim.minimize(mix_loss, start, bounds=(Mix(0.0, None), None)).x

flat0, unravel = rune.tree.ravel(start)
lower, _ = rune.tree.ravel(Mix(np.zeros(4), -np.inf))      # bounds raveled like the record
vg = rune.value_and_grad(lambda v: mix_loss(unravel(v)))
res = scipy.optimize.minimize(vg, flat0, jac=True, method="L-BFGS-B",
                              bounds=scipy.optimize.Bounds(lower, np.inf))
recipe2 = unravel(res.x)

print("2.", np.round(bridge2.weights, 3), round(bridge2.bias, 3))
assert np.all(bridge2.weights >= 0) and bridge2.weights[1] == 0.0
assert np.allclose(bridge2.weights, recipe2.weights, atol=1e-5)


# --- 3. logistic regression by Newton-CG: Hessian-vector products ---------------------

X = rng.normal(size=(200, 3))
labels = (X @ np.array([1.0, -2.0, 0.5]) + 0.3 + rng.logistic(size=200) > 0).astype(float)
model = {"w": np.zeros(3), "b": 0.0, "n_features": 3}     # an int leaf: held fixed


def nll(p):
    z = X @ p["w"] + p["b"]
    return np.sum(np.logaddexp(0.0, z) - labels * z) + 0.5 * np.sum(p["w"] ** 2)


bridge3 = rune.optim.minimize(nll, model, method="Newton-CG").x

trainable = {"w": model["w"], "b": model["b"]}               # the int leaf kept out by hand
flat0, unravel = rune.tree.ravel(trainable)
f = lambda v: nll({**unravel(v), "n_features": 3})         # noqa: E731
res = scipy.optimize.minimize(rune.value_and_grad(f), flat0, jac=True, method="Newton-CG",
                              hessp=lambda v, d: rune.jvp(rune.grad(f), (v,), (d,))[1])
recipe3 = unravel(res.x)

print("3.", np.round(bridge3["w"], 3), round(bridge3["b"], 3), bridge3["n_features"])
assert np.allclose(bridge3["w"], recipe3["w"], atol=1e-5) and bridge3["n_features"] == 3
