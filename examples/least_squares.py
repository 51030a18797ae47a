"""Least squares, differentiated: the sensitivity of a fit to its data, and tuning a ridge
penalty by gradient descent on a validation loss (a bilevel problem) through np.linalg.

Run: ``python examples/least_squares.py`` (well under 5 s).
"""

import numpy as np

import rune

rng = np.random.default_rng(0)


def features(x, degree=9):
    """Polynomial features (a Vandermonde matrix), columns 1, x, x^2, ..."""
    return x[:, None] ** np.arange(degree + 1)


x_train = np.sort(rng.uniform(-1, 1, 12))      # few points, many features: it overfits
y_train = np.sin(3 * x_train) + 0.3 * rng.standard_normal(12)
x_val = np.sort(rng.uniform(-1, 1, 30))
y_val = np.sin(3 * x_val) + 0.3 * rng.standard_normal(30)
A, A_val = features(x_train), features(x_val)

# 1. How do the fitted coefficients move when one measurement moves?
#    coef(y) = lstsq(A, y) is linear in y, and its Jacobian is pinv(A).
coef = lambda y: np.linalg.lstsq(A, y)[0]
J = rune.jacrev(coef)(y_train)
print("d coef / d y: shape", J.shape, "| max |J - pinv(A)| =",
      f"{np.max(np.abs(J - np.linalg.pinv(A))):.1e}")
assert np.allclose(J, np.linalg.pinv(A), atol=1e-8)

# ... and when the design matrix moves (the derivative of the pseudo-inverse):
x_shift = lambda dx: np.linalg.lstsq(features(x_train + dx), y_train)[0]
n = len(x_train)
_, dcoef = rune.jvp(x_shift, (np.zeros(n),), (np.ones(n),))    # shift every x by +t
eps = 1e-5
fd = (x_shift(np.full(n, eps)) - x_shift(np.full(n, -eps))) / (2 * eps)
print("d coef / d shift: rune", np.round(dcoef[:3], 4), "| finite differences",
      np.round(fd[:3], 4))
# A tolerance from the conditioning, not from one machine: least squares squares the
# condition number, so the rounding error of a central difference is about
# cond(A)^2 * machine epsilon / eps (relative), its truncation error about eps^2.
kappa = np.linalg.cond(A)
tol = 10 * (kappa ** 2 * np.finfo(float).eps / eps + eps ** 2) * np.max(np.abs(dcoef))
assert np.max(np.abs(dcoef - fd)) <= tol, (np.max(np.abs(dcoef - fd)), tol)


# 2. Ridge regression: choose the penalty by gradient descent on the validation error.
#    coef(lam) = (A^T A + lam I)^{-1} A^T y; the loss differentiates through np.linalg.solve.
def validation_loss(log_lam):
    lam = np.exp(log_lam)
    c = np.linalg.solve(A.T @ A + lam * np.eye(A.shape[1]), A.T @ y_train)
    return np.mean((A_val @ c - y_val) ** 2)


log_lam = np.array(0.0)
g = rune.grad(validation_loss)(log_lam)
print(f"d loss / d log(lambda) at log(lambda) = 0: rune {float(g):.8f}")
rune.check_grads(validation_loss, log_lam, order=2)   # first and second derivatives

print(f"validation loss before: {float(validation_loss(log_lam)):.4f}")
for step in range(20):
    # Newton steps on one parameter (the second derivative is rune.grad(rune.grad(.))),
    # at most 1 long, downhill where the loss is not convex
    g = rune.grad(validation_loss)(log_lam)
    h = rune.grad(rune.grad(validation_loss))(log_lam)
    log_lam = log_lam - np.clip(g / h if h > 0 else np.sign(g), -1, 1)
print(f"validation loss after: {float(validation_loss(log_lam)):.4f} at lambda = "
      f"{float(np.exp(log_lam)):.4g}")

# 3. The same loss for a whole grid of penalties in one call: vmap batches np.linalg.solve
#    (one stacked LAPACK call), and vmap(grad) gives every derivative at once.
grid = np.linspace(-10, 2, 7)
losses = rune.vmap(validation_loss)(grid)
slopes = rune.vmap(rune.grad(validation_loss))(grid)
for lg, l, s in zip(grid, losses, slopes):
    print(f"  log(lambda) = {lg:5.1f}: loss {l:.4f}, slope {s:+.5f}")
assert np.allclose(losses, [validation_loss(v) for v in grid])
