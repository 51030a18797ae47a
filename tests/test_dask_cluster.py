"""rune on a real Dask cluster (issue 16): a LocalCluster of 2 worker processes on loopback,
started and stopped by the test; the example's training loop runs on it.  Skipped without Dask."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import rune  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))


@pytest.fixture(scope="module")
def client():
    # workers are new processes: they import rune (and the example) from the same paths
    paths = [str(ROOT / "src"), str(ROOT / "examples"), os.environ.get("PYTHONPATH", "")]
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      host="127.0.0.1", dashboard_address=":0") as cluster, \
                distributed.Client(cluster) as c:
            yield c
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def test_gradient_graph_runs_on_the_workers(client):
    import dask
    import dask.array as da
    from dask_logistic_regression import FEATURES, loss, make_dataset
    X, y = make_dataset(4000, 1000, seed=3)
    w0 = np.linspace(-0.2, 0.2, FEATURES)
    params = (da.from_array(w0, chunks=-1), da.from_array(np.asarray(0.1), chunks=()))
    value, (gw, gb) = rune.value_and_grad(loss)(params, X, y)
    assert all(isinstance(v, da.Array) for v in (value, gw, gb))       # lazy until here
    value, gw, gb = client.compute([value, gw, gb], sync=True)
    Xn, yn = dask.compute(X, y, scheduler="synchronous")
    want_v, (want_w, want_b) = rune.value_and_grad(loss)((w0, 0.1), Xn, yn)
    np.testing.assert_allclose(value, want_v, rtol=1e-12)
    np.testing.assert_allclose(gw, want_w, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(gb, want_b, rtol=1e-10, atol=1e-14)


def test_rune_inside_map_blocks_on_the_workers(client):
    import dask.array as da
    x = np.linspace(-2.0, 2.0, 60).reshape(6, 10)
    per_row = rune.vmap(rune.grad(lambda r: np.sum(np.tanh(r) ** 2)))
    got = da.from_array(x, chunks=(2, 10)).map_blocks(per_row, dtype=float)
    np.testing.assert_allclose(client.compute(got, sync=True), per_row(x), rtol=1e-13)


def test_example_fits_on_the_cluster(client):
    from dask_logistic_regression import fit, make_dataset
    X, y = client.persist(list(make_dataset(20000, 5000)))
    params, losses = fit(X, y, steps=4, lr=2.0, client=client)
    assert losses[0] == pytest.approx(np.log(2.0))      # zero weights: log 2 per row
    assert all(b < a for a, b in zip(losses, losses[1:]))       # gradient steps descend
    assert np.all(np.isfinite(params[0]))
