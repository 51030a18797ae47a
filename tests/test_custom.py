"""rune.custom_vjp and rune.custom_jvp: user rules, used by every transformation.

Most rules here are deliberately *distinct* from the true derivative (twice
it), so a test can tell the rule from the function's own operations: the
factor 2 must show up under grad, vmap(grad), grad(vmap), jacrev, nesting.
"""

import warnings

import numpy as np
import pytest

import rune

RNG = np.random.default_rng(0)
X = RNG.standard_normal(3)
Y = RNG.standard_normal(3)
XS = RNG.standard_normal((4, 3))
YS = RNG.standard_normal((4, 3))


def close(a, b, rtol=1e-10, atol=1e-12):
    rune.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=rtol, atol=atol), a, b)


# --------------------------------------------------------------------------
# custom_vjp
# --------------------------------------------------------------------------

@rune.custom_vjp
def f2(x, y):
    """sin(x) * y whose rule returns twice the true cotangents."""
    return np.sin(x) * y


def f2_fwd(x, y):
    return f2(x, y), (np.cos(x), np.sin(x), y)


def f2_bwd(res, g):
    cos_x, sin_x, y = res
    return (2 * cos_x * g * y, 2 * sin_x * g)


f2.defvjp(f2_fwd, f2_bwd)


def test_custom_vjp_is_the_function_outside_transformations():
    close(f2(X, Y), np.sin(X) * Y)
    assert f2.__name__ == "f2" and "twice" in f2.__doc__


def test_custom_vjp_grad_vjp_value_and_grad_use_the_rule():
    gx, gy = rune.grad(lambda x, y: np.sum(f2(x, y)), (0, 1))(X, Y)
    close(gx, 2 * np.cos(X) * Y)
    close(gy, 2 * np.sin(X))
    v, g = rune.value_and_grad(lambda x: np.sum(f2(x, Y)))(X)
    close(v, np.sum(np.sin(X) * Y))
    close(g, 2 * np.cos(X) * Y)
    out, pullback = rune.vjp(f2, X, Y)
    ct = RNG.standard_normal(3)
    close(pullback(ct), (2 * np.cos(X) * Y * ct, 2 * np.sin(X) * ct))
    close(pullback(ct), (2 * np.cos(X) * Y * ct, 2 * np.sin(X) * ct))   # reusable
    close(rune.jacrev(lambda x: f2(x, Y))(X), np.diag(2 * np.cos(X) * Y))


def test_custom_vjp_used_twice_and_mixed_with_ordinary_ops():
    g = rune.grad(lambda x: np.sum(f2(x, Y) * f2(x, x) + x ** 2))(X)
    want = (2 * np.cos(X) * Y) * np.sin(X) * X + np.sin(X) * Y * (
        2 * np.cos(X) * X + 2 * np.sin(X)) + 2 * X
    close(g, want)


@pytest.mark.parametrize("axes", [(0, 0), (1, 1), (0, None)])
def test_custom_vjp_vmap_of_grad_and_grad_of_vmap(axes):
    xs = XS if axes[0] == 0 else XS.T
    ys = {0: YS, 1: YS.T, None: Y}[axes[1]]
    per_ex_y = (lambda k: YS[k]) if axes[1] is not None else (lambda k: Y)
    # forward
    close(rune.vmap(f2, in_axes=axes)(xs, ys), np.stack([np.sin(XS[k]) * per_ex_y(k)
                                                         for k in range(4)]))
    # per-example gradients: vmap(grad(f))
    gx = rune.vmap(rune.grad(lambda x, y: np.sum(f2(x, y))), in_axes=axes)(xs, ys)
    close(gx, np.stack([2 * np.cos(XS[k]) * per_ex_y(k) for k in range(4)]))
    # grad(vmap(f)): the batched rule
    gx, gy = rune.grad(lambda x, y: np.sum(rune.vmap(f2, in_axes=axes)(x, y)), (0, 1))(xs, ys)
    want_x = np.stack([2 * np.cos(XS[k]) * per_ex_y(k) for k in range(4)])
    close(gx, want_x if axes[0] == 0 else want_x.T)
    want_y = np.stack([2 * np.sin(XS[k]) for k in range(4)])
    if axes[1] is None:
        close(gy, want_y.sum(0))       # an unbatched argument: summed over the batch
    else:
        close(gy, want_y if axes[1] == 0 else want_y.T)


def test_custom_vjp_vmap_of_vmap_and_jacrev_of_vmap():
    x3 = RNG.standard_normal((2, 4, 3))
    g = rune.grad(lambda x: np.sum(rune.vmap(rune.vmap(lambda a: f2(a, Y)))(x)))(x3)
    close(g, 2 * np.cos(x3) * Y)
    g = rune.vmap(rune.vmap(rune.grad(lambda a: np.sum(f2(a, Y)))))(x3)
    close(g, 2 * np.cos(x3) * Y)
    J = rune.jacrev(lambda x: rune.vmap(lambda a: f2(a, Y))(x))(XS)
    assert J.shape == (4, 3, 4, 3)
    close(np.einsum("ijij->ij", J), 2 * np.cos(XS) * Y)


def test_custom_vjp_second_order_goes_through_bwd():
    @rune.custom_vjp
    def cube(x):
        return x ** 3

    cube.defvjp(lambda x: (cube(x), x), lambda x, g: (2 * g * 3 * x ** 2,))
    close(rune.grad(cube)(0.7), 2 * 3 * 0.7 ** 2)
    close(rune.grad(rune.grad(cube))(0.7), 2 * 6 * 0.7)          # d/dx of bwd's 6x^2
    close(rune.vmap(rune.grad(rune.grad(cube)))(X), 12 * X)
    close(rune.jacrev(rune.grad(lambda x: np.sum(cube(x))))(X), np.diag(12 * X))
    # forward-over-reverse: fwd runs under jvp, so it must not call cube itself (as in JAX)
    with pytest.raises(TypeError, match="custom_vjp function cube"):
        rune.hessian(lambda x: np.sum(cube(x)))(X)
    cube.defvjp(lambda x: (x ** 3, x), lambda x, g: (2 * g * 3 * x ** 2,))
    close(rune.hessian(lambda x: np.sum(cube(x)))(X), np.diag(12 * X))   # jacfwd(jacrev)
    close(rune.jvp(rune.grad(cube), (0.7,), (1.0,))[1], 12 * 0.7)
    close(rune.hvp(lambda x: np.sum(cube(x)), (X,), (Y,))[1][0], 12 * X * Y)


def test_custom_vjp_nondiff_argnums_trees_and_none_cotangents():
    def clip_gradient(lo, hi, x):
        return x

    clip = rune.custom_vjp(clip_gradient, nondiff_argnums=(0, 1))
    seen = []

    def fwd(lo, hi, x):
        return x, None

    def bwd(lo, hi, res, g):
        seen.append((lo, hi))
        return (np.clip(g, lo, hi),)

    clip.defvjp(fwd, bwd)
    g = rune.grad(lambda x: np.sum(clip(-0.5, 0.5, x) * np.array([3.0, 0.2, -2.0])))(X)
    close(g, np.array([0.5, 0.2, -0.5]))
    assert seen == [(-0.5, 0.5)]
    g = rune.vmap(rune.grad(lambda x: np.sum(clip(-1.0, 1.0, 4 * x))))(XS)
    close(g, np.full_like(XS, 4.0))

    # trees in and out, None for a whole argument, a keyword argument
    @rune.custom_vjp
    def tree_f(p, scale):
        return {"a": p["w"] * scale, "b": (np.sum(p["v"]),)}

    tree_f.defvjp(lambda p, scale: (tree_f(p, scale), (scale, p["v"])),
                  lambda res, g: ({"w": 2 * g["a"] * res[0],
                                   "v": 2 * g["b"][0] * np.ones_like(res[1])}, None))
    p = {"w": X, "v": Y}
    gp, gs = rune.grad(lambda p, s: np.sum(tree_f(p, scale=s)["a"]) + tree_f(p, s)["b"][0],
                       (0, 1))(p, 1.5)
    close(gp, {"w": np.full(3, 3.0), "v": np.full(3, 2.0)})
    assert gs == 0.0


def test_custom_vjp_with_checkpoint_and_methods():
    g = rune.grad(lambda x: np.sum(rune.checkpoint(lambda a: f2(a, Y) ** 2)(x)))(X)
    close(g, 2 * np.sin(X) * Y * 2 * np.cos(X) * Y)

    class Model:
        def __init__(self, k):
            self.k = k

        @rune.custom_vjp
        def apply(self, x):
            return self.k * x

        apply.defvjp(lambda self, x: (self.k * x, None), lambda res, g: (None, 2 * g))

    m = Model(3.0)
    close(m.apply(X), 3 * X)
    close(rune.grad(lambda x: np.sum(m.apply(x)))(X), np.full(3, 2.0))


def test_custom_vjp_integer_arguments_and_outputs():
    @rune.custom_vjp
    def scaled(x, n):
        return x * n, n

    scaled.defvjp(lambda x, n: ((x * n, n), n), lambda n, g: (2 * g[0] * n, None))
    close(rune.grad(lambda x: np.sum(scaled(x, 3)[0]))(X), np.full(3, 6.0))
    close(rune.grad(lambda x: np.sum(rune.vmap(lambda a: scaled(a, 3)[0])(x)))(XS),
          np.full((4, 3), 6.0))


def test_custom_vjp_jvp_is_refused():
    with pytest.raises(TypeError, match="custom_vjp function f2"):
        rune.jvp(lambda x: f2(x, Y), (X,), (X,))
    with pytest.raises(TypeError, match="forward-mode"):
        rune.jacfwd(lambda x: f2(x, Y))(X)
    close(rune.grad(lambda x: np.sum(f2(x, Y)))(X), 2 * np.cos(X) * Y)   # still fine after


def test_custom_vjp_bad_bwd_outputs():
    def make(bwd):
        @rune.custom_vjp
        def mul(x, y):
            return x * y
        mul.defvjp(lambda x, y: (x * y, (x, y)), bwd)
        return mul

    too_few = make(lambda r, g: (g * r[1],))
    with pytest.raises(ValueError, match=r"mul returned 1 cotangent.*2 differentiable.*x, y"):
        rune.grad(lambda x: np.sum(too_few(x, Y)))(X)
    bad_shape = make(lambda r, g: (g * r[1], np.ones(5)))
    with pytest.raises(ValueError, match=r"mul.*shape \(5,\) for argument y.*shape \(3,\)"):
        rune.grad(lambda x: np.sum(bad_shape(x, Y)))(X)
    with pytest.raises(ValueError, match=r"mul.*shape \(5,\) for argument y"):
        rune.vmap(rune.grad(lambda x: np.sum(bad_shape(x, Y))))(XS)
    not_tuple = make(lambda r, g: g)
    with pytest.raises(ValueError, match="must return a tuple"):
        rune.grad(lambda x: np.sum(not_tuple(x, Y)))(X)
    bad_tree = make(lambda r, g: ({"x": g}, None))
    with pytest.raises(ValueError, match="argument x"):
        rune.grad(lambda x: np.sum(bad_tree(x, Y)))(X)

    @rune.custom_vjp
    def bad_fwd(x):
        return x

    bad_fwd.defvjp(lambda x: x, lambda r, g: (g,))
    with pytest.raises(ValueError, match="fwd rule of the custom_vjp function bad_fwd"):
        rune.grad(lambda x: np.sum(bad_fwd(x)))(X)

    @rune.custom_vjp
    def no_rule(x):
        return x

    with pytest.raises(TypeError, match="no_rule.defvjp"):
        no_rule(X)


def test_custom_vjp_closure_over_traced_value_is_refused():
    def loss(w):
        @rune.custom_vjp
        def scaled(x):
            return w * x
        scaled.defvjp(lambda x: (w * x, None), lambda r, g: (g,))
        return np.sum(scaled(X * w))

    with pytest.raises(ValueError, match="closes over"):
        rune.grad(loss)(2.0)


def test_custom_vjp_user_errors_propagate():
    @rune.custom_vjp
    def boom(x):
        return x

    def bwd(r, g):
        raise KeyError("in bwd")

    boom.defvjp(lambda x: (x, None), bwd)
    with pytest.raises(KeyError, match="in bwd"):
        rune.grad(lambda x: np.sum(boom(x)))(X)
    with pytest.raises(KeyError, match="in bwd"):
        rune.grad(lambda x: np.sum(rune.vmap(boom)(x)))(XS)


# --------------------------------------------------------------------------
# custom_jvp
# --------------------------------------------------------------------------

@rune.custom_jvp
def sin2(x):
    """sin whose rule gives twice the true derivative."""
    return np.sin(x)


@sin2.defjvp
def sin2_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return sin2(x), 2 * np.cos(x) * t


def test_custom_jvp_is_the_function_outside_transformations():
    close(sin2(X), np.sin(X))
    assert sin2.__name__ == "sin2"


def test_custom_jvp_forward_and_reverse_use_the_rule():
    t = RNG.standard_normal(3)
    out, t_out = rune.jvp(sin2, (X,), (t,))
    close(out, np.sin(X))
    close(t_out, 2 * np.cos(X) * t)
    close(rune.grad(lambda x: np.sum(sin2(x)))(X), 2 * np.cos(X))
    close(rune.grad(sin2)(0.3), 2 * np.cos(0.3))
    _, pullback = rune.vjp(sin2, X)
    close(pullback(t)[0], 2 * np.cos(X) * t)
    close(rune.jacfwd(sin2)(X), np.diag(2 * np.cos(X)))
    close(rune.jacrev(sin2)(X), np.diag(2 * np.cos(X)))


def test_custom_jvp_nested_derivatives():
    # second derivative of the rule's tangent map 2 cos(x) t: -2 sin(x)
    close(rune.grad(rune.grad(sin2))(0.3), -2 * np.sin(0.3))
    close(rune.jvp(rune.grad(sin2), (0.3,), (1.0,))[1], -2 * np.sin(0.3))
    close(rune.grad(lambda x: rune.jvp(sin2, (x,), (1.0,))[1])(0.3), -2 * np.sin(0.3))
    close(rune.hessian(lambda x: np.sum(sin2(x)))(X), np.diag(-2 * np.sin(X)))
    v = RNG.standard_normal(3)
    close(rune.hvp(lambda x: np.sum(sin2(x)), (X,), (v,))[1][0], -2 * np.sin(X) * v)
    close(rune.grad(rune.grad(rune.grad(sin2)))(0.3), -2 * np.cos(0.3))


@pytest.mark.parametrize("axis", [0, 1])
def test_custom_jvp_under_vmap(axis):
    xs = XS if axis == 0 else XS.T
    close(rune.vmap(sin2, in_axes=axis, out_axes=axis)(xs), np.sin(xs))
    close(rune.vmap(rune.grad(lambda x: np.sum(sin2(x))), in_axes=axis, out_axes=axis)(xs),
          2 * np.cos(xs))
    close(rune.grad(lambda x: np.sum(rune.vmap(sin2, in_axes=axis)(x)))(xs), 2 * np.cos(xs))
    t = np.ones_like(xs)
    close(rune.jvp(rune.vmap(sin2, in_axes=axis, out_axes=axis), (xs,), (t,))[1], 2 * np.cos(xs))
    close(rune.vmap(lambda x: rune.jvp(sin2, (x,), (np.ones(3),))[1], in_axes=axis,
                    out_axes=axis)(xs), 2 * np.cos(xs))
    close(rune.vmap(rune.vmap(rune.grad(sin2)))(XS), 2 * np.cos(XS))
    close(rune.vmap(rune.grad(rune.grad(sin2)))(X), -2 * np.sin(X))


def test_custom_jvp_several_arguments_outputs_and_zero_tangents():
    @rune.custom_jvp
    def polar(r, theta):
        return r * np.cos(theta), r * np.sin(theta)

    @polar.defjvp
    def polar_jvp(primals, tangents):
        r, th = primals
        dr, dth = tangents
        out = polar(r, th)
        return out, (2 * (dr * np.cos(th) - r * np.sin(th) * dth),
                     2 * (dr * np.sin(th) + r * np.cos(th) * dth))

    r, th = 1.5 + X ** 2, Y
    # jvp with respect to one argument: the other gets zero tangents
    _, (ta, tb) = rune.jvp(lambda r: polar(r, th), (r,), (np.ones(3),))
    close((ta, tb), (2 * np.cos(th), 2 * np.sin(th)))
    gr, gth = rune.grad(lambda r, th: np.sum(polar(r, th)[0] + 3 * polar(r, th)[1]), (0, 1))(r, th)
    close(gr, 2 * (np.cos(th) + 3 * np.sin(th)))
    close(gth, 2 * (-r * np.sin(th) + 3 * r * np.cos(th)))
    # only one output used: the other gets no cotangent
    close(rune.grad(lambda r: np.sum(polar(r, th)[1]))(r), 2 * np.sin(th))
    # the same value as both arguments
    close(rune.grad(lambda a: np.sum(polar(a, a)[0]))(X),
          2 * (np.cos(X) - X * np.sin(X)))


def test_custom_jvp_with_a_true_rule_passes_check_grads():
    @rune.custom_jvp
    def softplus(x):
        return np.logaddexp(0.0, x)

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t * np.exp(x - np.logaddexp(0.0, x))

    rune.check_grads(softplus, X, order=2)
    rune.check_grads(lambda x: np.sum(rune.vmap(softplus)(x) ** 2), XS, order=2)
    big = np.array([1000.0, -1000.0, 0.0])
    close(rune.grad(lambda x: np.sum(softplus(x)))(big), np.array([1.0, 0.0, 0.5]))


def test_custom_jvp_nondiff_argnums_and_integer_arguments():
    def power(n, x):
        return x ** n

    cpow = rune.custom_jvp(power, nondiff_argnums=(0,))

    @cpow.defjvp
    def cpow_jvp(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return cpow(n, x), 2 * n * x ** (n - 1) * t

    close(rune.grad(lambda x: np.sum(cpow(3, x)))(X), 6 * X ** 2)
    close(rune.jvp(lambda x: cpow(3, x), (X,), (np.ones(3),))[1], 6 * X ** 2)
    close(rune.vmap(rune.grad(lambda x: cpow(2, x)))(X), 4 * X)

    @rune.custom_jvp
    def times(x, k):
        return x * k

    @times.defjvp
    def times_jvp(primals, tangents):
        (x, k), (t, _) = primals, tangents
        return times(x, k), 2 * k * t

    close(rune.grad(lambda x: np.sum(times(x, 3)))(X), np.full(3, 6.0))


def test_custom_jvp_with_checkpoint_and_custom_vjp_inside():
    close(rune.grad(lambda x: np.sum(rune.checkpoint(sin2)(x)))(X), 2 * np.cos(X))
    close(rune.jvp(rune.checkpoint(sin2), (X,), (np.ones(3),))[1], 2 * np.cos(X))

    @rune.custom_jvp
    def outer(x):
        return sin2(x) * 3

    @outer.defjvp
    def outer_jvp(p, t):
        return outer(p[0]), rune.jvp(sin2, p, t)[1] * 3    # a rule that itself uses jvp

    close(rune.grad(lambda x: np.sum(outer(x)))(X), 6 * np.cos(X))


def test_custom_jvp_bad_rules():
    def make(rule):
        @rune.custom_jvp
        def g(x):
            return np.sin(x)
        g.defjvp(rule)
        return g

    bad_shape = make(lambda p, t: (np.sin(p[0]), np.ones(5)))
    with pytest.raises(ValueError, match=r"custom_jvp function g.*shape \(5,\)"):
        rune.jvp(bad_shape, (X,), (X,))
    with pytest.raises(ValueError, match=r"shape \(5,\)"):
        rune.grad(lambda x: np.sum(bad_shape(x)))(X)
    not_pair = make(lambda p, t: np.sin(p[0]))
    with pytest.raises(ValueError, match="must return a pair"):
        rune.jvp(not_pair, (X,), (X,))
    bad_tree = make(lambda p, t: (np.sin(p[0]), (t[0], t[0])))
    with pytest.raises(ValueError, match="does not match the output"):
        rune.jvp(bad_tree, (X,), (X,))
    primal_uses_tangent = make(lambda p, t: (np.sin(p[0]) + t[0], t[0]))
    with pytest.raises(ValueError, match="depends on the tangents"):
        rune.grad(lambda x: np.sum(primal_uses_tangent(x)))(X)

    @rune.custom_jvp
    def no_rule(x):
        return x

    with pytest.raises(TypeError, match="no_rule.defjvp"):
        no_rule(X)


def test_custom_jvp_user_errors_propagate():
    @rune.custom_jvp
    def boom(x):
        return x

    @boom.defjvp
    def boom_jvp(p, t):
        raise KeyError("in rule")

    for run in (lambda: rune.jvp(boom, (X,), (X,)),
                lambda: rune.grad(lambda x: np.sum(boom(x)))(X),
                lambda: rune.vmap(rune.grad(lambda x: np.sum(boom(x))))(XS),
                lambda: rune.grad(lambda x: np.sum(rune.vmap(boom)(x)))(XS)):
        with pytest.raises(KeyError, match="in rule"):
            run()


def test_custom_jvp_batched_branch_in_the_function():
    @rune.custom_jvp
    def relu(x):
        return x if x > 0 else 0.0 * x

    @relu.defjvp
    def relu_jvp(p, t):
        (x,), (tx,) = p, t
        return relu(x), np.where(x > 0, 2.0, 0.0) * tx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rune.PerformanceWarning)
        close(rune.vmap(relu)(X), np.maximum(X, 0))
        close(rune.grad(lambda x: np.sum(rune.vmap(relu)(x)))(X), np.where(X > 0, 2.0, 0.0))


def test_custom_jvp_scalar_tangent_broadcasts_under_vmap():
    @rune.custom_jvp
    def const_plus(x, c):
        return x * 0.0 + c

    @const_plus.defjvp
    def const_plus_jvp(p, t):
        return const_plus(*p), 2.0 * np.sum(t[1])       # a scalar tangent for a vector output

    close(rune.jvp(lambda c: const_plus(X, c), (1.0,), (1.0,))[1], np.full(3, 2.0))
    close(rune.vmap(lambda c: rune.jvp(lambda c: const_plus(X, c), (c,), (1.0,))[1])(Y),
          np.full((3, 3), 2.0))
    close(rune.jvp(rune.vmap(lambda c: const_plus(X, c)), (Y,), (np.ones(3),))[1],
          np.full((3, 3), 2.0))
    close(rune.grad(lambda c: np.sum(rune.vmap(lambda c: const_plus(X, c))(c)))(Y),
          np.full(3, 6.0))


def test_custom_vjp_with_a_true_rule_passes_check_grads():
    @rune.custom_vjp
    def norm(x):
        return np.sqrt(np.sum(x ** 2))

    def fwd(x):
        n = np.sqrt(np.sum(x ** 2))
        return n, (x, n)

    def bwd(res, g):
        x, n = res
        return (g * x / n,)

    norm.defvjp(fwd, bwd)
    rune.check_grads(norm, X, order=2, modes=("rev",))
    rune.check_grads(lambda xs: np.sum(rune.vmap(norm)(xs) ** 2), XS, order=2, modes=("rev",))
    rune.check_grads(lambda x: rune.checkpoint(norm)(x) * 2.0, X, order=2, modes=("rev",))


def test_non_numeric_arguments():
    @rune.custom_jvp
    def act(x, kind):
        return np.tanh(x) if kind == "tanh" else np.sin(x)

    @act.defjvp
    def act_jvp(p, t):
        x, kind = p
        assert t[1] is None                  # no tangent for a string
        d = 1 - np.tanh(x) ** 2 if kind == "tanh" else np.cos(x)
        return act(x, kind), 2 * d * t[0]

    close(rune.grad(lambda x: np.sum(act(x, "sin")))(X), 2 * np.cos(X))
    close(rune.jvp(lambda x: act(x, "tanh"), (X,), (np.ones(3),))[1], 2 * (1 - np.tanh(X) ** 2))

    @rune.custom_vjp
    def act2(x, kind):
        return np.sin(x)

    act2.defvjp(lambda x, kind: (np.sin(x), x), lambda x, g: (2 * np.cos(x) * g, None))
    close(rune.grad(lambda x: np.sum(act2(x, "sin")))(X), 2 * np.cos(X))
    close(rune.grad(lambda x: np.sum(rune.vmap(act2, in_axes=(0, None))(x, "s")))(XS),
          2 * np.cos(XS))


def make_clip_grad():
    @rune.custom_vjp
    def clip_grad(x, lim):
        return x * 1.0

    def fwd(x, lim):
        return x * 1.0, lim

    def bwd(lim, g):
        return (np.clip(g, -lim, lim), 0.0)

    clip_grad.defvjp(fwd, bwd)
    return clip_grad


def test_custom_vjp_uses_bwd_and_composes():
    cg = make_clip_grad()
    x = np.array([1.0, 2.0, 3.0])
    f = lambda x: np.sum(cg(x, 0.5) * np.array([1.0, 0.1, -5.0]))
    np.testing.assert_allclose(f(x), np.sum(x * np.array([1.0, 0.1, -5.0])))
    np.testing.assert_allclose(rune.grad(f)(x), [0.5, 0.1, -0.5])
    # vmap(custom_vjp_fn) and vmap(grad(custom_vjp_fn))
    xs = np.stack([x, -x])
    np.testing.assert_allclose(rune.vmap(lambda x: cg(x, 0.5))(xs), xs)
    np.testing.assert_allclose(rune.vmap(rune.grad(f))(xs), np.stack([[0.5, 0.1, -0.5]] * 2))
    # grad(vmap(...)) still uses the rule
    g = rune.grad(lambda xs: np.sum(rune.vmap(lambda x: cg(x, 0.5) * 3.0)(xs)))(xs)
    np.testing.assert_allclose(g, 0.5 * np.ones_like(xs))
    # inside checkpoint
    g = rune.grad(lambda x: np.sum(rune.checkpoint(lambda x: cg(x, 0.5) * 3.0)(x)))(x)
    np.testing.assert_allclose(g, 0.5 * np.ones(3))
    # jacrev
    np.testing.assert_allclose(rune.jacrev(lambda x: cg(x, 0.5) * 3.0)(x), 0.5 * np.eye(3))


def test_custom_vjp_with_trees_and_residuals():
    @rune.custom_vjp
    def f(p):
        return p["a"] * p["b"]

    def fwd(p):
        return p["a"] * p["b"], (p["a"], p["b"])

    def bwd(res, g):
        a, b = res
        return ({"a": g * b * 10.0, "b": np.sum(g * a) * 10.0},)

    f.defvjp(fwd, bwd)
    g = rune.grad(lambda p: np.sum(f(p)))({"a": np.array([1.0, 2.0]), "b": 3.0})
    np.testing.assert_allclose(g["a"], [30.0, 30.0])
    assert g["b"] == pytest.approx(30.0)


def make_log1pexp():
    @rune.custom_jvp
    def log1pexp(x):
        return np.log1p(np.exp(x))

    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * (1 - 1 / (1 + np.exp(x)))

    log1pexp.defjvp(rule)
    return log1pexp


def test_custom_jvp_used_by_jvp_and_grad():
    f = make_log1pexp()
    x = np.array([0.0, 2.0, 800.0])
    with np.errstate(over="ignore"):
        _, t = rune.jvp(f, (x,), (np.ones(3),))
        g = rune.grad(lambda x: np.sum(f(x)))(x)
        gg = rune.vmap(rune.grad(f))(x)
    want = 1 / (1 + np.exp(-x[:2]))
    np.testing.assert_allclose(t[:2], want)
    np.testing.assert_allclose(g[:2], want)
    np.testing.assert_allclose(gg[:2], want)
    assert t[2] == 1.0 and g[2] == 1.0 and gg[2] == 1.0   # the rule, not NaN
    # second derivative through the rule
    d2 = rune.grad(rune.grad(f))(0.0)
    assert d2 == pytest.approx(0.25)


def test_custom_jvp_distinct_rule_is_used():
    @rune.custom_jvp
    def f(x):
        return np.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), t[0] * 100.0))
    x = np.array([0.3])
    np.testing.assert_allclose(rune.jvp(f, (x,), (np.ones(1),))[1], [100.0])
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(f(x)))(x), [100.0])
    np.testing.assert_allclose(rune.jacrev(f)(x), [[100.0]])
    np.testing.assert_allclose(rune.jacfwd(f)(x), [[100.0]])


def test_custom_vjp_none_cotangent_and_bad_rules():
    @rune.custom_vjp
    def scale(x, n):
        return x * n
    scale.defvjp(lambda x, n: (x * n, n), lambda n, g: (g * n, None))
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(scale(x, 3)))(x), 3.0)
    np.testing.assert_allclose(rune.jacrev(rune.jacrev(lambda x: np.sum(scale(x, 3) ** 2)))(x),
                               18 * np.eye(3))

    @rune.custom_vjp
    def bad_shape(x):
        return x * 2
    bad_shape.defvjp(lambda x: (x * 2, None), lambda r, g: (g[:1],))
    with pytest.raises(ValueError, match="bad_shape"):
        rune.grad(lambda x: np.sum(bad_shape(x)))(x)
    assert rune.core.active_traces() == ()
