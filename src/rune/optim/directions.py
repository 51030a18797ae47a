"""The directions of the optimizers: momentum and the moment estimates (``trace``,
``scale_by_adam``, ``scale_by_rms``, ``scale_by_stddev``, ``scale_by_rss``,
``scale_by_lion``), each a gradient transformation of ``rune.optim.transforms``'s kind,
leaf by leaf in each leaf's own dtype (that module's docstring says how).
"""

from __future__ import annotations

import numpy as np

from .transforms import (GradientTransformation, ScaleByAdamState, ScaleByLionState,
                         ScaleByRmsState, ScaleByRssState, ScaleByRStdDevState, TraceState,
                         _check_number, _check_params, _count_up, _num, _per_leaf,
                         _zero_count, _zeros_like)

__all__ = ["trace", "scale_by_adam", "scale_by_rms", "scale_by_stddev", "scale_by_rss",
           "scale_by_lion"]


# --------------------------------------------------------------------------
# momentum and moments
# --------------------------------------------------------------------------

def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
    """Momentum: ``t = g + decay * t``; the update is ``t``, or ``g + decay * t`` with
    ``nesterov`` (PyTorch's SGD momentum with ``dampening=0``).

    Args:
        decay: the momentum factor.
        nesterov: Nesterov's momentum: the update ``g + decay * t``.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import rune
        >>> t = rune.optim.trace(0.5)
        >>> s = t.init([0.0])
        >>> u, s = t.update([1.0], s)
        >>> u, s = t.update([1.0], s)
        >>> u
        [1.5]

    See also:
        [`sgd`][rune.optim.sgd], [`rmsprop`][rune.optim.rmsprop].
    """
    _check_number(decay, "decay (momentum)", "trace")

    def init(params):
        _check_params(params, "trace")
        return TraceState(_zeros_like(params))

    def step(g, t):
        t = g + decay * t
        return (g + decay * t if nesterov else t), t

    def update(updates, state, params=None):
        out, tr = _per_leaf("trace", step, updates, state.trace, names=("momentum trace",))
        return out, TraceState(tr)

    return GradientTransformation(init, update)


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                  eps_root: float = 0.0) -> GradientTransformation:
    """Adam's direction: ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g**2``, the
    update ``m_hat / (sqrt(v_hat + eps_root) + eps)`` with ``m_hat = m / (1 - b1**t)``,
    ``v_hat = v / (1 - b2**t)`` at step ``t = 1, 2, ...``.

    Args:
        b1: the decay of the first moment.
        b2: the decay of the second moment.
        eps: added to the root of the second moment.
        eps_root: added to the second moment under the root.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import rune
        >>> t = rune.optim.scale_by_adam()
        >>> round(t.update([-3.0], t.init([0.0]))[0][0], 6)    # the first step is sign(g)
        -1.0

    See also:
        [`adam`][rune.optim.adam], [`adamw`][rune.optim.adamw].
    """
    for name, b in (("b1", b1), ("b2", b2)):
        _check_number(b, name, "scale_by_adam", high=1.0)
    _check_number(eps, "eps", "scale_by_adam")
    _check_number(eps_root, "eps_root", "scale_by_adam")

    def init(params):
        _check_params(params, "scale_by_adam")
        return ScaleByAdamState(_zero_count(), _zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        count = _count_up(state.count)
        c = _num(count)
        bc1, bc2 = _num(1 - b1 ** c), _num(1 - b2 ** c)

        def step(g, m, v):
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * np.square(g)
            return (m / bc1) / (np.sqrt(v / bc2 + eps_root) + eps), m, v
        out, mu, nu = _per_leaf("scale_by_adam", step, updates, state.mu, state.nu,
                                names=("first moments", "second moments"))
        return out, ScaleByAdamState(count, mu, nu)

    return GradientTransformation(init, update)


def _rms_denominator(v, eps, eps_in_sqrt):
    return np.sqrt(v + eps) if eps_in_sqrt else np.sqrt(v) + eps


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                 eps_in_sqrt: bool = True) -> GradientTransformation:
    """RMSProp's direction: ``v = decay v + (1 - decay) g**2``, the update
    ``g / sqrt(v + eps)`` (optax), or ``g / (sqrt(v) + eps)`` with ``eps_in_sqrt=False``
    (PyTorch's ``RMSprop``, whose ``alpha`` is ``decay``).

    Args:
        decay: the decay of the mean square.
        eps: the stabilizer (see ``eps_in_sqrt``).
        initial_scale: the mean square's starting value.
        eps_in_sqrt: ``eps`` under the root (optax) or added to it (PyTorch).

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import rune
        >>> t = rune.optim.scale_by_rms(decay=0.75, eps=0.0)
        >>> t.update([2.0], t.init([0.0]))[0]                  # 2 / sqrt(0.25 * 4)
        [2.0]

    See also:
        [`rmsprop`][rune.optim.rmsprop], [`scale_by_stddev`][rune.optim.scale_by_stddev].
    """
    _check_number(decay, "decay", "scale_by_rms", high=1.0)
    _check_number(eps, "eps", "scale_by_rms")
    _check_number(initial_scale, "initial_scale", "scale_by_rms")

    def init(params):
        _check_params(params, "scale_by_rms")
        return ScaleByRmsState(_zeros_like(params, initial_scale))

    def step(g, v):
        v = decay * v + (1 - decay) * np.square(g)
        return g / _rms_denominator(v, eps, eps_in_sqrt), v

    def update(updates, state, params=None):
        out, nu = _per_leaf("scale_by_rms", step, updates, state.nu, names=("averages",))
        return out, ScaleByRmsState(nu)

    return GradientTransformation(init, update)


def scale_by_stddev(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                    eps_in_sqrt: bool = True) -> GradientTransformation:
    """Centered RMSProp's direction: as [`scale_by_rms`][rune.optim.scale_by_rms] with
    ``v - m**2`` in place of ``v``, where ``m = decay m + (1 - decay) g``.

    Args:
        decay: the decay of the mean and the mean square.
        eps: the stabilizer (see ``eps_in_sqrt``).
        initial_scale: the mean square's starting value.
        eps_in_sqrt: as in [`scale_by_rms`][rune.optim.scale_by_rms].

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import rune
        >>> t = rune.optim.scale_by_stddev(decay=0.5, eps=0.0)
        >>> t.update([2.0], t.init([0.0]))[0]                  # 2 / sqrt(0.5 * 4 - 1)
        [2.0]

    See also:
        [`rmsprop`][rune.optim.rmsprop] with ``centered=True``.
    """
    _check_number(decay, "decay", "scale_by_stddev", high=1.0)
    _check_number(eps, "eps", "scale_by_stddev")
    _check_number(initial_scale, "initial_scale", "scale_by_stddev")

    def init(params):
        _check_params(params, "scale_by_stddev")
        return ScaleByRStdDevState(_zeros_like(params), _zeros_like(params, initial_scale))

    def step(g, m, v):
        m = decay * m + (1 - decay) * g
        v = decay * v + (1 - decay) * np.square(g)
        return g / _rms_denominator(v - np.square(m), eps, eps_in_sqrt), m, v

    def update(updates, state, params=None):
        out, mu, nu = _per_leaf("scale_by_stddev", step, updates, state.mu, state.nu,
                                names=("means", "averages"))
        return out, ScaleByRStdDevState(mu, nu)

    return GradientTransformation(init, update)


def scale_by_rss(initial_accumulator_value: float = 0.1,
                 eps: float = 1e-7) -> GradientTransformation:
    """Adagrad's direction: ``s = s + g**2``, the update ``g / sqrt(s + eps)`` (0 where
    ``s`` is 0).

    Args:
        initial_accumulator_value: the sum's starting value.
        eps: added under the root.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import rune
        >>> t = rune.optim.scale_by_rss(initial_accumulator_value=0.0, eps=0.0)
        >>> t.update([-3.0], t.init([0.0]))[0]
        [-1.0]

    See also:
        [`adagrad`][rune.optim.adagrad].
    """
    _check_number(initial_accumulator_value, "initial_accumulator_value", "scale_by_rss")
    _check_number(eps, "eps", "scale_by_rss")

    def init(params):
        _check_params(params, "scale_by_rss")
        return ScaleByRssState(_zeros_like(params, initial_accumulator_value))

    def step(g, s):
        s = s + np.square(g)
        positive = s > 0
        return g * np.where(positive, 1 / np.sqrt(np.where(positive, s, 1) + eps), 0), s

    def update(updates, state, params=None):
        out, ss = _per_leaf("scale_by_rss", step, updates, state.sum_of_squares,
                            names=("sums of squares",))
        return out, ScaleByRssState(ss)

    return GradientTransformation(init, update)


def scale_by_lion(b1: float = 0.9, b2: float = 0.99) -> GradientTransformation:
    """Lion's direction: the update ``sign(b1 m + (1 - b1) g)``, then
    ``m = b2 m + (1 - b2) g``.

    Args:
        b1: the interpolation of the update's sign.
        b2: the decay of the momentum.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import rune
        >>> t = rune.optim.scale_by_lion()
        >>> t.update([-0.003], t.init([0.0]))[0]
        [-1.0]

    See also:
        [`lion`][rune.optim.lion].
    """
    _check_number(b1, "b1", "scale_by_lion", high=1.0)
    _check_number(b2, "b2", "scale_by_lion", high=1.0)

    def init(params):
        _check_params(params, "scale_by_lion")
        return ScaleByLionState(_zero_count(), _zeros_like(params))

    def step(g, m):
        return np.sign(b1 * m + (1 - b1) * g), b2 * m + (1 - b2) * g

    def update(updates, state, params=None):
        out, mu = _per_leaf("scale_by_lion", step, updates, state.mu, names=("moments",))
        return out, ScaleByLionState(_count_up(state.count), mu)

    return GradientTransformation(init, update)
