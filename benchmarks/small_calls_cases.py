"""Issue 27's small calls, written once in NumPy (run by NumPy, rune and HIPS autograd)
and in PyTorch's and JAX's idiom; ``small_calls.py`` times them.

Every case is a function ``build_<group>(peers)`` returning ``{case: {column: thunk}}``:
``thunk()`` runs one call and returns its result (NumPy arrays, tensors, a dataclass or
an ``OptimizeResult``) for the cross-check; a string in place of a thunk is a note
("no vmap").  Data are made once, as NumPy arrays, and each peer converts them outside
the timed region, except in the L-BFGS case, where the conversion NumPy -> tensor and
back in the objective is what a user of ``scipy.optimize`` pays and is timed.

* ``tiny``: ``grad(lambda x: np.sum(np.sin(x)))`` on ``np.ones(3)``.
* ``chain``: grad of ``workloads.chain27`` (issue 27's 200-op chain) on 16 elements.
* ``w3``: W3's per-example gradients (``workloads.example_loss``, batch 128).
* ``lbfgs``: ``scipy.optimize.minimize(..., jac=True, method="L-BFGS-B")`` of a 30-parameter
  tanh least-squares model on 200 points, the objective returning (loss, gradient).
* ``rk4``: 200 fixed RK4 steps of a 20-state Lorenz-96 system (F = 8), the gradient of the
  final state's sum in the initial state and F.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

import workloads as w

CASES = ("tiny", "chain", "w3", "lbfgs", "rk4")

# --------------------------------------------------------------------------
# The data and the problems in NumPy (``xp``: numpy, autograd.numpy, jax.numpy or torch)
# --------------------------------------------------------------------------

LS_PARAMS, LS_POINTS = 30, 200
L96_N, L96_STEPS, L96_DT = 20, 200, 0.01


def data(seed=0):
    rng = np.random.default_rng(seed)
    d = {"tiny": np.ones(3), "chain": np.linspace(0.1, 0.9, 16), "w3": w.data()["W3"]}
    X = rng.standard_normal((LS_POINTS, LS_PARAMS)) / np.sqrt(LS_PARAMS)
    theta = rng.standard_normal(LS_PARAMS)
    y = np.tanh(X @ theta) + 0.05 * rng.standard_normal(LS_POINTS)
    d["lbfgs"] = {"X": X, "y": y, "x0": np.zeros(LS_PARAMS)}
    d["rk4"] = {"x0": 8.0 + rng.standard_normal(L96_N), "F": np.array(8.0)}
    return d


def tiny(x, xp=np):
    return xp.sum(xp.sin(x))


def ls_loss(theta, X, y, xp=np):
    """Nonlinear least squares with a small ridge: 0.5 |tanh(X theta) - y|^2 + 1e-3 |theta|^2."""
    r = xp.tanh(X @ theta) - y
    return 0.5 * xp.sum(r * r) + 1e-3 * xp.sum(theta * theta)


def lorenz96(x, F, xp=np):
    """dx_i/dt = (x_{i+1} - x_{i-2}) x_{i-1} - x_i + F, indices cyclic."""
    return (xp.roll(x, -1) - xp.roll(x, 2)) * xp.roll(x, 1) - x + F


def rk4_final_sum(x0, F, xp=np, steps=L96_STEPS, dt=L96_DT):
    x = x0
    for _ in range(steps):
        k1 = lorenz96(x, F, xp)
        k2 = lorenz96(x + 0.5 * dt * k1, F, xp)
        k3 = lorenz96(x + 0.5 * dt * k2, F, xp)
        k4 = lorenz96(x + dt * k3, F, xp)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return xp.sum(x)


def minimize(fun_and_grad, x0):
    """The L-BFGS fit every framework runs: SciPy's defaults, the objective's own gradient."""
    return scipy.optimize.minimize(fun_and_grad, x0, jac=True, method="L-BFGS-B")


# --------------------------------------------------------------------------
# NumPy (the forward references), rune, autograd: the NumPy text
# --------------------------------------------------------------------------

def build_numpy(peers):
    d = data()
    D, R = d["w3"], d["rk4"]
    x, c = d["tiny"], d["chain"]
    return {
        "tiny": {"numpy": lambda: tiny(x)},
        "chain": {"numpy": lambda: w.chain27(c)},
        "w3": {"numpy": lambda: w.small_losses_fields(*w.as_tuple(D["p"]), D["x"], D["y"])},
        "rk4": {"numpy": lambda: rk4_final_sum(R["x0"], R["F"])},
    }


def _call(f, *args):
    return lambda: f(*args)


def build_rune(peers):
    import rune
    d = data()
    D, L, R = d["w3"], d["lbfgs"], d["rk4"]
    p, X3, Y3 = D["p"], D["x"], D["y"]
    pe = rune.vmap(rune.grad(w.example_loss), in_axes=(None, 0, 0))
    vg = rune.value_and_grad(lambda t: ls_loss(t, L["X"], L["y"]))
    vg_jit = rune.jit(rune.value_and_grad(lambda t, X, y: ls_loss(t, X, y)))
    g4 = rune.grad(rk4_final_sum, argnums=(0, 1))
    return {
        "tiny": {"rune": _call(rune.grad(tiny), d["tiny"]),
                 "rune-jit": _call(rune.jit(rune.grad(tiny)), d["tiny"])},
        "chain": {"rune": _call(rune.grad(w.chain27), d["chain"]),
                  "rune-jit": _call(rune.jit(rune.grad(w.chain27)), d["chain"])},
        "w3": {"rune": _call(pe, p, X3, Y3), "rune-jit": _call(rune.jit(pe), p, X3, Y3)},
        "lbfgs": {"rune": lambda: minimize(vg, L["x0"]),
                  "rune-jit": lambda: minimize(lambda t: vg_jit(t, L["X"], L["y"]), L["x0"])},
        "rk4": {"rune": _call(g4, R["x0"], R["F"]),
                "rune-jit": _call(rune.jit(g4), R["x0"], R["F"])},
    }


def build_autograd(peers):
    ag, anp = peers["autograd"], peers["anp"]
    d = data()
    D, L, R = d["w3"], d["lbfgs"], d["rk4"]
    pt = w.as_tuple(D["p"])
    ge = ag.grad(lambda pt, a, c: w.small_losses_fields(*pt, a, c, anp))

    def w3_loop():        # autograd has no vmap: a loop of grad, stacked per parameter
        gs = [ge(pt, a, c) for a, c in zip(D["x"], D["y"])]
        return [np.stack(leaf) for leaf in zip(*gs)]
    vg = ag.value_and_grad(lambda t: ls_loss(t, L["X"], L["y"], anp))
    return {
        "tiny": {"autograd": _call(ag.grad(lambda x: tiny(x, anp)), d["tiny"])},
        "chain": {"autograd": _call(ag.grad(lambda x: w.chain27(x, anp)), d["chain"])},
        "w3": {"autograd": w3_loop},
        "lbfgs": {"autograd": lambda: minimize(vg, L["x0"])},
        "rk4": {"autograd": _call(ag.grad(lambda x, F: rk4_final_sum(x, F, anp), argnum=(0, 1)),
                                  R["x0"], R["F"])},
    }


# --------------------------------------------------------------------------
# PyTorch: eager autograd (torch.autograd.grad) and torch.func
# --------------------------------------------------------------------------

def build_torch(peers):
    torch = peers["torch"]
    from torch.func import grad as tgrad, vmap as tvmap
    d = data()
    D, L, R = d["w3"], d["lbfgs"], d["rk4"]
    T = torch.tensor

    def eager_grad(f, *xs):
        """``torch.autograd.grad`` of ``f`` at fresh leaves (as a user calls it each time)."""
        def run():
            leaves = [x.detach().requires_grad_(True) for x in xs]
            g = torch.autograd.grad(f(*leaves), leaves)
            return g if len(g) > 1 else g[0]
        return run

    xt, ct = T(d["tiny"]), T(d["chain"])
    pt = {k: T(v) for k, v in w.as_dict(D["p"]).items()}
    X3, Y3 = T(D["x"]), T(D["y"])
    pe = tvmap(tgrad(w.torch_small_losses), in_dims=(None, 0, 0))
    params = list(pt.values())

    def w3_loop():
        leaves = [p.detach().requires_grad_(True) for p in params]
        lp = dict(zip(pt, leaves))
        gs = [torch.autograd.grad(w.torch_small_losses(lp, a, c), leaves) for a, c in zip(X3, Y3)]
        return [torch.stack(g) for g in zip(*gs)]

    Xl, yl = T(L["X"]), T(L["y"])

    def fg(theta):        # scipy's objective: NumPy in, (float, NumPy gradient) out
        t = torch.from_numpy(theta).requires_grad_(True)
        v = ls_loss(t, Xl, yl, torch)
        g, = torch.autograd.grad(v, t)
        return v.item(), g.numpy()
    return {
        "tiny": {"torch": eager_grad(lambda x: tiny(x, torch), xt),
                 "torch.func": _call(tgrad(lambda x: tiny(x, torch)), xt)},
        "chain": {"torch": eager_grad(lambda x: w.chain27(x, torch), ct),
                  "torch.func": _call(tgrad(lambda x: w.chain27(x, torch)), ct)},
        "w3": {"torch": w3_loop, "torch.func": _call(pe, pt, X3, Y3)},
        "lbfgs": {"torch": lambda: minimize(fg, L["x0"])},
        "rk4": {"torch": eager_grad(lambda x, F: rk4_final_sum(x, F, torch),
                                    T(R["x0"]), T(R["F"]))},
    }


# --------------------------------------------------------------------------
# JAX: op-by-op and under jax.jit (the first call, which compiles, is timed apart)
# --------------------------------------------------------------------------

def build_jax(peers):
    jax, jnp = peers["jax"], peers["jnp"]
    d = data()
    D, L, R = d["w3"], d["lbfgs"], d["rk4"]
    sync = jax.block_until_ready
    A = jnp.asarray

    def both(f, *args):
        """{jax: op-by-op call, jax-jit: the jitted call}, each synchronised."""
        fj = jax.jit(f)
        return {"jax": lambda: sync(f(*args)), "jax-jit": lambda: sync(fj(*args))}

    pj = jax.tree_util.tree_map(A, D["p"])
    pe = jax.vmap(jax.grad(lambda p, a, c: w.example_loss(p, a, c, jnp)), in_axes=(None, 0, 0))
    Xl, yl = A(L["X"]), A(L["y"])
    vg = jax.value_and_grad(lambda t, X, y: ls_loss(t, X, y, jnp))
    vg_jit = jax.jit(vg)

    def objective(f):
        def fg(theta):    # NumPy in, (float, NumPy gradient) out
            v, g = f(theta, Xl, yl)
            return float(v), np.asarray(g)
        return fg
    return {
        "tiny": both(jax.grad(lambda x: tiny(x, jnp)), A(d["tiny"])),
        "chain": both(jax.grad(lambda x: w.chain27(x, jnp)), A(d["chain"])),
        "w3": both(pe, pj, A(D["x"]), A(D["y"])),
        "lbfgs": {"jax": lambda: minimize(objective(vg), L["x0"]),
                  "jax-jit": lambda: minimize(objective(vg_jit), L["x0"])},
        "rk4": {"jax": "not sampled: ~7 s a call op by op (measured once)",
                "jax-jit": both(jax.grad(rk4_fori, argnums=(0, 1)), A(R["x0"]),
                                A(R["F"]))["jax-jit"]},
    }


def rk4_fori(x0, F, steps=L96_STEPS, dt=L96_DT):
    """``rk4_final_sum`` in JAX's idiom for jit: the steps in ``lax.fori_loop``.  The same
    Python loop as the others' under ``jax.jit`` (200 steps unrolled) had not finished
    compiling after 13 minutes on this machine."""
    import jax
    import jax.numpy as jnp

    def step(_, x):
        k1 = lorenz96(x, F, jnp)
        k2 = lorenz96(x + 0.5 * dt * k1, F, jnp)
        k3 = lorenz96(x + 0.5 * dt * k2, F, jnp)
        k4 = lorenz96(x + dt * k3, F, jnp)
        return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return jnp.sum(jax.lax.fori_loop(0, steps, step, x0))


BUILDERS = {"numpy": build_numpy, "rune": build_rune, "autograd": build_autograd,
            "torch": build_torch, "jax": build_jax}
