"""Elementwise primitives: every NumPy ufunc, ``where``, casts, real/imag/conj.

An elementwise primitive's derivative with respect to argument ``i`` is a
local scalar ``d_i`` (a function of the inputs and the output), so both its
JVP and its VJP are ``g * d_i``: one line per function below.  The engine
broadcasts tangents and un-broadcasts cotangents.  Products are ordinary
products; a structural zero (the branch ``np.where`` did not take) times an
infinite local derivative (``sqrt`` at 0) is made zero by the engine
(:func:`rune.backward.backward`), so ``np.where(x > 0, np.sqrt(x), 0.0)`` has
gradient 0, not NaN, at ``x == 0``, while ``np.sqrt(x) ** 2`` has NaN there.

Complex numbers follow JAX's convention: rules are holomorphic derivatives
(``ct * f'(z)``, no conjugation); the non-holomorphic ``abs``, ``conj``,
``real`` and ``imag`` have rules of their own.

To add a function, copy a line: ``unary(np.arcsinh, over(lambda x, y: np.sqrt(x * x + 1)))``.
"""

from __future__ import annotations

import numpy as np

from ..core import Primitive, Tracer, bind, vjp_rule
from ..dispatch import register_ufunc
from ._util import ndim, shape, weight_dtype

# --------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------


def elementwise_batch(prim):
    """The batching rule shared by every elementwise primitive: batch axes to the front."""
    def batch(args, bdims, **params):
        nds = [ndim(a) - (b is not None) for a, b in zip(args, bdims)]
        out_nd = max(nds)
        moved = []
        for a, b, nd in zip(args, bdims, nds):
            if b is not None:
                if b != 0:
                    a = np.moveaxis(a, b, 0)
                if nd < out_nd:
                    s = shape(a)
                    a = np.reshape(a, s[:1] + (1,) * (out_nd - nd) + s[1:])
            moved.append(a)
        return bind(prim, *moved, **params), 0
    return batch


def _quiet():
    return np.errstate(divide="ignore", invalid="ignore", over="ignore")


def _scale(d, n=None):
    """The rule ``g -> g * d(args, out)`` for one of the ``n`` arguments: an ordinary product.

    Where ``g`` is a structural zero (the branch ``np.where`` did not take), the engine
    makes the product zero whatever ``d`` is (``rune.backward.backward``); a zero that
    arithmetic produced is an ordinary number, and ``0 * inf`` is NaN, as in JAX.
    """
    # (a function of its own per primitive: hooks may be attached to a rule)
    if d is ONE:
        if n == 1:
            return lambda g, out, x: g
        if n == 2:
            return lambda g, out, x, y: g
        return lambda g, out, *args: g
    if d is NEG:
        if n == 1:
            return lambda g, out, x: -g
        if n == 2:
            return lambda g, out, x, y: -g
        return lambda g, out, *args: -g
    if isinstance(d, over):
        den = d.den
        if n == 1:
            return lambda g, out, x: g / den(x, out)
        if n == 2:
            return lambda g, out, x, y: g / den(x, y, out)
        return lambda g, out, *args: g / den(*args, out)
    # one frame per rule: the arities spelled out (no argument tuple to pack and unpack)
    if n == 1:
        return lambda g, out, x: g * d(x, out)
    if n == 2:
        return lambda g, out, x, y: g * d(x, y, out)
    return lambda g, out, *args: g * d(*args, out)


def _weighted_structural(d):
    """The ``structural`` hook (see rune.structural._structural) of ``g * d`` with ``d`` a
    finite weight that is 0 exactly for the branch not taken (``maximum``'s loser): the
    cotangent and its structural zeros at once, ``d`` computed once (the engine's general
    way runs the rule twice, once on an indicator)."""
    def structural(g, mask, out, *args):
        w = d(*args, out)
        m = w == 0
        if mask is not None:
            m = m | mask
        return g * w, m
    return structural


class over:
    """A local derivative ``1 / den(*args, out)``, applied as ``g / den``: dividing keeps
    ``d/dx exp(log(x))`` exact at ``x = 1e-310``, where ``1 / x`` overflows."""

    __slots__ = ("den",)

    def __init__(self, den):
        self.den = den


ONE = object()   # the local derivative is exactly 1
NEG = object()   # the local derivative is exactly -1


def elementwise_primitive(name, impl, *, ufunc=None, **declarations):
    """A :class:`~rune.core.Primitive` with the elementwise batching rule, routed from
    ``ufunc`` when given.  ``declarations`` are the primitive's (``jvp``, ``vjp``,
    ``nondiff``, ``residuals``: what the VJP rules read; ``masks``, ``elementwise``:
    how structural zeros cross it, see :class:`~rune.core.Primitive`).

    >>> import numpy as np, rune
    >>> cube_p = elementwise_primitive("cube", lambda x: x ** 3,
    ...                                jvp=(lambda t, out, x: 3 * x * x * t,),
    ...                                vjp=(lambda ct, out, x: 3 * x * x * ct,))
    >>> rune.grad(lambda x: np.sum(cube_p(x)))(np.array([1.0, 2.0]))
    array([ 3., 12.])
    """
    p = Primitive(name, impl, **declarations)
    p.batch = elementwise_batch(p)
    p.aligned_batch = True
    if ufunc is not None:
        register_ufunc(ufunc, p)
    return p


def elementwise(ufunc, *partials, name=None, uses=None, masks=False):
    """A differentiable elementwise primitive for ``ufunc`` with local derivatives ``partials``.

    Each partial is ``d(*args, out)``, ``over(den)`` (the derivative ``1 / den``),
    ``ONE``, ``NEG`` or ``None`` (no derivative).
    JVP and VJP are the same rule, ``g * d``, since ``d`` is a scalar per element; the
    primitive is declared ``elementwise`` (element k of the output depends on element k
    of each input only), so the engine zeroes ``g * d`` where ``g`` is a structural zero.

    * ``uses`` (the primitive's ``residuals``): what the partials read, ``"out"`` or
      ``"args"``, a tuple of entries or a dict of them per argument (``x * y``: the
      partial in ``x`` reads ``y`` only), so that the tape keeps nothing else.  Partials that
      are all ``ONE``/``NEG``/``None`` read nothing, and the tape keeps nothing.
    * ``masks``: the partials are weights >= 0 and exactly 0 for the branch not taken
      (``maximum``: the loser's), which the engine then tracks as a structural zero.
    """
    rules = tuple(None if d is None else vjp_rule(_scale(d, len(partials)), structural=(
        _weighted_structural(d) if masks and callable(d) and not isinstance(d, over) else None))
        for d in partials)
    if all(d is None or d is ONE or d is NEG for d in partials):
        residuals = ()
    else:
        residuals = None if uses is None else uses if isinstance(uses, (tuple, dict)) \
            else (uses,)
    return elementwise_primitive(name or ufunc.__name__, ufunc, jvp=rules, vjp=rules,
                                 residuals=residuals, masks=masks, elementwise=True,
                                 ufunc=ufunc)


def unary(ufunc, d, uses=None):
    """``unary(np.sin, lambda x, y: np.cos(x))``: ``d(x, y)`` with ``y`` the output."""
    return elementwise(ufunc, d, uses=uses)


def binary(ufunc, dx, dy, uses=None, masks=False):
    """``binary(np.multiply, lambda x, y, z: y, lambda x, y, z: x)``: ``z`` is the output."""
    return elementwise(ufunc, dx, dy, uses=uses, masks=masks)


def nondiff(ufunc, name=None, register=True):
    """An elementwise primitive with zero derivative (comparisons, rounding, bit ops)."""
    return elementwise_primitive(name or ufunc.__name__, ufunc, nondiff=True,
                                 ufunc=ufunc if register else None)


LN2 = np.log(2.0)
LN10 = np.log(10.0)

# --------------------------------------------------------------------------
# Arithmetic
# --------------------------------------------------------------------------

add_p = binary(np.add, ONE, ONE)
subtract_p = binary(np.subtract, ONE, NEG)
multiply_p = binary(np.multiply, lambda x, y, z: y, lambda x, y, z: x,
                    uses={0: (1,), 1: (0,)})        # x * 1.5 keeps only the 1.5
divide_p = binary(np.true_divide, over(lambda x, y, z: y), lambda x, y, z: -z / y,
                  uses={0: (1,), 1: (1, "out")})
negative_p = unary(np.negative, NEG)
positive_p = unary(np.positive, ONE)
reciprocal_p = unary(np.reciprocal, lambda x, y: -y * y, uses="out")
square_p = unary(np.square, lambda x, y: 2 * x, uses="args")
sqrt_p = unary(np.sqrt, over(lambda x, y: 2 * y), uses="out")
cbrt_p = unary(np.cbrt, over(lambda x, y: 3 * y * y), uses="out")
def _pow_dx(x, y, power=np.power):
    """``d/dx x**y = y x**(y-1)``, and 0 where ``y == 0`` (``x**0 == 1``, even at ``x == 0``,
    where ``0 * 0**-1`` would be NaN)."""
    if not isinstance(y, Tracer) and np.ndim(y) == 0:      # x ** 2, x ** 0.5: decided once
        if y == 2:          # x ** 1 is x, exactly (and np.power's general loop is slow)
            return y * x
        return y * power(x, y - 1) if y != 0 else np.zeros_like(x)
    return np.where(y == 0, 0, y * power(x, y - 1))


power_p = binary(np.power, lambda x, y, z: _pow_dx(x, y),
                 lambda x, y, z: np.where(x == 0, 0, np.log(np.where(x == 0, 1, x)) * z),
                 uses=("args", "out"))
float_power_p = binary(np.float_power, lambda x, y, z: _pow_dx(x, y, np.float_power),
                       lambda x, y, z: np.where(x == 0, 0,
                                                np.log(np.where(x == 0, 1, x)) * z),
                       uses=("args", "out"))
remainder_p = binary(np.remainder, ONE, lambda x, y, z: -np.floor_divide(x, y), uses="args")
fmod_p = binary(np.fmod, ONE, lambda x, y, z: -np.trunc(x / y), uses="args")
maximum_p = binary(np.maximum, lambda x, y, z: _tie(x, y, np.greater),
                   lambda x, y, z: _tie(y, x, np.greater), uses="args", masks=True)
minimum_p = binary(np.minimum, lambda x, y, z: _tie(x, y, np.less),
                   lambda x, y, z: _tie(y, x, np.less), uses="args", masks=True)
fmax_p = binary(np.fmax, lambda x, y, z: _tie_nan(x, y, np.greater),
                lambda x, y, z: _tie_nan(y, x, np.greater), uses="args", masks=True)
fmin_p = binary(np.fmin, lambda x, y, z: _tie_nan(x, y, np.less),
                lambda x, y, z: _tie_nan(y, x, np.less), uses="args", masks=True)
copysign_p = binary(np.copysign, lambda x, y, z: np.where(np.signbit(x) == np.signbit(y), 1, -1),
                    None, uses="args")
ldexp_p = binary(np.ldexp, lambda x, i, z: np.ldexp(np.ones_like(x), i), None, uses="args")
hypot_p = binary(np.hypot, lambda x, y, z: x / np.where(z == 0, 1, z),   # 0 at the origin,
                 lambda x, y, z: y / np.where(z == 0, 1, z),   # as |x| is, and JAX
                 uses=("args", "out"))


def _tie(x, y, wins, nan_wins=False):
    """1 where ``x`` wins, 1/2 at a tie (the gradient is split evenly, as in JAX), else 0,
    in the operands' floating dtype.  With ``nan_wins``, ``x`` also wins where ``y`` is NaN
    (``fmax``/``fmin``).

    On plain arrays, one comparison gives the weights and the 1/2 is written only where
    there are ties (an ``np.where`` with Python floats was 30x slower and float64); traced
    values (higher orders, ``vmap``) take the same values through traced ``np.where``.
    """
    dt = weight_dtype(x, y)
    won = wins(x, y)
    if nan_wins:
        won = won | np.isnan(y)
    tie = np.equal(x, y)
    if isinstance(won, Tracer) or isinstance(tie, Tracer):
        return np.where(won, dt.type(1), np.where(tie, dt.type(0.5), dt.type(0)))
    d = np.asarray(won).astype(dt)
    if tie.any():
        d[tie] = 0.5
    return d


def _tie_nan(x, y, wins):
    """Like :func:`_tie`, but ``x`` also wins where ``y`` is NaN (``fmax``/``fmin``)."""
    return _tie(x, y, wins, nan_wins=True)


# --------------------------------------------------------------------------
# Exponentials and logarithms
# --------------------------------------------------------------------------

exp_p = unary(np.exp, lambda x, y: y, uses="out")
exp2_p = unary(np.exp2, lambda x, y: y * LN2, uses="out")
expm1_p = unary(np.expm1, lambda x, y: y + 1, uses="out")
log_p = unary(np.log, over(lambda x, y: x), uses="args")
log2_p = unary(np.log2, over(lambda x, y: x * LN2), uses="args")
log10_p = unary(np.log10, over(lambda x, y: x * LN10), uses="args")
log1p_p = unary(np.log1p, over(lambda x, y: 1 + x), uses="args")
logaddexp_p = binary(np.logaddexp, lambda x, y, z: np.exp(x - z), lambda x, y, z: np.exp(y - z),
                     uses=("args", "out"))
logaddexp2_p = binary(np.logaddexp2, lambda x, y, z: np.exp2(x - z),
                      lambda x, y, z: np.exp2(y - z), uses=("args", "out"))

# --------------------------------------------------------------------------
# Trigonometric and hyperbolic
# --------------------------------------------------------------------------

sin_p = unary(np.sin, lambda x, y: np.cos(x), uses="args")
cos_p = unary(np.cos, lambda x, y: -np.sin(x), uses="args")
tan_p = unary(np.tan, lambda x, y: 1 + y * y, uses="out")
arcsin_p = unary(np.arcsin, over(lambda x, y: np.sqrt(1 - x * x)), uses="args")
arccos_p = unary(np.arccos, over(lambda x, y: -np.sqrt(1 - x * x)), uses="args")
arctan_p = unary(np.arctan, over(lambda x, y: 1 + x * x), uses="args")
arctan2_p = binary(np.arctan2, lambda a, b, z: b / (a * a + b * b),
                   lambda a, b, z: -a / (a * a + b * b), uses="args")
sinh_p = unary(np.sinh, lambda x, y: np.cosh(x), uses="args")
cosh_p = unary(np.cosh, lambda x, y: np.sinh(x), uses="args")
tanh_p = unary(np.tanh, lambda x, y: 1 - y * y, uses="out")   # its output only
arcsinh_p = unary(np.arcsinh, over(lambda x, y: np.sqrt(x * x + 1)), uses="args")
# sqrt(x - 1) * sqrt(x + 1), not sqrt(x * x - 1): the same for real x >= 1, and the
# principal branch for complex x (the other has the wrong sign where Re(x) < 0).
arccosh_p = unary(np.arccosh, over(lambda x, y: np.sqrt(x - 1) * np.sqrt(x + 1)), uses="args")
arctanh_p = unary(np.arctanh, over(lambda x, y: 1 - x * x), uses="args")
deg2rad_p = unary(np.deg2rad, lambda x, y: np.pi / 180, uses=())
rad2deg_p = unary(np.rad2deg, lambda x, y: 180 / np.pi, uses=())
register_ufunc(np.radians, deg2rad_p)
register_ufunc(np.degrees, rad2deg_p)

# --------------------------------------------------------------------------
# Non-holomorphic: abs, conj, real, imag
# --------------------------------------------------------------------------


def _abs_jvp(t, y, x):
    if x.dtype.kind == "c":
        with _quiet():
            d = np.where(y == 0, 0, np.conj(x) / np.where(y == 0, 1, y))
        return np.real(t * d)
    return np.where(x >= 0, t, -t)      # 1 at 0, as JAX: |x| ** 2 has second derivative 2


def _abs_vjp(ct, y, x):
    if x.dtype.kind == "c":   # (ct * conj(x)) / y: exact where it can be (grad of |3+4j|^2)
        with _quiet():
            return np.where(y == 0, 0, ct * np.conj(x) / np.where(y == 0, 1, y))
    return np.where(x >= 0, ct, -ct)


absolute_p = elementwise_primitive("absolute", np.absolute, jvp=(_abs_jvp,), vjp=(_abs_vjp,),
                                   residuals=("args", "out"), elementwise=True,
                                   ufunc=np.absolute)
register_ufunc(np.fabs, absolute_p)
conj_p = elementwise_primitive("conjugate", np.conjugate,
                               jvp=(lambda t, out, x: np.conj(t),),
                               vjp=(lambda ct, out, x: np.conj(ct),), residuals=(),
                               elementwise=True, ufunc=np.conjugate)
# np.real / np.imag are functions, not ufuncs: rune.numpy routes them here for complex x.
real_p = elementwise_primitive("real", np.real, jvp=(lambda t, out, x: np.real(t),),
                               vjp=(lambda ct, out, x: ct,), residuals=(), elementwise=True)
imag_p = elementwise_primitive("imag", np.imag, jvp=(lambda t, out, x: np.imag(t),),
                               vjp=(lambda ct, out, x: ct * -1j,), residuals=(),
                               elementwise=True)

# --------------------------------------------------------------------------
# No derivative: comparisons, logic, rounding, bit operations, predicates
# --------------------------------------------------------------------------

for _uf in (np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
            np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
            np.isfinite, np.isinf, np.isnan, np.isnat, np.signbit,
            np.floor, np.ceil, np.trunc, np.rint, np.floor_divide, np.heaviside,
            np.nextafter, np.spacing, np.bitwise_and, np.bitwise_or, np.bitwise_xor,
            np.invert, np.left_shift, np.right_shift, np.gcd, np.lcm,
            getattr(np, "bitwise_count", None)):
    if _uf is not None:
        nondiff(_uf)

# Real sign: zero derivative.  np.sign itself is routed by rune.numpy, since the sign of
# a complex number (z / |z|) is not constant.
sign_p = nondiff(np.sign, register=False)
frexp_exponent_p = elementwise_primitive("frexp_exponent", lambda x: np.frexp(x)[1],
                                         nondiff=True)

# --------------------------------------------------------------------------
# where, casts
# --------------------------------------------------------------------------

select_p = elementwise_primitive(
    "where", np.where,
    jvp=(None, lambda t, out, c, x, y: np.where(c, t, 0),
         lambda t, out, c, x, y: np.where(c, 0, t)),
    vjp=(None, lambda ct, out, c, x, y: np.where(c, ct, 0),
         lambda ct, out, c, x, y: np.where(c, 0, ct)),
    residuals=(0,), masks=True)      # the condition only


def _cast_impl(x, dtype):
    return x.astype(dtype) if hasattr(x, "astype") else np.asarray(x).astype(dtype)


# To a float or complex dtype (differentiable), and to any other (no derivative).
cast_p = Primitive("astype", _cast_impl, jvp=(lambda t, out, x, dtype: t,),
                   vjp=(lambda ct, out, x, dtype: ct,), residuals=(), elementwise=True,
                   batch=lambda args, bdims, dtype: (cast_p(args[0], dtype=dtype), bdims[0]))
cast_nondiff_p = Primitive(
    "astype_nondiff", _cast_impl, nondiff=True,
    batch=lambda args, bdims, dtype: (cast_nondiff_p(args[0], dtype=dtype), bdims[0]))
