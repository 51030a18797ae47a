"""The memory floor of reverse mode (issue 14): peak memory of ``grad`` against what the
backward pass must read.

* W6: 200 layers of ``tanh(W @ x)`` (W 256x256, x 256x64, float32), gradient in ``W`` and
  ``x``: the backward pass reads the 200 activations, 200 x 256 x 64 x 4 B = 13.1 MB.
  Target: at most 15 MB; with ``rune.checkpoint`` every 10 layers at most 3.0 MB.
* A 50-layer tanh MLP of 1000x1000 float32 weights on a 1000x1000 float32 batch, gradient
  in the input only: the backward pass reads the 50 activations (tanh's outputs, 4 MB
  each); issue 14 puts the minimum at 198 MB.  Target: at most 1.2x that.

Peak memory is what ``tracemalloc`` sees above the level at the call (NumPy reports its
buffers to it), so the figures are deterministic and load does not change them.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/memory_floor.py [--skip-mlp]
"""

from __future__ import annotations

import sys

import numpy as np

import harness  # noqa: F401  (puts the working tree's src/ first on sys.path)
from harness import peak_memory

import rune
import workloads

MLP_DEPTH, MLP_WIDTH = 50, 1000


def mlp_loss(x, Ws):
    for W in Ws:
        x = np.tanh(W @ x)
    return np.sum(x)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    d = workloads.data()["W6"]
    W, x = d["W"], d["x"]
    floor = workloads.W6_DEPTH * x.nbytes
    g = rune.grad(workloads.deep_loss, (0, 1))
    g_ck = rune.grad(lambda W, x: workloads.deep_loss_checkpointed(W, x, rune.checkpoint),
                     (0, 1))
    m = peak_memory(lambda: g(W, x))
    m_ck = peak_memory(lambda: g_ck(W, x))
    print(f"W6 grad peak              {m / 1e6:7.2f} MB  ({m / floor:.2f}x the "
          f"{floor / 1e6:.1f} MB of activations; target <= 15 MB)")
    print(f"W6 grad, checkpoint/10    {m_ck / 1e6:7.2f} MB  (target <= 3.0 MB)")
    if "--skip-mlp" in argv:
        return
    rng = np.random.default_rng(0)
    Ws = [(rng.standard_normal((MLP_WIDTH, MLP_WIDTH)) / np.sqrt(MLP_WIDTH)).astype(np.float32)
          for _ in range(MLP_DEPTH)]
    xm = rng.standard_normal((MLP_WIDTH, MLP_WIDTH)).astype(np.float32)
    minimum = 198e6       # issue 14's figure for what the backward pass must read
    gm = rune.grad(mlp_loss)
    mm = peak_memory(lambda: gm(xm, Ws))
    print(f"MLP 50x1000 grad(x) peak  {mm / 1e6:7.1f} MB  ({mm / minimum:.2f}x the minimum "
          f"{minimum / 1e6:.0f} MB; target <= 1.2x)")


if __name__ == "__main__":
    main()
