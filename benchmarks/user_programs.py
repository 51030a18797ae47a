"""The real programs of ``programs.py``, written as a user writes them in plain NumPy, and
their data (``setup``).  ``programs_peers.py`` runs the same text under autograd and has
PyTorch's versions; ``programs.py`` measures them all (no import cycle between them)."""

from __future__ import annotations

import numpy as np

import harness  # noqa: F401  (puts the working tree's src/ first on sys.path)
import rune


# --------------------------------------------------------------------------
# The programs, in plain NumPy
# --------------------------------------------------------------------------


def gp_nlml(log_params, X, y):
    ell, sf, sn = np.exp(log_params)
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = sf ** 2 * np.exp(-0.5 * d2 / ell ** 2) + (sn ** 2 + 1e-6) * np.eye(len(y))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * len(y) * np.log(2 * np.pi)


def ode_rhs(params, h):
    W, b = params
    return np.tanh(W @ h + b)


def rk4_step(params, h, dt=0.05):
    k1 = ode_rhs(params, h)
    k2 = ode_rhs(params, h + 0.5 * dt * k1)
    k3 = ode_rhs(params, h + 0.5 * dt * k2)
    k4 = ode_rhs(params, h + dt * k3)
    return h + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def ode_loss(params, h0, step=rk4_step, n_steps=100):
    h = h0
    for _ in range(n_steps):
        h = step(params, h)
    return np.sum(h ** 2)


def layer_norm(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def transformer_loss(p, x):
    h = layer_norm(x, p["g1"], p["b1"])
    q, k, v = h @ p["wq"], h @ p["wk"], h @ p["wv"]
    s = q @ k.T / q.shape[-1] ** 0.5
    s = s - np.max(s, axis=-1, keepdims=True)
    a = np.exp(s)
    a = a / np.sum(a, axis=-1, keepdims=True)
    x = x + (a @ v) @ p["wo"]
    h = layer_norm(x, p["g2"], p["b2"])
    x = x + np.maximum(h @ p["w1"], 0.0) @ p["w2"]
    return np.mean(x ** 2)


def mlp_example_loss(p, x, y):
    w1, b1, w2, b2 = p
    logits = np.tanh(x @ w1 + b1) @ w2 + b2
    m = np.max(logits)
    return -np.sum(y * (logits - m - np.log(np.sum(np.exp(logits - m)))))


def dp_sgd_grad(p, X, Y, noise, clip=1.0):
    g = rune.vmap(rune.grad(mlp_example_loss), in_axes=(None, 0, 0))(p, X, Y)
    norms = np.sqrt(sum(np.sum(gi.reshape(len(X), -1) ** 2, axis=1) for gi in g))
    scale = 1.0 / np.maximum(1.0, norms / clip)
    return [np.tensordot(scale, gi, axes=1) + n for gi, n in zip(g, noise)]


def heat_inplace(u0, r=0.25, n_steps=200):
    u = u0.copy()
    for _ in range(n_steps):
        u[1:-1] += r * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def heat_functional(u0, r=0.25, n_steps=200):
    u = u0
    for _ in range(n_steps):
        u = np.concatenate([u[:1], u[1:-1] + r * (u[2:] - 2 * u[1:-1] + u[:-2]), u[-1:]])
    return np.sum(u ** 2)


# --------------------------------------------------------------------------
# Data and the harness
# --------------------------------------------------------------------------


def setup():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (300, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(300)
    gp = (np.log(np.array([1.0, 1.0, 0.1])), X, y)

    f32 = np.float32
    ode = (((rng.standard_normal((64, 64)) / 8).astype(f32), np.zeros((64, 1), f32)),
           rng.standard_normal((64, 128)).astype(f32))

    d = 128
    tp = {k: (rng.standard_normal(s) / np.sqrt(s[0])).astype(f32) for k, s in
          [("wq", (d, d)), ("wk", (d, d)), ("wv", (d, d)), ("wo", (d, d)),
           ("w1", (d, 4 * d)), ("w2", (4 * d, d))]}
    tp.update(g1=np.ones(d, f32), b1=np.zeros(d, f32), g2=np.ones(d, f32),
              b2=np.zeros(d, f32))
    tx = rng.standard_normal((128, d)).astype(f32)

    mp = [rng.standard_normal((64, 128)) / 8, np.zeros(128),
          rng.standard_normal((128, 10)) / 11, np.zeros(10)]
    MX = rng.standard_normal((256, 64))
    MY = np.eye(10)[rng.integers(0, 10, 256)]
    noise = [rng.standard_normal(np.shape(w)) * 0.01 for w in mp]

    u0 = np.sin(np.linspace(0, np.pi, 4096)) + 0.1 * rng.standard_normal(4096)
    return gp, ode, (tp, tx), (mp, MX, MY, noise), u0
