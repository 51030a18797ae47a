"""Gaussian-process regression: fit the kernel's hyperparameters by minimizing the negative
log marginal likelihood, written with np.linalg.cholesky, solve and slogdet.

    nlml(theta) = 1/2 y^T K^{-1} y + 1/2 log det K + n/2 log(2 pi),
    K = s^2 exp(-|x_i - x_j|^2 / (2 l^2)) + sigma^2 I,   theta = log(l, s, sigma).

The gradient with respect to theta is rune's (checked against finite differences, both
printed), and the Hessian at the optimum (through the Cholesky factorization, second order)
gives a Laplace estimate of the hyperparameters' uncertainty.

Run: ``python examples/gaussian_process.py`` (well under 5 s).
"""

import numpy as np

import rune

rng = np.random.default_rng(1)
n = 40
x = np.sort(rng.uniform(-3, 3, n))
y = np.sin(2 * x) + 0.5 * x + 0.2 * rng.standard_normal(n)
sq_dist = (x[:, None] - x[None, :]) ** 2


def kernel(theta):
    ell, s, sigma = np.exp(theta[0]), np.exp(theta[1]), np.exp(theta[2])
    return s ** 2 * np.exp(-0.5 * sq_dist / ell ** 2) + sigma ** 2 * np.eye(n)


def nlml(theta):
    """Negative log marginal likelihood of the data under the GP with hyperparameters theta."""
    K = kernel(theta)
    L = np.linalg.cholesky(K)
    z = np.linalg.solve(L, y)                 # L z = y, so z.z = y^T K^{-1} y
    _, logdet = np.linalg.slogdet(K)
    return 0.5 * z @ z + 0.5 * logdet + 0.5 * n * np.log(2 * np.pi)


def fd_grad(f, theta, eps=1e-6):
    return np.array([(f(theta + eps * e) - f(theta - eps * e)) / (2 * eps)
                     for e in np.eye(len(theta))])


theta = np.log(np.array([2.0, 0.5, 0.5]))     # log lengthscale, log scale, log noise
g = rune.grad(nlml)(theta)
fd = fd_grad(nlml, theta)
print("gradient of the NLML w.r.t. log(lengthscale, scale, noise):")
print("  rune:               ", np.array2string(g, precision=8))
print("  finite differences: ", np.array2string(fd, precision=8))
assert np.allclose(g, fd, rtol=1e-6, atol=1e-8)

# Fit: Newton's method with rune's Hessian (jacfwd of jacrev, through cholesky and solve),
# falling back to a gradient step where the Hessian is not positive definite.
print(f"NLML at the start: {float(nlml(theta)):.4f}")
for step in range(30):
    g = rune.grad(nlml)(theta)
    h = rune.hessian(nlml)(theta)
    if np.all(np.linalg.eigvalsh(h) > 0):
        step_ = np.linalg.solve(h, g)
    else:
        step_ = 0.1 * g
    theta = theta - np.clip(step_, -1, 1)
    if np.max(np.abs(g)) < 1e-9:
        break
ell, s, sigma = np.exp(theta)
print(f"NLML at the optimum: {float(nlml(theta)):.4f} (lengthscale {ell:.3f}, "
      f"scale {s:.3f}, noise {sigma:.3f}; |grad| {np.max(np.abs(rune.grad(nlml)(theta))):.1e})")
assert np.max(np.abs(rune.grad(nlml)(theta))) < 1e-6

# The Hessian at the optimum against finite differences of the gradient, and the Laplace
# approximation of the posterior over log-hyperparameters: covariance = H^{-1}.
h = rune.hessian(nlml)(theta)
h_fd = np.stack([fd_grad(lambda t, k=k: rune.grad(nlml)(t)[k], theta) for k in range(3)])
print("Hessian at the optimum (rune), max |rune - finite differences| =",
      f"{np.max(np.abs(h - h_fd)):.1e}")
assert np.allclose(h, h_fd, rtol=1e-5, atol=1e-6)
print("  std of log(lengthscale, scale, noise):", np.round(np.sqrt(np.diag(np.linalg.inv(h))), 3))

# Posterior mean at new points, and its derivative in x* (jvp through solve) for free.
x_new = np.linspace(-3, 3, 5)


def posterior_mean(x_star, theta=theta):
    ell, s, _ = np.exp(theta)
    k_star = s ** 2 * np.exp(-0.5 * (x_star[:, None] - x[None, :]) ** 2 / ell ** 2)
    return k_star @ np.linalg.solve(kernel(theta), y)


mean, slope = rune.jvp(posterior_mean, (x_new,), (np.ones_like(x_new),))
for xs, m, d in zip(x_new, mean, slope):
    print(f"  x* = {xs:5.2f}: mean {m:+.3f} (truth {np.sin(2 * xs) + 0.5 * xs:+.3f}), "
          f"d mean/dx* {d:+.3f}")
