from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pytest

import rune
from rune import tree


@dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray


@dataclass
class Model:
    layers: list
    name: str = field(default="m", metadata={"static": True})


class Point(NamedTuple):
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class Frozen:
    a: np.ndarray
    b: float


@dataclass
class Validated:
    a: np.ndarray

    def __post_init__(self):
        if not isinstance(self.a, np.ndarray):
            raise TypeError("a must be an ndarray")


def test_flatten_unflatten_roundtrip_nested():
    t = {"p": Point(1.0, 2.0), "l": [3.0, (4.0, None)], "m": Model([Layer(5.0, 6.0)])}
    leaves, td = tree.flatten(t)
    assert leaves == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    back = tree.unflatten(td, [x * 10 for x in leaves])
    assert back["p"] == Point(10.0, 20.0)
    assert back["l"] == [30.0, (40.0, None)]
    assert isinstance(back["m"], Model) and back["m"].layers[0].b == 60.0
    assert back["m"].name == "m"


def test_dict_key_order_is_kept():
    leaves, td = tree.flatten({"b": 1, "a": 2})
    assert leaves == [1, 2]
    assert list(tree.unflatten(td, [3, 4]).keys()) == ["b", "a"]


def test_static_fields_are_structure():
    assert tree.leaves(Model([1.0], name="x")) == [1.0]
    assert tree.structure(Model([1.0], name="x")) != tree.structure(Model([1.0], name="y"))
    assert tree.structure(Model([1.0], name="x")) == tree.structure(Model([2.0], name="x"))


def test_frozen_slots_dataclass_and_no_post_init():
    f = tree.map(lambda v: v * 2, Frozen(np.ones(2), 3.0))
    assert isinstance(f, Frozen) and f.b == 6.0
    # rebuilt without running __post_init__ (which would reject a float)
    v = tree.map(lambda a: 1.0, Validated(np.ones(1)))
    assert v.a == 1.0


def test_register_and_methods():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    tree.register(Pair, lambda p: ((p.a, p.b), "tag"), lambda aux, ch: Pair(*ch))
    out = tree.map(lambda v: v + 1, Pair(1, 2))
    assert (out.a, out.b) == (2, 3)

    class Box:
        def __init__(self, v):
            self.v = v

        def __rune_flatten__(self):
            return (self.v,), None

        @classmethod
        def __rune_unflatten__(cls, aux, children):
            return cls(*children)

    assert tree.map(lambda v: v * 3, Box(2)).v == 6


def test_map_several_trees_and_mismatch_names_path():
    a = {"layers": [Layer(1.0, 2.0), Layer(3.0, 4.0)]}
    b = {"layers": [Layer(1.0, 2.0), Layer(3.0, 4.0)]}
    out = tree.map(lambda x, y: x + y, a, b)
    assert out["layers"][1].b == 8.0
    bad = {"layers": [Layer(1.0, 2.0), Layer(3.0, (4.0, 5.0))]}
    with pytest.raises(ValueError, match=r"\['layers'\]\[1\]\.b"):
        tree.map(lambda x, y: x + y, a, bad)


def test_none_is_empty_node():
    assert tree.leaves([None, 1.0, None]) == [1.0]
    assert tree.map(lambda x: x, {"a": None}) == {"a": None}


def test_leaf_paths():
    td = tree.structure(Model([Layer(1.0, 2.0), Layer(3.0, 4.0)]))
    assert tree.leaf_paths(td, "params") == [
        "params.layers[0].w", "params.layers[0].b", "params.layers[1].w", "params.layers[1].b"]


def test_grad_of_record_keeps_type_and_dtypes():
    p = Model([Layer(np.ones((2, 2), np.float32), np.ones(2, np.float64))])
    g = rune.grad(lambda p: np.sum(p.layers[0].w) + np.sum(p.layers[0].b ** 2))(p)
    assert isinstance(g, Model) and isinstance(g.layers[0], Layer)
    assert g.layers[0].w.dtype == np.float32 and g.layers[0].b.dtype == np.float64
    np.testing.assert_array_equal(g.layers[0].b, 2 * np.ones(2))


@pytest.mark.parametrize("value", [
    np.ones(3), 1.5, (np.ones(2), 2.0), (), (np.ones(1),) * 7, (np.ones(1),) * 8,
    (np.ones(1), None), (np.ones(1), (2.0,)), (Point(1.0, 2.0),), np.float32(1.0),
])
def test_boundary_fast_paths_agree_with_the_general_walk(value):
    """An array and a tuple of leaves are flattened and rebuilt by a shortcut; it gives
    the general walk's leaves and structure, and rebuilds the same tree."""
    leaves, td = tree.flatten(value)
    slow_leaves = []
    slow_td = tree._flatten(value, slow_leaves)
    assert td == slow_td and len(leaves) == len(slow_leaves)
    assert all(a is b for a, b in zip(leaves, slow_leaves))
    back = tree.unflatten(td, list(leaves))
    assert type(back) is type(value) and tree.structure(back) == td
    assert all(a is b for a, b in zip(tree.leaves(back), leaves))
    with pytest.raises(ValueError):
        tree.unflatten(td, list(leaves) + [1.0])


def test_boundary_fast_paths_follow_a_registered_tuple(monkeypatch):
    """Re-registering ``tuple`` (its own flatten and unflatten) turns the shortcut off."""
    rebuilt = []

    def unflatten(aux, children):
        rebuilt.append(children)
        return tuple(children)
    monkeypatch.setitem(tree._registry, tuple, tree._NodeType(
        lambda t: (t, "mine"), unflatten, tree._index_keys))
    leaves, td = tree.flatten((np.ones(2), 3.0))
    assert td.aux == "mine"
    assert tree.unflatten(td, leaves)[1] == 3.0 and rebuilt
