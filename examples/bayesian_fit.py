"""A Bayesian fit written with scipy.stats, differentiated by rune unchanged.

Robust regression: y = a + b x + noise with Student-t noise of unknown scale, priors from
scipy.stats (normal on a and b, gamma on the scale, through its logarithm).  The log
posterior is plain SciPy; rune.value_and_grad gives its gradient, a few hundred steps of
gradient ascent find the MAP estimate, and rune.check_grads checks the gradient and
Hessian against finite differences.  The Laplace approximation (the inverse Hessian at
the MAP, from rune.hessian) gives the posterior standard deviations.

Run: ``python examples/bayesian_fit.py`` (a few seconds).
"""

import numpy as np
from scipy import stats
from scipy.special import logsumexp

import rune

rng = np.random.default_rng(1)
x = np.linspace(-2.0, 2.0, 40)
y = 0.5 + 1.5 * x + 0.3 * rng.standard_t(3.0, x.size)
y[::13] += 4.0                              # a few outliers: the t likelihood shrugs them off


def log_posterior(theta):
    a, b, log_s = theta[0], theta[1], theta[2]
    s = np.exp(log_s)
    log_lik = np.sum(stats.t.logpdf(y, 3.0, loc=a + b * x, scale=s))
    log_prior = (stats.norm.logpdf(a, 0.0, 10.0) + stats.norm.logpdf(b, 0.0, 10.0)
                 + stats.gamma.logpdf(s, 2.0, scale=0.5) + log_s)    # + log |ds/dlog_s|
    return log_lik + log_prior


def fit(theta, steps=400, lr=0.01):
    """Gradient ascent with momentum on the log posterior."""
    v = np.zeros_like(theta)
    for _ in range(steps):
        value, g = rune.value_and_grad(log_posterior)(theta)
        v = 0.9 * v + lr * g
        theta = theta + v
    return theta, value


theta0 = np.array([0.0, 0.0, 0.0])
rune.check_grads(log_posterior, theta0, order=2)
print("gradient and Hessian at the start agree with finite differences")

theta_map, value = fit(theta0)
g = rune.grad(log_posterior)(theta_map)
assert np.max(np.abs(g)) < 1e-6, g
rune.check_grads(log_posterior, theta_map, order=2)
H = rune.hessian(log_posterior)(theta_map)
sd = np.sqrt(np.diag(np.linalg.inv(-H)))
print(f"MAP: a = {theta_map[0]:.3f} ± {sd[0]:.3f}, b = {theta_map[1]:.3f} ± {sd[1]:.3f}, "
      f"scale = {np.exp(theta_map[2]):.3f}; log posterior {value:.3f}")
assert abs(theta_map[0] - 0.5) < 3 * sd[0] + 0.05 and abs(theta_map[1] - 1.5) < 3 * sd[1] + 0.05

# The evidence of the model on a grid of noise degrees of freedom, by logsumexp over the
# grid, and its derivative with respect to the data: still plain SciPy.
def log_evidence_grid(y_data):
    dfs = np.array([1.0, 3.0, 10.0, 30.0])
    per_df = np.stack([np.sum(stats.t.logpdf(y_data, df, loc=theta_map[0] + theta_map[1] * x,
                                             scale=np.exp(theta_map[2]))) for df in dfs])
    return logsumexp(per_df) - np.log(dfs.size)


rune.check_grads(log_evidence_grid, y, order=1)
print("the derivative of the evidence with respect to the data agrees with finite differences")
