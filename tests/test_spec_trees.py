"""SPEC 1.2 and rune.tree: typed records (NamedTuple, dataclass, registered classes) in and
out of every transformation, with their types kept."""

from dataclasses import dataclass, field

import numpy as np
import pytest

import rune
from helpers import fd_grad, Dense, MLP, mlp_loss, make_mlp


def test_grad_preserves_nested_record_types():
    rng = np.random.default_rng(1)
    p = make_mlp(rng)
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    g = rune.grad(mlp_loss)(p, x, y)
    assert type(g) is MLP and type(g.layers) is list and len(g.layers) == 2
    assert all(type(l) is Dense for l in g.layers)
    assert g.activation == "tanh"
    assert type(g.scale) is float
    for lg, lp in zip(g.layers, p.layers):
        assert lg.w.shape == lp.w.shape and lg.b.shape == lp.b.shape
    # check one leaf against finite differences
    w0 = p.layers[0].w

    def f_w0(w):
        q = MLP([Dense(w, p.layers[0].b), p.layers[1]], p.scale)
        return mlp_loss(q, x, y)
    np.testing.assert_allclose(g.layers[0].w, fd_grad(f_w0, w0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(g.scale, mlp_loss(p, x, y) / p.scale, rtol=1e-10)


def test_tree_containers_tuple_list_dict_none_roundtrip_under_grad():
    tree = {"a": (np.array([1.0, 2.0]), [3.0, None]), "b": None, "c": {"d": np.array(4.0)}}

    def f(t):
        return np.sum(t["a"][0] ** 2) + t["a"][1][0] * t["c"]["d"]

    g = rune.grad(f)(tree)
    assert rune.tree.structure(g) == rune.tree.structure(tree)
    assert g["b"] is None and g["a"][1][1] is None
    assert type(g["a"]) is tuple and type(g["a"][1]) is list
    np.testing.assert_allclose(g["a"][0], [2.0, 4.0])
    assert type(g["a"][1][0]) is float and g["a"][1][0] == 4.0
    np.testing.assert_allclose(g["c"]["d"], 3.0)


def test_dict_key_order_kept():
    d = {"z": np.ones(2), "a": np.ones(2) * 2, "m": 3.0}
    g = rune.grad(lambda d: np.sum(d["z"] * d["a"]) * d["m"])(d)
    assert list(g) == ["z", "a", "m"]


def test_static_dataclass_field_is_not_a_leaf():
    @dataclass
    class Cfg:
        w: np.ndarray
        n: int = field(default=3, metadata={"static": True})
        name: str = field(default="x", metadata={"static": True})

    c = Cfg(np.array([1.0, 2.0]), 4, "hello")
    leaves = rune.tree.leaves(c)
    assert len(leaves) == 1 and leaves[0] is c.w
    g = rune.grad(lambda c: np.sum(c.w ** 2) * c.n)(c)
    assert type(g) is Cfg and g.n == 4 and g.name == "hello"
    np.testing.assert_allclose(g.w, 8 * c.w)
    # static values are part of the structure
    assert rune.tree.structure(Cfg(np.ones(2), 1)) != rune.tree.structure(Cfg(np.ones(2), 2))
    assert rune.tree.structure(Cfg(np.ones(2), 1)) == rune.tree.structure(Cfg(np.zeros(2), 1))


def test_records_rebuilt_without_init_or_post_init():
    calls = {"init": 0, "post": 0}

    @dataclass
    class Checked:
        w: np.ndarray
        b: np.ndarray

        def __post_init__(self):
            calls["post"] += 1
            if not isinstance(self.w, np.ndarray):   # validation a tracer would fail
                raise TypeError("w must be an ndarray")

    class Custom:
        def __init__(self, a):
            calls["init"] += 1
            if not isinstance(a, np.ndarray):
                raise TypeError("a must be an ndarray")
            self.a = a

        def __rune_flatten__(self):
            return (self.a,), None

        @classmethod
        def __rune_unflatten__(cls, aux, children):
            obj = object.__new__(cls)
            obj.a = children[0]
            return obj

    p = Checked(np.ones(3), np.zeros(3))
    cst = Custom(np.ones(2))
    batch = Checked(np.ones((2, 3)), np.ones((2, 3)))
    calls.update(init=0, post=0)
    g = rune.grad(lambda p: np.sum(p.w * p.b + p.w ** 2))(p)
    np.testing.assert_allclose(g.w, 2 * np.ones(3))
    out = rune.vmap(lambda p: p)(batch)
    assert type(out) is Checked
    j = rune.jacrev(lambda p: p.w * 2)(p)
    assert type(j) is Checked and j.w.shape == (3, 3)
    rune.grad(lambda c: np.sum(c.a ** 2))(cst)
    rune.tree.map(lambda x: x * 2, p)
    rune.tree.unflatten(rune.tree.structure(p), [1.0, 2.0])
    assert calls == {"init": 0, "post": 0}


def test_frozen_and_slots_dataclasses():
    @dataclass(frozen=True)
    class Frozen:
        w: np.ndarray
        b: float

    @dataclass(frozen=True, slots=True)
    class FrozenSlots:
        w: np.ndarray
        k: int = field(default=2, metadata={"static": True})

    @dataclass(slots=True)
    class Slots:
        w: np.ndarray

    f = lambda p: np.sum(p.w ** 2) * (p.b if hasattr(p, "b") else 1.0)
    g1 = rune.grad(f)(Frozen(np.array([1.0, 2.0]), 3.0))
    assert type(g1) is Frozen
    np.testing.assert_allclose(g1.w, [6.0, 12.0])
    assert g1.b == 5.0
    g2 = rune.grad(lambda p: np.sum(p.w ** 2) * p.k)(FrozenSlots(np.array([1.0, 2.0]), 3))
    assert type(g2) is FrozenSlots and g2.k == 3
    np.testing.assert_allclose(g2.w, [6.0, 12.0])
    g3 = rune.grad(lambda p: np.sum(p.w ** 3))(Slots(np.array([1.0, 2.0])))
    assert type(g3) is Slots
    np.testing.assert_allclose(g3.w, [3.0, 12.0])
    v = rune.vmap(lambda p: p.w * p.k)(FrozenSlots(np.ones((4, 2)), 5))
    np.testing.assert_allclose(v, 5 * np.ones((4, 2)))
    with pytest.raises(Exception):      # still frozen afterwards
        g1.b = 1.0


def test_register_and_dunder_methods():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    rune.tree.register(Pair, lambda p: ((p.a, p.b), "pair"), lambda aux, ch: Pair(*ch))
    g = rune.grad(lambda p: np.sum(p.a ** 2) + p.b * 3.0)(Pair(np.array([1.0, 2.0]), 2.0))
    assert type(g) is Pair
    np.testing.assert_allclose(g.a, [2.0, 4.0])
    assert g.b == 3.0 and type(g.b) is float

    class Point:
        def __init__(self, x, y, label):
            self.x, self.y, self.label = x, y, label

        def __rune_flatten__(self):
            return (self.x, self.y), self.label

        @classmethod
        def __rune_unflatten__(cls, aux, children):
            obj = object.__new__(cls)
            obj.x, obj.y = children
            obj.label = aux
            return obj

    pt = Point(np.array(1.0), np.array(2.0), "P")
    g = rune.grad(lambda p: p.x * p.y ** 2)(pt)
    assert type(g) is Point and g.label == "P"
    np.testing.assert_allclose([g.x, g.y], [4.0, 4.0])
    # aux is part of the structure
    assert rune.tree.structure(Point(1, 2, "P")) != rune.tree.structure(Point(1, 2, "Q"))
    # vmap of a registered class
    out = rune.vmap(lambda p: Pair(p.a * p.b, p.b))(Pair(np.ones((3, 2)), np.arange(3.0)))
    assert type(out) is Pair
    np.testing.assert_allclose(out.a, np.arange(3.0)[:, None] * np.ones((3, 2)))


def test_register_unknown_class_is_a_leaf():
    class Opaque:
        pass
    o = Opaque()
    assert rune.tree.leaves([o, 1]) == [o, 1]


def test_tree_api():
    t = {"a": [1.0, (2.0, None)], "b": Dense(np.ones(2), 3.0)}
    leaves, td = rune.tree.flatten(t)
    assert len(leaves) == 4 and leaves[0] == 1.0 and leaves[-1] == 3.0
    assert rune.tree.leaves(t)[1] == 2.0
    assert rune.tree.structure(t) == td
    back = rune.tree.unflatten(td, [10.0, 20.0, np.zeros(2), 30.0])
    assert back["a"] == [10.0, (20.0, None)] and type(back["b"]) is Dense and back["b"].b == 30.0
    assert rune.tree.leaves(None) == []
    assert rune.tree.leaves([None, None]) == []
    doubled = rune.tree.map(lambda x, y: x + y, t, t)
    assert doubled["a"][0] == 2.0 and doubled["a"][1][1] is None
    assert rune.tree.map(lambda x, y, z: x + y + z, [1, 2], [3, 4], [5, 6]) == [9, 12]
    assert rune.tree.structure({"a": 1, "b": 2}) != rune.tree.structure({"a": 1, "c": 2})
    assert rune.tree.structure((1, 2)) != rune.tree.structure([1, 2])
    assert rune.tree.structure(1) == rune.tree.structure(np.ones(3))


@dataclass
class TLayer:
    w: np.ndarray
    b: np.ndarray


@dataclass
class TNet:
    layers: list


def test_tree_map_mismatch_names_the_path():
    a = TNet([TLayer(np.ones(2), np.ones(1)) for _ in range(3)])
    b = TNet([TLayer(np.ones(2), np.ones(1)) for _ in range(2)]
             + [TLayer((np.ones(2), np.ones(2)), np.ones(1))])
    with pytest.raises(ValueError, match=r"layers\[2\]\.w"):
        rune.tree.map(lambda x, y: x + y, a, b)
    with pytest.raises(ValueError, match=r"\['k'\]|k"):
        rune.tree.map(lambda x, y: x, {"k": [1, 2]}, {"k": [1, 2, 3]})


def test_ordered_dict_and_defaultdict_are_tree_nodes():
    import collections
    od = collections.OrderedDict(b=np.ones(2), a=np.arange(2.0))
    g = rune.grad(lambda d: np.sum(d["a"] * d["b"]))(od)
    assert type(g) is collections.OrderedDict and list(g) == ["b", "a"]
    np.testing.assert_allclose(g["a"], 1.0)
    np.testing.assert_allclose(g["b"], [0.0, 1.0])
    dd = collections.defaultdict(list, w=np.array([1.0, 2.0]))
    g = rune.grad(lambda d: np.sum(d["w"] ** 2))(dd)
    assert type(g) is collections.defaultdict and g.default_factory is list
    np.testing.assert_allclose(g["w"], [2.0, 4.0])
    out = rune.vmap(lambda d: d["a"] * 2, in_axes=(collections.OrderedDict(b=None, a=0),))(od)
    np.testing.assert_allclose(out, [0.0, 2.0])
    with pytest.raises(ValueError, match="keys"):
        rune.vmap(lambda d: d["a"], in_axes=(collections.OrderedDict(a=None, b=0),))(od)
    with pytest.raises(ValueError):
        rune.tree.map(lambda a, b: a, od, collections.OrderedDict(b=1, c=2))
    assert rune.tree.leaf_paths(rune.tree.structure({"x": dd})) == ["['x']['w']"]


def test_every_transformation_preserves_record_types():
    @dataclass
    class P:
        w: np.ndarray
        b: np.ndarray

    p = P(np.ones(2), np.array(2.0))
    f = lambda p: P(p.w * p.b, p.b ** 2)          # noqa: E731
    out, t = rune.jvp(f, (p,), (P(np.ones(2), np.array(1.0)),))
    assert type(out) is P and type(t) is P
    np.testing.assert_allclose(t.w, [3.0, 3.0])
    out, pb = rune.vjp(f, p)
    (ct,) = pb(P(np.ones(2), np.array(1.0)))
    assert type(out) is P and type(ct) is P
    np.testing.assert_allclose(ct.b, 2.0 + 4.0)
    assert type(rune.vmap(f)(P(np.ones((3, 2)), np.arange(3.0)))) is P
    for jac in (rune.jacfwd, rune.jacrev):
        J = jac(f)(p)
        assert type(J) is P and type(J.w) is P and type(J.b) is P
        assert J.w.w.shape == (2, 2) and J.w.b.shape == (2,) and J.b.w.shape == (2,)
