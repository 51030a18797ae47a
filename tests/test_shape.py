"""Shape and layout: split, tile, repeat, flip, rot90, roll, pad, triu/tril, diag,
diagonal, trace, sort, block, meshgrid and the rest of ``rune/numpy/shape.py``,
``building.py`` and the layout half of ``indexing.py`` and ``sorting.py``.

Every function: values equal NumPy's, ``check_grads(order=2)``, ``vmap`` against a
loop with the batch axis first/last/middle and under ``vmap(vmap)``; then nesting
(``vmap(grad)``, ``grad(vmap)``, ``jvp(grad)``) and exact hand-computed gradients.
"""

import warnings

import numpy as np
import pytest

import rune
from helpers import check_all_axes

RNG = np.random.default_rng(42)
A = RNG.standard_normal((4, 6))
B3 = RNG.standard_normal((3, 4, 5))
V = RNG.standard_normal(5)
SQ = RNG.standard_normal((4, 4))
C = np.array(1.5)

# (name, function, args): every function of the family on a few shapes, negative axes too.
CASES = [
    ("split_sections", lambda x: np.split(x, 3, axis=1), (A,)),
    ("split_indices_neg_axis", lambda x: np.split(x, [1, 3], axis=-1), (A,)),
    ("split_3d", lambda x: np.split(x, [2], axis=-2), (B3,)),
    ("split_overlapping_points", lambda x: np.split(x, [3, 1]), (A,)),
    ("split_points_past_end", lambda x: np.split(x, [2, 9], axis=1), (A,)),
    ("array_split_uneven", lambda x: np.array_split(x, 4, axis=1), (A,)),
    ("array_split_1d", lambda x: np.array_split(x, 3), (V,)),
    ("hsplit", lambda x: np.hsplit(x, 2), (A,)),
    ("hsplit_1d", lambda x: np.hsplit(x, [2]), (V,)),
    ("vsplit", lambda x: np.vsplit(x, [1]), (A,)),
    ("dsplit", lambda x: np.dsplit(x, [2, 3]), (B3,)),
    ("tile_more_reps", lambda x: np.tile(x, (2, 1, 3)), (A,)),
    ("tile_int", lambda x: np.tile(x, 2), (A,)),
    ("tile_fewer_reps", lambda x: np.tile(x, (2, 1)), (B3,)),
    ("tile_ones", lambda x: np.tile(x, (1, 1)), (A,)),
    ("repeat_axis0", lambda x: np.repeat(x, 2, axis=0), (A,)),
    ("repeat_neg_axis", lambda x: np.repeat(x, 3, axis=-1), (B3,)),
    ("repeat_flat", lambda x: np.repeat(x, 3), (A,)),
    ("repeat_per_element", lambda x: np.repeat(x, [1, 0, 2, 3], axis=0), (A,)),
    ("repeat_per_element_neg", lambda x: np.repeat(x, [2, 1, 1, 0, 3], axis=-1), (B3,)),
    ("repeat_method", lambda x: x.repeat(2, axis=1), (A,)),
    ("flip_all", lambda x: np.flip(x), (B3,)),
    ("flip_neg_axis", lambda x: np.flip(x, -1), (A,)),
    ("flip_tuple", lambda x: np.flip(x, (0, 2)), (B3,)),
    ("fliplr", np.fliplr, (A,)),
    ("flipud", np.flipud, (B3,)),
    ("rot90", np.rot90, (A,)),
    ("rot90_k3_axes", lambda x: np.rot90(x, 3, axes=(2, 0)), (B3,)),
    ("rot90_k_neg2", lambda x: np.rot90(x, -2, axes=(-1, -2)), (B3,)),
    ("rot90_k0", lambda x: np.rot90(x, 4), (A,)),
    ("roll_flat", lambda x: np.roll(x, 2), (A,)),
    ("roll_axis", lambda x: np.roll(x, -1, axis=0), (A,)),
    ("roll_tuple", lambda x: np.roll(x, (1, 2), axis=(0, -1)), (B3,)),
    ("roll_same_axis_twice", lambda x: np.roll(x, (1, 3), axis=(1, 1)), (A,)),
    ("roll_full_turn", lambda x: np.roll(x, 6, axis=1), (A,)),
    ("pad_constant", lambda x: np.pad(x, 1), (A,)),
    ("pad_constant_pairs", lambda x: np.pad(x, ((1, 2), (0, 3)),
                                            constant_values=((1.0, 2.0), (3.0, 4.0))), (A,)),
    ("pad_constant_traced_value", lambda x, c: np.pad(x, 2, constant_values=c), (A, C)),
    ("pad_constant_3d", lambda x: np.pad(x, ((0, 0), (1, 0), (2, 1))), (B3,)),
    ("pad_empty_axis_only", lambda x: np.pad(x, ((0, 0), (0, 0))), (A,)),
    ("pad_edge", lambda x: np.pad(x, ((2, 7), (1, 0)), mode="edge"), (A,)),
    ("pad_reflect", lambda x: np.pad(x, ((2, 7), (1, 0)), mode="reflect"), (A,)),
    ("pad_symmetric", lambda x: np.pad(x, ((2, 7), (1, 0)), mode="symmetric"), (A,)),
    ("pad_wrap", lambda x: np.pad(x, ((2, 7), (1, 0)), mode="wrap"), (A,)),
    ("pad_reflect_1d", lambda x: np.pad(x, 3, mode="reflect"), (V,)),
    ("triu", lambda x: np.triu(x), (A,)),
    ("triu_k_3d", lambda x: np.triu(x, 1), (B3,)),
    ("tril_neg_k", lambda x: np.tril(x, -1), (A,)),
    ("tril_1d", lambda x: np.tril(x, 1), (V,)),
    ("diag_vector", lambda x: np.diag(x), (V,)),
    ("diag_vector_k", lambda x: np.diag(x, 1), (V,)),
    ("diag_vector_neg_k", lambda x: np.diag(x, -2), (V,)),
    ("diag_matrix", lambda x: np.diag(x), (A,)),
    ("diag_matrix_k", lambda x: np.diag(x, 2), (A,)),
    ("diag_matrix_neg_k", lambda x: np.diag(x, -1), (A,)),
    ("diagflat", lambda x: np.diagflat(x[:2], -1), (A,)),
    ("diagonal", lambda x: np.diagonal(x), (SQ,)),
    ("diagonal_axes", lambda x: np.diagonal(x, 1, -1, 0), (B3,)),
    ("diagonal_method", lambda x: x.diagonal(-1, 2, 1), (B3,)),
    ("trace", np.trace, (SQ,)),
    ("trace_axes", lambda x: np.trace(x, -1, 2, 1), (B3,)),
    ("trace_method", lambda x: x.trace(1), (A,)),
    ("sort_last", np.sort, (B3,)),
    ("sort_axis0", lambda x: np.sort(x, axis=0), (A,)),
    ("sort_neg_axis", lambda x: np.sort(x, axis=-2), (B3,)),
    ("sort_none", lambda x: np.sort(x, axis=None), (A,)),
    ("sort_stable", lambda x: np.sort(x, kind="stable"), (V,)),
    ("sort_method_in_place", lambda x: _sorted_copy(x, 0), (A,)),
    ("argsort_times", lambda x: x * np.argsort(x, axis=0), (A,)),
    ("searchsorted_times", lambda x: x[0] * np.searchsorted(np.sort(x[1]), x[0]), (A,)),
    ("searchsorted_plain_sorted", lambda x: x * np.searchsorted(
        np.array([-0.5, 0.0, 0.5]), x, side="right"), (A,)),
    ("searchsorted_sorter", lambda x: x[0] * np.searchsorted(
        x[1], x[0], sorter=np.argsort(x[1])), (A,)),
    ("select", lambda x: np.select([x > 0.5, x < -0.5], [x ** 2, np.sin(x)], default=x), (A,)),
    ("select_scalar_default", lambda x: np.select([x > 0], [x * 3]), (A,)),
    ("choose", lambda x: np.choose(np.array([0, 1, 2, 0, 1, 2]), [x[0], x[1], x[2]]), (A,)),
    ("choose_array_choices", lambda x: np.choose(np.array([[1], [2]]), x), (B3[:, :2],)),
    ("choose_wrap", lambda x: np.choose(np.array([3, -1, 4, 0, 1, 2]), x[:3], mode="wrap"),
     (A,)),
    ("block", lambda x: np.block([[x, x[:, :2]], [x[:1], np.ones((1, 2))]]), (A,)),
    ("block_1d", lambda x: np.block([x, 1.0, x[:2]]), (V,)),
    ("block_3d", lambda x: np.block([[[x]], [[x]]]), (A,)),
    ("meshgrid_xy", lambda x: np.meshgrid(x, x[:3] ** 2), (V,)),
    ("meshgrid_ij_sparse", lambda x: np.meshgrid(x, x[:3] ** 2, x[1:], indexing="ij",
                                                 sparse=True), (V,)),
    ("meshgrid_3", lambda x: np.meshgrid(x[:2], x, x[1:3]), (V,)),
    ("take_flat", lambda x: np.take(x, [5, 0, 5, 23]), (A,)),
    ("take_neg_axis", lambda x: np.take(x, [[0, 1], [1, 1]], axis=-1), (B3,)),
    ("take_scalar", lambda x: np.take(x, 2, axis=1), (A,)),
    ("take_wrap", lambda x: np.take(x, [-7, 30, 2], axis=1, mode="wrap"), (A,)),
    ("take_clip", lambda x: np.take(x, [-7, 30, 2], mode="clip"), (A,)),
    ("take_method", lambda x: x.take([2, 2, 0], axis=0), (A,)),
    ("take_along_axis", lambda x: np.take_along_axis(x, np.argsort(x, axis=1)[:, :2], axis=1),
     (B3,)),
    ("take_along_axis_broadcast", lambda x: np.take_along_axis(
        x, np.array([[0], [2], [1], [3]]), axis=0), (A,)),
    ("take_along_axis_none", lambda x: np.take_along_axis(x, np.array([3, 3, 0]), axis=None),
     (A,)),
    ("delete", lambda x: np.delete(x, [1, 3], axis=1), (A,)),
    ("delete_flat_int", lambda x: np.delete(x, -2), (A,)),
    ("delete_slice_neg_axis", lambda x: np.delete(x, slice(1, None, 2), axis=-1), (B3,)),
    ("delete_mask", lambda x: np.delete(x, np.array([True, False, False, True]), axis=0),
     (A,)),
    ("insert_scalar", lambda x: np.insert(x, 2, x[0], axis=0), (A,)),
    ("insert_scalar_values_neg", lambda x: np.insert(x, -1, [1.0, 2.0, 3.0, 4.0], axis=1),
     (A,)),
    ("insert_list1", lambda x: np.insert(x, [2], x[:, :1] ** 2, axis=1), (A,)),
    ("insert_sequence", lambda x: np.insert(x, [0, 6, 6], x[:, :1], axis=1), (A,)),
    ("insert_constant_sequence", lambda x: np.insert(x, [1, 3], 5.0, axis=-1), (B3,)),
    ("insert_flat", lambda x: np.insert(x, 3, x[0]), (A,)),
    ("insert_slice", lambda x: np.insert(x, slice(0, 2), x[0], axis=0), (A,)),
    ("append", lambda x: np.append(x, x[:1], axis=0), (A,)),
    ("append_flat", lambda x: np.append(x, 1.0), (A,)),
    ("partition", lambda x: np.partition(x, 2, axis=0), (A,)),
    ("partition_none_kths", lambda x: np.partition(x, (1, 5), axis=None), (A,)),
    ("argpartition_times", lambda x: x * np.argpartition(x, 1, axis=-1), (B3,)),
    ("lexsort", lambda x: x[:, np.lexsort(x[:2])], (A,)),
    ("lexsort_tuple", lambda x: x[np.lexsort((x[:, 0], np.round(x[:, 1])))], (A,)),
    ("tril_indices", lambda x: x[np.tril_indices(4)], (A,)),
    ("ix_", lambda x: x[np.ix_([0, 2], [1, 5])], (A,)),
    ("unravel_index", lambda x: x[np.unravel_index([3, 7], x.shape)], (A,)),
    ("extract", lambda x: np.extract(np.arange(24).reshape(4, 6) % 3 == 0, x), (A,)),
    ("compress", lambda x: np.compress([True, False, True], x, axis=1), (A,)),
    ("compress_method_flat", lambda x: x.compress([True, False, True, True]), (A,)),
]


def _sorted_copy(x, axis):
    y = x.copy()
    y.sort(axis=axis)
    return y


IDS = [c[0] for c in CASES]


def _eval_traced(f, args):
    """``f`` evaluated under ``jvp`` with zero tangents: the traced value."""
    return rune.jvp(f, args, tuple(np.zeros_like(a) for a in args))[0]


def _assert_tree_close(got, want):
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_tree_close(g, w)
        return
    assert np.shape(got) == np.shape(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,f,args", CASES, ids=IDS)
def test_value_matches_numpy(name, f, args):
    _assert_tree_close(_eval_traced(f, args), f(*args))


@pytest.mark.parametrize("name,f,args", CASES, ids=IDS)
def test_check_grads(name, f, args):
    rune.check_grads(f, *args, order=2)


# searchsorted with a batched sorted array loops (a different array per example).
LOOPING = {"searchsorted_times", "searchsorted_sorter"}


@pytest.mark.parametrize("name,f,args", CASES, ids=IDS)
def test_vmap_against_loop(name, f, args):
    with warnings.catch_warnings():
        if name not in LOOPING:
            warnings.simplefilter("error", rune.PerformanceWarning)
        else:
            warnings.simplefilter("ignore", rune.PerformanceWarning)
        check_all_axes(f, *args)


# --------------------------------------------------------------------------
# Exact values
# --------------------------------------------------------------------------

def test_repeat_vjp_sums_the_copies():
    x = np.array([1.0, 2.0, 3.0])
    g = rune.grad(lambda x: np.sum(np.repeat(x, [2, 0, 3]) * np.arange(5.0)))(x)
    np.testing.assert_array_equal(g, [0 + 1, 0, 2 + 3 + 4])
    g = rune.grad(lambda x: np.sum(np.repeat(x, 2) * np.arange(6.0)))(x)
    np.testing.assert_array_equal(g, [1, 5, 9])


def test_tile_vjp_sums_the_copies():
    x = np.array([1.0, 2.0])
    g = rune.grad(lambda x: np.sum(np.tile(x, (2, 3)) * np.arange(12.0).reshape(2, 6)))(x)
    np.testing.assert_array_equal(g, [0 + 2 + 4 + 6 + 8 + 10, 1 + 3 + 5 + 7 + 9 + 11])


def test_sort_gradient_follows_the_permutation():
    x = np.array([3.0, 1.0, 2.0])
    w = np.array([10.0, 20.0, 30.0])
    g = rune.grad(lambda x: np.sum(np.sort(x) * w))(x)
    np.testing.assert_array_equal(g, [30.0, 10.0, 20.0])


def test_sort_method_assigns_in_place_and_keeps_the_input():
    x = np.array([[3.0, 1.0], [0.0, 2.0]])
    x0 = x.copy()

    def f(x):
        x.sort(axis=0)
        return np.sum(x * np.array([[1.0, 2.0], [3.0, 4.0]]))

    g = rune.grad(f)(x)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(g, [[3.0, 2.0], [1.0, 4.0]])


def test_roll_pad_trace_exact():
    x = np.arange(4.0)
    _, pb = rune.vjp(lambda x: np.roll(x, 1), x)
    np.testing.assert_array_equal(pb(np.array([1.0, 2.0, 3.0, 4.0]))[0], [2.0, 3.0, 4.0, 1.0])
    g = rune.grad(lambda x: np.sum(np.pad(x, 2, mode="edge")))(x)
    np.testing.assert_array_equal(g, [3.0, 1.0, 1.0, 3.0])
    g = rune.grad(lambda m: np.trace(m))(np.ones((3, 4)))
    np.testing.assert_array_equal(g, np.eye(3, 4))


def test_argsort_and_searchsorted_have_no_derivative():
    x = np.array([0.3, -1.0, 2.0])
    out, t = rune.jvp(lambda x: np.argsort(x), (x,), (np.ones(3),))
    np.testing.assert_array_equal(out, [1, 0, 2])
    assert out.dtype.kind == "i"
    out = rune.grad(lambda x: np.sum(x * np.searchsorted(np.array([0.0, 1.0]), x)))(x)
    np.testing.assert_array_equal(out, [1.0, 0.0, 2.0])


def test_split_returns_a_list_and_refuses_unequal_division():
    parts = rune.jvp(lambda x: np.split(x, 2), (V[:4],), (np.ones(4),))
    assert isinstance(parts[0], list) and len(parts[0]) == 2
    with pytest.raises(ValueError, match="equal division"):
        rune.grad(lambda x: np.sum(np.split(x, 2)[0]))(V)


def test_split_vjp_with_unused_pieces():
    g = rune.grad(lambda x: np.sum(np.split(x, [1, 3])[1] ** 2))(np.arange(5.0))
    np.testing.assert_array_equal(g, [0.0, 2.0, 4.0, 0.0, 0.0])


def test_pad_unsupported_mode_is_refused_clearly():
    with pytest.raises(NotImplementedError, match="mean"):
        rune.grad(lambda x: np.sum(np.pad(x, 1, mode="mean")))(V)
    with pytest.raises(NotImplementedError, match="reflect_type"):
        rune.grad(lambda x: np.sum(np.pad(x, 1, mode="reflect", reflect_type="odd")))(V)


def test_choose_raises_on_a_bad_index():
    with pytest.raises((ValueError, IndexError)):
        rune.grad(lambda x: np.sum(np.choose(np.array([0, 3]), [x, x])))(V[:2])


def test_shape_errors_match_numpy():
    with pytest.raises(ValueError):
        rune.grad(lambda x: np.sum(np.fliplr(x)))(V)
    with pytest.raises(ValueError):
        rune.grad(lambda x: np.sum(np.diag(x)))(B3)
    with pytest.raises(ValueError):
        rune.grad(lambda x: np.sum(np.rot90(x, axes=(0, 0))))(A)
    with pytest.raises(ValueError):
        rune.grad(lambda x: np.sum(np.repeat(x, [1, 2])))(V)
    with pytest.raises(ValueError):
        rune.grad(lambda x: np.sum(np.vsplit(x, 1)[0]))(V)


def test_outputs_do_not_alias_inputs():
    x = A.copy()
    for f in (lambda x: np.tile(x, 1), lambda x: np.roll(x, 0), lambda x: np.flip(x, ()),
              lambda x: np.rot90(x, 0), lambda x: np.pad(x, 0),
              lambda x: np.block(x)):
        out, _ = rune.vjp(f, x)
        out[...] = 0.0
        np.testing.assert_array_equal(x, A)


# --------------------------------------------------------------------------
# Nesting
# --------------------------------------------------------------------------

def _loss(x):
    parts = np.split(np.sort(x, axis=-1), 2, axis=-1)
    y = np.roll(np.pad(parts[0], 1, mode="reflect"), 1) * np.tile(parts[1], 2)[:4]
    return np.sum(np.tril(np.outer(y, np.flip(y))) ** 2) + np.trace(np.diag(y) @ np.diag(y))


def test_vmap_of_grad_is_per_example_grads():
    xs = RNG.standard_normal((3, 4))
    got = rune.vmap(rune.grad(_loss))(xs)
    want = np.stack([rune.grad(_loss)(x) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_grad_of_vmap():
    xs = RNG.standard_normal((3, 4))
    got = rune.grad(lambda xs: np.sum(rune.vmap(_loss)(xs)))(xs)
    want = np.stack([rune.grad(_loss)(x) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_jvp_of_grad_is_hvp():
    x = RNG.standard_normal(4)
    v = RNG.standard_normal(4)
    _, hv = rune.jvp(rune.grad(_loss), (x,), (v,))
    h = rune.hessian(_loss)(x)
    np.testing.assert_allclose(hv, h @ v, rtol=1e-10)
    rune.check_grads(_loss, x, order=2)


def test_vmap_of_vmap_of_grad():
    xs = RNG.standard_normal((2, 3, 4))
    got = rune.vmap(rune.vmap(rune.grad(_loss)))(xs)
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(got[i, j], rune.grad(_loss)(xs[i, j]), rtol=1e-12)


def _check_hessian(scal, x):
    """``hessian`` and ``jacrev(jacfwd)`` (vmap over jvp-of-vjp and vjp-of-jvp) against
    one forward-over-reverse product per basis vector."""
    n = x.size
    basis = np.eye(n).reshape((n,) + x.shape)
    want = np.stack([rune.jvp(rune.grad(scal), (x,), (e,))[1] for e in basis])
    want = want.reshape(x.shape + x.shape)
    np.testing.assert_allclose(rune.hessian(scal)(x), want, atol=1e-10)
    np.testing.assert_allclose(rune.jacrev(rune.jacfwd(scal))(x), want, atol=1e-10)


@pytest.mark.parametrize("name,f,args", CASES, ids=IDS)
def test_hessian(name, f, args):
    x, rest = args[0], args[1:]

    def scal(x):
        return sum(np.sum(np.sin(o) * o) for o in rune.tree.leaves(f(x, *rest)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if name in LOOPING else "error", rune.PerformanceWarning)
        _check_hessian(scal, x)


@pytest.mark.parametrize("name,f,args", CASES, ids=IDS)
def test_float32_keeps_its_dtype(name, f, args):
    a32 = tuple(a.astype(np.float32) for a in args)
    want = f(*a32)
    out, tangent = rune.jvp(f, a32, tuple(np.ones_like(a) for a in a32))
    for o, t, w in zip(rune.tree.leaves(out), rune.tree.leaves(tangent),
                       rune.tree.leaves(want)):
        assert o.dtype == w.dtype
        if w.dtype.kind == "f":
            assert t.dtype == w.dtype
    g = rune.grad(lambda *a: sum(np.sum(o) for o in rune.tree.leaves(f(*a))
                                 if o.dtype.kind == "f"))(*a32)
    assert g.dtype == np.float32
