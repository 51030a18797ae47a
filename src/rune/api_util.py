"""The transformation boundary: what every transformation does to its user's arguments
and results, in one place.

* which arguments are differentiated (:func:`argnums_tuple`), and whether a leaf
  is differentiable (:func:`is_diff_leaf`, the one predicate rune uses);
* checks that name the argument, leaf path or returned type when something cannot
  be differentiated or vectorized (:func:`check_diff_args`, :func:`check_leaves`,
  :func:`check_scalar_output`);
* what the user gets back: zeros of a leaf (:func:`zero_like`), a cotangent in the
  leaf's own type (:func:`to_user`), results that share no memory with the
  inputs (:func:`unalias`), and wrapper names (:func:`wrap_name`);
* the shape helpers that work on any leaf, traced or not (:func:`shape_of`,
  :func:`dtype_of`, :func:`size_of`, :func:`broadcast_shape`).

This module imports only the core, the tree module and NumPy.
"""

from __future__ import annotations

import operator

import numpy as np

from . import tree as tree_util
from .core import Tracer, _np_asarray
from .primitives.backends import in_backend_of, is_duck_array

__all__ = ["is_diff_leaf", "argnums_tuple", "as_argnum", "diff_fn", "check_diff_args",
           "check_leaves", "check_scalar_output", "check_holomorphic", "check_holomorphic_out",
           "check_aux_pair", "check_real_inputs", "check_real_out", "describe", "zero_like",
           "as_array", "cast_like", "to_user", "unalias", "private_copies", "wrap_name",
           "fun_name", "signature", "arg_names", "shape_of", "dtype_of", "size_of",
           "broadcast_shape"]


# --------------------------------------------------------------------------
# Leaves
# --------------------------------------------------------------------------

def is_diff_leaf(x):
    """Whether ``x`` is a leaf with a derivative: floating or complex (arrays, NumPy
    scalars, traced values, Python floats and complex numbers)."""
    dt = getattr(x, "dtype", None)
    if dt is not None:
        return dt.kind in "fc"
    return isinstance(x, (float, complex))


def _is_number_leaf(x):
    if type(x) is np.ndarray:
        return x.dtype.kind != "O"
    if isinstance(x, np.ndarray):        # subclasses: masked arrays and matrices refused
        return foreign_message(x) is None
    return isinstance(x, (Tracer, np.generic, bool, int, float, complex)) or x is None \
        or is_duck_array(x)         # Dask arrays: NumPy's protocols, lazily (docs/dask.md)


def foreign_message(x):
    """What to pass instead of ``x``, an array type that NumPy's protocols would give a
    wrong derivative for (SPEC 3: supported correctly, or refused at the boundary); None for
    the arrays rune handles."""
    t = type(x)
    if t is np.ndarray:
        if x.dtype.kind == "O":
            return ("an object array: its elements are Python objects that NumPy computes on "
                    "one by one, out of rune's sight; pass a float array "
                    "(np.asarray(x, dtype=float))")
        return None
    if isinstance(x, np.ma.MaskedArray):
        return ("a masked array: rune would differentiate its data and ignore the mask; pass "
                "x.filled(value), or x.data with the mask as a separate argument used through "
                "np.where")
    if isinstance(x, np.matrix):
        return ("an np.matrix, whose * is a matrix product: pass np.asarray(x) and use @")
    top = t.__module__.split(".")[0]
    if top == "pandas":
        return (f"a pandas {t.__name__}: pass x.to_numpy() (rune transforms NumPy arrays; "
                f"an index or labels are not carried through)")
    if top == "xarray":
        return (f"an xarray {t.__name__}: pass x.values (named-dimension broadcasting and "
                f"coordinates are not carried through rune's transformations)")
    if hasattr(x, "__array_namespace__") and not hasattr(x, "__array_function__"):
        return (f"an array of another library ({t.__module__}.{t.__name__}): convert it with "
                f"np.asarray(x)")
    return None


from .primitives._util import shape as shape_of  # noqa: E402  (the one shape helper)


def dtype_of(x):
    """The dtype of any numeric leaf (``float64`` for a Python float, ...)."""
    dt = getattr(x, "dtype", None)
    if dt is not None:
        return dt
    return np.result_type(type(x)) if isinstance(x, (bool, int, float, complex)) \
        else np.dtype(float)


def size_of(shape):
    """The number of elements of ``shape``."""
    n = 1
    for d in shape:
        n *= d
    return n


def broadcast_shape(a, b):
    """The broadcast of the shapes ``a`` and ``b``, or None if they do not broadcast."""
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


def is_floating_value(out):
    """Whether a result without derivative is floating (``np.floor(x)``): it then stays a
    traced constant, so that ``np.rint(x).dot(x)`` and writes into it work as for arrays
    (comparisons and integers stay plain: SPEC 3)."""
    dtype = getattr(out, "dtype", None)
    return dtype is not None and dtype.kind in "fc"


def as_array(x):
    """A Python float or complex number as a 0-d array; anything else unchanged."""
    if isinstance(x, (float, complex)):
        return np.asarray(x)
    return x


def describe(x):
    """A short description of a value for error messages."""
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"{_article(type(x).__name__)} of shape {tuple(x.shape)} and dtype {x.dtype}"
    return _article(type(x).__name__)


def private_copies(values):
    """``values`` with plain arrays copied and traced values re-wrapped: code of the
    user's (a function, a rule) run on them one level down cannot write into the
    caller's arrays or change the caller's traced values (a write into a traced value
    rebinds that object)."""
    out = []
    for v in values:
        if type(v) is np.ndarray:
            v = v.copy()
        elif isinstance(v, Tracer):
            c = object.__new__(type(v))
            c._trace = v._trace
            c._val = v._val
            for name in v._extra:
                setattr(c, name, getattr(v, name))
            v = c
        out.append(v)
    return out


# --------------------------------------------------------------------------
# Arguments
# --------------------------------------------------------------------------

def as_argnum(a, what="argnums"):
    """``a`` as an argument index, or a TypeError naming ``what``."""
    if isinstance(a, (bool, np.bool_)):
        raise TypeError(f"{what} must be an int or a tuple of ints, got {a!r}")
    try:
        return operator.index(a)
    except TypeError:
        raise TypeError(f"{what} must be an int or a tuple of ints, got "
                        f"{type(a).__name__} {a!r}") from None


def argnums_tuple(argnums, nargs, what="argnums"):
    """``(single, nums)``: whether ``argnums`` is one int, and its entries made
    non-negative (duplicates kept, in order).  Raises TypeError for an entry that is
    not an int and ValueError for one out of range."""
    single = not isinstance(argnums, (tuple, list))
    if single:
        nums = (as_argnum(argnums, what),)
    else:
        nums = tuple(as_argnum(a, what) for a in argnums)
    for a in nums:
        if not -nargs <= a < nargs:
            raise ValueError(f"{what}={argnums!r} is out of range for a function called "
                             f"with {nargs} positional argument(s)")
    return single, tuple(a % nargs for a in nums)


def diff_fn(f, args, nums, kwargs):
    """``(g, diff_args, pick)``: ``g(*diff_args)`` is ``f(*args, **kwargs)`` as a function
    of the arguments at the distinct positions of ``nums``; ``pick(results)`` maps one
    result per distinct position back to one per entry of ``nums`` (a repeated position
    gets its own copy of the full result: ``argnums=(0, 0)`` gives the gradient twice)."""
    uniq = tuple(dict.fromkeys(nums))

    def g(*diff):
        full = list(args)
        for k, a in zip(uniq, diff):
            full[k] = a
        return f(*full, **kwargs)

    def pick(results):
        if len(uniq) == len(nums):
            return results
        out, seen = [], set()
        for k in nums:
            r = results[uniq.index(k)]
            if k in seen:
                r = tree_util.map(lambda x: x.copy() if type(x) is np.ndarray else x, r)
            seen.add(k)
            out.append(r)
        return tuple(out)

    g.__name__ = fun_name(f)
    return g, [args[k] for k in uniq], pick


def check_leaves(leaves, treedef, root, what):
    """Raise TypeError naming the leaf path of the first of ``leaves`` (of a tree of
    structure ``treedef``) that is not a number or an array: a ``str`` field of a
    dataclass, an object of an unregistered class, a generator."""
    for k, x in enumerate(leaves):
        if not _is_number_leaf(x):
            path = tree_util.leaf_paths(treedef, root)[k]
            foreign = foreign_message(x)
            if foreign is not None:
                raise TypeError(f"{what}: {path} is {foreign}")
            if isinstance(x, (str, bytes)) and "." in path:
                hint = (" (a dataclass field that is not an array can be marked "
                        "field(metadata={\"static\": True}) to make it part of the "
                        "structure)")
            elif type(x).__module__ != "builtins":
                hint = (" (register its class with rune.tree.register, or give it "
                        "__rune_flatten__/__rune_unflatten__, to make it a tree)")
            else:
                hint = ""
            raise TypeError(f"{what}: {path} is {_article(type(x).__name__)}, not an array or a "
                            f"number, so it cannot be transformed{hint}")
    return leaves


def _article(noun):
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def check_diff_args(args, nums, allow_int, what, fun=None):
    """Check the arguments ``args[k]`` for ``k`` in ``nums`` that ``what`` differentiates:
    every leaf a number or an array, and (unless ``allow_int``) at least one floating
    leaf in each argument that has leaves: differentiating with respect to integers
    only has no meaning (JAX's rule).  Messages name ``fun``'s parameter."""
    for k in dict.fromkeys(nums):
        leaves, td = tree_util.flatten(args[k])
        if not all(map(_is_number_leaf, leaves)):
            check_leaves(leaves, td, _param(fun, len(args), k), what)
        if allow_int or not leaves or any(is_diff_leaf(x) for x in leaves if x is not None):
            continue
        dts = sorted({str(dtype_of(x)) for x in leaves if x is not None})
        raise TypeError(
            f"{what} differentiates with respect to argument {k} "
            f"({_param(fun, len(args), k)}), whose leaves are of dtype {', '.join(dts)}: a "
            f"derivative needs floating-point inputs. Pass floats (np.asarray(x, float)), or "
            f"allow_int=True for zero gradients")


def check_holomorphic(args, nums, what, fun=None):
    """``holomorphic=True`` (JAX's option): every leaf of the differentiated arguments is
    complex, or a TypeError naming the first that is not."""
    for k in dict.fromkeys(nums):
        leaves, td = tree_util.flatten(args[k])
        for j, x in enumerate(leaves):
            if x is not None and dtype_of(x).kind != "c":
                path = tree_util.leaf_paths(td, _param(fun, len(args), k))[j]
                raise TypeError(f"{what} with holomorphic=True needs complex inputs, but {path} "
                                f"has dtype {dtype_of(x)}; pass it as a complex array "
                                f"(np.asarray(x, complex))")


def check_holomorphic_out(out, what):
    """``holomorphic=True``: every leaf of the output is complex."""
    leaves, td = tree_util.flatten(out)
    for j, o in enumerate(leaves):
        if dtype_of(o).kind != "c":
            path = tree_util.leaf_paths(td, "out")[j]
            raise TypeError(f"{what} with holomorphic=True needs a complex output, but {path} "
                            f"has dtype {dtype_of(o)} (a real-valued function of a complex "
                            f"variable is not holomorphic: drop holomorphic=True)")


def check_real_inputs(args, nums, what, fun=None):
    """Without ``holomorphic``: no differentiated leaf is complex (as in JAX), or a TypeError
    naming the first that is.  Forward mode pushes real tangents, so a complex input would
    get only its derivative along the real axis: a partial Jacobian that ``jacrev``'s
    (``df/dx - i df/dy``) does not match."""
    for k in dict.fromkeys(nums):
        leaves, td = tree_util.flatten(args[k])
        for j, x in enumerate(leaves):
            if x is not None and dtype_of(x).kind == "c":
                path = tree_util.leaf_paths(td, _param(fun, len(args), k))[j]
                raise TypeError(
                    f"{what} needs real inputs unless f is holomorphic, but {path} has dtype "
                    f"{dtype_of(x)}: the derivative of a non-holomorphic f along the "
                    f"imaginary axis is not that along the real one, so no one complex "
                    f"matrix is its Jacobian. Pass holomorphic=True for a holomorphic f, or "
                    f"differentiate with respect to the real and imaginary parts (f(x + 1j * "
                    f"y) of real x, y); rune.grad and rune.jacrev of a real output give "
                    f"df/dx - i df/dy")


def check_real_out(out, what):
    """Without ``holomorphic``: no output leaf of ``jacrev`` is complex (as in JAX)."""
    leaves, td = tree_util.flatten(out)
    for j, o in enumerate(leaves):
        if dtype_of(o).kind == "c":
            path = tree_util.leaf_paths(td, "out")[j]
            raise TypeError(
                f"{what} needs real outputs unless f is holomorphic, but {path} has dtype "
                f"{dtype_of(o)}: reverse mode would give the Jacobian of its real part only. "
                f"Pass holomorphic=True for a holomorphic f, use rune.jacfwd (real inputs, "
                f"complex outputs: the whole complex Jacobian), or return np.real(...) and "
                f"np.imag(...) as two outputs")


def _param(fun, nargs, k):
    """The name of ``fun``'s positional parameter ``k`` (``args[k]`` when unknown)."""
    return arg_names(fun, nargs)[k] if fun is not None else f"args[{k}]"


_FLOAT_SCALARS = frozenset({float, complex, np.float16, np.float32, np.float64, np.longdouble,
                            np.complex64, np.complex128, np.clongdouble})


def check_scalar_output(out, what="grad"):
    """Raise unless ``out`` is a floating scalar (what ``grad`` can differentiate)."""
    if type(out) in _FLOAT_SCALARS or (type(out) is np.ndarray and out.dtype.kind in "fc"
                                       and out.shape == ()):
        return      # (the common cases first)
    if isinstance(out, (bool, int, np.bool_, np.integer)) or (
            hasattr(out, "dtype") and out.dtype.kind in "biu"):
        raise TypeError(f"{what} needs a real or complex floating-point scalar output; f "
                        f"returned an integer or boolean value ({describe(out)}); a "
                        f"non-floating output has no gradient")
    if isinstance(out, (float, complex)):
        return
    shape = getattr(out, "shape", None)
    dtype = getattr(out, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"{what} needs f to return a scalar array or float; it returned "
                        f"{describe(out)}")
    if dtype.kind not in "fc":
        raise TypeError(f"{what} needs a real or complex floating-point scalar output; f "
                        f"returned dtype {dtype}")
    if shape != ():
        raise ValueError(f"{what} needs f to return a scalar (shape ()), but it returned "
                         f"shape {tuple(shape)}; use rune.vjp for a vector-Jacobian "
                         f"product or rune.jacrev for the whole Jacobian")


def check_aux_pair(result):
    """``(out, aux)`` from a function called with ``has_aux=True``, or a clear error."""
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        got = describe(_plain(result)) if not isinstance(result, (tuple, list)) else \
            f"a {type(result).__name__} of length {len(result)}"
        raise TypeError(f"has_aux=True needs the function to return a pair (output, aux); "
                        f"it returned {got}")
    return result[0], result[1]


def _plain(x):
    """What a traced value stands for (for messages): its innermost value's type."""
    while isinstance(x, Tracer):
        x = x._val
    return x


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------

def zero_like(x, what=None):
    """A zero of leaf ``x``'s type, shape and dtype (a plain one for a traced ``x``).

    A leaf that is not a number or an array (a string) has no zero: None, or a
    TypeError naming ``what`` when given.
    """
    if isinstance(x, Tracer) and x._trace.records:     # rune.jit recording: what eager
        x = x._val                                       # rune gives the plain value
    if isinstance(x, bool):
        return False
    if isinstance(x, (int, float, complex)):
        return type(x)(0)
    if x is None:
        return None
    if isinstance(x, (Tracer, np.ndarray)):
        return np.zeros(x.shape, x.dtype)
    if isinstance(x, np.generic):
        return x.dtype.type(0)
    if is_duck_array(x):
        return np.zeros_like(x)             # lazy, in the leaf's own backend
    if what is None:
        return None
    raise TypeError(f"{what} cannot differentiate with respect to a {type(x).__name__} leaf")


def cast_like(c, dtype):
    """Cast a cotangent or tangent to ``dtype`` (the real part for a real ``dtype``)."""
    if c.dtype == dtype:
        return c
    if c.dtype.kind == "c" and dtype.kind != "c":
        c = np.real(c)
    return c.astype(dtype)


def to_user(g, leaf):
    """A cotangent returned to the user: the leaf's own type and dtype."""
    if type(g) is np.ndarray and type(leaf) is np.ndarray and g.dtype == leaf.dtype:
        return g        # (the common case first)
    if isinstance(leaf, Tracer) and leaf._trace.records:   # rune.jit recording: the type
        if isinstance(g, Tracer):                          # eager rune gives the plain
            return leaf._trace.like_leaf(g, leaf)          # input, on replay too
        leaf = leaf._val
    if isinstance(g, Tracer):
        return g
    if isinstance(leaf, (float, complex)):
        return type(leaf)(g) if not (isinstance(leaf, float) and np.iscomplexobj(g)) \
            else float(np.real(g))
    if isinstance(leaf, np.generic):
        return leaf.dtype.type(g)
    if isinstance(leaf, np.ndarray):
        g = _np_asarray(g)      # (NumPy's own: g is concrete here)
        if g.dtype != leaf.dtype:
            g = cast_like(g, leaf.dtype)
        return g
    if is_duck_array(leaf):                 # a Dask input gets a Dask derivative
        g = in_backend_of(g, leaf)
        if getattr(g, "dtype", leaf.dtype) != leaf.dtype:
            g = cast_like(g, leaf.dtype)
    return g


def unalias(outs, inputs):
    """Results the user may write into (SPEC 4): copy any output array that is read-only
    (a broadcast view) or whose memory belongs to an input's or an earlier output's
    (``grad(..., argnums=(0, 1))`` of ``x + y`` gives both the same cotangent)."""
    if len(outs) == 1:          # (the common cases first: one scalar, one fresh array out)
        o = outs[0]
        if not isinstance(o, np.ndarray):
            return outs
        if type(o) is np.ndarray and o.base is None and all(
                x is not o and (type(x) is not np.ndarray or x.base is None)
                for x in inputs) and o.flags.writeable:
            return outs
    owners = None
    res = []
    for o in outs:
        if isinstance(o, np.ndarray) and o.size:
            if owners is None:
                owners = {_owner(x) for x in inputs if isinstance(x, np.ndarray)}
            own = _owner(o)
            if own in owners or not o.flags.writeable:
                o = o.copy()
                own = id(o)
            owners.add(own)
        res.append(o)
    return res


def _owner(a):
    """The object that owns ``a``'s memory (the end of its chain of bases)."""
    while True:
        b = getattr(a, "base", None)      # (a chain may end in a capsule, a memoryview)
        if b is None:
            return id(a)
        a = b


def signature(fun):
    """``inspect.signature(fun)`` (inspect is imported on first use: ~10 ms at import)."""
    import inspect
    return inspect.signature(fun)


def arg_names(fun, nargs):
    """A name for each of ``nargs`` positional arguments of ``fun``: its parameter's name,
    or ``args[k]`` (for ``*args``, or a callable without a signature)."""
    try:
        names = [p.name for p in signature(fun).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return [names[k] if k < len(names) else f"args[{k}]" for k in range(nargs)]


def fun_name(f):
    """A function's name for messages (the type's name for a callable object)."""
    return getattr(f, "__name__", None) or type(f).__name__


def wrap_name(wrapper, f, what):
    """Name ``wrapper`` after the transformation ``what`` of ``f`` (``grad(loss)``)."""
    name = getattr(f, "__name__", "f")
    wrapper.__name__ = f"{what}({name})"
    wrapper.__qualname__ = wrapper.__name__
    wrapper.__doc__ = getattr(f, "__doc__", None)
    wrapper.__wrapped__ = f
