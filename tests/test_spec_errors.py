"""SPEC 2 and 4: every bad input or unsupported operation ends in a clear error of the
spec's class naming what it got, and leaves no state behind."""

import math
import warnings

import numpy as np
import pytest

import rune
from helpers import assert_numpy_as_without_rune, Params


def test_exception_classes():
    assert issubclass(rune.TracerConversionError, TypeError)
    assert issubclass(rune.BatchedControlFlowError, ValueError)
    assert issubclass(rune.PerformanceWarning, Warning)


@pytest.mark.parametrize("shape", [(3,), (2, 2), (1,)])
def test_grad_of_non_scalar_is_value_error_naming_shape(shape):
    with pytest.raises(ValueError) as ei:
        rune.grad(lambda x: x * 2)(np.ones(shape))
    msg = str(ei.value)
    assert str(shape) in msg
    assert "vjp" in msg and "jacrev" in msg


@pytest.mark.parametrize("ret, what", [
    (lambda x: 3, "int"), (lambda x: True, "bool"), (lambda x: np.sum(x > 0), "int"),
    (lambda x: np.int32(1), "int"), (lambda x: "loss", "str"), (lambda x: [np.sum(x)], "list"),
    (lambda x: None, "None"), (lambda x: np.array(x.sum() > 0), "bool"),
])
def test_grad_of_integer_or_non_array_is_type_error_naming_it(ret, what):
    with pytest.raises(TypeError) as ei:
        rune.grad(ret)(np.ones(2))
    assert not isinstance(ei.value, rune.TracerConversionError)
    assert what in str(ei.value), str(ei.value)


def test_grad_of_complex_scalar_is_allowed():
    g = rune.grad(lambda z: z * z)(np.complex128(1 + 1j))
    assert np.iscomplexobj(g)


@pytest.mark.parametrize("conv", [float, int, complex, math.sin, math.exp, math.sqrt])
@pytest.mark.parametrize("mode", ["grad", "jvp", "grad_of_grad"])
def test_concrete_conversions_raise_tracer_conversion_error(conv, mode):
    f = lambda x: np.sin(x) * conv(x)
    with pytest.raises(rune.TracerConversionError):
        if mode == "grad":
            rune.grad(f)(2.0)
        elif mode == "jvp":
            rune.jvp(f, (np.array(2.0),), (np.array(1.0),))
        else:
            rune.grad(rune.grad(f))(2.0)


def test_item_and_bool_are_concrete():
    seen = []

    def f(x):
        seen.append(x[1].item())
        seen.append(x[0].item())
        seen.append(bool(x[1] > 0))
        # x.tolist() gives traced scalars (np.array(x.tolist()) keeps the derivative)
        # that compare as numbers
        seen.append(x.tolist() == [1.0, -2.0])
        return np.sum(x ** 2) if x[0] > 0 else np.sum(x)

    rune.grad(f)(np.array([1.0, -2.0]))
    assert seen[0] == -2.0 and seen[1] == 1.0 and type(seen[1]) is float and seen[2] is False
    assert seen[3] is True
    seen.clear()
    rune.jvp(f, (np.array([1.0, -2.0]),), (np.ones(2),))
    assert seen[1] == 1.0 and seen[2] is False
    seen.clear()
    rune.grad(lambda s: s * s.item())(np.float64(3.0))


@pytest.mark.parametrize("mode", ["grad", "jvp", "hessian"])
def test_comparisons_return_plain_numpy_booleans(mode):
    seen = []

    def f(x):
        for c in (x > 0, x <= 1.0, x == x, np.greater(x, 0.5), np.isfinite(x),
                  np.logical_and(x > 0, x < 2), x[0] > 0, np.argmax(x), np.isclose(x, 1.0)):
            seen.append(c)
        # floating results without derivative are constants that act as arrays (issue 24):
        # NumPy's C code, float() and later writes all take them
        for c in (np.sign(x), np.floor(x), np.rint(x)):
            np.testing.assert_array_equal(np.asarray(c), c.tolist())
            assert float(c[0]) == c.tolist()[0]
            c[0] = x[0]             # a write of a traced value into it
        return np.sum(x ** 2) + np.rint(x).dot(x)

    x = np.array([0.5, 1.5])
    if mode == "grad":
        rune.grad(f)(x)
    elif mode == "jvp":
        rune.jvp(f, (x,), (np.ones(2),))
    else:
        rune.hessian(f)(x)
    assert seen
    for c in seen:
        assert isinstance(c, (np.ndarray, np.generic)), type(c)
        assert not isinstance(c, rune.core.Tracer)
    assert seen[0].dtype == np.bool_


def test_comparison_results_usable_as_plain_masks():
    def f(x):
        m = x > 0.5
        plain = np.zeros(2)
        plain[m] = 1.0          # plain mask writes into a plain array: fine
        return np.sum(x * plain)
    np.testing.assert_allclose(rune.grad(f)(np.array([0.2, 0.9])), [0.0, 1.0])


def test_vmap_inconsistent_sizes_names_each_argument():
    with pytest.raises(ValueError) as ei:
        rune.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    msg = str(ei.value)
    assert "3" in msg and "4" in msg and "args[0]" in msg and "args[1]" in msg
    with pytest.raises(ValueError) as ei:
        rune.vmap(lambda p: p["a"] + p["b"])({"a": np.ones(3), "b": np.ones(5)})
    msg = str(ei.value)
    assert "['a']" in msg and "['b']" in msg and "3" in msg and "5" in msg
    with pytest.raises(ValueError) as ei:
        rune.vmap(lambda a, b: a + b, in_axes=(0, 1))(np.ones((2, 2)), np.ones((2, 7)))
    assert "7" in str(ei.value) and "2" in str(ei.value)


def test_vmap_axis_out_of_range_names_argument_and_rank():
    with pytest.raises(ValueError) as ei:
        rune.vmap(lambda a, b: a + b, in_axes=(0, 2))(np.ones(3), np.ones((3, 2)))
    msg = str(ei.value)
    assert "args[1]" in msg and "rank 2" in msg
    with pytest.raises(ValueError) as ei:
        rune.vmap(lambda a, b: a + b, in_axes=(0, -3))(np.ones(3), np.ones((3, 2)))
    assert "args[1]" in str(ei.value) and "2" in str(ei.value)
    with pytest.raises(ValueError) as ei:
        rune.vmap(lambda a, b: a + b)(np.ones(3), 2.0)        # a scalar cannot be mapped
    assert "args[1]" in str(ei.value) and "rank 0" in str(ei.value)
    with pytest.raises(ValueError) as ei:
        rune.vmap(lambda p: p.w, in_axes=(Params(1, 0),))(Params(np.ones(3), np.ones(3)))
    assert ".w" in str(ei.value)


def test_vmap_in_axes_not_a_prefix_names_the_path():
    with pytest.raises(ValueError) as ei:
        rune.vmap(lambda d: d["a"], in_axes=({"a": 0, "c": 0},))(
            {"a": np.ones(3), "b": np.ones(3)})
    assert "args[0]" in str(ei.value)
    with pytest.raises(ValueError) as ei:
        rune.vmap(lambda p: p, in_axes=({"a": (0, 0)},))(
            {"a": (np.ones(3), np.ones(3), np.ones(3))})
    assert "['a']" in str(ei.value)
    with pytest.raises(ValueError):
        rune.vmap(lambda a, b: a, in_axes=(0, 0, 0))(np.ones(3), np.ones(3))
    with pytest.raises(ValueError) as ei:
        rune.vmap(lambda p: p.w, in_axes=(Params((0, 0), 0),))(Params(np.ones(3), np.ones(3)))
    assert ".w" in str(ei.value)


def test_vjp_cotangent_mismatches_name_the_path():
    out, pb = rune.vjp(lambda x: {"a": x * 2, "b": (x ** 2, x)}, np.ones(2))
    with pytest.raises(ValueError, match=r"\['b'\]\[1\]"):
        pb({"a": np.ones(2), "b": (np.ones(2), np.ones(3))})
    with pytest.raises(ValueError, match=r"\['b'\]"):
        pb({"a": np.ones(2), "b": (np.ones(2),)})
    with pytest.raises(ValueError):
        pb({"a": np.ones(2), "c": (np.ones(2), np.ones(2))})
    # the pullback still works after the errors
    res = pb({"a": np.ones(2), "b": (np.ones(2), np.ones(2))})
    np.testing.assert_allclose(res[0], 2 + 2 * np.ones(2) + 1)


def test_out_keyword_is_refused():
    # arrays made outside the functions (one made inside takes the write: rune.buffers)
    a, b, c, d = np.empty(3), np.empty(3), np.empty(()), np.empty((3, 3))
    for f in (lambda x: np.sum(np.sin(x, out=a)),
              lambda x: np.sum(np.add(x, 1.0, out=b)),
              lambda x: np.sum(x, out=c) * 1.0,
              lambda x: np.sum(np.matmul(x[:, None], x[None, :], out=d))):
        with pytest.raises(NotImplementedError, match="out"):
            rune.grad(f)(np.ones(3))
        with pytest.raises(NotImplementedError, match="out"):
            rune.vmap(lambda x: f(x) + 0.0)(np.ones((2, 3)))


def test_where_keyword_supported_or_refused_clearly():
    x = np.array([1.0, -1.0, 2.0])
    mask = np.array([True, False, True])
    try:
        g = rune.grad(lambda x: np.sum(np.exp(x, where=mask)))(x)
    except NotImplementedError as e:
        assert "where" in str(e)
    else:   # supported: masked entries have no derivative
        assert g[1] == 0.0 or np.isfinite(g[1])
        np.testing.assert_allclose(g[[0, 2]], np.exp(x[[0, 2]]))


@pytest.fixture
def interp_without_rule(monkeypatch):
    """NumPy's whole public API is covered now: take np.interp's rule away (its NumPy
    implementation is C code) to see what a function without a rule does."""
    from rune.dispatch import FUNCTIONS
    monkeypatch.delitem(FUNCTIONS, np.interp)


@pytest.mark.parametrize("mode", ["grad", "jvp", "vmap"])
def test_no_rule_raises_not_implemented_naming_op_and_transformation(mode, interp_without_rule):
    x = np.array([1.0, 2.0, 3.0])
    tname = {"grad": "grad", "jvp": "jvp", "vmap": "vmap"}[mode]
    halve = np.frompyfunc(lambda v: v / 2, 1, 1)     # a ufunc no rule can know
    for fn, opname in ((lambda x: halve(x), "<lambda> (vectorized)"),
                       (lambda x: np.interp(x, x, x) if mode != "vmap" else halve(x),
                        "interp" if mode != "vmap" else "vectorized")):
        with pytest.raises(NotImplementedError) as ei:
            if mode == "grad":
                rune.grad(lambda x: np.sum(fn(x)))(x)
            elif mode == "jvp":
                rune.jvp(fn, (x,), (np.ones(3),))
            else:
                rune.vmap(fn)(np.stack([x, x]))
        msg = str(ei.value)
        assert opname in msg and tname in msg, msg


def test_c_reaching_function_chains_inner_cause(interp_without_rule):
    with pytest.raises(NotImplementedError) as ei:
        rune.grad(lambda x: np.sum(np.interp(x, x, x)))(np.arange(3.0))
    assert "interp" in str(ei.value)
    assert ei.value.__cause__ is not None


def test_errors_inside_user_function_propagate_unchanged_and_state_is_clean():
    class MyError(Exception):
        pass

    err = MyError("boom")

    def boom(x):
        np.sin(x)
        raise err

    transforms = [
        lambda f: rune.grad(f)(1.0), lambda f: rune.value_and_grad(f)(1.0),
        lambda f: rune.vjp(f, 1.0), lambda f: rune.jvp(f, (1.0,), (1.0,)),
        lambda f: rune.vmap(f)(np.ones(2)), lambda f: rune.jacfwd(f)(np.ones(2)),
        lambda f: rune.jacrev(f)(np.ones(2)), lambda f: rune.hessian(f)(np.ones(2)),
        lambda f: rune.hvp(f, (np.ones(2),), (np.ones(2),)),
        lambda f: rune.grad(rune.checkpoint(f))(1.0),
        lambda f: rune.vmap(rune.grad(f))(np.ones(2)),
        lambda f: rune.grad(lambda x: rune.grad(f)(x))(1.0),
        lambda f: rune.check_grads(f, np.ones(2)),
    ]
    for tr in transforms:
        with pytest.raises(MyError) as ei:
            tr(boom)
        assert ei.value is err
        assert rune.core.active_traces() == ()
        assert_numpy_as_without_rune()
        assert rune.grad(lambda x: x * x)(3.0) == 6.0


def test_rune_errors_leave_state_clean():
    bad_calls = [
        lambda: rune.grad(lambda x: x)(np.ones(3)),
        lambda: rune.grad(lambda x: float(x))(1.0),
        lambda: rune.vmap(lambda a, b: a + b)(np.ones(2), np.ones(3)),
        lambda: rune.vmap(lambda x: x if x > 0 else -x, strict=True)(np.ones(2)),
        lambda: rune.grad(lambda x: np.sum(np.frompyfunc(abs, 1, 1)(x)))(np.ones(2)),
        lambda: rune.vjp(lambda x: x, np.ones(2))[1](np.ones(3)),
    ]
    for call in bad_calls:
        with pytest.raises(Exception):
            call()
        assert rune.core.active_traces() == ()
        assert_numpy_as_without_rune()
    np.testing.assert_allclose(rune.vmap(rune.grad(lambda x: x ** 2))(np.arange(3.0)),
                               2 * np.arange(3.0))


def test_escaped_tracer_is_a_clear_error():
    box = []

    def f(x):
        box.append(x)
        return np.sum(x)

    rune.grad(f)(np.ones(2))
    with pytest.raises(Exception) as ei:
        np.sin(box[0]) * 1.0
    assert not isinstance(ei.value, AssertionError)


def test_errors_inside_rules_and_recomputation_propagate_unchanged():
    class E(Exception):
        pass
    err = E("inside")

    @rune.custom_vjp
    def f(x):
        return x * 2
    f.defvjp(lambda x: (x * 2, None), lambda r, g: (_ for _ in ()).throw(err))

    @rune.custom_jvp
    def h(x):
        return x * 2
    h.defjvp(lambda p, t: (_ for _ in ()).throw(err))

    calls = {"n": 0}

    def recomputed(x):
        calls["n"] += 1
        if calls["n"] == 2:       # the recomputation in the backward pass
            raise err
        return np.sin(x)

    def branch(x):
        if x > 0:
            raise err
        return x

    x = np.ones(2)
    runs = [lambda: rune.grad(lambda x: np.sum(f(x)))(x),
            lambda: rune.vjp(f, x)[1](x),
            lambda: rune.jvp(h, (x,), (x,)),
            lambda: rune.grad(lambda x: np.sum(h(x)))(x),
            lambda: rune.grad(lambda x: np.sum(rune.checkpoint(recomputed)(x)))(x),
            lambda: rune.vmap(branch)(np.array([-1.0, 1.0]))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        for run in runs:
            with pytest.raises(E) as ei:
                run()
            assert ei.value is err
            assert rune.core.active_traces() == ()
            assert_numpy_as_without_rune()


def test_hvp_non_tuple_primals_is_a_clear_value_error():
    with pytest.raises(ValueError, match="tuple"):
        rune.hvp(lambda x: np.sum(x ** 3), np.ones(2), np.ones(2))
