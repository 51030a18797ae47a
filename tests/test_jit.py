"""rune.jit: replays equal eager rune bit for bit, guards re-record, every transformation
composes under and over it."""

import dataclasses
import sys
import threading
import warnings

import numpy as np
import pytest

import rune

jit_module = sys.modules["rune.jit"]     # (rune.jit is the function)


def _same(a, b):
    """The same structure, types, shapes, dtypes and numbers (the same kernels on the same
    values: equal but for a BLAS product's last bit, which depends on where its operands
    lie in memory, on any machine)."""
    la, ta = rune.tree.flatten(a)
    lb, tb = rune.tree.flatten(b)
    assert ta == tb
    for x, y in zip(la, lb):
        assert type(x) is type(y)
        if isinstance(x, (np.ndarray, np.generic)):
            assert x.shape == y.shape and x.dtype == y.dtype
            np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-300)
        else:
            assert x == y


def _loss(x):
    a = np.sin(x) * np.cos(x)
    b = np.exp(-a) + np.tanh(x)
    return np.sum(b * 0.5 + np.sqrt(np.abs(a) + 1.0) - x * 0.25)


TRANSFORMS = {
    "grad": rune.grad,
    "value_and_grad": rune.value_and_grad,
    "jacfwd": rune.jacfwd,
    "jacrev": rune.jacrev,
    "hessian": rune.hessian,
    "vmap(grad)": lambda f: rune.vmap(rune.grad(f)),
    "grad(grad-sum)": lambda f: rune.grad(lambda x: np.sum(rune.grad(f)(x) ** 2)),
    "jvp": lambda f: (lambda x: rune.jvp(f, (x,), (np.ones_like(x),))),
    "vjp-pull": lambda f: (lambda x: rune.vjp(f, x)[1](1.0)),
    "checkpoint": lambda f: rune.grad(rune.checkpoint(f)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_jit_over_a_transformation_equals_eager(name):
    t = TRANSFORMS[name]
    eager = t(_loss)
    jitted = rune.jit(t(_loss))
    rng = np.random.default_rng(0)
    shape = (3, 4) if name.startswith("vmap") else (4,)
    for _ in range(3):      # the first call records, the others replay
        x = rng.standard_normal(shape)
        _same(jitted(x), eager(x))
    assert len(jitted._rune_jit.programs) >= 1


@pytest.mark.parametrize("name", ["grad", "jacfwd", "jacrev", "hessian", "vmap(grad)", "jvp"])
def test_a_transformation_over_jit_equals_eager(name):
    t = TRANSFORMS[name]
    x = np.random.default_rng(1).standard_normal((3, 4) if name.startswith("vmap") else (4,))
    _same(t(rune.jit(_loss))(x), t(_loss)(x))


def test_jit_of_jit_and_jit_inside_a_transformed_function():
    inner = rune.jit(lambda x: np.sin(x) * 2.0)
    outer = rune.jit(rune.grad(lambda x: np.sum(inner(x) ** 2)))
    x = np.array([0.3, 0.7])
    for k in range(3):
        _same(outer(x + k), rune.grad(lambda x: np.sum((np.sin(x) * 2.0) ** 2))(x + k))


def test_a_branch_on_a_value_is_guarded_and_rerecorded():
    calls = []

    def f(x):
        calls.append(1)
        if np.sum(x) > 0:
            return np.sum(x ** 2)
        return np.sum(x ** 3)

    g = rune.jit(rune.grad(f))
    assert np.array_equal(g(np.ones(2)), [2.0, 2.0])
    assert np.array_equal(g(np.full(2, 2.0)), [4.0, 4.0])      # replayed: no new call
    assert len(calls) == 1
    assert np.array_equal(g(-np.ones(2)), [3.0, 3.0])         # the guard fails: recorded
    assert len(calls) == 2
    assert np.array_equal(g(np.full(2, 3.0)), [6.0, 6.0])      # both branches kept
    assert np.array_equal(g(np.full(2, -2.0)), [12.0, 12.0])
    assert len(calls) == 2


def test_item_and_int_conversions_are_guards():
    def f(x):
        n = int(np.argmax(x))           # an index computed from the data
        return x[n] * float(x.sum().item())

    g = rune.jit(f)
    for x in ([1.0, 3.0, 2.0], [4.0, 0.0, 1.0], [1.0, 3.0, 5.0], [0.5, 0.1, 0.2]):
        x = np.array(x)
        _same(g(x), f(x))


def test_new_shape_or_dtype_records_anew():
    g = rune.jit(rune.grad(lambda x: np.sum(np.sin(x))))
    for x in (np.ones(3), np.ones(4), np.ones((2, 2)), np.ones(3, np.float32)):
        _same(g(x), rune.grad(lambda x: np.sum(np.sin(x)))(x))
    assert len(g._rune_jit.programs) >= 4


def test_a_data_dependent_shape_is_checked_on_replay():
    def f(x):
        y = x[x > 0]
        if y.shape[0] > 2:          # a Python decision on a shape that depends on the data
            return np.sum(y ** 2)
        return np.sum(y)

    g = rune.jit(rune.grad(f))
    for x in ([1.0, 2.0, 3.0, -1.0], [1.0, -2.0, -3.0, 1.0], [1.0, 2.0, 3.0, 4.0]):
        x = np.array(x)
        _same(g(x), rune.grad(f)(x))


def test_a_closed_over_array_written_in_place_is_read_anew():
    W = np.array([[1.0, 2.0], [3.0, 4.0]])
    loss = lambda x: np.sum(np.tanh(W @ x))     # noqa: E731
    g = rune.jit(rune.grad(loss))
    x = np.array([0.1, -0.2])
    _same(g(x), rune.grad(loss)(x))
    W *= 0.5                       # the caller changes the array f closes over
    _same(g(x), rune.grad(loss)(x))
    W[0, 0] = -3.0
    _same(g(x), rune.grad(loss)(x))


def test_static_argnums_steer_the_trace():
    def f(x, n):
        for _ in range(n):
            x = np.sin(x)
        return np.sum(x)

    g = rune.jit(rune.grad(f), static_argnums=1)
    x = np.array([0.5, 1.5])
    for n in (1, 3, 1, 5):
        _same(g(x, n), rune.grad(f)(x, n))
    assert "sin" in g.listing(x, 2)
    with pytest.raises(TypeError, match="static argument 1"):
        g(x, [1])


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: np.ndarray


def test_records_in_and_gradients_out():
    X = np.linspace(-1, 1, 6).reshape(3, 2)
    y = np.array([0.5, -0.1, 0.3])

    def loss(p, scale=1.0):
        return np.mean((np.tanh(X @ p.w + p.b) - y) ** 2) * scale

    g = rune.jit(rune.grad(loss))
    p = Params(np.array([0.3, -0.2]), np.array(0.1))
    for k in range(3):
        q = Params(p.w + k, p.b - k)
        out = g(q)
        assert isinstance(out, Params)
        _same(out, rune.grad(loss)(q))
    _same(g(p, scale=2.0), rune.grad(loss)(p, scale=2.0))    # a Python number: static


def test_constant_outputs_are_fresh_and_inputs_are_not_written():
    def f(x):
        y = x.copy()
        y[0] = 5.0                  # a write into a traced buffer: functional on replay
        return y * 2.0, np.zeros(2)

    g = rune.jit(f)
    x = np.array([1.0, 2.0])
    a, z1 = g(x)
    b, z2 = g(x)
    assert np.array_equal(x, [1.0, 2.0])
    assert np.array_equal(a, [10.0, 4.0]) and np.array_equal(b, a)
    z1[0] = 7.0                     # a constant output is the caller's own
    assert z2[0] == 0.0 and g(x)[1][0] == 0.0


def test_recording_thrash_warns():
    g = rune.jit(lambda x, s: x * s)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for k in range(jit_module._THRASH + 2):
            g(np.ones(2), float(k))         # a new Python number each time: a new record
    assert any(issubclass(m.category, rune.PerformanceWarning) for m in w)


@pytest.mark.filterwarnings("ignore::rune.PerformanceWarning")
def test_programs_per_signature_are_bounded():
    g = rune.jit(lambda x: np.sum(x))
    for n in range(jit_module.MAX_SIGNATURES + 10):
        g(np.ones(n + 1))
    assert len(g._rune_jit.programs) <= jit_module.MAX_SIGNATURES


def test_replays_from_threads_agree():
    g = rune.jit(rune.grad(_loss))
    xs = [np.random.default_rng(k).standard_normal(5) for k in range(8)]
    want = [rune.grad(_loss)(x) for x in xs]
    got = [None] * len(xs)

    def work(k):
        for _ in range(20):
            got[k] = g(xs[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(got, want):
        _same(a, b)


def test_unhashable_plain_leaf_is_refused_by_name():
    with pytest.raises(TypeError, match="neither an array nor hashable"):
        rune.jit(lambda x, d: x)(np.ones(2), np.array([object()]))


def test_listing_shows_one_line_per_kernel():
    g = rune.jit(rune.grad(lambda x: np.sum(np.sin(x))))
    text = g.listing(np.ones(3))
    assert "cos" in text and "sin" not in text      # the forward value grad drops is gone


def test_the_module_examples_run():
    import doctest
    result = doctest.testmod(jit_module)
    assert result.attempted >= 4 and result.failed == 0
    from rune import jit_fold
    result = doctest.testmod(jit_fold)
    assert result.attempted >= 3 and result.failed == 0


def test_rune_decisions_on_numbers_are_recorded_not_baked():
    """np.linalg.solve factors the matrix (LU) and checks for a triangle on its numbers:
    under jit both are operations of the program, so a new matrix is factored anew."""
    loss = lambda A, b: np.sum(np.linalg.solve(A, b) ** 2)     # noqa: E731
    g = rune.jit(rune.grad(loss, argnums=(0, 1)))
    rng = np.random.default_rng(3)
    A = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    for k in range(3):
        B = A + k * 0.3 * rng.standard_normal((3, 3))
        _same(g(B, np.ones(3)), rune.grad(loss, argnums=(0, 1))(B, np.ones(3)))
    T = np.tril(A)                  # exactly triangular: another branch, recorded anew
    _same(g(T, np.ones(3)), rune.grad(loss, argnums=(0, 1))(T, np.ones(3)))
    assert len(g._rune_jit.programs[next(iter(g._rune_jit.programs))]) == 2
    assert "lu_factor" in g.listing(A, np.ones(3))


def test_a_buffer_made_used_then_overwritten_inside_is_read_as_it_was():
    """f makes a plain array, uses it, then writes into it: the replay reads the value it
    had when used (found by the random-program tester), while an array f closes over is
    read anew (test_a_closed_over_array_written_in_place_is_read_anew)."""
    def f(x):
        c = np.linspace(0.5, 1.5, 4)
        y = x * c
        c[...] = 2.5
        return y + x * c

    g = rune.jit(rune.grad(lambda x: np.sum(f(x) ** 2)))
    for k in range(3):
        x = np.linspace(-1, 1, 4) + k
        _same(g(x), rune.grad(lambda x: np.sum(f(x) ** 2))(x))
        _same(rune.jit(f)(x), f(x))


def test_a_scipy_solver_under_jit_runs_eagerly_and_stays_right():
    """SciPy's solvers run on the numbers (rune.concrete.numbers): nothing to replay, so
    the signature runs eagerly, with a warning, and every call solves anew."""
    so = pytest.importorskip("scipy.optimize")
    g = rune.jit(rune.grad(lambda k: so.brentq(lambda x: x ** 3 - k, 0, 2)))
    with pytest.warns(rune.PerformanceWarning, match="runs eagerly"):
        g(np.float64(0.5))
    for k in (0.5, 1.0, 1.7):
        want = (1 / 3) * k ** (-2 / 3)
        assert abs(g(np.float64(k)) - want) < 1e-9


# ---- negations folded out of a program (rune.jit_fold), bit for bit

_SPECIAL = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e300, -1e-300, 3.0])
_FOLDED = {     # (function of x, whether some negation folds away)
    "p + (-x)": (lambda x: x * 0.5 + (-x), True),
    "(-x) + p": (lambda x: -x + x * 0.5, True),
    "p - (-x)": (lambda x: x * 0.5 - (-x), True),
    "p + q * (-x)": (lambda x: x * 0.5 + np.cos(x) * (-x), True),
    "p - (-x) / q": (lambda x: x * 0.5 - (-x) / (np.cos(x) + 3.0), True),
    "(-x) - p stays": (lambda x: -x - x * 0.5, False),
    "-x read twice stays": (lambda x: (-x) * (-x) + (-x), False),
    "-x returned stays": (lambda x: -x, False),
}


@pytest.mark.parametrize("name", sorted(_FOLDED))
def test_folded_negations_equal_eager_bit_for_bit(name):
    f, folds = _FOLDED[name]
    x = _SPECIAL.copy()
    jf = rune.jit(f)
    recorded = jf(x)
    n_neg = jf.listing(x).count("negative(")
    assert (n_neg < name.count("-x")) == folds, jf.listing(x)
    for v in (x, x[::-1].copy(), -x):
        got, want = jf(v), f(v)
        assert np.array_equal(got, want, equal_nan=True)
        num = ~np.isnan(want)       # (a NaN's sign bit is IEEE's to choose: not compared)
        assert np.array_equal(np.signbit(got[num]), np.signbit(want[num]))   # zeros' too
    assert np.array_equal(recorded, f(x), equal_nan=True)


def test_folded_negations_in_gradients_and_integers():
    # cos' = -sin and exp(-a)'s chain rule: the gradient's program folds them
    g = lambda x: np.sum(np.exp(-x) + np.cos(x) * x)      # noqa: E731
    x = np.array([0.3, -1.7, 0.0, 2.5])
    jg = rune.jit(rune.grad(g))
    jg(x)
    for v in (x, x + 0.5, -x):
        assert np.array_equal(jg(v), rune.grad(g)(v))
    k = rune.jit(lambda i: i * 3 + (-i))    # integers: negation is not folded
    i = np.array([np.iinfo(np.int64).min, -1, 0, 7])
    assert np.array_equal(k(i), i * 3 + (-i)) and "negative(" in k.listing(i)
