"""``rune.checkpoint`` on a deep residual stack: the same gradient for a fraction of the memory.

Each block is ``x + tanh(x @ W + b)``.  Without checkpointing, ``grad`` keeps
every block's intermediates until the backward pass; with
``rune.checkpoint`` around groups of blocks it keeps only each group's input
and recomputes the inside during the backward pass.  Peak memory is measured
with ``tracemalloc`` (NumPy reports its buffers to it).
"""

import gc
import time
import tracemalloc

import numpy as np

import rune

DEPTH, WIDTH, BATCH, GROUP = 96, 64, 256, 8

rng = np.random.default_rng(0)
params = [{"W": rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH) * 0.5,
           "b": np.zeros(WIDTH)} for _ in range(DEPTH)]
x0 = rng.standard_normal((BATCH, WIDTH))


def blocks(group, x):
    for p in group:
        x = x + np.tanh(x @ p["W"] + p["b"])
    return x


checkpointed_blocks = rune.checkpoint(blocks)


def loss(params, x, run):
    for k in range(0, DEPTH, GROUP):
        x = run(params[k:k + GROUP], x)
    return np.mean(x ** 2)


def peak_and_time(fn):
    fn()
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    t0 = time.perf_counter()
    result = fn()
    return peak, time.perf_counter() - t0, result


grad = rune.grad(loss)
m_plain, t_plain, g_plain = peak_and_time(lambda: grad(params, x0, blocks))
m_ck, t_ck, g_ck = peak_and_time(lambda: grad(params, x0, checkpointed_blocks))

same = all(np.array_equal(a, b) for a, b in zip(rune.tree.leaves(g_plain), rune.tree.leaves(g_ck)))
print(f"{DEPTH} residual blocks of width {WIDTH}, batch {BATCH}, "
      f"checkpoint every {GROUP} blocks")
print(f"  grad:                 peak {m_plain / 1e6:6.1f} MB, {t_plain * 1e3:6.1f} ms")
print(f"  grad with checkpoint: peak {m_ck / 1e6:6.1f} MB, {t_ck * 1e3:6.1f} ms")
print(f"  memory cut {m_plain / m_ck:.1f}x; gradients identical bit for bit: {same}")
assert same and m_ck < m_plain / 3
assert type(g_ck) is list and set(g_ck[0]) == {"W", "b"}
