"""The rule sweep repeated on Dask arrays (issue 16).

Each case runs on a Dask array chunked along each axis in turn (and along all
of them), under grad, jvp, vjp and vmap; the results must be lazy Dask arrays
whose computed values equal the same transformation of the NumPy array.  The
NumPy results are themselves checked against finite differences by the rule
sweeps, so equality (to rounding: Dask sums chunk by chunk, in another order)
is the whole claim here.  Dask is optional: the module is skipped without it.
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import rune  # noqa: E402

RTOL, ATOL = 1e-11, 1e-12   # float64 rounding over a few hundred operations


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _chunkings(shape):
    """Chunked along each axis alone, then along all of them."""
    out = []
    for ax in range(len(shape)):
        out.append(tuple(max(1, n // 2) if i == ax else n for i, n in enumerate(shape)))
    if len(shape) > 1:
        out.append(tuple(max(1, n // 2) for n in shape))
    return out or [()]


def _lazy(v):
    assert isinstance(v, da.Array), f"expected a lazy Dask array, got {type(v).__name__}"
    return v.compute()


def _spd(x):
    return x @ np.swapaxes(x, -1, -2) + 4.0 * np.eye(x.shape[-1])


# name, function of one array, input shape, positive input, vmap-able per row
CASES = [
    # elementwise
    ("sin", np.sin, (4, 6), False),
    ("exp_tanh", lambda x: np.exp(np.tanh(x)), (4, 6), False),
    ("log_sqrt", lambda x: np.log(x) + np.sqrt(x), (4, 6), True),
    ("power_div", lambda x: x ** 3 / (1.0 + x * x), (4, 6), False),
    ("maximum_where", lambda x: np.where(x > 0.1, np.maximum(x, 0.3), -x), (4, 6), False),
    ("broadcast_binary", lambda x: x * np.arange(1.0, 7.0) - x[:, :1], (4, 6), False),
    # reductions
    ("sum_axis0", lambda x: np.sum(x * x, axis=0), (4, 6), False),
    ("mean_axis1", lambda x: np.mean(np.sin(x), axis=1), (4, 6), False),
    ("prod", lambda x: np.prod(x, axis=1), (4, 6), True),
    ("max", lambda x: np.max(x, axis=0), (4, 6), False),
    ("std", lambda x: np.std(x, axis=1), (4, 6), False),
    ("logsumexp", lambda x: np.log(np.sum(np.exp(x), axis=-1)), (4, 6), False),
    ("cumsum", lambda x: np.cumsum(x, axis=1), (4, 6), False),
    # shape
    # (Dask reshapes only by splitting or merging whole chunks)
    ("reshape", lambda x: np.reshape(x, (2, 2, 2, 3)) * 2.0, (4, 6), False),
    ("transpose", lambda x: np.transpose(x) ** 2, (4, 6), False),
    ("concat_stack", lambda x: np.stack([np.concatenate([x, x ** 2], axis=1),
                                         np.concatenate([x ** 3, x], axis=1)]), (4, 6), False),
    ("expand_squeeze", lambda x: np.squeeze(np.expand_dims(x, 1) ** 2, axis=1), (4, 6), False),
    ("flip", lambda x: np.flip(x, axis=-1) * x, (4, 6), False),
    ("broadcast_to", lambda x: np.broadcast_to(x[:, None, :], (4, 3, 6)) ** 2, (4, 6), False),
    # indexing
    ("slices", lambda x: x[1:3, ::2] * x[:2, 1::2], (4, 6), False),
    ("int_index", lambda x: x[[0, 2, 2, 3]] ** 2, (4, 6), False),
    ("take", lambda x: np.take(x, [5, 0, 0], axis=1) ** 2, (4, 6), False),
    # contractions
    ("matmul", lambda x: x.T @ x, (4, 6), False),
    ("dot_vec", lambda x: np.dot(x, np.arange(6.0)), (4, 6), False),
    ("einsum", lambda x: np.einsum("ij,kj->ik", x, x ** 2), (4, 6), False),
    ("tensordot", lambda x: np.tensordot(x, x, axes=([0], [0])), (4, 6), False),
    ("outer", lambda x: np.outer(x[0], x[1]), (4, 6), False),
    # linalg where Dask has it (Dask's np.linalg.cholesky returns the upper factor, so
    # it is not NumPy's function; Dask's solve and inv take 2-d arrays only, no batch)
    ("solve", lambda x: np.linalg.solve(_spd(x), x), (4, 4), False),
    ("inv", lambda x: np.linalg.inv(_spd(x)), (4, 4), False),
    ("norm", lambda x: np.linalg.norm(x, axis=1), (4, 6), False),
]
PARAMS = [pytest.param(f, s, p, c, id=f"{n}-chunks{c}") for n, f, s, p in CASES
          for c in _chunkings(s)]


def _data(shape, positive, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    return np.abs(x) + 0.5 if positive else x


@pytest.mark.parametrize("f,shape,positive,chunks", PARAMS)
def test_grad_jvp_vjp_match_numpy(f, shape, positive, chunks):
    x = _data(shape, positive)
    xd = da.from_array(x, chunks=chunks)
    w = _data(np.shape(f(x)), False, seed=1)
    loss = lambda v: np.sum(f(v) * w)

    np.testing.assert_allclose(_lazy(f(xd)), f(x), rtol=RTOL, atol=ATOL)
    g = rune.grad(loss)(xd)
    assert g.shape == xd.shape and g.dtype == xd.dtype
    np.testing.assert_allclose(_lazy(g), rune.grad(loss)(x), rtol=RTOL, atol=ATOL)

    t = _data(shape, False, seed=2)
    out, tan = rune.jvp(f, (xd,), (da.from_array(t, chunks=chunks),))
    out0, tan0 = rune.jvp(f, (x,), (t,))
    np.testing.assert_allclose(_lazy(out), out0, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(_lazy(tan), tan0, rtol=RTOL, atol=ATOL)

    out, pullback = rune.vjp(f, xd)
    (ct,) = pullback(da.from_array(w))
    np.testing.assert_allclose(_lazy(ct), rune.vjp(f, x)[1](w)[0], rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(xd.compute(), x)          # the input is unchanged


@pytest.mark.parametrize("f,shape,positive,chunks", [p for p in PARAMS if not any(
    n in p.id for n in ("solve", "inv"))])
def test_vmap_of_grad_matches_loop(f, shape, positive, chunks):
    """Per-example gradients over a batch axis that Dask has chunked, against a loop."""
    x = _data((3,) + shape, positive)
    xd = da.from_array(x, chunks=(2,) + chunks)
    loss = lambda v: np.sum(f(v) ** 2)
    got = rune.vmap(rune.grad(loss))(xd)
    want = np.stack([rune.grad(loss)(x[i]) for i in range(3)])
    np.testing.assert_allclose(_lazy(got), want, rtol=RTOL, atol=ATOL)
