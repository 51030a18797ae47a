"""The fast paths of in-place code (``u[1:-1] += ...``), each against NumPy itself.

* ``x[idx] = v`` where ``v`` is a current view ``x[idx]`` (how every ``x[idx] op= y``
  ends, after ``__iadd__`` wrote the view) is a no-op in NumPy, and rune records nothing;
  writes that only look alike (another index, a copy, a changed value, a read-only
  target) take the usual path.
* Basic indices are their own template; setitem's VJPs on a plain cotangent work on it
  directly; setitem's written value and concatenate give their structural zeros directly.

Every program: its values are NumPy's, its derivatives pass ``check_grads`` at order 2,
``vmap`` equals a loop, and its input is never written.
"""

import numpy as np
import pytest

import rune
from rune.primitives.indexing import index_set_p, split_index, _index_set_vjp_v_rule
from rune.primitives.shape import concatenate_p
from helpers import check_vmap


def stencil(u):
    u = u.copy()
    for _ in range(3):
        u[1:-1] += 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sin(u) * u


def rows(a):
    a = a.copy()
    a[1] -= 0.5 * a[0]
    a[:, 0] *= a[:, 1]
    a[..., 1:] += a[..., :-1] ** 2
    a[0] /= 2.0
    a[-1, ::2] -= np.cos(a[0, ::2])
    return a * np.sin(a)


def view_of_view(a):
    a = a.copy()
    w = a[1:]
    w[:, ::2] *= 3.0            # writes w, then w[:, ::2] = (its view): reaches a
    w[0] += a[0]
    return np.tanh(a) * a


def write_back_refreshed(u):
    u = u.copy()
    t = u[1:4]
    u[3:] = np.cos(u[3:])       # t sees the write (a view) ...
    u[1:4] = t                  # ... so writing it back changes nothing
    u[2:5] = t                  # another index, overlapping its source: a real write
    return u * u


def write_back_copy(u):
    u = u.copy()
    t = u[1:4].copy()           # no view: writing it back is a real write
    u[1:4] = 2.0 * u[1:4]
    u[1:4] = t
    return np.sin(u) * u


def write_back_changed(u):
    u = u.copy()
    t = u[1:4]
    t2 = t * 3.0
    u[1:4] = t2
    u[1:4] = t                  # t is current (refreshed): a no-op
    return u ** 3


def int_index(a):
    a = a.copy()
    a[0] += 1.5 * a[1]
    a[0, 0] += a[1, 1]          # a NumPy scalar: r += 1 leaves it alone, so a real write
    a[1][1:] *= a[0][:-1]
    return np.exp(0.3 * a) * a


def reversed_view(u):
    u = u.copy()
    v = u[::-1]
    v[1:] += 0.5 * u[:-1]
    return np.sin(u) * u


PROGRAMS = {"stencil": (stencil, (7,)), "rows": (rows, (3, 4)),
            "view_of_view": (view_of_view, (3, 4)),
            "write_back_refreshed": (write_back_refreshed, (7,)),
            "write_back_copy": (write_back_copy, (6,)),
            "write_back_changed": (write_back_changed, (6,)),
            "int_index": (int_index, (2, 3)), "reversed_view": (reversed_view, (6,))}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_in_place_programs_match_numpy_and_their_derivatives(name):
    f, shape = PROGRAMS[name]
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal(shape)
    x0 = x.copy()
    want = f(x)
    got, pullback = rune.vjp(f, x)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
    ct = rng.standard_normal(np.shape(want))
    pullback(ct)
    rune.check_grads(f, x, order=2)
    check_vmap(f, np.stack([x, 0.5 * x, x + 1.0]))
    np.testing.assert_array_equal(x, x0)        # the input was never written


def test_write_back_of_a_current_view_records_no_update():
    """``u[1:-1] += d`` records one update (the view's write through), not a second one for
    the write-back NumPy's statement ends with; the backward pass of a basic index on a
    plain cotangent runs no update primitive either (main: 4 calls per step)."""
    calls = []
    impl = index_set_p.impl

    def counting(*args, **params):
        calls.append(1)
        return impl(*args, **params)

    def f(u):
        u = u.copy()
        for _ in range(4):
            u[1:-1] += 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
        return np.sum(u ** 2)

    u = np.linspace(0.0, 1.0, 9) ** 2
    index_set_p.impl = counting
    try:
        g = rune.grad(f)(u)
    finally:
        index_set_p.impl = impl
    assert len(calls) == 4
    rune.check_grads(f, u, order=1)
    np.testing.assert_allclose(g, rune.jacfwd(f)(u), rtol=1e-12, atol=1e-14)


def test_write_back_into_a_read_only_view_still_raises_as_numpy():
    x = np.arange(3.0)
    b = np.broadcast_to(x, (2, 3))
    with pytest.raises(ValueError):
        b[0:1] = b[0:1]

    def f(x):
        b = np.broadcast_to(x, (2, 3))
        b[0:1] = b[0:1]
        return np.sum(b)

    with pytest.raises(ValueError):
        rune.grad(f)(x)


@pytest.mark.parametrize("idx", [np.s_[1:3], np.s_[1], np.s_[:, ::2], np.s_[..., 0:1]])
@pytest.mark.parametrize("incoming", [False, True])
def test_setitem_value_zero_mask_matches_the_general_way(idx, incoming):
    """The written value's structural zeros given directly equal the general way's (the rule
    run on the indicator of the non-structural elements)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5))
    template, arrays = split_index(idx, x.ndim)
    v = rng.standard_normal(np.shape(x[idx]))
    out = x.copy()
    out[idx] = v
    ct = rng.standard_normal(x.shape)
    mask = rng.random(x.shape) < 0.4 if incoming else None
    if mask is not None:
        ct = np.where(mask, 0.0, ct)
    rule = _index_set_vjp_v_rule
    m = rule.zero_mask(ct, mask, out, x, v, *arrays, template=template)
    ones = np.ones(x.shape) if mask is None else np.where(mask, 0.0, 1.0)
    general = rule(ones, out, x, v, *arrays, template=template) == 0
    if m is None:
        assert not general.any()
    else:
        np.testing.assert_array_equal(m, general)
        assert np.all(rule(ct, out, x, v, *arrays, template=template)[m] == 0)
    rune.check_grads(lambda a, w: _set_sum(a, idx, w), x, v, order=2)


def _set_sum(a, idx, w):
    a = a * 1.0
    a[idx] = np.sqrt(np.abs(w) + 1.0) * w
    return np.sum(np.where(a > 0, a * a, np.sin(a)))


@pytest.mark.parametrize("axis", [0, 1])
def test_concatenate_zero_mask_matches_the_general_way(axis):
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((1 + k, 3) if axis == 0 else (2, 1 + k)) for k in range(3)]
    out = np.concatenate(xs, axis=axis)
    mask = rng.random(out.shape) < 0.5
    ct = np.where(mask, 0.0, rng.standard_normal(out.shape))
    for i in range(3):
        rule = concatenate_p.vjp[i]
        m = rule.zero_mask(ct, mask, out, *xs, axis=axis)
        general = rule(np.where(mask, 0.0, 1.0), out, *xs, axis=axis) == 0
        np.testing.assert_array_equal(m, general)
        assert rule.zero_mask(ct, None, out, *xs, axis=axis) is None
    rune.check_grads(lambda *a: np.sum(np.sqrt(np.abs(np.concatenate(a, axis=axis)) + 1.0)),
                     *xs, order=2)


def test_heat_stencil_in_place_equals_its_functional_rewrite():
    """The benchmark's two heat programs: the same values and gradients (to rounding: the
    two record their sums in different orders)."""
    def inplace(u0):
        u = u0.copy()
        for _ in range(20):
            u[1:-1] += 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
        return np.sum(u ** 2)

    def functional(u):
        for _ in range(20):
            u = np.concatenate([u[:1], u[1:-1] + 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2]),
                                u[-1:]])
        return np.sum(u ** 2)

    u0 = np.sin(np.linspace(0, np.pi, 33))
    np.testing.assert_allclose(rune.grad(inplace)(u0), rune.grad(functional)(u0),
                               rtol=1e-12, atol=1e-12)
    rune.check_grads(inplace, u0, order=2)
    check_vmap(rune.grad(inplace), np.stack([u0, u0 ** 2]))
