"""The shape of the Dask graphs rune builds, which decides the driver's memory (issue 16).

A gradient of a loss summed over chunked rows must let Dask run each chunk's forward
and backward steps in one fused task, so that a worker (or the threaded scheduler's
driving process) holds one chunk's working set per thread and never a value the size
of the data.  The properties guarded here, on small arrays:

* for a loss that is a sum of elementwise terms, no task's result is chunk-sized: every
  chunk-sized value (the data, the forward intermediates, the cotangents) lives and
  dies inside its chunk's task, and only the per-chunk partial gradients cross task
  boundaries.  A reduction's cotangent spread
  back over a chunked operand used to be chunked by Dask's defaults and rechunked,
  which concatenated pieces of it into tasks of their own;
* the graph embeds no NumPy array the size of the data (the structural-zero indicator
  of ``np.where``/``max``/indexing used to be a full-size ``np.ones``);
* the loss value is not computed when only the gradient is asked for;
* float32 data stays float32 in every task.

``benchmarks/dask_grad.py`` measures the memory these properties buy.
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from dask.callbacks import Callback  # noqa: E402

import rune  # noqa: E402

ROWS, CHUNK, COLS = 96, 16, 3


def _data(dtype=np.float64):
    """X generated inside the graph, a seed per chunk (as a real dataset would be loaded)."""
    def block(block_id=None):
        return np.random.default_rng([0, block_id[0]]).standard_normal((CHUNK, COLS)).astype(dtype)
    return da.map_blocks(block, chunks=((CHUNK,) * (ROWS // CHUNK), (COLS,)), dtype=dtype,
                         meta=np.empty((0, 0), dtype))


def _loss(w, X):
    z = X * w
    return np.sum(np.tanh(z) ** 2 + np.logaddexp(0.0, z))


def _where_loss(w, X):       # np.where: a rule with structural zeros
    z = X * w
    return np.sum(np.where(z > 0, z, 0.1 * z) ** 2)


def _masked_loss(w, X):      # where, max and a column: rules with structural zeros
    z = X * w
    return _where_loss(w, X) + np.max(z) + np.sum(X[:, 1] * w[1])


class _Results(Callback):
    """Records every task's result, as Dask's scheduler hands it on."""

    def __init__(self):
        super().__init__()
        self.results = []

    def _posttask(self, key, result, dsk, state, worker_id):
        self.results.append((key, result))


def _run(value):
    with _Results() as rec:
        out = dask.compute(value, scheduler="sync")[0]
    return out, rec.results


def _w(dtype=np.float64):
    return da.from_array(np.linspace(-1.0, 1.0, COLS).astype(dtype))


@pytest.mark.parametrize("loss", [_loss, _where_loss], ids=["smooth", "where"])
def test_no_chunk_sized_value_crosses_a_task_boundary(loss):
    # (a loss reading a value of all chunks, np.max's, cannot have this property: each
    # chunk's backward step waits for it; nor can a column X[:, 1], which Dask's indexing
    # makes a task of its own)
    X = _data()
    g = rune.grad(loss)(_w(), X)
    assert not any("rechunk" in name for name in g.__dask_graph__().layers)
    out, results = _run(g)
    sizes = {key: np.size(r) for key, r in results}
    assert max(sizes.values()) <= COLS, \
        f"tasks with chunk-sized results: {[k for k, s in sizes.items() if s > COLS]}"
    expect = rune.grad(loss)(np.linspace(-1.0, 1.0, COLS), X.compute())
    np.testing.assert_allclose(out, expect, rtol=1e-12)


def _embedded_arrays(value):
    """The NumPy arrays the graph of ``value`` carries (as constants of its tasks)."""
    found = []

    def visit(obj):
        obj = getattr(obj, "value", obj)            # a DataNode's value
        if isinstance(obj, np.ndarray):
            found.append(obj)
        for a in getattr(obj, "args", ()) or ():
            visit(a)
    for node in dict(value.__dask_graph__()).values():
        visit(node)
    return found


@pytest.mark.parametrize("how", ["grad", "grad_of_grad", "jvp", "jacfwd", "hessian",
                                 "jacrev_of_grad", "vmap_of_grad"])
def test_no_data_sized_numpy_array_in_the_graph(how):
    """Also where vmap batches the cotangent spread back over the data (jacrev, hessian,
    per-parameter-set gradients): Newton's method on a Dask loss ships no data-sized array."""
    X, w = _data(), _w()
    f = {"grad": lambda X: rune.grad(_masked_loss)(w, X),
         "grad_of_grad": lambda X: rune.grad(
             lambda w: np.sum(rune.grad(_masked_loss)(w, X) ** 2))(w),
         "jvp": lambda X: rune.jvp(lambda X: _masked_loss(w, X), (X,), (X,))[1],
         "jacfwd": lambda X: rune.jacfwd(_masked_loss)(w, X),
         "hessian": lambda X: rune.hessian(_masked_loss)(w, X),
         "jacrev_of_grad": lambda X: rune.jacrev(rune.grad(_loss))(w, X),
         "vmap_of_grad": lambda X: rune.vmap(rune.grad(_loss), in_axes=(0, None))(
             np.stack([w, 2 * w]), X)}[how]
    value = f(X)
    assert isinstance(value, da.Array)
    big = [a.shape for a in _embedded_arrays(value) if a.size > COLS * COLS]
    assert big == [], f"NumPy arrays embedded in the graph: {big}"
    np.testing.assert_allclose(value.compute(), f(X.compute()), rtol=1e-12, atol=1e-12)


def _aggregates(*values):
    """The reductions over all chunks in the graphs of ``values``."""
    return {name for v in values for name in v.__dask_graph__().layers
            if name.startswith("sum-aggregate")}


def test_the_loss_is_not_computed_for_its_gradient():
    X, w = _data(), _w()
    # one reduction over all chunks: the gradient's own
    assert len(_aggregates(rune.grad(_loss)(w, X))) == 1
    # asked for, the loss is a second one (the count sees it)
    assert len(_aggregates(*rune.value_and_grad(_loss)(w, X))) == 2


def test_float32_data_stays_float32_in_every_task():
    X, w = _data(np.float32), _w(np.float32)

    def loss(w, X):
        z = X * w
        return np.sum(np.tanh(z) ** 2 + np.logaddexp(np.float32(0.0), z))
    g = rune.grad(loss)(w, X)
    out, results = _run(g)
    assert out.dtype == np.float32
    wide = {key: r.dtype for key, r in results
            if isinstance(r, np.ndarray) and r.dtype.kind == "f" and r.dtype != np.float32}
    assert wide == {}
