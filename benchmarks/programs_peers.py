"""The programs of ``programs.py`` in each peer's idiom, at the same sizes and dtypes.

* autograd: the same NumPy text with ``import autograd.numpy as np`` (that is how its users
  write it), ``autograd.checkpoint`` around each RK4 step, a Python loop of ``grad`` for
  per-example gradients (autograd has no ``vmap``), and no in-place heat stencil (autograd
  refuses item assignment on traced arrays, so its users write the functional rewrite).
* PyTorch eager: tensors with ``requires_grad`` and ``loss.backward()``,
  ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)`` per RK4 step,
  ``torch.func.vmap(torch.func.grad(...))`` for per-example gradients, and the heat stencil
  written in place on a clone (``u[1:-1] += ...``), as PyTorch allows.

Each builder takes the data of ``programs.setup()`` and returns ``(forward, grad)``: two
callables without arguments, ``grad()`` returning the gradient as NumPy arrays in the
layout rune returns (a dict, a list or a tuple), so that ``programs.py`` can check it
against rune's before timing.
"""

from __future__ import annotations

import math

try:
    import autograd
    import autograd.numpy as anp
except ImportError:          # the table says so
    autograd = None

try:
    import torch
    import torch.func
    import torch.utils.checkpoint
except ImportError:
    torch = None


# --------------------------------------------------------------------------
# autograd: the NumPy text, with autograd.numpy as np
# --------------------------------------------------------------------------

def _autograd_text():
    """``user_programs.py``'s NumPy functions, the same text with ``np`` meaning autograd.numpy
    (how autograd's users write it): each function made again over a copy of that
    module's globals in which ``np`` is autograd.numpy and the functions are these copies
    (``transformer_loss`` calls this ``layer_norm``, ``ode_loss``'s default step is this
    ``rk4_step``)."""
    import types

    import user_programs as programs
    names = ("gp_nlml", "ode_rhs", "rk4_step", "ode_loss", "layer_norm", "transformer_loss",
             "mlp_example_loss", "heat_functional")
    g = dict(vars(programs), np=anp)
    made = {}
    for name in names:
        f = getattr(programs, name)
        made[f] = types.FunctionType(f.__code__, g, name, None, f.__closure__)
    for f, new in made.items():
        new.__defaults__ = tuple(made.get(d, d) if callable(d) else d
                                 for d in f.__defaults__ or ()) or None
        g[f.__name__] = new
    return {f.__name__: new for f, new in made.items()}


def ag_dp_sgd_grad(example_loss, p, X, Y, noise, clip=1.0):
    np = anp
    per_example = autograd.grad(example_loss)
    g = [np.stack(gi) for gi in zip(*[per_example(p, x, y) for x, y in zip(X, Y)])]
    norms = np.sqrt(sum(np.sum(gi.reshape(len(X), -1) ** 2, axis=1) for gi in g))
    scale = 1.0 / np.maximum(1.0, norms / clip)
    return [np.tensordot(scale, gi, axes=1) + n for gi, n in zip(g, noise)]


def ag_heat_inplace(u0, r=0.25, n_steps=200):
    """The in-place text under autograd: it raises at the item assignment, autograd's real
    limit (an ArrayBox has no ``copy``, and ``np.copy`` no VJP: the write is what fails)."""
    u = u0.copy() if hasattr(u0, "copy") else u0
    for _ in range(n_steps):
        u[1:-1] += r * (u[2:] - 2 * u[1:-1] + u[:-2])
    return anp.sum(u ** 2)


def autograd_programs(gp, ode, tr, dp, u0):
    """{program: (forward, grad)} for autograd; ``None`` for a program it cannot run."""
    mp, MX, MY, noise = dp
    ag = _autograd_text()
    ag_gp_nlml, ag_ode_loss, ag_transformer_loss, ag_heat_functional = (
        ag[n] for n in ("gp_nlml", "ode_loss", "transformer_loss", "heat_functional"))
    ag_mlp_example_loss = ag["mlp_example_loss"]
    step_ck = autograd.checkpoint(ag["rk4_step"])
    out = {
        "gp": (lambda: ag_gp_nlml(*gp), lambda: autograd.grad(ag_gp_nlml)(*gp)),
        "ode_ck": (lambda: ag_ode_loss(*ode),
                   lambda: autograd.grad(lambda p, h: ag_ode_loss(p, h, step_ck))(*ode)),
        "ode": (lambda: ag_ode_loss(*ode), lambda: autograd.grad(ag_ode_loss)(*ode)),
        "transformer": (lambda: ag_transformer_loss(*tr),
                        lambda: autograd.value_and_grad(ag_transformer_loss)(*tr)[1]),
        "dp_sgd": (lambda: [ag_mlp_example_loss(mp, x, y) for x, y in zip(MX, MY)],
                   lambda: ag_dp_sgd_grad(ag_mlp_example_loss, mp, MX, MY, noise)),
        "heat_functional": (lambda: ag_heat_functional(u0),
                            lambda: autograd.grad(ag_heat_functional)(u0)),
    }
    try:
        autograd.grad(ag_heat_inplace)(u0)
        out["heat_inplace"] = (lambda: ag_heat_inplace(u0),
                               lambda: autograd.grad(ag_heat_inplace)(u0))
    except Exception as e:                  # noqa: BLE001 - reported in the table
        out["heat_inplace"] = f"not supported ({type(e).__name__}: {str(e)[:60]})"
    return out


# --------------------------------------------------------------------------
# PyTorch eager
# --------------------------------------------------------------------------

def t_gp_nlml(log_params, X, y):
    ell, sf, sn = torch.exp(log_params)
    d2 = torch.sum((X[:, None, :] - X[None, :, :]) ** 2, dim=-1)
    K = sf ** 2 * torch.exp(-0.5 * d2 / ell ** 2) + (sn ** 2 + 1e-6) * torch.eye(
        len(y), dtype=X.dtype)
    L = torch.linalg.cholesky(K)
    alpha = torch.linalg.solve(L.T, torch.linalg.solve(L, y))
    return (0.5 * y @ alpha + torch.sum(torch.log(torch.diagonal(L)))
            + 0.5 * len(y) * math.log(2 * math.pi))


def t_rk4_step(W, b, h, dt=0.05):
    def rhs(h):
        return torch.tanh(W @ h + b)
    k1 = rhs(h)
    k2 = rhs(h + 0.5 * dt * k1)
    k3 = rhs(h + 0.5 * dt * k2)
    k4 = rhs(h + dt * k3)
    return h + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def t_ode_loss(W, b, h0, checkpointed=False, n_steps=100):
    h = h0
    for _ in range(n_steps):
        if checkpointed:
            h = torch.utils.checkpoint.checkpoint(t_rk4_step, W, b, h, use_reentrant=False)
        else:
            h = t_rk4_step(W, b, h)
    return torch.sum(h ** 2)


def t_layer_norm(x, g, b):
    mu = torch.mean(x, dim=-1, keepdim=True)
    var = torch.var(x, dim=-1, keepdim=True, unbiased=False)
    return (x - mu) / torch.sqrt(var + 1e-5) * g + b


def t_transformer_loss(p, x):
    h = t_layer_norm(x, p["g1"], p["b1"])
    q, k, v = h @ p["wq"], h @ p["wk"], h @ p["wv"]
    s = q @ k.T / q.shape[-1] ** 0.5
    s = s - torch.amax(s, dim=-1, keepdim=True)
    a = torch.exp(s)
    a = a / torch.sum(a, dim=-1, keepdim=True)
    x = x + (a @ v) @ p["wo"]
    h = t_layer_norm(x, p["g2"], p["b2"])
    x = x + torch.relu(h @ p["w1"]) @ p["w2"]
    return torch.mean(x ** 2)


def t_mlp_example_loss(p, x, y):
    w1, b1, w2, b2 = p
    logits = torch.tanh(x @ w1 + b1) @ w2 + b2
    m = torch.amax(logits)
    return -torch.sum(y * (logits - m - torch.log(torch.sum(torch.exp(logits - m)))))


def t_dp_sgd_grad(p, X, Y, noise, clip=1.0):
    g = torch.func.vmap(torch.func.grad(t_mlp_example_loss), in_dims=(None, 0, 0))(p, X, Y)
    norms = torch.sqrt(sum(torch.sum(gi.reshape(len(X), -1) ** 2, dim=1) for gi in g))
    scale = 1.0 / torch.clamp(norms / clip, min=1.0)
    return [torch.tensordot(scale, gi, dims=1) + n for gi, n in zip(g, noise)]


def t_heat_inplace(u0, r=0.25, n_steps=200):
    u = u0.clone()
    for _ in range(n_steps):
        u[1:-1] += r * (u[2:] - 2 * u[1:-1] + u[:-2])
    return torch.sum(u ** 2)


def t_heat_functional(u0, r=0.25, n_steps=200):
    u = u0
    for _ in range(n_steps):
        u = torch.cat([u[:1], u[1:-1] + r * (u[2:] - 2 * u[1:-1] + u[:-2]), u[-1:]])
    return torch.sum(u ** 2)


def _leaf(a):
    return torch.from_numpy(a).requires_grad_()


def _grads(loss, leaves):
    """``loss.backward()`` as users call it, the leaves' ``.grad`` read back as NumPy."""
    loss.backward()
    return [t.grad.numpy() for t in leaves]


def torch_programs(gp, ode, tr, dp, u0):
    """{program: (forward, grad)} for PyTorch eager (``forward`` under ``no_grad``)."""
    lp, X, y = (torch.from_numpy(a) for a in gp)
    (W, b), h0 = (torch.from_numpy(a) for a in ode[0]), torch.from_numpy(ode[1])
    tp = {k: torch.from_numpy(v) for k, v in tr[0].items()}
    tx = torch.from_numpy(tr[1])
    mp, MX, MY, noise = ([torch.from_numpy(a) for a in dp[0]], torch.from_numpy(dp[1]),
                         torch.from_numpy(dp[2]), [torch.from_numpy(a) for a in dp[3]])
    tu0 = torch.from_numpy(u0)

    def no_grad(f):
        def run():
            with torch.no_grad():
                return f()
        return run

    def gp_grad():
        leaf = _leaf(gp[0])
        return _grads(t_gp_nlml(leaf, X, y), [leaf])[0]

    def ode_grad(checkpointed):
        def run():
            Wl, bl = _leaf(ode[0][0]), _leaf(ode[0][1])
            return tuple(_grads(t_ode_loss(Wl, bl, h0, checkpointed), [Wl, bl]))
        return run

    def transformer_grad():
        leaves = {k: _leaf(v) for k, v in tr[0].items()}
        loss = t_transformer_loss(leaves, tx)
        loss.backward()
        return {k: t.grad.numpy() for k, t in leaves.items()}

    def heat_grad(f):
        def run():
            leaf = _leaf(u0)
            return _grads(f(leaf), [leaf])[0]
        return run

    return {
        "gp": (no_grad(lambda: t_gp_nlml(lp, X, y)), gp_grad),
        "ode_ck": (no_grad(lambda: t_ode_loss(W, b, h0)), ode_grad(True)),
        "ode": (no_grad(lambda: t_ode_loss(W, b, h0)), ode_grad(False)),
        "transformer": (no_grad(lambda: t_transformer_loss(tp, tx)), transformer_grad),
        "dp_sgd": (no_grad(lambda: torch.func.vmap(t_mlp_example_loss, in_dims=(None, 0, 0))(
                       mp, MX, MY)),
                   lambda: [g.numpy() for g in t_dp_sgd_grad(mp, MX, MY, noise)]),
        "heat_inplace": (no_grad(lambda: t_heat_inplace(tu0)), heat_grad(t_heat_inplace)),
        "heat_functional": (no_grad(lambda: t_heat_functional(tu0)),
                            heat_grad(t_heat_functional)),
    }
