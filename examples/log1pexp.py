"""A numerically stable log(1 + exp(x)) with ``rune.custom_jvp``.

Differentiating the textbook formula ``np.log(1 + np.exp(x))`` gives
``exp(x) / (1 + exp(x))``, which is ``inf / inf = nan`` once ``exp(x)``
overflows.  A custom JVP rule states the derivative in a stable form (the
logistic sigmoid); rune uses it for ``jvp`` and, by transposing it (the
rule is linear in the tangent), for ``grad``, ``vmap(grad)`` and
second derivatives too.
"""

import numpy as np

import rune


def log1pexp_naive(x):
    return np.log(1.0 + np.exp(x))


def sigmoid(x):
    return np.exp(-np.logaddexp(0.0, -x))       # 1 / (1 + exp(-x)), without overflow


@rune.custom_jvp
def log1pexp(x):
    return np.logaddexp(0.0, x)                 # log(exp(0) + exp(x)), computed stably


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return log1pexp(x), sigmoid(x) * x_dot


x = np.array([-1000.0, -5.0, 0.0, 5.0, 1000.0])
with np.errstate(over="ignore", invalid="ignore"):
    naive_grad = rune.vmap(rune.grad(log1pexp_naive))(x)
stable_grad = rune.vmap(rune.grad(log1pexp))(x)
print("x                     ", x)
print("naive  d/dx log1pexp  ", naive_grad)
print("custom d/dx log1pexp  ", stable_grad)
assert np.isnan(naive_grad[-1]) and np.all(np.isfinite(stable_grad))
assert np.allclose(stable_grad, sigmoid(x))

# The same rule serves forward mode, reverse mode and their compositions.
_, t_out = rune.jvp(log1pexp, (x,), (np.ones_like(x),))
second = rune.vmap(rune.grad(rune.grad(log1pexp)))(x)
hvp_second = rune.vmap(lambda v: rune.jvp(rune.grad(log1pexp), (v,), (1.0,))[1])(x)
print("jvp tangent           ", t_out)
print("second derivative     ", second)
assert np.allclose(t_out, stable_grad)
assert np.allclose(second, sigmoid(x) * (1 - sigmoid(x)))
assert np.allclose(hvp_second, second)
assert rune.grad(lambda v: np.sum(log1pexp(v)))(x).tolist() == stable_grad.tolist()
rune.check_grads(log1pexp, np.array([-3.0, 0.5, 2.0]), order=2)
print("check_grads: the rule agrees with finite differences up to second order")
