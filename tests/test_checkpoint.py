"""rune.checkpoint (alias remat): same function, intermediates recomputed in the backward pass.

Gradients must be bit-identical to the unwrapped function (float64), and the
transformation must compose with jvp, vmap, nesting and nested checkpoints.
"""

import gc
import tracemalloc
import warnings
import weakref

import numpy as np
import pytest

import rune

RNG = np.random.default_rng(0)
W = RNG.standard_normal((4, 4)) * 0.6
B = RNG.standard_normal(4) * 0.1
X = RNG.standard_normal(4)
XS = RNG.standard_normal((3, 4))


def block(W, x, b=B):
    """Three layers sharing W: W is used several times inside one call."""
    for _ in range(3):
        x = np.tanh(W @ x + b)
    return x


def deep(W, x, blk):
    return np.sum(blk(W, blk(W, blk(W, x))) ** 2)


ck_block = rune.checkpoint(block)


def assert_same(a, b):
    """Bit-for-bit equality of two trees."""
    la, lb = rune.tree.leaves(a), rune.tree.leaves(b)
    assert rune.tree.structure(a) == rune.tree.structure(b)
    for x, y in zip(la, lb):
        assert np.shape(x) == np.shape(y)
        assert np.array_equal(x, y), (x, y)


def close(a, b, rtol=1e-10, atol=1e-12):
    rune.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=rtol, atol=atol), a, b)


# --------------------------------------------------------------------------
# Plain calls and reverse mode
# --------------------------------------------------------------------------

def test_same_function_outside_transformations():
    assert_same(ck_block(W, X), block(W, X))
    assert rune.remat is rune.checkpoint
    assert ck_block.__name__ == "block" and ck_block.__wrapped__ is block


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_grad_bit_identical_with_shared_weights(argnums):
    g_plain = rune.grad(deep, argnums)(W, X, block)
    g_ck = rune.grad(deep, argnums)(W, X, ck_block)
    assert_same(g_ck, g_plain)


def test_value_and_grad_and_vjp_bit_identical():
    assert_same(rune.value_and_grad(deep)(W, X, ck_block), rune.value_and_grad(deep)(W, X, block))
    out_p, pb_p = rune.vjp(lambda W, x: block(W, block(W, x)), W, X)
    out_c, pb_c = rune.vjp(lambda W, x: ck_block(W, ck_block(W, x)), W, X)
    assert_same(out_c, out_p)
    for ct in (np.ones(4), np.arange(4.0)):        # the pullback may be called again
        assert_same(pb_c(ct), pb_p(ct))


def test_trees_kwargs_and_several_outputs():
    params = {"w": W, "b": B}

    def f(p, x, *, scale):
        h = np.tanh(p["w"] @ x + p["b"])
        return {"h": h * scale, "s": (np.sum(h), h[0] * p["b"])}

    cf = rune.checkpoint(f)

    def loss(p, x, g):
        out = g(p, x, scale=2.0)
        return np.sum(out["h"] ** 2) + out["s"][0] * 3.0 + np.sum(out["s"][1])

    assert_same(rune.grad(loss, (0, 1))(params, X, cf), rune.grad(loss, (0, 1))(params, X, f))
    # an output that gets no cotangent at all
    only_h = rune.grad(lambda p: np.sum(cf(p, X, scale=1.0)["h"]))(params)
    assert_same(only_h, rune.grad(lambda p: np.sum(f(p, X, scale=1.0)["h"]))(params))


def test_same_value_as_two_arguments_and_output_is_input():
    f = lambda a, b: (a * np.sin(b), a)                    # noqa: E731
    cf = rune.checkpoint(f)
    loss = lambda x, g: np.sum(g(x, x)[0] * x) + np.sum(g(x, x)[1] ** 2)   # noqa: E731
    assert_same(rune.grad(loss)(X, cf), rune.grad(loss)(X, f))


def test_non_float_leaves_pass_through():
    def f(x, n, label):
        return x ** n, n + 1, label

    cf = rune.checkpoint(f)

    def loss(x):
        y, m, label = cf(x, 3, "tag")
        assert m == 4 and label == "tag"
        return np.sum(y)

    assert_same(rune.grad(loss)(X), 3 * X ** 2)
    assert rune.grad(lambda x: cf(x, 2, "t")[0])(1.5) == 3.0    # Python float in and out


def test_writes_inside_the_checkpointed_function():
    def f(x):
        buf = np.zeros_like(x)
        buf[1:] = x[:-1] * x[1:]
        buf += x
        return buf

    cf = rune.checkpoint(f)
    assert_same(rune.grad(lambda x: np.sum(np.sin(cf(x))))(X),
                rune.grad(lambda x: np.sum(np.sin(f(x))))(X))


def test_function_reruns_in_backward_pass_and_keeps_nothing():
    calls = []
    refs = []

    def f(x):
        calls.append(1)
        h = np.sin(x)          # an intermediate of the forward pass
        if isinstance(h, np.ndarray):
            refs.append(weakref.ref(h))
        return np.cos(h) * x

    cf = rune.checkpoint(f)
    out, pullback = rune.vjp(lambda x: np.sum(cf(x)), X)
    gc.collect()
    assert len(calls) == 1
    assert refs and refs[0]() is None, "an intermediate of the checkpointed function was kept"
    g = pullback(1.0)[0]
    assert len(calls) == 2
    assert_same(g, rune.grad(lambda x: np.sum(f(x)))(X))
    calls.clear()
    f(X)
    cf(X)
    assert len(calls) == 2      # outside transformations: just one call each



def test_peak_memory_is_cut():
    rng = np.random.default_rng(1)
    Wd = rng.standard_normal((64, 64)) / 8
    x0 = rng.standard_normal((64, 32))

    def seg(W, x):
        for _ in range(10):
            x = np.tanh(W @ x)
        return x

    cseg = rune.checkpoint(seg)

    def loss(W, x, s):
        for _ in range(8):
            x = s(W, x)
        return np.sum(x)

    def peak(fn):
        fn()
        gc.collect()
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            fn()
            return tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()

    g = rune.grad(loss, (0, 1))
    assert_same(g(Wd, x0, cseg), g(Wd, x0, seg))
    plain, ck = peak(lambda: g(Wd, x0, seg)), peak(lambda: g(Wd, x0, cseg))
    assert ck * 3 < plain, (plain, ck)


# --------------------------------------------------------------------------
# Closures
# --------------------------------------------------------------------------

def test_closure_over_differentiated_values_is_checkpointed():
    calls = []

    def loss(W, x, ckpt):
        def layer(h):
            calls.append(1)
            return block(W, h)          # W is a traced value from the closure
        layer = ckpt(layer)
        return np.sum(layer(layer(x)) ** 2)

    g_plain = rune.grad(loss, (0, 1))(W, X, lambda f: f)
    calls.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g_ck = rune.grad(loss, (0, 1))(W, X, rune.checkpoint)
    assert_same(g_ck, g_plain)
    assert len(calls) == 4              # two calls, each re-run once in the backward pass
    calls.clear()
    assert_same(rune.grad(loss)(W, X, rune.checkpoint), g_plain[0])   # only the closure traced


def test_value_hidden_in_an_object_falls_back_with_a_warning():
    class Holder:
        def __init__(self, w):
            self.w = w

    def hidden_plain_arg(x):
        return np.sin(holder[0].w * x)

    def hidden_traced_arg(x):
        return np.sin(holder[0].w * x)

    holder = []

    def loss(w, f, x):
        holder[:] = [Holder(w)]
        return np.sum(rune.checkpoint(f)(x))

    def plain(w, x):
        return np.sum(np.sin(w * x))

    # the argument is a constant: the call runs as is
    with pytest.warns(rune.PerformanceWarning, match="without recomputation"):
        g = rune.grad(loss)(W[0], hidden_plain_arg, X)
    close(g, rune.grad(plain)(W[0], X))
    # the argument is traced too: the hidden value is found after the first run
    with pytest.warns(rune.PerformanceWarning, match="without recomputation"):
        g = rune.grad(lambda w: loss(w, hidden_traced_arg, w * X))(W[0])
    close(g, rune.grad(lambda w: plain(w, w * X))(W[0]))


# --------------------------------------------------------------------------
# Forward mode, vmap, nesting
# --------------------------------------------------------------------------

def test_jvp_runs_through():
    t = RNG.standard_normal(4)
    assert_same(rune.jvp(lambda x: ck_block(W, x), (X,), (t,)),
                rune.jvp(lambda x: block(W, x), (X,), (t,)))
    tw = RNG.standard_normal((4, 4))
    close(rune.jvp(lambda w, x: deep(w, x, ck_block), (W, X), (tw, t)),
          rune.jvp(lambda w, x: deep(w, x, block), (W, X), (tw, t)))


def test_jacobians_and_hessian():
    close(rune.jacfwd(lambda x: ck_block(W, x))(X), rune.jacfwd(lambda x: block(W, x))(X))
    close(rune.jacrev(lambda x: ck_block(W, x))(X), rune.jacrev(lambda x: block(W, x))(X))
    close(rune.hessian(lambda x: deep(W, x, ck_block))(X),
          rune.hessian(lambda x: deep(W, x, block))(X))
    v = RNG.standard_normal(4)
    close(rune.hvp(lambda x: deep(W, x, ck_block), (X,), (v,)),
          rune.hvp(lambda x: deep(W, x, block), (X,), (v,)))


def test_grad_of_grad():
    inner = lambda blk: (lambda x: np.sum(rune.grad(lambda y: deep(W, y, blk))(x) ** 2))  # noqa
    close(rune.grad(inner(ck_block))(X), rune.grad(inner(block))(X))
    f = lambda blk: (lambda x: np.sum(np.sin(blk(W, x))))   # noqa: E731
    close(rune.grad(lambda x: np.sum(rune.grad(f(ck_block))(x)))(X),
          rune.grad(lambda x: np.sum(rune.grad(f(block))(x)))(X))
    # scalar grad(grad(checkpoint(f)))
    g = rune.checkpoint(lambda x: np.sin(x) * x ** 2)
    close(rune.grad(rune.grad(g))(0.7), rune.grad(rune.grad(lambda x: np.sin(x) * x ** 2))(0.7))
    close(rune.grad(rune.grad(rune.grad(g)))(0.7),
          rune.grad(rune.grad(rune.grad(lambda x: np.sin(x) * x ** 2)))(0.7))


def test_grad_of_jvp_and_check_grads():
    t = RNG.standard_normal(4)
    close(rune.grad(lambda x: np.sum(rune.jvp(lambda y: ck_block(W, y), (x,), (t,))[1]))(X),
          rune.grad(lambda x: np.sum(rune.jvp(lambda y: block(W, y), (x,), (t,))[1]))(X))
    rune.check_grads(lambda w, x: ck_block(w, x), W, X, order=2)


@pytest.mark.parametrize("axis", [0, 1])
def test_vmap_against_a_loop(axis):
    xs = XS if axis == 0 else XS.T
    got = rune.vmap(lambda x: ck_block(W, x), in_axes=axis)(xs)
    close(got, np.stack([block(W, x) for x in XS]))
    # batch axis in the middle of a 3-d argument
    ws = np.stack([W, 0.5 * W, -W], axis=1)            # (4, 3, 4)
    got = rune.vmap(ck_block, in_axes=(1, None))(ws, X)
    close(got, np.stack([block(ws[:, k], X) for k in range(3)]))
    got = rune.vmap(rune.vmap(ck_block, in_axes=(None, 0)), in_axes=(0, None))(
        np.stack([W, -W]), XS)
    close(got, np.stack([[block(w, x) for x in XS] for w in (W, -W)]))


def test_vmap_of_grad_and_grad_of_vmap():
    def per_ex(blk):
        return rune.vmap(rune.grad(lambda w, x: deep(w, x, blk)), in_axes=(None, 0))

    def summed(blk):
        return lambda w: np.sum(rune.vmap(lambda x: blk(w, x))(XS) ** 2)

    close(per_ex(ck_block)(W, XS), per_ex(block)(W, XS))
    assert_same(rune.grad(summed(ck_block))(W), rune.grad(summed(block))(W))


def test_vmap_with_a_batched_branch_inside():
    def f(x):
        return x * 2.0 if np.sum(x) > 0 else -x

    cf = rune.checkpoint(f)
    with pytest.warns(rune.PerformanceWarning):
        got = rune.vmap(cf)(XS)
    close(got, np.stack([f(x) for x in XS]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        g = rune.grad(lambda xs: np.sum(rune.vmap(cf)(xs) ** 2))(XS)
    close(g, np.stack([rune.grad(lambda x: np.sum(f(x) ** 2))(x) for x in XS]))


def test_nested_checkpoints():
    outer = rune.checkpoint(lambda w, x: ck_block(w, np.sin(ck_block(w, x))))
    plain = lambda w, x: block(w, np.sin(block(w, x)))       # noqa: E731
    loss = lambda f: (lambda w, x: np.sum(f(w, f(w, x)) ** 2))   # noqa: E731
    assert_same(rune.grad(loss(outer), (0, 1))(W, X), rune.grad(loss(plain), (0, 1))(W, X))
    close(rune.hessian(loss(outer), 1)(W, X), rune.hessian(loss(plain), 1)(W, X))
    close(rune.vmap(rune.grad(loss(outer)), in_axes=(None, 0))(W, XS),
          rune.vmap(rune.grad(loss(plain)), in_axes=(None, 0))(W, XS))


def test_checkpoint_of_stop_gradient_and_constants():
    f = rune.checkpoint(lambda x, c: np.sum(rune.stop_gradient(x) * x) + c)
    assert_same(rune.grad(f)(X, 1.0), X)
    assert rune.grad(lambda x: f(np.ones(2), x))(2.0) == 1.0


# --------------------------------------------------------------------------
# Errors leave no state behind (the conftest fixture checks the level stack)
# --------------------------------------------------------------------------

def test_error_in_forward_propagates():
    def f(x):
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        rune.grad(lambda x: np.sum(rune.checkpoint(f)(x)))(X)
    assert_same(rune.grad(lambda x: np.sum(ck_block(W, x)))(X),
                rune.grad(lambda x: np.sum(block(W, x)))(X))


def test_error_in_backward_rerun_propagates():
    calls = []

    def f(x):
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("rerun failed")
        return np.sin(x)

    for wrap in (lambda g: g, rune.vmap):
        calls.clear()
        cf = rune.checkpoint(f)
        with pytest.raises(RuntimeError, match="rerun failed"):
            rune.grad(lambda x: np.sum(wrap(cf)(x)))(XS if wrap is rune.vmap else X)


def test_escaped_tracer_is_refused():
    kept = []
    rune.grad(lambda x: kept.append(x) or np.sum(x))(X)
    with pytest.raises(RuntimeError, match="escaped"):
        ck_block(W, kept[0])


def test_partial_and_bound_methods():
    from functools import partial

    def loss_partial(w, x, ckpt):
        return np.sum(ckpt(partial(block, w))(x) ** 2)

    assert_same(rune.grad(loss_partial, (0, 1))(W, X, rune.checkpoint),
                rune.grad(loss_partial, (0, 1))(W, X, lambda f: f))

    class Layer:
        def __init__(self, w):
            self.w = w

        def __call__(self, x):
            return block(self.w, x)

        def apply(self, w, x):
            return block(w, x)

    layer = Layer(W)
    g = rune.grad(lambda x: np.sum(rune.checkpoint(layer.apply)(W, x)))(X)
    assert_same(g, rune.grad(lambda x: np.sum(block(W, x)))(X))
    g = rune.grad(lambda w: np.sum(rune.checkpoint(layer.apply)(w, X)))(W)
    assert_same(g, rune.grad(lambda w: np.sum(block(w, X)))(W))


def test_vjp_of_several_outputs_with_user_cotangents():
    def f(w, x):
        h = np.tanh(w @ x)
        return h, np.sum(h * x), w * 2.0

    cf = rune.checkpoint(f)
    out_p, pb_p = rune.vjp(f, W, X)
    out_c, pb_c = rune.vjp(cf, W, X)
    assert_same(out_c, out_p)
    cts = (np.arange(4.0), 1.5, np.ones((4, 4)))
    assert_same(pb_c(cts), pb_p(cts))
    zero_ct = (np.zeros(4), 0.0, np.zeros((4, 4)))
    assert_same(pb_c(zero_ct), pb_p(zero_ct))
    # jacrev: the pullback under vmap
    close(rune.jacrev(lambda x: cf(W, x)[0])(X), rune.jacrev(lambda x: f(W, x)[0])(X))


def test_strict_vmap_names_the_function():
    @rune.checkpoint
    def branchy(x):
        return x if np.sum(x) > 0 else -x

    with pytest.raises(rune.BatchedControlFlowError, match="branchy"):
        rune.vmap(branchy, strict=True)(XS)


def test_checkpoint_same_values_and_gradients_and_recomputes():
    calls = {"n": 0}

    def block(x, W):
        calls["n"] += 1
        return np.tanh(W @ x)

    W = np.random.default_rng(6).normal(size=(3, 3)) * 0.5
    x = np.array([0.1, -0.2, 0.3])
    ref = lambda x: np.sum(block(block(x, W), W) ** 2)
    ck = rune.checkpoint(block)
    f = lambda x: np.sum(ck(ck(x, W), W) ** 2)
    assert f(x) == ref(x)
    calls["n"] = 0
    g_ref = rune.grad(ref)(x)
    n_ref = calls["n"]
    calls["n"] = 0
    g = rune.grad(f)(x)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12)
    assert calls["n"] > n_ref           # recomputed in the backward pass
    assert rune.remat is rune.checkpoint or rune.remat(block)(x, W) is not None
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(rune.remat(block)(x, W)))(x),
                               rune.grad(lambda x: np.sum(block(x, W)))(x))
    # under vmap, jvp, and as a decorator with trees
    np.testing.assert_allclose(rune.vmap(lambda x: ck(x, W))(np.stack([x, 2 * x])),
                               np.stack([block(x, W), block(2 * x, W)]))
    np.testing.assert_allclose(rune.jvp(lambda x: ck(x, W), (x,), (np.ones(3),))[1],
                               rune.jvp(lambda x: block(x, W), (x,), (np.ones(3),))[1])

    @rune.checkpoint
    def tree_block(p):
        return {"y": np.sin(p["a"]) * p["b"]}
    g = rune.grad(lambda p: np.sum(tree_block(p)["y"]))({"a": x, "b": 2.0})
    np.testing.assert_allclose(g["a"], 2 * np.cos(x))
    # second order through checkpoint
    H = rune.hessian(lambda x: np.sum(ck(x, W) ** 2))(x)
    np.testing.assert_allclose(H, rune.hessian(lambda x: np.sum(block(x, W) ** 2))(x), rtol=1e-10)
