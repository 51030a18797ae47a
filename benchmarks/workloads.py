"""The six workloads of SPEC section 5, written once in plain NumPy and once per peer.

Each workload is a plain-NumPy function that rune differentiates as it stands.
HIPS autograd and JAX mirror NumPy's API, so for them the same function runs
with ``xp`` set to ``autograd.numpy`` or ``jax.numpy`` (which is how their users
write it); PyTorch gets its own version with the same operations in the same
order.  Every framework computes the same mathematics with the same kernels
where it has them: the softmax cross-entropy is the explicit
``logits - (max + log(sum(exp(logits - max))))`` everywhere, not
``torch.log_softmax`` or ``jax.nn.log_softmax``, so that the comparison
measures the transformations rather than a fused kernel.

Data are made by :func:`data`, seeded, as NumPy arrays; each peer converts
them once, outside the timed region.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

# --------------------------------------------------------------------------
# Sizes (SPEC section 5)
# --------------------------------------------------------------------------

W1_OPS = 200          # elementwise operations in the chain (4 per round)
W1_N = 16
W2_SIZES = (784, 512, 512, 10)
W2_BATCH = 256
W3_SIZES = (64, 32, 10)
W3_BATCH = 128
W4_N = 500
W5_DIM = 100
W5_SAMPLES = 200
W6_DEPTH = 200
W6_WIDTH = 256
W6_COLS = 64
W6_SEGMENT = 10       # layers per checkpointed segment
SCATTER_N = 1_000_000      # values scattered by np.add.at
SCATTER_BINS = 10_000      # into this many slots (about 100 values per slot)


@dataclass
class MLP:
    """W2's parameters: a plain dataclass, as the spec's promise shows."""
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    w3: np.ndarray
    b3: np.ndarray


@dataclass
class SmallMLP:
    """W3's parameters."""
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray


def as_tuple(p):
    """A parameter dataclass as a tuple of its leaves (for autograd, which knows no dataclass)."""
    return tuple(getattr(p, f.name) for f in fields(p))


def as_dict(p):
    return {f.name: getattr(p, f.name) for f in fields(p)}


def _dense(rng, n_in, n_out, dtype):
    w = rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)
    return w.astype(dtype), np.zeros(n_out, dtype)


def _one_hot(rng, n, k, dtype):
    return np.eye(k, dtype=dtype)[rng.integers(0, k, n)]


def data(seed=0):
    """All inputs, as NumPy arrays, keyed by workload."""
    rng = np.random.default_rng(seed)
    d = {}
    d["W1"] = {"x": rng.uniform(-1.0, 1.0, W1_N)}

    f32 = np.float32
    n0, n1, n2, n3 = W2_SIZES
    layers = [_dense(rng, a, b, f32) for a, b in ((n0, n1), (n1, n2), (n2, n3))]
    d["W2"] = {"p": MLP(*(t for layer in layers for t in layer)),
               "x": rng.standard_normal((W2_BATCH, n0)).astype(f32),
               "y": _one_hot(rng, W2_BATCH, n3, f32)}

    m0, m1, m2 = W3_SIZES
    layers = [_dense(rng, a, b, np.float64) for a, b in ((m0, m1), (m1, m2))]
    d["W3"] = {"p": SmallMLP(*(t for layer in layers for t in layer)),
               "x": rng.standard_normal((W3_BATCH, m0)),
               "y": _one_hot(rng, W3_BATCH, m2, np.float64)}

    d["W4"] = {"A": rng.standard_normal((W4_N, W4_N)) / np.sqrt(W4_N),
               "x": rng.standard_normal(W4_N),
               "v": rng.standard_normal(W4_N)}

    d["W5"] = {"X": rng.standard_normal((W5_SAMPLES, W5_DIM)),
               "y": rng.choice([-1.0, 1.0], W5_SAMPLES),
               "w": 0.1 * rng.standard_normal(W5_DIM)}

    d["W6"] = {"W": (rng.standard_normal((W6_WIDTH, W6_WIDTH)) / np.sqrt(W6_WIDTH)).astype(f32),
               "x": rng.standard_normal((W6_WIDTH, W6_COLS)).astype(f32)}
    return d


# --------------------------------------------------------------------------
# The workloads in plain NumPy; ``xp`` is numpy, autograd.numpy or jax.numpy
# --------------------------------------------------------------------------

def scatter_data(seed=0):
    """The SCATTER workload's inputs (apart from :func:`data`: only that workload pays)."""
    rng = np.random.default_rng(seed)
    return {"v": rng.standard_normal(SCATTER_N), "idx": rng.integers(0, SCATTER_BINS, SCATTER_N)}


def scatter_loss(v, idx, n_bins=SCATTER_BINS):
    """``np.add.at`` of ``v`` into ``n_bins`` slots (repeated indices accumulate), then a
    sum of squares: the graph-building scatter that segment sums and bincounts are."""
    buf = np.zeros_like(v, shape=(n_bins,))
    np.add.at(buf, idx, v)
    return np.sum(buf * buf)


def chain(x, xp=np, n_ops=W1_OPS):
    """W1: 200 elementwise operations on a small vector, then a sum."""
    for _ in range(n_ops // 4):
        x = xp.sin(x)
        x = x * 1.5
        x = x + 0.25
        x = xp.tanh(x)
    return xp.sum(x)


def _log_softmax(logits, xp):
    m = xp.max(logits, axis=-1, keepdims=True)
    return logits - (m + xp.log(xp.sum(xp.exp(logits - m), axis=-1, keepdims=True)))


def mlp_loss_fields(w1, b1, w2, b2, w3, b3, x, y, xp=np):
    """W2: 784-512-512-10 tanh MLP, mean softmax cross-entropy against one-hot ``y``."""
    h = xp.tanh(x @ w1 + b1)
    h = xp.tanh(h @ w2 + b2)
    logits = h @ w3 + b3
    return -xp.mean(xp.sum(y * _log_softmax(logits, xp), axis=-1))


def mlp_loss(p, x, y, xp=np):
    return mlp_loss_fields(p.w1, p.b1, p.w2, p.b2, p.w3, p.b3, x, y, xp)


def small_losses_fields(w1, b1, w2, b2, x, y, xp=np):
    """W3: the 64-32-10 MLP's cross-entropy, one value per example (or a scalar for one)."""
    h = xp.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    return -xp.sum(y * _log_softmax(logits, xp), axis=-1)


def example_loss(p, x, y, xp=np):
    """W3: the loss of one example (``x`` of shape (64,), ``y`` of shape (10,))."""
    return small_losses_fields(p.w1, p.b1, p.w2, p.b2, x, y, xp)


def batch_loss(p, x, y, xp=np):
    """W3: the mean loss of a batch."""
    return xp.mean(small_losses_fields(p.w1, p.b1, p.w2, p.b2, x, y, xp))


def tanh_quadratic(x, A, xp=np):
    """W4: sum(tanh(A @ x) ** 2)."""
    return xp.sum(xp.tanh(A @ x) ** 2)


def logistic_loss(w, X, y, xp=np):
    """W5: mean logistic loss of a linear model with labels in {-1, +1}."""
    return xp.mean(xp.logaddexp(0.0, -y * (X @ w)))


def deep_block(W, x, depth, xp=np):
    """W6: ``depth`` layers of tanh(W @ x), one W shared by every layer."""
    for _ in range(depth):
        x = xp.tanh(W @ x)
    return x


def deep_loss(W, x, xp=np):
    return xp.sum(deep_block(W, x, W6_DEPTH, xp))


def deep_loss_grad_by_hand(W, x, depth=W6_DEPTH):
    """W6's gradient (in ``W`` and ``x``) written by hand in NumPy: the forward pass keeping
    each layer's output, then per layer ``ct * (1 - y*y)`` and the two products.  This is
    the kernel floor any reverse mode over NumPy reaches at best."""
    ys = [x]
    for _ in range(depth):
        ys.append(np.tanh(W @ ys[-1]))
    ct = np.ones_like(ys[-1])
    dW = np.zeros_like(W)
    for k in range(depth, 0, -1):
        y = ys.pop()
        pre = ct * (1 - y * y)
        dW += pre @ ys[-1].T
        ct = W.T @ pre
    return dW, ct


def deep_loss_checkpointed(W, x, checkpoint, xp=np):
    """W6 with ``checkpoint`` (rune.checkpoint, jax.checkpoint, ...) around every segment."""
    def segment(W, x):
        return deep_block(W, x, W6_SEGMENT, xp)

    segment = checkpoint(segment)
    for _ in range(W6_DEPTH // W6_SEGMENT):
        x = segment(W, x)
    return xp.sum(x)


# --------------------------------------------------------------------------
# PyTorch versions (same operations, torch's spelling)
# --------------------------------------------------------------------------

def torch_log_softmax(logits):
    import torch
    m = torch.amax(logits, dim=-1, keepdim=True)
    return logits - (m + torch.log(torch.sum(torch.exp(logits - m), dim=-1, keepdim=True)))


def torch_chain(x):
    import torch
    for _ in range(W1_OPS // 4):
        x = torch.sin(x)
        x = x * 1.5
        x = x + 0.25
        x = torch.tanh(x)
    return torch.sum(x)


def torch_mlp_loss(p, x, y):
    """``p`` is a dict of tensors."""
    import torch
    h = torch.tanh(x @ p["w1"] + p["b1"])
    h = torch.tanh(h @ p["w2"] + p["b2"])
    logits = h @ p["w3"] + p["b3"]
    return -torch.mean(torch.sum(y * torch_log_softmax(logits), dim=-1))


def torch_small_losses(p, x, y):
    import torch
    h = torch.tanh(x @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    return -torch.sum(y * torch_log_softmax(logits), dim=-1)


def torch_tanh_quadratic(x, A):
    import torch
    return torch.sum(torch.tanh(A @ x) ** 2)


def torch_logistic_loss(w, X, y):
    import torch
    return torch.mean(torch.logaddexp(torch.zeros((), dtype=w.dtype), -y * (X @ w)))


def torch_deep_block(W, x, depth):
    import torch
    for _ in range(depth):
        x = torch.tanh(W @ x)
    return x


# --------------------------------------------------------------------------
# NumPy coverage workloads (issue 12): not in SPEC section 5, rune only
# --------------------------------------------------------------------------

FFT_N = 100_000       # points of each signal
FFT_PAD = 2 ** 18     # the FFT length: >= 2 * FFT_N - 1, a power of two


def fft_data(seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(FFT_N), "h": rng.standard_normal(FFT_N) / FFT_N}


def fft_convolution_loss(x, h, xp=np):
    """The full linear convolution of two 1e5-point signals through rfft/irfft, squared
    and summed: what an FFT filter in plain NumPy looks like."""
    n = x.shape[0] + h.shape[0] - 1
    y = xp.fft.irfft(xp.fft.rfft(x, FFT_PAD) * xp.fft.rfft(h, FFT_PAD), FFT_PAD)[:n]
    return xp.sum(y * y)


# --------------------------------------------------------------------------
# Issue 27's counted calls (benchmarks/icount.py: tiny, chain, mlp8), as written there
# --------------------------------------------------------------------------

def chain27(x, xp=np):
    """Twenty rounds of ten elementwise operations: 200 operations, then a sum."""
    for _ in range(20):
        a = xp.sin(x) * xp.cos(x)
        b = xp.exp(-a) + xp.tanh(x)
        x = b * 0.5 + xp.sqrt(xp.abs(a) + 1.0) - x * 0.25
    return xp.sum(x)


def mlp8_params(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((64, 32)) * .1, np.zeros(32),
            rng.standard_normal((32, 10)) * .1, np.zeros(10)]


_MLP8 = np.random.default_rng(0)
_MLP8_X = _MLP8.standard_normal((8, 64))
_MLP8_Y = np.eye(10)[np.arange(8) % 10]


def mlp8_loss(P, xp=np):
    h = xp.tanh(_MLP8_X @ P[0] + P[1])
    z = h @ P[2] + P[3]
    z = z - xp.max(z, axis=1, keepdims=True)
    return -xp.mean(xp.sum(_MLP8_Y * (z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))),
                           axis=1))


def with_numpy(f, xp):
    """``f`` computing with the module ``xp`` (autograd.numpy) instead of NumPy."""
    return lambda *args: f(*args, xp=xp)
