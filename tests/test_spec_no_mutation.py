"""SPEC 4: inputs are never mutated by a transformation, outputs never alias inputs,
gradients are writeable arrays."""

import warnings

import numpy as np
import pytest

import rune


def mutating(x):
    x[0] = 5.0            # writes into its (traced) argument
    x += 1.0
    x *= x
    return np.sum(x)


@pytest.mark.parametrize("tr", ["grad", "jvp", "vjp", "vmap", "jacfwd", "vmap_none",
                                "vmap_fallback", "jacrev", "hessian", "hvp", "checkpoint",
                                "checkpoint_jvp", "value_and_grad"])
def test_inputs_never_mutated(tr):
    x = np.array([1.0, 2.0, 3.0])
    keep = x.copy()
    t = np.ones(3)
    if tr == "grad":
        g = rune.grad(mutating)(x)
        np.testing.assert_allclose(g, [0.0, 6.0, 8.0])
    elif tr == "value_and_grad":
        rune.value_and_grad(mutating)(x)
    elif tr == "jvp":
        rune.jvp(mutating, (x,), (t,))
    elif tr == "vjp":
        _, pb = rune.vjp(lambda x: (x.__setitem__(1, 0.0), x)[1], x)
        ct = np.ones(3)
        pb(ct)
        np.testing.assert_allclose(ct, 1.0)
    elif tr == "vmap":
        X = np.stack([x, x])
        Xk = X.copy()
        rune.vmap(mutating)(X)
        np.testing.assert_array_equal(X, Xk)
    elif tr == "vmap_none":
        rune.vmap(lambda a, x: mutating(x) * a, in_axes=(0, None))(np.ones(2), x)
    elif tr == "vmap_fallback":
        X = np.stack([x, -x])
        Xk = X.copy()

        def mutating_branch_unique_4(x):
            x[0] = 5.0
            return x * 2 if np.sum(x) > 0 else x
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rune.PerformanceWarning)
            rune.vmap(mutating_branch_unique_4)(X)
        np.testing.assert_array_equal(X, Xk)
    elif tr == "checkpoint_jvp":       # a write into a checkpoint's argument: refused
        with pytest.raises(NotImplementedError, match="wrote into (one of )?its argument"):
            rune.jvp(rune.checkpoint(mutating), (x,), (t,))
    elif tr == "jacfwd":
        rune.jacfwd(mutating)(x)
    elif tr == "jacrev":
        rune.jacrev(mutating)(x)
    elif tr == "hessian":
        rune.hessian(mutating)(x)
    elif tr == "hvp":
        rune.hvp(mutating, (x,), (t,))
        np.testing.assert_allclose(t, 1.0)
    else:
        with pytest.raises(NotImplementedError, match="wrote into (one of )?its argument"):
            rune.grad(rune.checkpoint(mutating))(x)
    np.testing.assert_array_equal(x, keep)
    np.testing.assert_array_equal(t, np.ones(3))


def test_record_inputs_never_mutated():
    p = {"w": np.array([1.0, 2.0]), "layers": [np.ones(2)]}

    def f(p):
        p["w"][0] = 9.0
        p["layers"][0] += 1.0
        return np.sum(p["w"] * p["layers"][0])

    rune.grad(f)(p)
    np.testing.assert_array_equal(p["w"], [1.0, 2.0])
    np.testing.assert_array_equal(p["layers"][0], [1.0, 1.0])


@pytest.mark.parametrize("tr", ["vjp", "jvp", "jvp_tangent", "vmap", "vmap_none",
                                "grad_aux",
                                "value_and_grad_aux",
                                "vjp_aux",
                                "jvp_aux",
                                "vjp_pullback", "hvp"])
def test_outputs_do_not_alias_inputs(tr):
    x = np.arange(6.0).reshape(2, 3)
    keep = x.copy()
    if tr == "vjp":
        out = rune.vjp(lambda x: x, x)[0]
    elif tr == "jvp":
        out = rune.jvp(lambda x: x.reshape(3, 2), (x,), (np.ones_like(x),))[0]
    elif tr == "jvp_tangent":
        t = np.ones_like(x)
        out = rune.jvp(lambda x: x, (x,), (t,))[1]
        out += 5.0
        np.testing.assert_array_equal(t, 1.0)
    elif tr == "vmap":
        out = rune.vmap(lambda r: r)(x)
    elif tr == "vmap_none":
        out = rune.vmap(lambda a, r: r, in_axes=(0, None), out_axes=None)(np.ones(2), x)
    elif tr == "grad_aux":
        out = rune.grad(lambda x: (np.sum(x), x), has_aux=True)(x)[1]
    elif tr == "vjp_aux":
        out = rune.vjp(lambda x: (np.sum(x), x), x, has_aux=True)[2]
    elif tr == "jvp_aux":
        out = rune.jvp(lambda x: (np.sum(x), x), (x,), (np.ones_like(x),), has_aux=True)[2]
    elif tr == "value_and_grad_aux":
        out = rune.value_and_grad(lambda x: (np.sum(x), x.T), has_aux=True)(x)[0][1]
    elif tr == "vjp_pullback":
        ct = np.ones_like(x)
        out = rune.vjp(lambda x: x, x)[1](ct)[0]
        out += 1
        np.testing.assert_array_equal(ct, 1.0)
    else:
        t = np.ones_like(x)
        out = rune.hvp(lambda x: np.sum(x), (x,), (t,))[1][0]
        out += 1
        np.testing.assert_array_equal(t, 1.0)
    assert not np.shares_memory(out, x), tr
    out += 100.0
    np.testing.assert_array_equal(x, keep)


@pytest.mark.parametrize("f", [
    pytest.param(lambda x: np.mean(x), id="mean"),
    pytest.param(lambda x: np.sum(x), id="sum"),
    pytest.param(lambda x: np.sum(x) / 4, id="sum_div"),
    pytest.param(lambda x: np.max(x), id="max"),
    pytest.param(lambda x: np.sum(np.broadcast_to(x, (2, 2, 2))), id="broadcast_to"),
    pytest.param(lambda x: np.linalg.norm(x), id="norm"),
    pytest.param(lambda x: np.trace(x), id="trace"),
    pytest.param(lambda x: np.sum(x[0]), id="index_sum"),
    pytest.param(lambda x: np.mean(x, axis=0).sum(), id="mean_axis"),
    pytest.param(lambda x: x[0, 0] * 1.0, id="index"),
])
def test_gradients_are_writeable_arrays(f):
    # an optimizer that scales a gradient in place (g *= lr) must not fail
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    g = rune.grad(f)(x)
    assert type(g) is np.ndarray and g.shape == x.shape
    g *= 0.5
    (g2,) = rune.vjp(f, x)[1](1.0)
    g2 *= 0.5
    gs = rune.grad(lambda d: f(d["w"]))({"w": x})["w"]
    gs -= 1.0
