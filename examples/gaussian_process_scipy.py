"""Gaussian-process regression written the SciPy way, unchanged: ``scipy.linalg.cho_factor``
and ``cho_solve`` in the negative log marginal likelihood, hyperparameters fit by gradient.

    nlml(theta) = 1/2 y^T K^{-1} y + 1/2 log det K + n/2 log(2 pi),
    K = s^2 exp(-|x_i - x_j|^2 / (2 l^2)) + sigma^2 I,   theta = log(l, s, sigma).

Nothing from rune is imported but ``rune``: while ``rune.grad`` runs, SciPy's functions see
traced values through rune's own implementations of them.  ``rune.check_grads`` checks the
gradient and the Hessian (second order, through the Cholesky factorization) against central
finite differences; the fit is Newton's method with rune's Hessian and a line search.

Run: ``python examples/gaussian_process_scipy.py`` (a few seconds).
"""

import numpy as np
from scipy.linalg import cho_factor, cho_solve

import rune

rng = np.random.default_rng(2)
n = 30
x = np.sort(rng.uniform(-3, 3, n))
y = np.sin(2 * x) + 0.5 * x + 0.2 * rng.standard_normal(n)
sq_dist = (x[:, None] - x[None, :]) ** 2


def kernel(theta):
    ell, s, sigma = np.exp(theta[0]), np.exp(theta[1]), np.exp(theta[2])
    return s ** 2 * np.exp(-0.5 * sq_dist / ell ** 2) + sigma ** 2 * np.eye(n)


def nlml(theta):
    """Negative log marginal likelihood of the data under the GP with hyperparameters theta."""
    c, lower = cho_factor(kernel(theta), lower=True)
    alpha = cho_solve((c, lower), y)                      # K^{-1} y
    logdet = 2 * np.sum(np.log(np.diag(c)))               # log det K from the factor
    return 0.5 * y @ alpha + 0.5 * logdet + 0.5 * n * np.log(2 * np.pi)


theta = np.log(np.array([2.0, 0.5, 0.5]))     # log lengthscale, log scale, log noise
rune.check_grads(nlml, theta, order=2)        # gradient and Hessian vs finite differences
eps = 1e-6
fd = np.array([(nlml(theta + eps * e) - nlml(theta - eps * e)) / (2 * eps) for e in np.eye(3)])
g = rune.grad(nlml)(theta)
print("gradient of the NLML w.r.t. log(lengthscale, scale, noise):")
print("  rune:               ", np.array2string(g, precision=8))
print("  finite differences: ", np.array2string(fd, precision=8))

print(f"NLML at the start: {float(nlml(theta)):.4f}")
for step in range(50):       # Newton's method on |H| (saddle-free), with a line search
    g = rune.grad(nlml)(theta)
    if np.max(np.abs(g)) < 1e-9:
        break
    w, v = np.linalg.eigh(rune.hessian(nlml)(theta))
    direction = -(v / np.maximum(np.abs(w), 1e-3)) @ (v.T @ g)
    direction /= max(1.0, np.max(np.abs(direction)))       # at most a factor e per step
    t = 1.0
    while nlml(theta + t * direction) > nlml(theta) and t > 1e-8:
        t /= 2
    theta = theta + t * direction
g = rune.grad(nlml)(theta)
ell, s, sigma = np.exp(theta)
print(f"NLML at the optimum: {float(nlml(theta)):.4f} (lengthscale {ell:.3f}, scale {s:.3f}, "
      f"noise {sigma:.3f}; |grad| {np.max(np.abs(g)):.1e})")
assert np.max(np.abs(g)) < 1e-6
rune.check_grads(nlml, theta, order=2)
h = rune.hessian(nlml)(theta)
print("  std of log(lengthscale, scale, noise) (Laplace):",
      np.round(np.sqrt(np.diag(np.linalg.inv(h))), 3))
