"""Logistic regression on 10 million rows that the client never holds, with rune and Dask.

The dataset is generated lazily on the workers, one chunk per seed, and kept
(persisted) in the workers' memory.  Each full-batch gradient step is one
Dask graph: rune differentiates the loss written with ordinary ``np.*``
calls on Dask arrays, so the gradient with respect to the weights is a lazy
Dask array whose graph computes a gradient per chunk and sums them with
Dask's tree reduction.  Only the weights (a few numbers) and the loss travel
back to the client.  The example starts and stops a
``dask.distributed.LocalCluster`` of several worker processes; pointing
``Client`` at a scheduler's address runs the same code on many machines.

    python examples/dask_logistic_regression.py              # 10 million rows
    python examples/dask_logistic_regression.py --rows 200000 --workers 2 --steps 5
"""

import argparse
import resource
import time

import numpy as np

import rune

FEATURES = 8
TRUE_W = np.linspace(-1.5, 1.5, FEATURES)


def _chunk(block_id=None, chunk_rows=None, total_rows=None, seed=0, what="X"):
    """Rows of chunk ``block_id[0]``: the same numbers on any worker, from (seed, chunk)."""
    i = block_id[0]
    n = min(chunk_rows, total_rows - i * chunk_rows)
    rng = np.random.default_rng([seed, i])
    X = rng.standard_normal((n, FEATURES))
    logits = X @ TRUE_W + 0.3
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logits))).astype(np.float64)
    return X if what == "X" else y


def make_dataset(rows, chunk_rows, seed=0):
    """Lazy (X, y): nothing is generated until a worker computes a chunk."""
    import dask.array as da
    nchunks = -(-rows // chunk_rows)
    sizes = tuple(min(chunk_rows, rows - i * chunk_rows) for i in range(nchunks))
    kw = dict(chunk_rows=chunk_rows, total_rows=rows, seed=seed)
    X = da.map_blocks(_chunk, chunks=(sizes, (FEATURES,)), dtype=np.float64,
                      meta=np.empty((0, 0)), what="X", **kw)
    y = da.map_blocks(_chunk, chunks=(sizes,), dtype=np.float64, meta=np.empty((0,)),
                      what="y", **kw)
    return X, y


def loss(params, X, y):
    """Mean negative log-likelihood with a small L2 penalty, in plain NumPy."""
    w, b = params
    z = X @ w + b
    # log(1 + exp(z)) - y z, written stably
    nll = np.logaddexp(0.0, z) - y * z
    return np.mean(nll) + 1e-4 * np.sum(w * w)


def fit(X, y, steps, lr, client):
    import dask
    import dask.array as da
    params = (np.zeros(FEATURES), np.float64(0.0))
    value_and_grad = rune.value_and_grad(loss)
    history = []
    for step in range(steps):
        t0 = time.perf_counter()
        # the weights enter as (tiny) Dask arrays: value and gradient stay lazy, one graph
        w = da.from_array(params[0], chunks=-1)
        b = da.from_array(np.asarray(params[1]), chunks=())
        value, (gw, gb) = value_and_grad((w, b), X, y)
        value, gw, gb = dask.compute(value, gw, gb)
        params = (params[0] - lr * gw, params[1] - lr * gb)
        history.append(float(value))
        print(f"step {step:3d}  loss {float(value):.6f}  ({time.perf_counter() - t0:.2f} s)")
    return params, history


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--chunk-rows", type=int, default=500_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--lr", type=float, default=2.0)
    args = parser.parse_args(argv)

    from dask.distributed import Client, LocalCluster, wait

    t0 = time.perf_counter()
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        X, y = make_dataset(args.rows, min(args.chunk_rows, args.rows))
        X, y = client.persist([X, y])       # generated and kept on the workers
        wait([X, y])
        print(f"cluster up and data generated in {time.perf_counter() - t0:.1f} s")
        print(f"{args.rows:,} rows x {FEATURES} features "
              f"({(X.nbytes + y.nbytes) / 2**20:,.0f} MiB) in {X.numblocks[0]} chunks "
              f"on {args.workers} workers")
        params, history = fit(X, y, args.steps, args.lr, client)
    elapsed = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"weights {np.round(params[0], 3)}  bias {params[1]:.3f}")
    print(f"true    {np.round(TRUE_W, 3)}  bias 0.300")
    print(f"{elapsed:.1f} s; the client's peak memory {peak:.0f} MiB")
    return params, history


if __name__ == "__main__":
    main()
