"""W6 with checkpoint: peak memory and time of ``grad`` with and without ``rune.checkpoint``.

A 200-layer chain ``x = tanh(W @ x)`` (one ``W`` of 256x256 shared by every
layer, ``x`` 256x64, float32); the gradient is taken with respect to ``W``
and ``x``.  The checkpointed version wraps every segment of 10 layers in
``rune.checkpoint``.  Peak memory is what ``tracemalloc`` sees (NumPy reports
its array buffers to it) above the level at the call; times are medians.

    .venv/bin/python benchmarks/memory_checkpoint.py

Target (SPEC section 5): peak memory cut at least 6x, for at most 1.6x the time.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import peak_memory  # noqa: E402  (also puts the working tree's src/ first)
import rune  # noqa: E402

DEPTH, WIDTH, COLS, SEGMENT = 200, 256, 64, 10


def block(W, x, depth):
    for _ in range(depth):
        x = np.tanh(W @ x)
    return x


def loss(W, x):
    return np.sum(block(W, x, DEPTH))


@rune.checkpoint
def segment(W, x):
    return block(W, x, SEGMENT)


def loss_checkpointed(W, x):
    for _ in range(DEPTH // SEGMENT):
        x = segment(W, x)
    return np.sum(x)


def timings(fns, repeats=15):
    """Wall-clock samples of each function, interleaved so that load on the machine
    affects them alike; returns ``(median, min)`` per function."""
    for fn in fns:
        fn()
    samples = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, samples):
            gc.collect()
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [(statistics.median(s), min(s)) for s in samples]


def main():
    rng = np.random.default_rng(0)
    W = (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)
    x = rng.standard_normal((WIDTH, COLS)).astype(np.float32)
    grad = rune.grad(loss, (0, 1))
    grad_ck = rune.grad(loss_checkpointed, (0, 1))

    g, g_ck = grad(W, x), grad_ck(W, x)
    same = all(np.array_equal(a, b) for a, b in zip(g, g_ck))

    (t_fwd, m_fwd), (t_grad, m_g), (t_ck, m_c) = timings(
        [lambda: loss(W, x), lambda: grad(W, x), lambda: grad_ck(W, x)])
    mem_grad = peak_memory(lambda: grad(W, x))
    mem_ck = peak_memory(lambda: grad_ck(W, x))

    print(f"W6: {DEPTH}-layer tanh(W @ x), W {WIDTH}x{WIDTH}, x {WIDTH}x{COLS}, float32; "
          f"grad w.r.t. W and x; checkpoint every {SEGMENT} layers")
    print("                                median       min")
    print(f"  forward                      {t_fwd * 1e3:8.1f} ms {m_fwd * 1e3:8.1f} ms")
    print(f"  grad                         {t_grad * 1e3:8.1f} ms {m_g * 1e3:8.1f} ms   "
          f"({m_g / m_fwd:.2f}x forward, min)")
    print(f"  grad with checkpoint         {t_ck * 1e3:8.1f} ms {m_c * 1e3:8.1f} ms   "
          f"({m_c / m_fwd:.2f}x forward, min)")
    print(f"  peak memory, grad            {mem_grad / 1e6:8.1f} MB")
    print(f"  peak memory, with checkpoint {mem_ck / 1e6:8.1f} MB")
    print(f"  memory cut {mem_grad / mem_ck:.1f}x (target >= 6x); time with checkpoint "
          f"{t_ck / t_grad:.2f}x median, {m_c / m_g:.2f}x min (target <= 1.6x); "
          f"gradients bit-identical: {same}")


if __name__ == "__main__":
    main()
