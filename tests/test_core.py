"""The core: conversions, the level stack, escaped tracers, engine helpers."""

import threading
import warnings

import numpy as np
import pytest

import rune
from rune import core
from rune.backward import unbroadcast


def test_integer_traced_values_convert_freely():
    # an integer-valued traced array carries no derivative, so NumPy's C code may use it
    table = np.arange(10.0) * 2

    def f(x):
        idx = np.zeros_like(x, dtype=int) + 3     # a traced integer array
        return np.sum(x * table[idx]) + int(idx[0])
    g = rune.grad(f)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [6.0, 6.0])


def test_plain_array_indexed_by_batched_index_runs_per_example():
    table = np.arange(10.0) * 2
    tok = np.array([[1, 2], [3, 4]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        np.testing.assert_array_equal(rune.vmap(lambda t: table[t])(tok), table[tok])
        np.testing.assert_array_equal(rune.vmap(lambda t: np.take(table, t))(tok), table[tok])


def test_unbroadcast_lower_rank():
    np.testing.assert_array_equal(unbroadcast(np.ones(4), (1, 4)), np.ones((1, 4)))
    np.testing.assert_array_equal(unbroadcast(np.ones((2, 3, 4)), (3, 1)), np.full((3, 1), 8.0))


def test_check_grads_makes_inputs_read_only():
    def h(x):
        x[0] = 5.0
        return x * 2
    a = np.ones(3)
    with pytest.raises(ValueError, match="read-only"):
        rune.check_grads(h, a)
    np.testing.assert_array_equal(a, np.ones(3))


def test_escaped_tracer_is_an_error():
    leak = []

    def f(x):
        leak.append(x)
        return x * 2
    rune.grad(f)(1.0)
    with pytest.raises(RuntimeError, match="escaped"):
        np.sin(leak[0])


def test_levels_increase_and_stack_is_per_thread():
    seen = {}

    def work(name, x):
        def f(y):
            seen[name] = len(core.active_traces())
            return y * y
        seen[name + "_g"] = rune.grad(rune.grad(f))(x)

    threads = [threading.Thread(target=work, args=(f"t{i}", float(i))) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert seen[f"t{i}"] == 2 and seen[f"t{i}_g"] == 2.0
    assert core.active_traces() == ()


def test_numpy_untouched_outside_transformations():
    import numpy._core.numeric as numeric
    before = (np.asarray, np.array, np.asanyarray, numeric.asarray)
    rune.grad(lambda x: np.sum(np.asarray(x)))(np.ones(2))
    assert (np.asarray, np.array, np.asanyarray, numeric.asarray) == before


def test_write_inner_value_into_outer_buffer_is_refused():
    def outer(x):
        buf = np.zeros_like(x)

        def inner(y):
            buf[0] = y            # an inner-level value into an outer-level buffer
            return y
        rune.grad(inner)(1.0)
        return np.sum(buf * x)
    with pytest.raises(ValueError, match="inner"):
        rune.grad(outer)(np.ones(2))


def test_tape_keeps_only_declared_residuals():
    import weakref
    refs = []

    def f(x):
        pre = x + 1.0              # add keeps nothing; exp keeps only its output
        refs.append(weakref.ref(pre._val))
        return np.sum(np.exp(pre))
    x = np.linspace(0.0, 1.0, 20000)      # big enough to be worth dropping (80 kB)
    out, pullback = rune.vjp(f, x)
    import gc
    gc.collect()
    assert refs[0]() is None       # the intermediate is gone, the pullback still works
    np.testing.assert_allclose(pullback(1.0)[0], np.exp(x + 1.0))
    np.testing.assert_allclose(pullback(2.0)[0], 2 * np.exp(x + 1.0))


def test_printing_traced_values_shows_numbers(capsys):
    def f(x):
        print(x, f"{np.sum(x):.3f}")
        return np.sum(x ** 2)
    rune.grad(f)(np.array([1.0, 2.0]))
    rune.vmap(f)(np.array([[1.0, 2.0], [3.0, 4.0]]))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[1. 2.] 3.000"
    assert out[-1].endswith("[3.000 7.000]")
    assert "array([1., 2.])" in repr(rune.vjp(lambda x: (x, repr(x)), np.array([1.0, 2.0]),
                                                has_aux=True)[2])
