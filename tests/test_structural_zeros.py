"""SPEC 1.6: no NaN from the branch not taken, and no invented numbers, at every order.

A cotangent that is zero *because* ``np.where``, a mask or an index selected another
element is a structural zero, and a structural zero times an infinite or NaN local
derivative is zero; a zero made by arithmetic is an ordinary number (``0 * inf`` is
NaN, as in JAX).  Each case runs in grad, hessian, hvp, jvp-of-grad and vmap-of-grad.
"""

import threading
import warnings

import numpy as np
import pytest

import rune
from rune import core

from test_elementwise import DIFF_UFUNCS, DOMAINS


@pytest.fixture(autouse=True)
def _quiet_numpy():
    # The forward passes below compute log(0), 1/0, exp(1000) on purpose, as NumPy would.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


# --------------------------------------------------------------------------
# Ordinary products are plain: the Hessian of a * u(b) at a = 0 is symmetric
# --------------------------------------------------------------------------

def _point(name, nin):
    dom = DOMAINS.get(name)
    if nin == 1:
        lo, hi = dom if dom is not None else (-1.5, 1.5)
        return [0.3 * lo + 0.7 * hi]
    doms = dom if isinstance(dom, tuple) and isinstance(dom[0], tuple) else (dom, dom)
    pts = [0.3 * lo + 0.7 * hi for lo, hi in (d or (-1.5, 1.5) for d in doms)]
    if name in ("maximum", "minimum", "fmax", "fmin"):
        pts[1] += 0.3                  # away from the tie
    if name in ("ldexp",):
        pts[1] = 2.0
    return pts


@pytest.mark.parametrize("name,uf", DIFF_UFUNCS, ids=[n for n, _ in DIFF_UFUNCS])
def test_hessian_of_zero_times_ufunc_is_symmetric(name, uf):
    if name == "ldexp":
        pytest.skip("ldexp's second argument is an integer")
    pts = _point(name, uf.nin)
    v = np.array([0.0] + pts)

    def f(v):
        return v[0] * uf(*[v[k] for k in range(1, uf.nin + 1)])

    H = rune.hessian(f)(v)
    assert np.all(np.isfinite(H)), H
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-14)
    # the mixed entries are u's partial derivatives, as rune's first order gives them
    du = rune.grad(lambda w: uf(*[w[k] for k in range(uf.nin)]))(np.array(pts))
    np.testing.assert_allclose(H[0, 1:], du, rtol=1e-12, atol=1e-14)
    # hvp agrees with the Hessian
    e = np.zeros_like(v)
    e[0] = 1.0
    _, (hv,) = rune.hvp(f, (v,), (e,))
    np.testing.assert_allclose(hv, H[:, 0], rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------
# The where trap, at every order
# --------------------------------------------------------------------------

# (name, the guarded function, the taken branch alone, a singular point, a regular point)
TRAPS = [
    ("xlogx", lambda x: np.where(x > 0, x * np.log(x), 0.0), lambda x: x * np.log(x), 0.0, 2.0),
    ("sqrt", lambda x: np.where(x > 0, np.sqrt(x), 0.0), np.sqrt, 0.0, 2.0),
    ("log", lambda x: np.where(x > 0, np.log(x), 0.0), np.log, 0.0, 2.0),
    ("reciprocal", lambda x: np.where(x != 0, 1 / x, 0.0), lambda x: 1 / x, 0.0, 2.0),
    ("arcsin", lambda x: np.where(x < 1, np.arcsin(x), np.pi / 2), np.arcsin, 1.0, 0.5),
    ("exp_overflow", lambda x: np.where(x < 100, np.exp(x), 0.0), np.exp, 1000.0, 1.0),
    ("sqrt_of_index", lambda x: np.concatenate([np.zeros(1), np.sqrt(x)[1:]]),
     np.sqrt, 0.0, 2.0),
    ("sqrt_after_maximum", lambda x: np.sqrt(np.maximum(x, 0.0)), np.sqrt, -1.0, 2.0),
]


def _trap_point(sing, reg):
    return np.array([sing, reg])


def _expected(branch, reg):
    """First and second derivative of the taken branch at the regular point; 0 at the
    singular one (the constant branch was taken there)."""
    g = rune.grad(lambda t: np.sum(branch(t)))(np.array([reg]))[0]
    h = rune.grad(rune.grad(lambda t: np.sum(branch(t))))(reg)
    return np.array([0.0, g]), np.diag([0.0, h])


@pytest.mark.parametrize("name,f,branch,sing,reg", TRAPS, ids=[t[0] for t in TRAPS])
def test_where_trap_every_mode(name, f, branch, sing, reg):
    x = _trap_point(sing, reg)
    loss = lambda x: np.sum(f(x))
    g_want, H_want = _expected(branch, reg)
    if name == "sqrt_of_index":
        g_want[0] = 0.0
    modes = {
        "grad": rune.grad(loss)(x),
        "hvp grad": rune.hvp(loss, (x,), (np.ones(2),))[0][0],
        "jvp(grad) primal": rune.jvp(rune.grad(loss), (x,), (np.ones(2),))[0],
        "vmap(grad)": rune.vmap(rune.grad(loss))(np.stack([x, x]))[1],
        "jacfwd": rune.jacfwd(loss)(x),
        "jvp": np.array([rune.jvp(loss, (x,), (e,))[1] for e in np.eye(2)]),
    }
    for mode, g in modes.items():
        assert np.all(np.isfinite(g)), (mode, g)
        np.testing.assert_allclose(g, g_want, rtol=1e-10, atol=1e-12, err_msg=mode)
    second = {
        "hessian": rune.hessian(loss)(x),
        "hvp": np.stack([rune.hvp(loss, (x,), (e,))[1][0] for e in np.eye(2)], axis=1),
        "jvp(grad)": np.stack([rune.jvp(rune.grad(loss), (x,), (e,))[1] for e in np.eye(2)],
                              axis=1),
        "jacrev(grad)": rune.jacrev(rune.grad(loss))(x),
        "vmap(hessian)": rune.vmap(rune.hessian(loss))(np.stack([x, x]))[0],
        "jacfwd(jacfwd)": rune.jacfwd(rune.jacfwd(loss))(x),
        "jacrev(jacrev)": rune.jacrev(rune.jacrev(loss))(x),
    }
    for mode, H in second.items():
        assert np.all(np.isfinite(H)), (mode, H)
        np.testing.assert_allclose(H, H_want, rtol=1e-10, atol=1e-12, err_msg=mode)


def test_where_inside_records_and_vmap_of_where_trap():
    # per-example gradients of the trap, each example its own branch
    xs = np.array([[0.0, 1.0], [4.0, 0.0], [-1.0, 9.0]])
    loss = lambda x: np.sum(np.where(x > 0, np.sqrt(x), 0.0))
    got = rune.vmap(rune.grad(loss))(xs)
    want = np.where(xs > 0, 0.5 / np.sqrt(np.where(xs > 0, xs, 1.0)), 0.0)
    np.testing.assert_allclose(got, want)


# --------------------------------------------------------------------------
# No invented numbers: where no branch was masked, the undefined stays NaN (as JAX)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("f,x", [
    (lambda x: np.sqrt(x) ** 2, 0.0),
    (lambda x: np.exp(np.log(x)), 0.0),
    (lambda x: (np.arcsin(x) - np.pi / 2) ** 2, 1.0),
    (lambda x: np.sum(1 / np.exp(x)), np.array([1000.0])),
], ids=["sqrt_squared", "exp_log", "arcsin_squared", "reciprocal_exp_overflow"])
def test_undefined_stays_nan(f, x):
    assert np.all(np.isnan(rune.grad(f)(x)))


def test_an_unrelated_mask_does_not_change_a_nan():
    x = np.array([1000.0, 1.0])
    plain = rune.grad(lambda x: np.sum(1 / np.exp(x)))(x)
    masked = rune.grad(lambda x: np.sum(1 / np.exp(x)) + 0 * x[0])(x)
    np.testing.assert_array_equal(np.isnan(plain), np.isnan(masked))
    assert np.isnan(plain[0]) and np.isfinite(plain[1])


@pytest.mark.parametrize("layout", [
    lambda y: y.reshape(2, 2).T.reshape(4)[[0, 2, 1, 3]],
    lambda y: np.roll(np.roll(np.concatenate([y[:2], y[2:]]), 1), -1),
    lambda y: np.broadcast_to(y, (3, 4)).sum(axis=0) / 3,
    lambda y: np.sort(y[::-1])[np.argsort(np.argsort(y))],
], ids=["reshape_transpose_gather", "roll_concatenate", "broadcast_sum", "sort"])
def test_structural_zeros_cross_layout_operations(layout):
    """Between the mask and the singular derivative, layout operations (each case is the
    identity, so the mask lines up with the singular elements) keep the zeros structural,
    in reverse and forward mode, first and second order.  (A cumulative sum is not one:
    the cotangent it gives an element mixes live ones, and a zero there is arithmetic.)"""
    x = np.array([0.0, 4.0, 0.0, 9.0])
    loss = lambda x: np.sum(np.where(x > 0, layout(np.sqrt(x)), 0.0) ** 2)
    want = rune.grad(lambda x: np.sum(np.where(x > 0, layout(np.sqrt(np.where(x > 0, x, 1.0))),
                                               0.0) ** 2))(x)
    for got in (rune.grad(loss)(x), rune.jacfwd(loss)(x)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    H = rune.hessian(loss)(x)
    assert np.all(np.isfinite(H))
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-14)


def test_forward_mode_through_a_mask():
    """jvp: a tangent that np.maximum or an index did not select stays zero through sqrt."""
    f = lambda x: np.sqrt(np.maximum(x, 0.0))
    _, t = rune.jvp(f, (np.array([-1.0, 4.0]),), (np.ones(2),))
    np.testing.assert_array_equal(t, [0.0, 0.25])
    J = rune.jacfwd(lambda x: np.sqrt(x[1:]))(np.array([0.0, 4.0]))
    np.testing.assert_array_equal(J, [[0.0, 0.25]])
    # grad and jvp agree
    g = rune.grad(lambda x: np.sum(f(x)))(np.array([-1.0, 4.0]))
    np.testing.assert_array_equal(g, t)


def test_arithmetic_zero_is_an_ordinary_number():
    # d/dx [0 * sqrt(x)] at 0: the zero is arithmetic, not a branch: NaN, as in JAX
    assert np.isnan(rune.grad(lambda x: 0.0 * np.sqrt(x))(0.0))
    assert np.isnan(rune.jvp(lambda x: 0.0 * np.sqrt(x), (0.0,), (1.0,))[1])
    # but the zero cotangent an index did not select is structural
    g = rune.grad(lambda x: np.sqrt(x)[1])(np.array([0.0, 4.0]))
    np.testing.assert_array_equal(g, [0.0, 0.25])


def test_threads_never_see_each_others_branches():
    """The structural zeros of one thread's gradient never reach another's."""
    x_trap = np.array([0.0, 2.0])
    x_nan = np.array([1000.0, 1.0])
    trap = rune.grad(lambda x: np.sum(np.where(x > 0, x * np.log(x), 0.0)))
    nan = rune.grad(lambda x: np.sum(1 / np.exp(x)))
    bad = []
    start = threading.Barrier(2)

    def run_trap():
        start.wait()
        for _ in range(40):
            if not np.all(np.isfinite(trap(x_trap))):
                bad.append("trap")

    def run_nan():
        start.wait()
        for _ in range(40):
            if not np.isnan(nan(x_nan)[0]):
                bad.append("nan")

    with np.errstate(all="ignore"):
        threads = [threading.Thread(target=run_trap), threading.Thread(target=run_nan)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not bad, bad
    assert core.active_traces() == ()


BASIC_INDICES = [np.s_[1:-1], np.s_[2:], np.s_[:-2], np.s_[::2], np.s_[3], np.s_[1:4, ::-1],
                 np.s_[..., 1], np.s_[None, 2:5], np.s_[-1, 1:3]]


@pytest.mark.parametrize("idx", BASIC_INDICES, ids=[str(i) for i in BASIC_INDICES])
@pytest.mark.parametrize("incoming", [False, True], ids=["no-mask", "masked"])
def test_direct_index_masks_equal_the_general_ones(idx, incoming):
    """getitem's and setitem's zero_mask (their structural zeros computed directly) give what
    the general way gives: the rule run on the indicator of the non-structural elements."""
    from rune.primitives.indexing import (_gather_vjp, _index_set_vjp_x, gather_p,
                                          split_index)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 6))
    template, arrays = split_index(idx, x.ndim)
    out = x[idx]
    for rule, ct_shape in ((_gather_vjp, np.shape(out)), (_index_set_vjp_x, x.shape)):
        ct = rng.standard_normal(ct_shape)
        mask = rng.random(ct_shape) < 0.3 if incoming and ct_shape else None
        if mask is not None:
            ct = np.where(mask, 0.0, ct)        # a structural zero's value is 0
        extra = () if rule is _gather_vjp else (np.float64(0.0),)
        m = rule.zero_mask(ct, mask, out, x, *extra, *arrays, template=template)
        ones = np.ones(ct_shape) if mask is None else np.where(mask, 0.0, 1.0)
        general = rule(ones, out, x, *extra, *arrays, template=template) == 0
        np.testing.assert_array_equal(m, general)
        c = rule(ct, out, x, *extra, *arrays, template=template)
        assert np.all(c[m] == 0)
    # the engine's results through them, at second order too
    rune.check_grads(lambda a: np.sum(np.sqrt(np.abs(a[idx]) + 1.0) * a[idx]), x, order=2)
    assert gather_p.name == "getitem"


def test_stencil_with_masks_at_the_boundary_keeps_its_structural_zeros():
    """u[1:-1] += ...: the where trap at a boundary cell (sqrt at 0, branch not taken) keeps
    a finite gradient, which reaches that cell only through the stencil."""
    def f(u):
        u = u.copy()
        u[1:-1] += 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
        return np.sum(np.where(u > 0, np.sqrt(np.where(u > 0, u, 1.0)), 0.0))
    u = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    g = rune.grad(f)(u)
    new = u.copy()
    new[1:-1] += 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
    d = 0.5 / np.sqrt(new)                         # d sqrt / d new, cells 1..4
    np.testing.assert_allclose(g[0], 0.25 * d[1], rtol=1e-12)     # only through u[1]'s update
    assert np.all(np.isfinite(g))
    rune.check_grads(lambda u: np.sum(np.sin(u[1:-1]) * u[:-2] + u[2:] ** 2), u + 1, order=2)


EXTREMUM_CASES = {
    "plain": np.array([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]]),
    "ties": np.array([[2.0, 2.0, 1.0], [5.0, 5.0, 5.0]]),
    "nan": np.array([[np.nan, 1.0, 2.0], [0.5, 4.0, -1.0]]),
    "inf": np.array([[np.inf, 1.0, -np.inf], [-np.inf, -np.inf, -np.inf]]),
}


@pytest.mark.parametrize("case", list(EXTREMUM_CASES))
@pytest.mark.parametrize("incoming", [False, True], ids=["no-mask", "masked"])
@pytest.mark.parametrize("axis, keepdims", [((1,), True), ((1,), False), ((0, 1), False)])
@pytest.mark.parametrize("name", ["max", "min"])
def test_extremum_masks_equal_the_general_ones(name, axis, keepdims, incoming, case):
    """max's and min's ``structural`` hook (cotangent and structural zeros at once) gives
    what the general way gives: the rule run on the indicator of the non-structural
    elements, then the rule on the cotangent with the structural elements zeroed; with ties,
    NaN and infinite extrema, and an incoming mask."""
    from rune.primitives.reductions import max_p, min_p
    from rune.structural import _structural
    from rune.residuals import MASKS
    prim = max_p if name == "max" else min_p
    rule = prim.vjp[0]
    x = EXTREMUM_CASES[case]
    out = prim.impl(x, axis=axis, keepdims=keepdims)
    rng = np.random.default_rng(1)
    ct = rng.standard_normal(np.shape(out))
    mask = None
    if incoming:
        mask = np.zeros(np.shape(out), bool)
        mask.flat[0] = True
        ct = np.where(mask, np.inf, ct)     # the branch not taken: inf, made zero structurally
    params = {"axis": axis, "keepdims": keepdims}
    c, m = _structural(MASKS, rule, ct, mask, out, (x,), params)
    hook = rule.structural
    try:
        del rule.structural
        c0, m0 = _structural(MASKS, rule, ct, mask, out, (x,), params)
    finally:
        rule.structural = hook
    np.testing.assert_array_equal(c, c0)        # NaN where NaN, zero where zero
    if m0 is None:
        assert m is None or not np.any(m)
    else:
        np.testing.assert_array_equal(m, m0)


def _slicing_programs():
    def overlapping(u):
        return np.sum(u[1:-1] * u[2:] + u[:-2] ** 2)

    def repeated(u):
        return np.sum(u[1:3] * u[1:3]) + np.sum(u[:, None][2:4])

    def two_d(a):
        return np.sum(np.sin(a[1:, ::2]) * a[:-1, ::2]) + a[0, 1] * a[2, 0]

    def trap(u):        # the branch not taken: sqrt at 0 outside the slice and inside it
        s = u[1:]
        return np.sum(np.where(s > 0, np.sqrt(np.where(s > 0, s, 1.0)), 0.0)) + np.sum(u[:2] ** 2)

    def general_first(u):     # a whole-array contribution before the slices' (and after)
        return np.sum(u * u) + np.sum(u[1:] * 3.0) + np.sum(np.exp(u))

    def heat(u0):
        u = u0.copy()
        for _ in range(3):
            u[1:-1] += 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
        return np.sum(u ** 2)

    def concat(u):
        for _ in range(3):
            u = np.concatenate([u[:1], u[1:-1] + 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2]), u[-1:]])
        return np.sum(u ** 2)

    def both_masked(x):        # sqrt's infinite derivative where both slices' branch is off
        u = np.sqrt(x)
        a = np.where(u[1:] > 1, u[1:] ** 2, 0.0)
        b = np.where(u[:-1] > 1, u[:-1] * 3.0, 0.0)
        return np.sum(a) + np.sum(b)

    vec = np.array([0.0, 1.0, 2.0, 0.5, 3.0, 4.0, 0.25])
    mat = np.arange(12.0).reshape(3, 4) / 7
    return [(overlapping, vec), (repeated, vec), (two_d, mat), (trap, vec),
            (general_first, vec), (heat, vec), (concat, vec),
            (overlapping, vec.astype(np.float32)), (both_masked, np.array([4.0, 0.0, 9.0, 0.0, 16.0]))]


@pytest.mark.parametrize("k", range(9))
def test_slices_added_in_place_equal_the_general_way(k):
    """A basic slice's cotangent is added into the accumulated one in place
    (rune.structural._scatter) instead of scattered into zeros and added whole: the gradient
    and its structural zeros are the same, bit for bit, at first and second order."""
    from rune.primitives.indexing import _gather_vjp
    f, x = _slicing_programs()[k]
    fast = rune.grad(f)(x), rune.hessian(f)(x)
    hook = _gather_vjp.scatter_index
    try:
        del _gather_vjp.scatter_index
        general = rune.grad(f)(x), rune.hessian(f)(x)
    finally:
        _gather_vjp.scatter_index = hook
    for a, b in zip(fast, general):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert np.all(np.isfinite(fast[0]))
    # nested: vmap of grad against a loop, and forward over reverse (hvp) against the Hessian
    xs = np.stack([x, x * 0.5 + 1])
    np.testing.assert_allclose(rune.vmap(rune.grad(f))(xs),
                               np.stack([rune.grad(f)(xi) for xi in xs]), rtol=1e-12, atol=0)
    v = np.linspace(-1.0, 1.0, x.size).reshape(x.shape).astype(x.dtype)
    g, hv = rune.hvp(f, (x,), (v,))
    np.testing.assert_array_equal(g[0], fast[0])
    np.testing.assert_allclose(hv[0], np.tensordot(fast[1], v, axes=v.ndim),
                               rtol=1e-5 if x.dtype == np.float32 else 1e-12, atol=1e-6)
    if f.__name__ not in ("both_masked", "trap"):   # (sqrt at 0: no finite differences)
        rune.check_grads(f, x.astype(np.float64), order=2)


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
@pytest.mark.parametrize("incoming", [False, True], ids=["no-mask", "masked"])
def test_weighted_masks_equal_the_general_ones(name, incoming):
    """maximum's & co. ``structural`` hook (cotangent and structural zeros from one set of
    weights) gives what the general way gives, with ties, NaN, broadcasting and an
    incoming mask."""
    from rune.dispatch import UFUNCS
    from rune.structural import _structural
    from rune.residuals import MASKS
    prim = UFUNCS[getattr(np, name)]
    x = np.array([[1.0, 2.0, np.nan, 3.0], [0.0, -1.0, 5.0, np.nan]])
    y = np.array([2.0, 2.0, 1.0, np.nan])
    out = prim.impl(x, y)
    rng = np.random.default_rng(2)
    ct = rng.standard_normal(out.shape)
    mask = None
    if incoming:
        mask = rng.random(out.shape) < 0.4
        ct = np.where(mask, np.inf, ct)
    for rule in prim.vjp:
        c, m = _structural(MASKS, rule, ct, mask, out, (x, y), {})
        hook = rule.structural
        try:
            del rule.structural
            c0, m0 = _structural(MASKS, rule, ct, mask, out, (x, y), {})
        finally:
            rule.structural = hook
        np.testing.assert_array_equal(c, c0)
        np.testing.assert_array_equal(m, m0)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("bad", [None, np.inf, -np.inf, np.nan], ids=["finite", "inf", "-inf",
                                                                       "nan"])
def test_zero_at_is_where(dtype, bad):
    """rune.structural.zero_at (a finite cotangent: +0 where structural, without np.where's
    branches) equals np.where(m, 0, c), including +0 (not -0) at the structural zeros and
    the non-finite values that np.where must zero."""
    from rune.structural import zero_at
    rng = np.random.default_rng(3)
    m = rng.random((7, 9)) < 0.5
    g = np.where(m, -0.0, rng.standard_normal((7, 9))).astype(dtype)  # structural: zero
    d = rng.standard_normal((7, 9))
    if bad is not None:
        d[m & (rng.random((7, 9)) < 0.3)] = bad      # an infinite derivative at a structural
    with np.errstate(invalid="ignore"):             # zero: the product is NaN there
        c = (g * d).astype(dtype)
    z = zero_at(m, c)
    assert z.dtype == c.dtype
    np.testing.assert_array_equal(z, np.where(m, 0, c))
    assert not np.any(np.signbit(np.real(z[m])))
