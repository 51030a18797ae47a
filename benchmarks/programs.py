"""Real programs under rune (issue 14): each written the way a user writes it in plain
NumPy, differentiated as it stands, timed next to NumPy's own forward pass, with the
peak memory of the gradient beside the time.

* GP: the negative log marginal likelihood of a Gaussian process (RBF kernel, 300
  points) through a Cholesky factor, its gradient in the three log-hyperparameters.
* ODE: a 100-step RK4 neural ODE (state 64x128, tanh dynamics), ``rune.checkpoint``
  around every step, the gradient in the weights.
* Transformer: one block (single-head attention, layer norms, a 4x MLP; 128 tokens of
  width 128), ``value_and_grad`` in its weights.
* DP-SGD: per-example gradients of a 64-128-10 MLP (``vmap(grad)``, batch 256), each
  clipped to norm 1, summed, Gaussian noise added.
* Heat: 200 explicit steps of the 1-d heat equation on 4096 points written in place
  (``u[1:-1] += r * (u[2:] - 2 * u[1:-1] + u[:-2])``) against its functional rewrite
  (``np.concatenate``); the gradient of the final energy in the initial state.
  Target: the in-place version at most 1.2x the functional one.

Times are the minimum (and median) of interleaved samples, BLAS on one thread; memory
is tracemalloc's peak above the level at the call.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/programs.py
"""

from __future__ import annotations

import gc
import statistics
import sys
import time

import numpy as np

import harness  # noqa: F401  (puts the working tree's src/ first on sys.path)
from harness import peak_memory

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


def timings(fns, repeats=7):
    for fn in fns:
        fn()
    samples = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, samples):
            gc.collect()
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [(min(s), statistics.median(s)) for s in samples]


def row(name, forward, grad, repeats):
    (tf, mf), (tg, mg) = timings([forward, grad], repeats)
    mem = peak_memory(grad)
    print(f"  {name:34s} forward {tf * 1e3:8.2f} ms   grad {tg * 1e3:8.2f} ms "
          f"(median {mg * 1e3:8.2f})  {tg / tf:5.2f}x   peak {mem / 1e6:7.2f} MB", flush=True)
    return tg, mem


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    repeats = int(argv[0]) if argv else 7
    gp, ode, tr, dp, u0 = setup()
    print("Real programs: rune's gradient against NumPy's forward (min of interleaved runs)")
    row("GP marginal likelihood (Cholesky)", lambda: gp_nlml(*gp),
        lambda: rune.grad(gp_nlml)(*gp), repeats)
    step_ck = rune.checkpoint(rk4_step)
    row("RK4 neural ODE, checkpoint/step", lambda: ode_loss(*ode),
        lambda: rune.grad(lambda p, h: ode_loss(p, h, step_ck))(*ode), repeats)
    row("RK4 neural ODE, no checkpoint", lambda: ode_loss(*ode),
        lambda: rune.grad(ode_loss)(*ode), repeats)
    row("transformer block value_and_grad", lambda: transformer_loss(*tr),
        lambda: rune.value_and_grad(transformer_loss)(*tr), repeats)
    mp, MX, MY, noise = dp
    row("DP-SGD per-example clipped grads",
        lambda: [mlp_example_loss(mp, x, y) for x, y in zip(MX, MY)],   # per-example loop
        lambda: dp_sgd_grad(mp, MX, MY, noise), repeats)
    g_in = rune.grad(heat_inplace)
    g_fn = rune.grad(heat_functional)
    np.testing.assert_allclose(g_in(u0), g_fn(u0), rtol=1e-12)
    (ti, mi), (tf, mf) = timings([lambda: g_in(u0), lambda: g_fn(u0)], repeats)
    mem_i, mem_f = peak_memory(lambda: g_in(u0)), peak_memory(lambda: g_fn(u0))
    print(f"  heat equation grad, in place        {ti * 1e3:8.2f} ms (median {mi * 1e3:8.2f})"
          f"  peak {mem_i / 1e6:7.2f} MB")
    print(f"  heat equation grad, functional      {tf * 1e3:8.2f} ms (median {mf * 1e3:8.2f})"
          f"  peak {mem_f / 1e6:7.2f} MB")
    print(f"  in place / functional: {ti / tf:.2f}x min, {mi / mf:.2f}x median "
          f"(target <= 1.2x)")


if __name__ == "__main__":
    main()
