"""Bad input at the transformation boundary (issue 11): each case ends in a right result or
a TypeError/ValueError naming the argument, leaf path, type or option, and the next call
works normally."""

import dataclasses
import re

import numpy as np
import pytest

import rune

X = np.array([0.5, -1.0, 2.0])


def _f(x):
    return np.sum(np.sin(x))


# --------------------------------------------------------------------------
# argnums, integer arguments, duplicates
# --------------------------------------------------------------------------

@pytest.mark.parametrize("transform", [rune.grad, rune.value_and_grad, rune.jacrev,
                                       rune.jacfwd, rune.hessian])
@pytest.mark.parametrize("argnums, match", [
    (0.0, r"argnums must be an int or a tuple of ints, got float 0.0"),
    ("0", r"argnums must be an int or a tuple of ints, got str '0'"),
    ((0, 1.5), r"argnums must be an int or a tuple of ints, got float 1.5"),
    (True, r"argnums must be an int .* got True"),
])
def test_argnums_of_a_wrong_type(transform, argnums, match):
    with pytest.raises(TypeError, match=match):
        transform(_f, argnums=argnums)(X)
    np.testing.assert_allclose(rune.grad(_f)(X), np.cos(X))     # the next call is normal


@pytest.mark.parametrize("transform", [rune.grad, rune.jacrev, rune.jacfwd])
def test_argnums_out_of_range(transform):
    with pytest.raises(ValueError, match=r"argnums=3 is out of range .* 1 positional"):
        transform(_f, argnums=3)(X)


@pytest.mark.parametrize("transform, what", [
    (rune.grad, "grad"), (rune.value_and_grad, "grad"), (rune.jacrev, "jacrev"),
    (rune.jacfwd, "jacfwd"), (rune.hessian, "jacfwd")])
def test_integer_argument_is_refused_naming_dtype(transform, what):
    with pytest.raises(TypeError, match=rf"{what} .*argument 0 .*dtype int64.*allow_int"):
        transform(_f)(np.array([1, 2, 3]))


def test_integer_argument_with_allow_int_has_zero_gradient():
    g = rune.grad(_f, allow_int=True)(np.array([1, 2, 3]))
    assert g.dtype == np.int64 and not g.any()
    _, g = rune.value_and_grad(lambda x, n: x * n, argnums=1, allow_int=True)(2.0, 3)
    assert g == 0 and type(g) is int


def test_bool_argument_is_refused():
    with pytest.raises(TypeError, match=r"dtype bool"):
        rune.grad(lambda m: np.sum(np.where(m, 1.0, 2.0)))(np.array([True, False]))


def test_integer_leaves_beside_floating_ones_keep_zero_gradients():
    g = rune.grad(lambda d: np.sum(d["w"] * d["n"]))({"w": np.ones(2), "n": np.array([2, 3])})
    np.testing.assert_array_equal(g["w"], [2.0, 3.0])
    assert g["n"].dtype == np.int64 and not g["n"].any()


@pytest.mark.parametrize("transform", [rune.grad, rune.jacrev, rune.jacfwd])
def test_duplicate_argnums_give_each_position_its_gradient(transform):
    g = transform(lambda x: x ** 2, argnums=(0, 0))(3.0)
    assert g == (6.0, 6.0)


def test_duplicate_argnums_arrays_are_distinct_objects():
    ga, gb = rune.grad(lambda x, y: np.sum(x * y), argnums=(0, 1, 0))(X, X)[::2]
    np.testing.assert_array_equal(ga, X)
    np.testing.assert_array_equal(gb, X)
    ga[0] = 100.0
    assert gb[0] == X[0]


def test_duplicate_argnums_hessian():
    h = rune.hessian(lambda x, y: x ** 2 * y, argnums=(0, 0))(3.0, 2.0)
    assert h == ((4.0, 4.0), (4.0, 4.0))


# --------------------------------------------------------------------------
# Leaves that are not arrays
# --------------------------------------------------------------------------

@dataclasses.dataclass
class Params:
    w: np.ndarray
    name: str


class Unregistered:
    pass


@pytest.mark.parametrize("call", [
    lambda: rune.grad(lambda p: np.sum(p.w ** 2))(Params(X, "layer")),
    lambda: rune.vjp(lambda p: p.w * 2.0, Params(X, "layer")),
    lambda: rune.jvp(lambda p: p.w * 2.0, (Params(X, "layer"),), (Params(X, "layer"),)),
    lambda: rune.jacrev(lambda p: p.w * 2.0)(Params(X, "layer")),
], ids=["grad", "vjp", "jvp", "jacrev"])
def test_str_field_of_a_dataclass_names_path_and_suggests_static(call):
    with pytest.raises(TypeError, match=r"\.name is a str.*metadata=\{\"static\": True\}"):
        call()


@pytest.mark.parametrize("call", [
    lambda: rune.grad(lambda u, x: np.sum(x))(Unregistered(), X),
    lambda: rune.jvp(lambda u: 1.0, (Unregistered(),), (Unregistered(),)),
    lambda: rune.jvp(lambda x, u: x, (1.0, Unregistered()), (1.0, Unregistered())),
], ids=["grad", "jvp", "jvp-second"])
def test_unregistered_class_raises_naming_it(call):
    with pytest.raises(TypeError, match=r"is an Unregistered.*rune.tree.register"):
        call()


# --------------------------------------------------------------------------
# What the function returns
# --------------------------------------------------------------------------

@pytest.mark.parametrize("transform", [rune.jacrev, rune.vmap, rune.jacfwd],
                         ids=["jacrev", "vmap", "jacfwd"])
@pytest.mark.parametrize("ret, name", [
    (lambda x: "s", "a str"),
    (lambda x: object(), "an object"),
    (lambda x: (v for v in [x]), "a generator"),
], ids=["str", "object", "generator"])
def test_non_array_output_is_refused(transform, ret, name):
    with pytest.raises(TypeError, match=rf"out is {name}, not an array"):
        transform(ret)(X)


def test_jacrev_of_none():
    with pytest.raises(TypeError, match=r"jacrev needs <lambda> to return an array.*NoneType"):
        rune.jacrev(lambda x: None)(X)


@pytest.mark.parametrize("transform", [
    lambda f: rune.grad(f, has_aux=True),
    lambda f: rune.value_and_grad(f, has_aux=True),
    lambda f: (lambda x: rune.vjp(f, x, has_aux=True)),
    lambda f: (lambda x: rune.jvp(f, (x,), (x,), has_aux=True)),
], ids=["grad", "value_and_grad", "vjp", "jvp"])
@pytest.mark.parametrize("ret, got", [
    (lambda x: np.sum(x), r"returned a float64 of shape \(\) and dtype float64"),
    (lambda x: (np.sum(x),), r"a tuple of length 1"),
    (lambda x: [np.sum(x), 1.0, 2.0], r"a list of length 3"),
], ids=["scalar", "1-tuple", "3-list"])
def test_has_aux_with_a_non_pair_names_what_was_returned(transform, ret, got):
    with pytest.raises(TypeError, match=r"has_aux=True needs the function to return a pair") as e:
        transform(ret)(X)
    assert "Tracer" not in str(e.value)
    assert re.search(got, str(e.value))


# --------------------------------------------------------------------------
# vmap options
# --------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, exc, match", [
    ({"axis_size": "3", "in_axes": None}, TypeError, r"axis_size must be an int or None, got str"),
    ({"axis_size": 2.0, "in_axes": None}, TypeError, r"axis_size must be an int .* got float"),
    ({"axis_size": -1, "in_axes": None}, ValueError, r"axis_size must be >= 0"),
    ({"out_axes": "a"}, TypeError, r"out_axes must be an int, None, or a tree .* got str 'a'"),
    ({"out_axes": 1.0}, TypeError, r"out_axes must be an int, None, or a tree .* got float"),
    ({"out_axes": (0, 1)}, ValueError, r"out_axes is not a tree prefix of the outputs: at out "
                                       r"it has a tuple .* where the output has a leaf"),
    ({"out_axes": 5}, ValueError, r"out_axes=5 is out of range for out"),
    ({"in_axes": "0"}, TypeError, r"in_axes must be an int, None, or a tree .* got str '0'"),
])
def test_vmap_bad_options(kwargs, exc, match):
    with pytest.raises(exc, match=match) as e:
        rune.vmap(lambda x: x * 2.0, **kwargs)(X)
    assert "BatchTracer" not in str(e.value)


# --------------------------------------------------------------------------
# check_grads options
# --------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    ({"modes": ("reverse",)}, r"modes must be a non-empty subset of \('fwd', 'rev'\)"),
    ({"modes": ()}, r"modes must be a non-empty subset"),
    ({"modes": "forward"}, r"modes must be a non-empty subset"),
    ({"order": 0}, r"order must be an int >= 1"),
    ({"order": -1}, r"order must be an int >= 1"),
    ({"order": 1.5}, r"order must be an int >= 1"),
])
def test_check_grads_refuses_options_that_check_nothing(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rune.check_grads(np.sin, X, **kwargs)


@pytest.mark.parametrize("args", [(np.array([1, 2]),), ()], ids=["int", "none"])
def test_check_grads_without_a_floating_input(args):
    with pytest.raises(ValueError, match=r"no floating-point input leaf .* check nothing"):
        rune.check_grads(lambda *a: 1.0, *args)


def test_check_grads_of_a_function_returning_a_str():
    with pytest.raises(TypeError, match=r"check_grads: out is a str"):
        rune.check_grads(lambda x: "s", X)


def test_check_grads_single_mode_still_checks():
    @rune.custom_vjp
    def wrong(x):
        return np.sin(x)
    wrong.defvjp(lambda x: (np.sin(x), x), lambda x, g: (g * 2.0,))
    with pytest.raises(AssertionError, match=r"reverse-mode"):
        rune.check_grads(wrong, X, modes=("rev",), order=1)


# --------------------------------------------------------------------------
# Trees
# --------------------------------------------------------------------------

def test_unflatten_with_a_non_treedef():
    with pytest.raises(TypeError, match=r"unflatten takes a TreeDef .* got a str"):
        rune.tree.unflatten("x", [1])


@pytest.mark.parametrize("call", [rune.tree.flatten, rune.tree.leaves, rune.tree.structure,
                                  lambda t: rune.grad(lambda t: 0.0)(t)],
                         ids=["flatten", "leaves", "structure", "grad"])
def test_tree_containing_itself(call):
    cyclic = [1.0]
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match=r"contains itself"):
        call(cyclic)
    assert rune.tree.leaves([1.0, [2.0]]) == [1.0, 2.0]


# --------------------------------------------------------------------------
# Custom rules' outputs
# --------------------------------------------------------------------------

@pytest.mark.parametrize("fwd, bwd, match", [
    (lambda x: (np.sin(x)[:2], x), lambda x, g: (g * np.cos(x),),
     r"fwd rule of the custom_vjp function f returned outputs of shape \(2,\), but f "
     r"itself returns shape \(3,\)"),
    (lambda x: (np.sin(x), x), lambda x, g: (g * np.cos(x) * (1 + 1j),),
     r"complex cotangent \(dtype complex128\) for argument x, which is real"),
], ids=["fwd-shape", "complex-cotangent"])
def test_custom_vjp_rule_outputs_are_checked(fwd, bwd, match):
    @rune.custom_vjp
    def f(x):
        return np.sin(x)
    f.defvjp(fwd, bwd)
    with pytest.raises(ValueError, match=match):
        rune.grad(lambda x: np.sum(f(x)))(X)


def test_custom_jvp_tangent_of_the_wrong_shape():
    @rune.custom_jvp
    def f(x):
        return np.sin(x)
    f.defjvp(lambda p, t: (np.sin(p[0]), np.ones(2)))
    with pytest.raises(ValueError, match=r"tangent of shape \(2,\) for out.*shape \(3,\)"):
        rune.jvp(f, (X,), (X,))
