"""The gradient of a 1e8-element loss with rune: one NumPy process against Dask.

The loss is ``sum(tanh(X * w) ** 2 + softplus(X * w))`` over ``X`` of 1e7 x 10
= 1e8 float64 (800 MB), with respect to the 10 weights ``w``: every element of
``X`` enters the loss and the gradient.  Modes, each in its own process (so
that its peak resident memory, ``ru_maxrss``, is its own):

* ``numpy``: ``X`` generated whole in the process, ``rune.grad`` on NumPy arrays;
* ``threads``: ``X`` a Dask array in chunks of 1e6 rows (1e7 elements), generated
  lazily from a seed per chunk inside the graph; ``rune.grad`` returns a lazy
  gradient computed by Dask's threaded scheduler in the driving process;
* ``threads-hand``: the same, with the gradient written by hand in Dask
  (``grad_by_hand``: what a Dask user would write without rune), the floor for this
  chunking: the driver's peak is about ``threads x (the working set of one chunk's
  task)``, a few times the chunk size per thread, whoever builds the graph;
* ``cluster-N``: the same graph on a ``LocalCluster`` of N single-threaded
  worker processes (``X`` persisted on the workers first; the time is the
  gradient's alone); the driver's peak memory is the client's.

Times are medians of ``--repeat`` runs.  ``--threads`` sets the threaded scheduler's
number of threads (Dask's default: one per core).

    PYTHONPATH=src python benchmarks/dask_grad.py                 # all modes
    PYTHONPATH=src python benchmarks/dask_grad.py --rows 1000000  # a quick run
    PYTHONPATH=src python benchmarks/dask_grad.py --modes threads,threads-hand --chunk-rows 100000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import rune  # noqa: E402

COLS = 10
W = np.linspace(-1.0, 1.0, COLS)


def loss(w, X):
    z = X * w
    return np.sum(np.tanh(z) ** 2 + np.logaddexp(0.0, z))


def grad_by_hand(w, X):
    """The gradient of :func:`loss` with respect to ``w``, derived by hand, in Dask."""
    z = X * w
    t = np.tanh(z)
    dz = 2 * t * (1 - t * t) + 1 / (1 + np.exp(-z))     # d/dz (tanh(z)**2 + softplus(z))
    return np.sum(X * dz, axis=0)


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _block(i, n):
    """Rows of chunk ``i``: the same numbers in every mode, from the seed (0, i)."""
    return np.random.default_rng([0, i]).standard_normal((n, COLS))


def _sizes(rows, chunk_rows):
    return [min(chunk_rows, rows - s) for s in range(0, rows, chunk_rows)]


def _numpy_data(rows, chunk_rows):
    X = np.empty((rows, COLS))
    start = 0
    for i, n in enumerate(_sizes(rows, chunk_rows)):
        X[start:start + n] = _block(i, n)
        start += n
    return X


def _dask_data(rows, chunk_rows):
    import dask.array as da
    sizes = tuple(_sizes(rows, chunk_rows))
    return da.map_blocks(lambda block_id=None: _block(block_id[0], sizes[block_id[0]]),
                         chunks=(sizes, (COLS,)), dtype=np.float64, meta=np.empty((0, 0)))


def run_mode(mode, rows, chunk_rows, repeat, threads=None):
    grad = rune.grad(loss)
    if mode == "numpy":
        t0 = time.perf_counter()
        X = _numpy_data(rows, chunk_rows)
        gen = time.perf_counter() - t0
        t, g = _timed(lambda: grad(W, X), repeat)
        return dict(time_s=t, generate_s=gen, grad=list(g))
    import dask
    import dask.array as da
    X = _dask_data(rows, chunk_rows)
    w = da.from_array(W)
    if mode in ("threads", "threads-hand"):
        g = grad(w, X) if mode == "threads" else grad_by_hand(w, X)
        base = _peak_mib()      # the process before computing: Python, NumPy, Dask, the graph
        t, g = _timed(lambda: dask.compute(g, scheduler="threads", num_workers=threads)[0],
                      repeat)
        return dict(time_s=t, grad=list(g), note=f"data generated inside each run; "
                    f"{base:.0f} MiB before computing")
    n = int(mode.split("-")[1])
    from dask.distributed import Client, LocalCluster, wait
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        X = client.persist(X)
        wait(X)
        t, g = _timed(lambda: client.compute(grad(w, X), sync=True), repeat)
    return dict(time_s=t, grad=list(g), note="data persisted on the workers first")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--chunk-rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", default="numpy,threads,threads-hand,cluster-1,cluster-4")
    parser.add_argument("--threads", type=int, help="threads of the threaded scheduler "
                        "(default: Dask's, one per core)")
    parser.add_argument("--mode", help=argparse.SUPPRESS)     # one mode, in a child process
    args = parser.parse_args()
    if args.mode:
        res = run_mode(args.mode, args.rows, args.chunk_rows, args.repeat, args.threads)
        res["peak_rss_mib"] = _peak_mib()
        print(json.dumps(res))
        return
    data_mib = args.rows * COLS * 8 / 2**20
    chunk_mib = min(args.rows, args.chunk_rows) * COLS * 8 / 2**20
    print(f"loss over {args.rows * COLS:.0e} elements ({data_mib:.0f} MiB), chunks of "
          f"{args.chunk_rows * COLS:.0e} ({chunk_mib:.0f} MiB); {os.cpu_count()} cores, "
          f"threaded scheduler: {args.threads or os.cpu_count()} threads; load "
          f"{os.getloadavg()[0]:.1f}")
    results = {}
    for mode in args.modes.split(","):
        cmd = [sys.executable, __file__, "--mode", mode, "--rows", str(args.rows),
               "--chunk-rows", str(args.chunk_rows), "--repeat", str(args.repeat)]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode:
            print(f"{mode}: failed\n{run.stderr[-1500:]}")
            continue
        results[mode] = res = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"{mode:>12}: gradient {res['time_s']:7.2f} s (median of {args.repeat}), "
              f"driver peak RSS {res['peak_rss_mib']:6.0f} MiB "
              f"({res['peak_rss_mib'] / data_mib:4.2f} x data)  {res.get('note', '')}")
    grads = [np.array(r["grad"]) for r in results.values()]
    for g in grads[1:]:
        np.testing.assert_allclose(g, grads[0], rtol=1e-9)
    if "cluster-1" in results and "cluster-4" in results:
        ratio = results['cluster-1']['time_s'] / results['cluster-4']['time_s']
        print(f"4 workers vs 1: {ratio:.2f}x")
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
