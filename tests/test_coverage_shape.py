"""Acceptance sweep of SPEC section 3 (NumPy coverage), shape, layout and indexing: every listed operation
through ``helpers.check_op`` (jvp against central differences, vjp/grad against the jvp,
vmap against a Python loop, float32, and second order through nesting)."""

import numpy as np
import pytest

import rune
from helpers import check_op


R = np.random.default_rng(42)
M44 = R.normal(size=(4, 4)) + 4 * np.eye(4)     # well conditioned
A23, v3 = R.normal(size=(2, 3)), R.normal(size=3)


# shape and layout

X234 = R.normal(size=(2, 3, 4))


SHAPE = {
    "reshape": (lambda x: np.reshape(x, (4, 6)), (X234,)),
    "reshape_-1": (lambda x: x.reshape(-1, 2), (X234,)),
    "reshape_method_args": (lambda x: x.reshape(6, 4), (X234,)),
    "ravel": (np.ravel, (X234,)), "flatten": (lambda x: x.flatten(), (X234,)),
    "transpose": (np.transpose, (X234,)),
    "transpose_axes": (lambda x: np.transpose(x, (1, 0, 2)), (X234,)),
    "T": (lambda x: x.T, (X234,)), "method_transpose": (lambda x: x.transpose(2, 0, 1), (X234,)),
    "swapaxes": (lambda x: np.swapaxes(x, 0, 2), (X234,)),
    "moveaxis": (lambda x: np.moveaxis(x, 0, -1), (X234,)),
    "expand_dims": (lambda x: np.expand_dims(x, 1), (X234,)),
    "squeeze": (lambda x: np.squeeze(x[:, :1]), (X234,)),
    "squeeze_axis": (lambda x: np.squeeze(x[:1], axis=0), (X234,)),
    "broadcast_to": (lambda x: np.broadcast_to(x[:, :1], (2, 5, 4)), (X234,)),
    "concatenate": (lambda x, y: np.concatenate([x, y, x], axis=1), (X234, X234[:, :2] * 2)),
    "concatenate_none": (lambda x, y: np.concatenate([x, y], axis=None), (X234, v3)),
    "stack": (lambda x, y: np.stack([x, y]), (X234, X234 * 3)),
    "stack_last": (lambda x, y: np.stack([x, y], axis=-1), (X234, X234 * 3)),
    "hstack": (lambda x, y: np.hstack([x, y]), (A23, R.normal(size=(2, 2)))),
    "vstack": (lambda x, y: np.vstack([x, y]), (A23, v3)),
    "split": (lambda x: [p * (i + 1) for i, p in enumerate(np.split(x, 2, axis=2))], (X234,)),
    "split_idx": (lambda x: tuple(np.split(x, [1, 3], axis=1)), (X234,)),
    "array_split": (lambda x: np.array_split(x, 3, axis=2), (X234,)),
    "tile": (lambda x: np.tile(x, (2, 1, 3)), (X234,)),
    "repeat": (lambda x: np.repeat(x, 2, axis=1), (X234,)),
    "repeat_array": (lambda x: np.repeat(x, [1, 0, 3], axis=1), (X234,)),
    "repeat_none": (lambda x: np.repeat(x, 2), (A23,)),
    "flip": (lambda x: np.flip(x, axis=1), (X234,)), "flip_all": (np.flip, (X234,)),
    "roll": (lambda x: np.roll(x, 2, axis=2), (X234,)),
    "roll_none": (lambda x: np.roll(x, -3), (X234,)),
    "pad_constant": (lambda x: np.pad(x, ((0, 1), (2, 0), (1, 1)), constant_values=0.5), (X234,)),
    "pad_edge": (lambda x: np.pad(x, 2, mode="edge"), (A23,)),
    "pad_reflect": (lambda x: np.pad(x, ((1, 1), (2, 2)), mode="reflect"), (A23,)),
    "where": (lambda x, y: np.where(x > 0, x, y), (A23, R.normal(size=(2, 3)))),
    "where_scalar": (lambda x: np.where(x > 0, x ** 2, -x), (A23,)),
    "clip": (lambda x: np.clip(x, -0.5, 0.5), (A23 + 0.013,)),
    "clip_traced_bounds": (lambda x, lo, hi: np.clip(x, lo, hi),
                           (np.array([-2.0, 0.1, 3.0]), np.array(-1.0), np.array(1.0))),
    "method_clip": (lambda x: x.clip(min=-0.5), (A23 + 0.013,)),
    "diag_1d": (lambda v: np.diag(v, k=1), (v3,)), "diag_2d": (lambda m: np.diag(m, k=-1), (M44,)),
    "diagonal": (lambda x: np.diagonal(x, offset=1, axis1=1, axis2=2), (X234,)),
    "trace": (lambda m: np.trace(m, offset=1), (M44,)), "trace_3d": (
        lambda x: np.trace(x, axis1=0, axis2=2), (X234,)),
    "triu": (lambda m: np.triu(m, k=1), (M44,)), "tril": (lambda m: np.tril(m), (M44,)),
    "tril_batch": (lambda x: np.tril(x, -1), (X234,)),
    "sort": (lambda x: np.sort(x, axis=1), (X234,)), "sort_none": (
        lambda x: np.sort(x, axis=None), (X234,)),
    "method_sort": (lambda x: (lambda y: (y.sort(), y)[1])(x * 1.0), (X234,)),
    "take": (lambda x: np.take(x, [2, 0, 2], axis=1), (X234,)),
    "take_flat": (lambda x: np.take(x, np.array([[5, 1], [0, 5]])), (X234,)),
    "take_along_axis": (lambda x: np.take_along_axis(x, np.argsort(x, axis=2), axis=2), (X234,)),
    "take_along_axis_const": (lambda x: np.take_along_axis(
        x, np.array([[[0], [3], [1]], [[2], [2], [0]]]), axis=2), (X234,)),
    "atleast_2d": (lambda v: np.atleast_2d(v), (v3,)),
    "fliplr": (np.fliplr, (A23,)), "rot90": (np.rot90, (A23,)),
}


@pytest.mark.parametrize("name", list(SHAPE))
def test_shape_and_layout(name):
    f, args = SHAPE[name]
    check_op(f, *args)


INDEX = {
    "int": lambda x: x[1], "neg_int": lambda x: x[-1, 2],
    "slice": lambda x: x[:, 1:3], "step": lambda x: x[::-1, ::2], "ellipsis_none": lambda x: x[..., None],
    "none_mid": lambda x: x[:, None, 1], "idx_array": lambda x: x[np.array([2, 0, 2])],
    "idx_list": lambda x: x[[1, 1, 0]], "mask": lambda x: x[x > 0],
    "mask_const": lambda x: x[np.array([True, False, True, True])],
    "two_arrays": lambda x: x[np.array([0, 3]), np.array([1, 2])],
    "mixed": lambda x: x[1:, np.array([2, 0])], "mixed_nonadjacent": lambda x: x[np.array([0, 2]), :, None],
    "scalar_elem": lambda x: x[2, 1] * x[0, 0], "broadcast_idx": lambda x: x[np.array([[0], [3]]), np.array([0, 2])],
    "getitem_chain": lambda x: x[1:][0][1:],
}


@pytest.mark.parametrize("name", list(INDEX))
def test_indexing(name):
    x = R.normal(size=(4, 3))
    check_op(INDEX[name], x, batch_last=name not in ("mask",))


def test_repeated_index_gradient_accumulates():
    g = rune.grad(lambda x: np.sum(x[np.array([0, 0, 2, 0])] * np.array([1.0, 2.0, 3.0, 4.0])))(
        np.zeros(3))
    np.testing.assert_allclose(g, [7.0, 0.0, 3.0])
    g = rune.grad(lambda x: np.sum(np.take(x, [1, 1, 1])))(np.zeros(3))
    np.testing.assert_allclose(g, [0.0, 3.0, 0.0])


def test_sort_gradient_through_the_permutation():
    x = np.array([3.0, 1.0, 2.0])
    w = np.array([10.0, 20.0, 30.0])
    g = rune.grad(lambda x: np.sum(np.sort(x) * w))(x)
    np.testing.assert_allclose(g, [30.0, 10.0, 20.0])
