"""Gradient transformations: the building blocks every optimizer of :mod:`rune.optim` is
chained from (optax's design: ``init(params) -> state``, ``update(updates, state,
params) -> (updates, state)``).

Every block maps the user's own tree to a tree of the same structure, leaf by leaf:

* a floating leaf's update (and its state: moments, traces) is computed and kept in the
  leaf's own dtype, and in its own kind (array, NumPy scalar, Python float): a float32
  leaf stays float32 (Python numbers are weak in NumPy's promotion, and concrete scalars
  such as the bias corrections and learning rates are used as Python numbers);
* a leaf that is not floating (an integer step counter in the record) gets a zero update
  and its state stays as it was: it is not trained;
* complex leaves are refused (the moments' conventions differ between libraries): train
  the real and imaginary parts as two real leaves.

The states are NamedTuples of trees shaped like the parameters, so they pickle, print and
flatten with :mod:`rune.tree` (``np.savez(f, *rune.tree.leaves(state))``).  The updates
are plain NumPy calls: an update is differentiable, so unrolled optimization steps can be
differentiated with ``rune.grad``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .. import tree as tree_util
from ..tree_prefix import broadcast_prefix
from ..core import Tracer

__all__ = ["GradientTransformation", "EmptyState", "ScaleByScheduleState", "TraceState",
           "ScaleByAdamState", "ScaleByRmsState", "ScaleByRStdDevState", "ScaleByRssState",
           "ScaleByLionState", "identity", "chain", "apply_updates", "global_norm", "scale",
           "scale_by_schedule", "scale_by_learning_rate", "clip_by_global_norm",
           "add_decayed_weights"]

Schedule = Callable[[Any], Any]


class GradientTransformation(NamedTuple):
    """``init(params) -> state`` and ``update(updates, state, params=None) ->
    (updates, state)``: an optimizer, or one block of one (see [`chain`][rune.optim.chain])."""

    init: Callable[[Any], Any]
    update: Callable[..., tuple[Any, Any]]


class EmptyState(NamedTuple):
    """The state of a stateless transformation."""


class ScaleByScheduleState(NamedTuple):
    count: Any


class TraceState(NamedTuple):
    trace: Any


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class ScaleByRmsState(NamedTuple):
    nu: Any


class ScaleByRStdDevState(NamedTuple):
    mu: Any
    nu: Any


class ScaleByRssState(NamedTuple):
    sum_of_squares: Any


class ScaleByLionState(NamedTuple):
    count: Any
    mu: Any


# --------------------------------------------------------------------------
# leaf by leaf, in each leaf's own dtype
# --------------------------------------------------------------------------

def _is_float(x):
    dt = getattr(x, "dtype", None)
    if isinstance(dt, np.dtype):
        return dt.kind == "f"
    return isinstance(x, float)


def _dtype(x):
    dt = getattr(x, "dtype", None)
    return dt if isinstance(dt, np.dtype) else np.asarray(x).dtype


def _num(x):
    """A concrete scalar as a Python number (weak: a float32 leaf times it stays float32);
    a traced one as it is."""
    if isinstance(x, Tracer):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return x.item()
    return x


def _like(x, ref):
    """``x`` in ``ref``'s dtype and kind: an array, a NumPy scalar or a Python number
    (traced values are cast and stay traced)."""
    dt = _dtype(ref)
    if isinstance(x, Tracer):
        return x if x.dtype == dt else x.astype(dt)
    if isinstance(ref, (np.ndarray, Tracer)):
        return np.asarray(x, dtype=dt)
    if isinstance(ref, np.generic):
        return dt.type(x)
    if type(ref) in (bool, int, float):
        return type(ref)(x)
    return x.astype(dt) if getattr(x, "dtype", dt) != dt else x


def _check_params(params, who):
    for path, leaf in zip(tree_util.leaf_paths(tree_util.structure(params), "params"),
                          tree_util.leaves(params)):
        dt = getattr(leaf, "dtype", None)
        if isinstance(leaf, complex) or isinstance(dt, np.dtype) and dt.kind == "c":
            raise TypeError(f"rune.optim.{who}: the leaf {path} is complex; rune.optim "
                            f"trains real leaves (keep the real and imaginary parts as two "
                            f"real leaves)")
        if not (isinstance(dt, np.dtype) and dt.kind in "biuf"
                or isinstance(leaf, (bool, int, float, Tracer))):
            raise TypeError(f"rune.optim.{who}: the leaf {path} is a {type(leaf).__name__}, "
                            f"not a number or a numeric array")


def _zeros_like(params, fill=0.0):
    return tree_util.map(lambda p: np.full(np.shape(p), fill, _dtype(p))
                         if _is_float(p) else np.zeros(np.shape(p), _dtype(p)), params)


def _column(tree, td, who, what):
    lv, d = tree_util.flatten(tree)
    if d != td:
        tree_util.check_same(td, d, "updates", f"the updates and the {what} given to "
                                               f"rune.optim.{who}'s update")
    return lv


def _per_leaf(who, fn, updates, *states, names=()):
    """Apply ``fn(g, *state_leaves) -> (update, *new_state_leaves)`` to each floating leaf
    of ``updates``; the others get a zero update and keep their state.  Returns the new
    updates tree and one new tree per state tree."""
    lv, td = tree_util.flatten(updates)
    cols = [_column(s, td, who, n) for s, n in zip(states, names or ("state",) * len(states))]
    outs = []
    for g, *st in zip(lv, *cols):
        if _is_float(g):
            new = fn(g, *st)
            outs.append([_like(new[0], g)] + [_like(v, s) for v, s in zip(new[1:], st)])
        else:
            outs.append([np.zeros_like(g)] + st)
    columns = list(zip(*outs)) if outs else [()] * (1 + len(states))
    return [tree_util.unflatten(td, list(c)) for c in columns]


def _count_up(count):
    return count + 1 if isinstance(count, Tracer) else np.asarray(count + 1, np.int64)


def _zero_count():
    return np.asarray(0, np.int64)


def _check_number(value, name, who, low=0.0, high=None, low_open=False):
    if isinstance(value, Tracer):
        return
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                      np.floating)):
        raise TypeError(f"rune.optim.{who}: {name} must be a real number, got "
                        f"{type(value).__name__} {value!r:.40}")
    bad = value < low or (low_open and value == low) or (high is not None and value >= high)
    if bad or not np.isfinite(value):
        span = f"{'(' if low_open else '['}{low}, {high if high is not None else 'inf'})"
        raise ValueError(f"rune.optim.{who}: {name} must be in {span}, got {value}")


def _check_rate(value, name, who):
    if not callable(value):
        _check_number(value, name, who)


# --------------------------------------------------------------------------
# composition
# --------------------------------------------------------------------------

def identity() -> GradientTransformation:
    """The updates unchanged (``sgd`` without momentum chains it).

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import rune
        >>> rune.optim.identity().update({"w": 1.0}, rune.optim.EmptyState())[0]
        {'w': 1.0}

    See also:
        [`chain`][rune.optim.chain], [`sgd`][rune.optim.sgd].
    """
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None: (updates, state))


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Apply ``transforms`` one after another; the state is the tuple of their states.

    Args:
        *transforms: the blocks, applied first to last.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation]. Its state is
        the tuple of the blocks' states.

    Examples:
        >>> import numpy as np, rune
        >>> opt = rune.optim.chain(rune.optim.clip_by_global_norm(1.0), rune.optim.scale(-0.1))
        >>> opt.update({"w": np.array([3.0, 4.0])}, opt.init({"w": np.zeros(2)}))[0]
        {'w': array([-0.06, -0.08])}

    See also:
        [`GradientTransformation`][rune.optim.GradientTransformation],
        [`adam`][rune.optim.adam] (a chain of blocks).
    """
    for i, t in enumerate(transforms):
        if not isinstance(t, GradientTransformation):
            raise TypeError(f"rune.optim.chain: argument {i} is a {type(t).__name__}, not a "
                            f"GradientTransformation (rune.optim.adam(...), scale(...), ...)")

    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        if not isinstance(state, tuple) or len(state) != len(transforms):
            raise ValueError(f"rune.optim.chain: the state must be the tuple of "
                             f"{len(transforms)} states that init gave")
        new_states = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_states.append(s)
        return updates, tuple(new_states)

    return GradientTransformation(init, update)


def apply_updates(params: Any, updates: Any) -> Any:
    """``params + updates`` leaf by leaf, each result in its parameter's dtype and kind.

    Args:
        params: the parameters: a tree.
        updates: a tree of the same structure, from an ``update``.

    Returns:
        The new parameters, each leaf in its parameter's dtype and kind.

    Examples:
        >>> import numpy as np, rune
        >>> rune.optim.apply_updates({"w": np.ones(2, np.float32)}, {"w": np.array([0.5, 1.0])})
        {'w': array([1.5, 2. ], dtype=float32)}

    See also:
        [`GradientTransformation`][rune.optim.GradientTransformation].
    """
    lv, td = tree_util.flatten(params)
    ul = _column(updates, td, "apply_updates", "parameters")
    return tree_util.unflatten(td, [_like(p + u, p) for p, u in zip(lv, ul)])


def global_norm(updates: Any) -> Any:
    """The 2-norm of all the floating leaves together (a Python float when concrete).

    Args:
        updates: a tree; its floating leaves count.

    Returns:
        The norm (a Python float, or a traced value under a transformation).

    Examples:
        >>> import numpy as np, rune
        >>> rune.optim.global_norm({"a": np.array([3.0]), "b": 4.0})
        5.0

    See also:
        [`clip_by_global_norm`][rune.optim.clip_by_global_norm].
    """
    total = 0.0
    for x in tree_util.leaves(updates):
        if _is_float(x):
            total = total + _num(np.sum(np.square(x)))
    return _num(np.sqrt(total))


# --------------------------------------------------------------------------
# scaling
# --------------------------------------------------------------------------

def scale(step_size: float) -> GradientTransformation:
    """Multiply the updates by ``step_size``.

    Args:
        step_size: the factor.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import rune
        >>> rune.optim.scale(-2.0).update([1.5], rune.optim.EmptyState())[0]
        [-3.0]

    See also:
        [`scale_by_learning_rate`][rune.optim.scale_by_learning_rate],
        [`scale_by_schedule`][rune.optim.scale_by_schedule].
    """
    if not isinstance(step_size, Tracer):
        _check_number(step_size, "step_size", "scale", low=-np.inf)
        step_size = _num(step_size)

    def update(updates, state, params=None):
        return _per_leaf("scale", lambda g: (g * step_size,), updates)[0], state

    return GradientTransformation(lambda params: EmptyState(), update)


def scale_by_schedule(step_size_fn: Schedule) -> GradientTransformation:
    """Multiply the updates by ``step_size_fn(count)``, ``count`` the number of updates
    made before this one (0 first).

    Args:
        step_size_fn: ``count -> factor``.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import rune
        >>> t = rune.optim.scale_by_schedule(lambda n: 10.0 ** -n)
        >>> s = t.init([0.0])
        >>> u1, s = t.update([1.0], s)
        >>> u2, s = t.update([1.0], s)
        >>> u1, u2, int(s.count)
        ([1.0], [0.1], 2)

    See also:
        [`scale`][rune.optim.scale], the schedules
        ([`cosine_decay_schedule`][rune.optim.cosine_decay_schedule], ...).
    """
    if not callable(step_size_fn):
        raise TypeError(f"rune.optim.scale_by_schedule takes a callable step -> step size, "
                        f"got {type(step_size_fn).__name__}")

    def update(updates, state, params=None):
        factor = _num(step_size_fn(state.count))
        out = _per_leaf("scale_by_schedule", lambda g: (g * factor,), updates)[0]
        return out, ScaleByScheduleState(_count_up(state.count))

    return GradientTransformation(lambda params: ScaleByScheduleState(_zero_count()), update)


def scale_by_learning_rate(learning_rate: float | Schedule, *,
                           flip_sign: bool = True) -> GradientTransformation:
    """Multiply by ``-learning_rate`` (a number, or a schedule ``step -> rate``).

    Args:
        learning_rate: a number, or a schedule ``step -> rate`` (``step`` counts the
            updates made before, 0 first).
        flip_sign: multiply by ``-learning_rate`` (descent); ``False``: by
            ``learning_rate``.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import rune
        >>> rune.optim.scale_by_learning_rate(0.1).update([2.0], rune.optim.EmptyState())[0]
        [-0.2]

    See also:
        [`scale`][rune.optim.scale], [`chain`][rune.optim.chain].
    """
    _check_rate(learning_rate, "learning_rate", "scale_by_learning_rate")
    sign = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    return scale(sign * _num(learning_rate))


# --------------------------------------------------------------------------
# clipping and weight decay
# --------------------------------------------------------------------------

def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Scale the updates by ``max_norm / max(norm, max_norm)``, ``norm`` their
    [`global_norm`][rune.optim.global_norm]: the direction kept, the length at most ``max_norm``.

    Args:
        max_norm: the largest global norm let through.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import numpy as np, rune
        >>> t = rune.optim.clip_by_global_norm(1.0)
        >>> t.update((np.array([3.0]), 4.0), t.init((np.zeros(1), 0.0)))[0]
        (array([0.6]), 0.8)

    See also:
        [`global_norm`][rune.optim.global_norm], [`chain`][rune.optim.chain].
    """
    _check_number(max_norm, "max_norm", "clip_by_global_norm", low_open=True)

    def update(updates, state, params=None):
        norm = global_norm(updates)
        factor = _num(max_norm / np.maximum(norm, max_norm))
        return _per_leaf("clip_by_global_norm", lambda g: (g * factor,), updates)[0], state

    return GradientTransformation(lambda params: EmptyState(), update)


Mask = Any     # a callable path -> bool, or a tree of bools


def _mask_leaves(mask, params, td):
    if mask is None:
        return [True] * td.num_leaves
    if callable(mask) and not isinstance(mask, (bool, np.bool_)):
        out = []
        for path in tree_util.leaf_paths(td, "params"):
            m = mask(path)
            if not isinstance(m, (bool, np.bool_)):
                raise TypeError(f"rune.optim.add_decayed_weights: the mask gave "
                                f"{type(m).__name__} {m!r:.30} for {path}; it must give a bool")
            out.append(bool(m))
        return out
    is_flag = lambda m: isinstance(m, (bool, np.bool_))        # noqa: E731
    flags = broadcast_prefix(mask, params, is_flag, "mask", "the mask",
                                       "parameter")
    return [bool(m) for m in flags]


def add_decayed_weights(weight_decay: float = 0.0,
                        mask: Mask = None) -> GradientTransformation:
    """Add ``weight_decay * params`` to the updates (decoupled weight decay when chained
    before the learning rate: AdamW's ``p -= lr * (update + wd * p)``).

    ``mask`` picks the leaves that decay: a callable on the leaf's path (a string such as
    ``"params.w"`` or ``"params['layers'][0].b"``, as rune's error messages name leaves)
    giving a bool, or a tree of bools shaped like the parameters (or a prefix of them: one
    bool stands for a whole subtree).

    Args:
        weight_decay: the factor of ``params`` added.
        mask: the leaves that decay: a callable on each leaf's path (``"params['w']"``)
            giving a bool, or a tree of bools shaped like the parameters (or a prefix of
            it); ``None``: every floating leaf.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import numpy as np, rune
        >>> t = rune.optim.add_decayed_weights(0.5, mask=lambda path: path.endswith("['w']"))
        >>> p = {"w": np.array([2.0]), "b": np.array([2.0])}
        >>> t.update({"w": np.zeros(1), "b": np.zeros(1)}, t.init(p), p)[0]
        {'w': array([1.]), 'b': array([0.])}

    See also:
        [`adamw`][rune.optim.adamw], [`lion`][rune.optim.lion].
    """
    _check_number(weight_decay, "weight_decay", "add_decayed_weights")
    if mask is not None and not callable(mask):
        mask_leaves = tree_util.leaves(mask)
        if not all(isinstance(m, (bool, np.bool_)) for m in mask_leaves):
            raise TypeError("rune.optim.add_decayed_weights: mask must be a callable on the "
                            "leaf path or a tree of bools")
    cache: dict[Any, list[bool]] = {}

    def init(params):
        _check_params(params, "add_decayed_weights")
        td = tree_util.structure(params)
        cache[td] = _mask_leaves(mask, params, td)
        return EmptyState()

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("rune.optim.add_decayed_weights needs the parameters: call "
                             "update(updates, state, params)")
        lv, td = tree_util.flatten(params)
        if td not in cache:
            cache[td] = _mask_leaves(mask, params, td)
        flags = cache[td]
        ul = _column(updates, td, "add_decayed_weights", "parameters")
        out = [_like(u + weight_decay * p, u) if f and _is_float(u) else u
               for u, p, f in zip(ul, lv, flags)]
        return tree_util.unflatten(td, out), state

    return GradientTransformation(init, update)
