"""Every transformation on Dask arrays (issue 16): lazy Dask results equal to NumPy's.

Dask is optional: the module is skipped without it.
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import rune  # noqa: E402

RTOL, ATOL = 1e-11, 1e-12


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _lazy(v):
    assert isinstance(v, da.Array), f"expected a lazy Dask array, got {type(v).__name__}"
    return v.compute()


def _close(got, want):
    np.testing.assert_allclose(_lazy(got), want, rtol=RTOL, atol=ATOL)


X = np.linspace(0.2, 1.7, 10)
A = np.random.default_rng(0).standard_normal((6, 4))
f = lambda x: np.sum(np.sin(x) ** 2 * x)


def _d(x, chunks=3):
    return da.from_array(x, chunks=chunks)


def test_grad_value_and_grad_vjp_jvp():
    _close(rune.grad(f)(_d(X)), rune.grad(f)(X))
    v, g = rune.value_and_grad(f)(_d(X))
    _close(v, f(X))
    _close(g, rune.grad(f)(X))
    out, pb = rune.vjp(np.tanh, _d(X))
    _close(out, np.tanh(X))
    _close(pb(_d(X))[0], rune.vjp(np.tanh, X)[1](X)[0])
    _close(pb(X)[0], rune.vjp(np.tanh, X)[1](X)[0])      # a NumPy cotangent too
    o, t = rune.jvp(np.tanh, (_d(X),), (_d(X),))
    _close(t, rune.jvp(np.tanh, (X,), (X,))[1])


def test_jacobians_hessian_hvp():
    _close(rune.jacfwd(np.sin)(_d(X)), rune.jacfwd(np.sin)(X))
    _close(rune.jacrev(np.sin)(_d(X)), rune.jacrev(np.sin)(X))
    _close(rune.hessian(f)(_d(X)), rune.hessian(f)(X))
    got = rune.hvp(f, (_d(X),), (_d(X),))
    want = rune.hvp(f, (X,), (X,))
    _close(rune.tree.leaves(got)[-1], rune.tree.leaves(want)[-1])


def test_vmap_over_a_chunked_batch_axis():
    per_row = lambda r: np.sum(r ** 3) / np.sum(r * r)
    got = rune.vmap(rune.grad(per_row))(_d(A, (2, 4)))
    _close(got, np.stack([rune.grad(per_row)(a) for a in A]))
    got = rune.vmap(per_row, in_axes=1)(_d(A, (6, 1)))
    _close(got, np.array([per_row(a) for a in A.T]))


def test_mixed_numpy_and_dask_arguments_and_an_unused_one():
    loss = lambda a, b, unused: np.sum(a @ b)
    b = np.arange(4.0)
    ga, gb, gu = rune.grad(loss, argnums=(0, 1, 2))(_d(A, 2), b, _d(X))
    want = rune.grad(loss, argnums=(0, 1, 2))(A, b, X)
    _close(ga, want[0])
    assert isinstance(gb, np.ndarray)           # NumPy in, NumPy out
    np.testing.assert_allclose(gb, want[1], rtol=RTOL)
    _close(gu, np.zeros_like(X))
    assert gu.chunks == _d(X).chunks
    # a gradient that does not depend on the Dask input is still a Dask array
    g = rune.grad(lambda x: np.sum(3.0 * x))(_d(X))
    assert g.shape == X.shape
    _close(g, np.full_like(X, 3.0))


def test_float32_input_keeps_its_dtype():
    x32 = X.astype(np.float32)
    g = rune.grad(lambda x: np.sum(x * 2.0))(_d(x32))
    assert g.dtype == np.float32
    _close(g, np.full_like(x32, 2.0))


def test_item_and_control_flow_compute_float_refuses_like_numpy():
    def loss(x):
        s = np.sum(x)
        scale = s.item()                      # computes (Dask's scheduler), no derivative
        return np.sum(x * x) * scale if s > 0 else -np.sum(x)
    _close(rune.grad(loss)(_d(X)), rune.grad(loss)(X))
    data = _d(X)                              # not differentiated: float() computes
    g = rune.grad(lambda w: w * float(np.sum(data)))(2.0)
    assert g == pytest.approx(X.sum())
    with pytest.raises(rune.TracerConversionError, match="float"):
        rune.grad(lambda x: float(np.sum(x)))(_d(X))


def test_checkpoint_custom_vjp_and_custom_jvp():
    g = rune.grad(lambda x: np.sum(rune.checkpoint(lambda y: np.sin(np.exp(y)))(x)))
    _close(g(_d(X)), g(X))

    @rune.custom_vjp
    def softplus(x):
        return np.log1p(np.exp(x))
    softplus.defvjp(lambda x: (softplus(x), x),
                    lambda x, ct: (ct / (1.0 + np.exp(-x)),))
    gs = rune.grad(lambda x: np.sum(softplus(x)))
    _close(gs(_d(X)), 1.0 / (1.0 + np.exp(-X)))

    @rune.custom_jvp
    def cube(x):
        return x ** 3
    cube.defjvp(lambda primals, tangents: (primals[0] ** 3, 3.0 * primals[0] ** 2 * tangents[0]))
    _close(rune.grad(lambda x: np.sum(cube(x)))(_d(X)), 3.0 * X ** 2)


def test_inputs_are_not_computed_or_mutated():
    xd = _d(X)
    before = xd.__dask_graph__()
    name = xd.name
    rune.grad(lambda x: np.sum(x[2:5] ** 2) + np.sum(x[[0, 0, 1]]))(xd)
    assert xd.name == name and xd.__dask_graph__() is before
    np.testing.assert_array_equal(xd.compute(), X)


def test_check_grads_on_a_dask_input():
    rune.check_grads(lambda x: np.sum(np.tanh(x) * x[::-1]), _d(X))


def _numpy_arrays_in_graph(*arrays):
    """Every NumPy array (with its size) that Dask's graph of ``arrays`` carries."""
    found = []

    def walk(o):
        if isinstance(o, np.ndarray):
            found.append(o.size)
        elif isinstance(o, (tuple, list)):
            for e in o:
                walk(e)
        elif isinstance(o, dict):
            for e in o.values():
                walk(e)
        else:
            for name in ("args", "value"):      # Dask's Task and DataNode
                inner = getattr(o, name, None)
                if isinstance(inner, (tuple, list, np.ndarray)):
                    walk(inner)
            kwargs = getattr(o, "kwargs", None)
            if isinstance(kwargs, dict):
                walk(kwargs)
    for a in arrays:
        walk(dict(a.__dask_graph__()))
    return found


def test_the_gradient_graph_carries_no_data_sized_numpy_array():
    """A reduction's cotangent spread back over a chunked operand is a lazy broadcast,
    not a NumPy array as large as the data embedded in the graph (which the client
    would hold and ship to the workers)."""
    X = da.random.default_rng(0).standard_normal((4000, 3), chunks=(1000, 3))
    y = da.random.default_rng(1).random(4000, chunks=1000)
    w = np.array([0.1, -0.2, 0.3])

    def loss(w, X, y):
        z = X @ w
        return np.mean(np.logaddexp(0.0, z) - y * z) + np.sum(np.exp(X) * 1e-3)

    v, g = rune.value_and_grad(loss, argnums=(0, 1))(da.from_array(w), X, y)
    assert max(_numpy_arrays_in_graph(v, *g), default=0) <= 3
    want = rune.value_and_grad(loss, argnums=(0, 1))(w, X.compute(), y.compute())
    _close(v, want[0])
    _close(g[0], want[1][0])
    _close(g[1], want[1][1])


def test_a_lazy_mask_as_an_index_is_a_clear_error():
    with pytest.raises(NotImplementedError, match="np.where"):
        rune.grad(lambda v: np.sum(v[v > 0.5] ** 2))(_d(X))
    g = rune.grad(lambda v: np.sum(np.where(v > 0.5, v, 0.0) ** 2))(_d(X))
    _close(g, np.where(X > 0.5, 2.0 * X, 0.0))
