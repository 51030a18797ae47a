"""rune.tree.ravel: JAX's ravel_pytree semantics (leaves in tree order, NumPy's dtype
promotion, each leaf's shape, dtype and kind restored), no aliasing, clear errors, and
derivatives in every mode through both directions."""

import doctest
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pytest

import rune
from helpers import check_vmap


@dataclass
class Params:
    w: np.ndarray
    b: np.ndarray
    scale: float
    name: str = field(default="p", metadata={"static": True})


class Layer(NamedTuple):
    w: np.ndarray
    b: np.ndarray


class Box:
    """A class registered by the two methods."""

    def __init__(self, inner):
        self.inner = inner

    def __rune_flatten__(self):
        return (self.inner,), None

    @classmethod
    def __rune_unflatten__(cls, aux, children):
        return cls(*children)


def _record(rng, dtype=np.float64):
    return {"layers": [Layer(rng.normal(size=(3, 2)).astype(dtype), rng.normal(size=2)
                             .astype(dtype))],
            "p": Params(rng.normal(size=(2,)).astype(dtype), np.asarray(rng.normal(), dtype),
                        1.5),
            "box": Box(rng.normal(size=(2, 1, 2)).astype(dtype)), "none": None}


def test_leaves_in_tree_order_raveled_in_c_order(rng):
    t = _record(rng)
    flat, unravel = rune.tree.ravel(t)
    expected = np.concatenate([np.ravel(x) for x in rune.tree.leaves(t)])
    np.testing.assert_array_equal(flat, expected)
    assert flat.shape == (6 + 2 + 2 + 1 + 1 + 4,) and flat.dtype == np.float64
    back = unravel(flat)
    assert rune.tree.structure(back) == rune.tree.structure(t)
    for a, b in zip(rune.tree.leaves(back), rune.tree.leaves(t)):
        np.testing.assert_array_equal(a, b)
    assert back["p"].name == "p" and back["none"] is None and isinstance(back["box"], Box)


def test_dict_order_is_insertion_order():
    flat, _ = rune.tree.ravel({"b": np.array([1.0]), "a": np.array([2.0])})
    np.testing.assert_array_equal(flat, [1.0, 2.0])     # rune keeps key order (JAX sorts)


@pytest.mark.parametrize("leaves", [
    [np.ones(2, np.float32), np.ones(1)],
    [np.ones(2, np.float32), 2.5],                       # a Python float is weak
    [np.ones(2, np.int32), np.ones(1, np.float32)],
    [np.ones(2, np.bool_), np.ones(1, np.int8)],
    [np.ones(2, np.float16), 1j],
    [np.ones(2, np.uint8), 3],
    [np.float32(1.0), np.ones(2, np.float16)],
    [True, 2, 3.0],
])
def test_dtype_is_numpys_promotion_and_each_leaf_comes_back(leaves):
    flat, unravel = rune.tree.ravel(leaves)
    weak = [x if type(x) in (bool, int, float, complex) else np.asarray(x).dtype
            for x in leaves]
    assert flat.dtype == np.result_type(*weak)
    back = unravel(flat)
    for a, b in zip(back, leaves):
        assert type(a) is type(b)
        assert np.asarray(a).dtype == np.asarray(b).dtype
        assert np.shape(a) == np.shape(b)
        np.testing.assert_array_equal(a, b)


def test_unravel_casts_to_each_leaf_dtype_and_takes_the_real_part():
    flat, unravel = rune.tree.ravel([np.zeros(2, np.float32), np.zeros(1, np.int16), 0j])
    assert flat.dtype == np.complex64
    w, k, c = unravel(np.array([1.25 + 2j, 2.5, 3.75 + 1j, 4 - 1j], np.complex64))
    np.testing.assert_array_equal(w, np.array([1.25, 2.5], np.float32))
    assert w.dtype == np.float32 and k.dtype == np.int16 and k[0] == 3
    assert c == 4 - 1j and type(c) is complex


def test_unravel_accepts_a_wider_float_vector():
    """SciPy hands back float64 for a float32 record: cast by same_kind."""
    flat, unravel = rune.tree.ravel(Layer(np.ones(2, np.float32), np.ones(1, np.float32)))
    back = unravel(np.array([0.1, 0.2, 0.3]))
    assert back.w.dtype == np.float32 and back.b.dtype == np.float32
    np.testing.assert_array_equal(back.w, np.array([0.1, 0.2], np.float32))
    back = unravel([1.0, 2.0, 3.0])                    # a list is taken as an array
    assert back.b[0] == 3.0


def test_no_aliasing_either_way(rng):
    t = Layer(rng.normal(size=3), rng.normal(size=2))
    snapshot = Layer(t.w.copy(), t.b.copy())
    flat, unravel = rune.tree.ravel(t)
    flat[:] = 0.0                                      # writing the vector leaves t alone
    np.testing.assert_array_equal(t.w, snapshot.w)
    v = np.arange(5.0)
    back = unravel(v)
    back.w[:] = -1.0                                   # writing a leaf leaves v alone
    np.testing.assert_array_equal(v, np.arange(5.0))
    single = Layer(np.arange(2.0), None)
    flat, unravel = rune.tree.ravel(single)
    assert not np.shares_memory(flat, single.w)
    v = np.array([7.0, 8.0])
    assert not np.shares_memory(unravel(v).w, v)


def test_empty_tree():
    flat, unravel = rune.tree.ravel({"a": None, "b": ()})
    assert flat.shape == (0,) and flat.dtype == np.float64
    assert unravel(np.zeros(0)) == {"a": None, "b": ()}


def test_errors_name_the_leaf_and_the_call():
    with pytest.raises(TypeError, match=r"tree\['b'\]\[1\].*a str"):
        rune.tree.ravel({"a": 1.0, "b": [2.0, "x"]})
    with pytest.raises(TypeError, match=r"tree\[0\].*dtype object"):
        rune.tree.ravel([np.array([None, 1.0])])
    _, unravel = rune.tree.ravel([np.ones(3)])
    with pytest.raises(ValueError, match=r"1-d vector of 3 elements.*shape \(1, 3\)"):
        unravel(np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        unravel(np.ones(4))
    with pytest.raises(TypeError, match="casts to float64.*complex128"):
        unravel(np.ones(3, complex))


# --------------------------------------------------------------------------
# derivatives: both directions, every mode
# --------------------------------------------------------------------------

def _mixed_loss(t):
    flat, _ = rune.tree.ravel(t)
    return np.sum(np.sin(flat) * flat[::-1]) + flat[0] * flat[-1] ** 2


def test_check_grads_through_ravel(rng):
    rune.check_grads(_mixed_loss, _record(rng), order=2, modes=("fwd", "rev"))


def test_check_grads_through_unravel(rng):
    t = _record(rng)
    flat, unravel = rune.tree.ravel(t)

    def loss(v):
        r = unravel(v)
        return (np.sum(np.tanh(r["layers"][0].w) @ r["layers"][0].b) * r["p"].scale
                + np.sum(np.exp(r["p"].w)) * r["p"].b + np.sum(r["box"].inner ** 3))
    rune.check_grads(loss, flat, order=2, modes=("fwd", "rev"))


def test_unravel_of_ravel_is_the_identity_in_every_mode(rng):
    t = _record(rng)
    flat, unravel = rune.tree.ravel(t)
    roundtrip = lambda v: rune.tree.ravel(unravel(v))[0]      # noqa: E731
    eye = np.eye(flat.size)
    np.testing.assert_array_equal(rune.jacfwd(roundtrip)(flat), eye)
    np.testing.assert_array_equal(rune.jacrev(roundtrip)(flat), eye)
    # the gradient of ravel's output against a vector is that vector, as a record
    u = rng.normal(size=flat.size)
    g = rune.grad(lambda t: np.sum(rune.tree.ravel(t)[0] * u))(t)
    assert rune.tree.structure(g) == rune.tree.structure(t)
    np.testing.assert_array_equal(rune.tree.ravel(g)[0], u)


def test_check_grads_complex_leaves(rng):
    t = [rng.normal(size=2) + 1j * rng.normal(size=2), rng.normal(size=3)]
    flat, unravel = rune.tree.ravel(t)
    assert flat.dtype == np.complex128
    rune.check_grads(lambda t: np.sum(rune.tree.ravel(t)[0] ** 2), t, order=2)
    rune.check_grads(lambda v: np.abs(unravel(v)[0][1]) ** 2 + np.sum(unravel(v)[1] ** 3),
                     flat, order=2)


def test_vmap_of_ravel_and_unravel_against_a_loop(rng):
    t = Layer(rng.normal(size=(4, 3, 2)), rng.normal(size=(4, 2)))
    check_vmap(lambda w, b: rune.tree.ravel(Layer(w, b))[0], t.w, t.b)
    check_vmap(lambda w: rune.tree.ravel((w, 2.0, np.ones(2)))[0], t.w)   # unbatched leaves
    _, unravel = rune.tree.ravel(Layer(t.w[0], t.b[0]))
    vs = rng.normal(size=(5, 8))
    check_vmap(lambda v: tuple(unravel(v)), vs)
    check_vmap(lambda v: tuple(unravel(v)), vs.T.copy(), in_axes=1, out_axes=1)
    g = rune.vmap(rune.grad(lambda v: np.sum(unravel(v).w ** 2)))(vs)
    np.testing.assert_allclose(g, np.concatenate([2 * vs[:, :6], 0 * vs[:, 6:]], axis=1))


def test_float32_record_gets_float32_derivatives():
    t = Params(np.ones(3, np.float32), np.ones(2, np.float32), 2.0)
    g = rune.grad(lambda t: np.sum(rune.tree.ravel(t)[0] ** 2))(t)
    assert g.w.dtype == np.float32 and g.b.dtype == np.float32 and isinstance(g.scale, float)
    np.testing.assert_array_equal(g.w, np.full(3, 2, np.float32))
    flat, unravel = rune.tree.ravel(t)
    assert flat.dtype == np.float32
    assert rune.grad(lambda v: np.sum(unravel(v).w))(flat).dtype == np.float32
    _, t_out = rune.jvp(lambda v: unravel(v).b, (flat,), (np.ones_like(flat),))
    assert t_out.dtype == np.float32


def test_integer_leaves_carry_no_derivative():
    flat, unravel = rune.tree.ravel([np.arange(2), np.ones(2)])
    g = rune.grad(lambda v: np.sum(unravel(v)[0] * 1.0) + np.sum(unravel(v)[1] ** 2))(flat)
    np.testing.assert_array_equal(g, [0.0, 0.0, 2.0, 2.0])


def test_traced_leaves_stay_traced_inside_a_transformation():
    kinds = []

    def f(x):
        _, unravel = rune.tree.ravel((x, 1.0))
        back = unravel(np.stack([x, x]))
        kinds.append(type(back[1]))
        return back[1]
    assert rune.grad(f)(3.0) == 1.0 and kinds[0] is not float


def test_docstring_examples_run():
    import rune.tree_ravel
    for module in (rune.tree_ravel, rune.tree):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__
