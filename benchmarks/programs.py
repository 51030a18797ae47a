"""Real programs under rune, autograd and PyTorch eager (issue 14): each written the way a
user writes it (plain NumPy for rune, ``autograd.numpy`` for autograd, tensors and
``backward()`` for PyTorch; the peers' versions are in ``programs_peers.py``), each peer's
gradient checked against rune's before anything is timed, then forward time, gradient time
and the gradient's peak memory side by side.

* GP: the negative log marginal likelihood of a Gaussian process (RBF kernel, 300
  points, float64) through a Cholesky factor, its gradient in the three log-hyperparameters.
* ODE: a 100-step RK4 neural ODE (state 64x128 float32, tanh dynamics), the gradient in
  the weights, with a checkpoint around every step (``rune.checkpoint``,
  ``autograd.checkpoint``, ``torch.utils.checkpoint``) and without.
* Transformer: one block (single-head attention, layer norms, a 4x ReLU MLP; 128 tokens of
  width 128, float32), ``value_and_grad`` in its weights.
* DP-SGD: per-example gradients of a 64-128-10 MLP (float64, batch 256; rune
  ``vmap(grad)``, ``torch.func.vmap(torch.func.grad)``, a loop of ``grad`` in autograd),
  each clipped to norm 1, summed, Gaussian noise added.
* Heat: 200 explicit steps of the 1-d heat equation on 4096 points written in place
  (``u[1:-1] += r * (u[2:] - 2 * u[1:-1] + u[:-2])``) and as its functional rewrite
  (``np.concatenate``); the gradient of the final energy in the initial state.
  Target: rune's in-place version at most 1.2x its functional one.

Times are the minimum and median of interleaved samples (every peer's forward and
gradient in turn), BLAS and PyTorch on one thread.  Memory: tracemalloc's peak above the
level at the call (NumPy-based peers), and for every peer the peak resident memory above
the level at the call in a fresh child process (see :func:`rss_peaks`).

    cd /work/wt-programs && PYTHONPATH=src OPENBLAS_NUM_THREADS=1 \\
        /work/venv-bench/bin/python benchmarks/programs.py [repeats]
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # before NumPy loads its BLAS
import numpy as np  # noqa: E402

import harness  # noqa: F401, E402  (puts the working tree's src/ first on sys.path)
from harness import peak_memory  # noqa: E402

import rune  # noqa: E402

from user_programs import (  # noqa: E402,F401  (the programs, in plain NumPy)
    dp_sgd_grad, gp_nlml, heat_functional, heat_inplace, layer_norm, mlp_example_loss,
    ode_loss, ode_rhs, rk4_step, setup, transformer_loss)


def rune_programs(gp, ode, tr, dp, u0):
    """{program: (forward, grad)}: NumPy's own forward, rune's gradient of the same text."""
    mp, MX, MY, noise = dp
    step_ck = rune.checkpoint(rk4_step)
    return {
        "gp": (lambda: gp_nlml(*gp), lambda: rune.grad(gp_nlml)(*gp)),
        "ode_ck": (lambda: ode_loss(*ode),
                   lambda: rune.grad(lambda p, h: ode_loss(p, h, step_ck))(*ode)),
        "ode": (lambda: ode_loss(*ode), lambda: rune.grad(ode_loss)(*ode)),
        "transformer": (lambda: transformer_loss(*tr),
                        lambda: rune.value_and_grad(transformer_loss)(*tr)[1]),
        "dp_sgd": (lambda: [mlp_example_loss(mp, x, y) for x, y in zip(MX, MY)],
                   lambda: dp_sgd_grad(mp, MX, MY, noise)),
        "heat_inplace": (lambda: heat_inplace(u0), lambda: rune.grad(heat_inplace)(u0)),
        "heat_functional": (lambda: heat_functional(u0),
                            lambda: rune.grad(heat_functional)(u0)),
    }


PROGRAMS = [
    ("gp", "GP marginal likelihood, Cholesky, 300 points, float64, grad"),
    ("ode_ck", "RK4 neural ODE, 100 steps, checkpoint per step, 64x128 float32, grad"),
    ("ode", "RK4 neural ODE, 100 steps, no checkpoint, 64x128 float32, grad"),
    ("transformer", "transformer block, 128 tokens x 128, float32, value_and_grad"),
    ("dp_sgd", "DP-SGD per-example clipped grads, 64-128-10 MLP, batch 256, float64"),
    ("heat_inplace", "heat equation, 200 steps x 4096 points, in place u[1:-1] +=, float64"),
    ("heat_functional", "heat equation, 200 steps x 4096 points, functional rewrite, float64"),
]
FORWARD_NOTE = {
    "dp_sgd": "forward: the per-example loss for every example (NumPy and autograd: a Python "
              "loop; torch: torch.func.vmap)",
}


def all_peers(data, only=None):
    """[(peer, {program: (forward, grad) or a note})], rune first; missing peers as a note."""
    import programs_peers as pp
    peers = [("rune", lambda: rune_programs(*data)),
             ("autograd", lambda: pp.autograd_programs(*data) if pp.autograd is not None
              else "not installed"),
             ("torch eager", lambda: pp.torch_programs(*data) if pp.torch is not None
              else "not installed")]
    return [(name, make()) for name, make in peers if only in (None, name)]


def leaves(g):
    """The arrays of a gradient (dict, list, tuple or array) in a fixed order."""
    if isinstance(g, dict):
        return [a for k in sorted(g) for a in leaves(g[k])]
    if isinstance(g, (list, tuple)):
        return [a for x in g for a in leaves(x)]
    return [np.asarray(g)]


def rel_error(got, ref):
    """The largest normwise relative difference between two gradients, leaf by leaf."""
    got, ref = leaves(got), leaves(ref)
    assert [a.shape for a in got] == [a.shape for a in ref], "gradient layouts differ"
    assert [a.dtype for a in got] == [a.dtype for a in ref], \
        f"dtypes differ: {[a.dtype for a in got]} vs {[a.dtype for a in ref]}"
    return max(np.linalg.norm(a - b) / max(np.linalg.norm(b), np.finfo(b.dtype).tiny)
               for a, b in zip(got, ref))


def tolerance(g):
    """Normwise agreement required between libraries: the square root of the gradient
    dtype's epsilon (3.5e-4 in float32, 1.5e-8 in float64).  The peers sum in other orders
    and factor with other LAPACK calls, which moves results by a few hundred epsilons times
    the problem's conditioning; a wrong rule moves them by O(1)."""
    return float(np.sqrt(np.finfo(leaves(g)[0].dtype).eps))


def timings(fns, repeats=7):
    """(min, median, CPU min) seconds of each of ``fns``, sampled in turn after a warm-up.

    The CPU figure is the calling thread's CPU time (``time.thread_time``): BLAS and PyTorch
    run on one thread, the calling one, so it is the work done, without the time the thread
    waited for a core on a shared machine (the wall-clock minimum still holds such waits
    when every sample met one)."""
    for fn in fns:
        fn()
    samples = [[] for _ in fns]
    cpu = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out, c in zip(fns, samples, cpu):
            gc.collect()
            t0, c0 = time.perf_counter(), time.thread_time()
            fn()
            c.append(time.thread_time() - c0)
            out.append(time.perf_counter() - t0)
    return [(min(s), statistics.median(s), min(c)) for s, c in zip(samples, cpu)]


RSS_ENV = {"MALLOC_MMAP_THRESHOLD_": "4096", "MALLOC_TRIM_THRESHOLD_": "0"}


def rss_peaks(peers):
    """{(peer, program): bytes}: the peak resident memory above the level at the call of each
    gradient (warmed twice), measured in a fresh child process per figure, where glibc gives
    every block of 4 KiB or more back to the system when it is freed (``RSS_ENV``), so that
    the resident set follows the live arrays; the peak is reset before the call
    (``/proc/self/clear_refs``).  The one figure that counts PyTorch's allocations as well
    as NumPy's (for NumPy it agrees with tracemalloc within a few percent)."""
    import os
    import subprocess
    env = dict(os.environ, **RSS_ENV)
    out = {}
    for peer, progs in peers:
        if isinstance(progs, str):
            continue
        for key, entry in progs.items():
            if isinstance(entry, str):
                continue
            run = subprocess.run([sys.executable, __file__, "--rss", peer, key], env=env,
                                 capture_output=True, text=True, check=True)
            out[peer, key] = int(run.stdout.split()[-1])
    return out


def _rss_child(peer, key):
    import re

    def status(field):
        with open("/proc/self/status") as f:
            return int(re.search(field + r":\s+(\d+) kB", f.read()).group(1)) * 1024

    _threads()
    grad = dict(all_peers(setup(), only=peer))[peer][key][1]
    grad()
    grad()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")                     # reset the peak (VmHWM) to the current RSS
    base = status("VmRSS")
    grad()
    print(status("VmHWM") - base)


def _threads():
    """One thread everywhere: BLAS (the environment, set before NumPy loads) and PyTorch."""
    try:
        import torch
        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    except (ImportError, RuntimeError):
        pass


def _ms(t):
    return f"{t[0] * 1e3:8.2f} {t[1] * 1e3:8.2f}"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--rss"]:
        return _rss_child(*argv[1:])
    repeats = int(argv[0]) if argv else 7
    _threads()
    data = setup()
    peers = all_peers(data)
    print("Real programs (issue 14): each program in NumPy for rune, in autograd.numpy, and in "
          "PyTorch eager;\neach peer's gradient checked against rune's before timing.")
    import platform
    try:
        import torch
        tv = f"torch {torch.__version__} ({torch.get_num_threads()} thread, "\
             f"{torch.get_num_interop_threads()} interop thread: torch.set_num_threads(1))"
    except ImportError:
        tv = "torch not installed"
    try:
        import autograd  # noqa: F401
        from importlib.metadata import version
        av = f"autograd {version('autograd')}"
    except ImportError:
        av = "autograd not installed"
    import os
    print(f"Python {platform.python_version()}, NumPy {np.__version__} "
          f"(OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}), "
          f"{av}, {tv}; JAX left out (its eager mode is not how it is used, its jit is not "
          "eager)")
    print(f"Times: min and median of {repeats} interleaved samples (one call each, after a "
          "warm-up) in ms; grad/fwd is against the peer's own forward (NumPy's for rune),\n"
          "CPU min: the least thread CPU time of a grad sample; "
          "vs rune is the peer's grad CPU min over rune's; tracemalloc: peak above the "
          "call's start (NumPy-based peers only);\nRSS: peak resident memory above the "
          "call's start, glibc returning freed blocks >= 4 KiB (MALLOC_MMAP_THRESHOLD_), in "
          "a child process; err: normwise relative difference from rune's gradient.")
    rss = rss_peaks(peers)
    grad_min = {}
    for key, title in PROGRAMS:
        print(f"\n{title}" + (f"\n  ({FORWARD_NOTE[key]})" if key in FORWARD_NOTE else ""))
        print(f"  {'':12s} {'forward min   median':>21s} {'grad min   median':>19s} "
              f"{'CPU min':>8s} {'grad/fwd':>8s} {'vs rune':>7s} {'tracemalloc':>11s} {'RSS':>8s} "
              f"{'err':>8s}")
        runnable, ref, notes = [], None, []
        for peer, progs in peers:
            entry = progs if isinstance(progs, str) else progs[key]
            if isinstance(entry, str):
                notes.append(f"  {peer:12s} {entry}")
                continue
            g = entry[1]()
            if ref is None:
                ref, err = g, 0.0
            else:
                err = rel_error(g, ref)
                assert err <= tolerance(ref), f"{peer} disagrees with rune on {key}: {err:.2e}"
            runnable.append((peer, entry, err))
        fns = [f for _, entry, _ in runnable for f in entry]
        times = timings(fns, repeats)
        for i, (peer, (forward, grad), err) in enumerate(runnable):
            tf, tg = times[2 * i], times[2 * i + 1]
            grad_min.setdefault(key, {})[peer] = tg[2]
            mem = f"{peak_memory(grad) / 1e6:8.2f} MB" if peer != "torch eager" else \
                f"{'n/a':>11s}"
            r = rss.get((peer, key))
            print(f"  {peer:12s} {_ms(tf)}    {_ms(tg)} {tg[2] * 1e3:8.2f} {tg[0] / tf[0]:7.2f}x "
                  f"{tg[2] / grad_min[key]['rune']:6.2f}x {mem} "
                  f"{(r / 1e6 if r is not None else float('nan')):5.1f} MB {err:8.1e}",
                  flush=True)
        for note in notes:
            print(note)
    g = grad_min
    print(f"\nrune, heat equation in place / functional rewrite: "
          f"{g['heat_inplace']['rune'] / g['heat_functional']['rune']:.2f}x (gradients' CPU min; "
          "target <= 1.2x)")
    behind = [(k, p) for k in g for p in g[k] if p != "rune" and g[k][p] < g[k]["rune"]]
    print("rune leads autograd and torch eager on every program" if not behind else
          "rune does not lead on: " + ", ".join(f"{k} ({p})" for k, p in behind))


if __name__ == "__main__":
    main()
