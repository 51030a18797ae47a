"""Learning-rate schedules: functions ``step -> rate`` (optax's names and formulas), ``step``
the number of updates made before this one (0 first).  Any callable of that shape is
accepted wherever an optimizer takes ``learning_rate``.

A schedule gives a Python float for a scalar step and an array for an array of steps
(``schedule(np.arange(100))`` to plot it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .transforms import _check_number

__all__ = ["constant_schedule", "linear_schedule", "cosine_decay_schedule",
           "exponential_decay", "warmup_cosine_decay_schedule", "join_schedules"]


def _out(x):
    x = np.asarray(x, np.float64)
    return x.item() if x.ndim == 0 else x


def _steps(step):
    return np.asarray(step, np.float64)


def _check_steps(value, name, who, positive=True):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"rune.optim.{who}: {name} must be an int, got "
                        f"{type(value).__name__} {value!r:.30}")
    if value < (1 if positive else 0):
        raise ValueError(f"rune.optim.{who}: {name} must be {'positive' if positive else '>= 0'}"
                         f", got {value}")


def constant_schedule(value: float) -> Callable[[Any], Any]:
    """``value`` at every step.

    Args:
        value: the value.

    Returns:
        A schedule: a function of the step (an int or an integer array) giving the
        value.

    Examples:
        >>> import rune
        >>> rune.optim.constant_schedule(0.1)(7)
        0.1

    See also:
        [`scale_by_learning_rate`][rune.optim.scale_by_learning_rate].
    """
    _check_number(value, "value", "constant_schedule", low=-np.inf)
    return lambda step: _out(np.full(np.shape(step), value, np.float64))


def linear_schedule(init_value: float, end_value: float, transition_steps: int,
                    transition_begin: int = 0) -> Callable[[Any], Any]:
    """From ``init_value`` (until ``transition_begin``) linearly to ``end_value``, reached
    ``transition_steps`` later and kept.

    Args:
        init_value: the value before the transition.
        end_value: the value after it.
        transition_steps: the transition's length in steps.
        transition_begin: the step it begins at.

    Returns:
        A schedule: a function of the step (an int or an integer array) giving the
        value.

    Examples:
        >>> import numpy as np, rune
        >>> rune.optim.linear_schedule(0.0, 1.0, 4)(np.arange(6))
        array([0.  , 0.25, 0.5 , 0.75, 1.  , 1.  ])

    See also:
        [`join_schedules`][rune.optim.join_schedules].
    """
    _check_steps(transition_steps, "transition_steps", "linear_schedule")
    _check_steps(transition_begin, "transition_begin", "linear_schedule", positive=False)

    def schedule(step):
        frac = np.clip((_steps(step) - transition_begin) / transition_steps, 0.0, 1.0)
        return _out(init_value + (end_value - init_value) * frac)
    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0,
                          exponent: float = 1.0) -> Callable[[Any], Any]:
    """``init_value * ((1 - alpha) * c**exponent + alpha)``, ``c = (1 + cos(pi * t /
    decay_steps)) / 2`` with ``t = min(step, decay_steps)``: from ``init_value`` down to
    ``alpha * init_value`` at ``decay_steps``.

    Args:
        init_value: the value at step 0.
        decay_steps: the steps to the end of the decay.
        alpha: the final value as a fraction of ``init_value``.
        exponent: the power of the cosine factor.

    Returns:
        A schedule: a function of the step (an int or an integer array) giving the
        value.

    Examples:
        >>> import numpy as np, rune
        >>> np.round(rune.optim.cosine_decay_schedule(1.0, 4)(np.arange(6)), 4)
        array([1.    , 0.8536, 0.5   , 0.1464, 0.    , 0.    ])

    See also:
        [`warmup_cosine_decay_schedule`][rune.optim.warmup_cosine_decay_schedule].
    """
    _check_steps(decay_steps, "decay_steps", "cosine_decay_schedule")
    _check_number(alpha, "alpha", "cosine_decay_schedule")

    def schedule(step):
        t = np.minimum(_steps(step), decay_steps)
        c = 0.5 * (1 + np.cos(np.pi * t / decay_steps))
        return _out(init_value * ((1 - alpha) * c ** exponent + alpha))
    return schedule


def exponential_decay(init_value: float, transition_steps: int, decay_rate: float,
                      transition_begin: int = 0, staircase: bool = False,
                      end_value: float | None = None) -> Callable[[Any], Any]:
    """``init_value * decay_rate ** ((step - transition_begin) / transition_steps)`` after
    ``transition_begin`` (the exponent rounded down with ``staircase``), bounded by
    ``end_value`` if given.

    Args:
        init_value: the value at the start.
        transition_steps: the steps per factor ``decay_rate``.
        decay_rate: the factor per ``transition_steps``.
        transition_begin: the step the decay begins at.
        staircase: decay in steps rather than continuously.
        end_value: a bound the value does not pass, or ``None``.

    Returns:
        A schedule: a function of the step (an int or an integer array) giving the
        value.

    Examples:
        >>> import numpy as np, rune
        >>> rune.optim.exponential_decay(1.0, 2, 0.5)(np.arange(5))
        array([1.        , 0.70710678, 0.5       , 0.35355339, 0.25      ])

    See also:
        [`cosine_decay_schedule`][rune.optim.cosine_decay_schedule].
    """
    _check_steps(transition_steps, "transition_steps", "exponential_decay")
    _check_steps(transition_begin, "transition_begin", "exponential_decay", positive=False)
    _check_number(decay_rate, "decay_rate", "exponential_decay", low_open=True)

    def schedule(step):
        p = np.maximum(_steps(step) - transition_begin, 0.0) / transition_steps
        if staircase:
            p = np.floor(p)
        rate = init_value * decay_rate ** p
        if end_value is not None:
            bound = np.maximum if decay_rate < 1 else np.minimum
            rate = bound(rate, end_value)
        return _out(rate)
    return schedule


def join_schedules(schedules: Sequence[Callable[[Any], Any]],
                   boundaries: Sequence[int]) -> Callable[[Any], Any]:
    """``schedules[i]`` from ``boundaries[i - 1]`` on, each given the steps since its
    boundary.

    Args:
        schedules: the schedules, in order.
        boundaries: the steps where each next schedule takes over (one fewer than the
            schedules).

    Returns:
        A schedule: a function of the step (an int or an integer array) giving the
        value.

    Examples:
        >>> import numpy as np, rune
        >>> s = rune.optim.join_schedules([rune.optim.constant_schedule(1.0),
        ...                                rune.optim.linear_schedule(1.0, 0.0, 2)], [2])
        >>> s(np.arange(5))
        array([1. , 1. , 1. , 0.5, 0. ])

    See also:
        [`linear_schedule`][rune.optim.linear_schedule].
    """
    schedules, boundaries = list(schedules), list(boundaries)
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"rune.optim.join_schedules takes one boundary fewer than schedules, "
                         f"got {len(schedules)} schedules and {len(boundaries)} boundaries")
    if any(b2 < b1 for b1, b2 in zip(boundaries, boundaries[1:])):
        raise ValueError(f"rune.optim.join_schedules: the boundaries {boundaries} must "
                         f"not decrease")

    def schedule(step):
        s = _steps(step)
        out = np.asarray(schedules[0](s), np.float64)
        for b, sch in zip(boundaries, schedules[1:]):
            out = np.where(s >= b, np.asarray(sch(s - b), np.float64), out)
        return _out(out)
    return schedule


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int,
                                 decay_steps: int, end_value: float = 0.0,
                                 exponent: float = 1.0) -> Callable[[Any], Any]:
    """Linear warmup from ``init_value`` to ``peak_value`` over ``warmup_steps``, then a
    cosine decay to ``end_value`` at step ``decay_steps`` (which counts the warmup).

    Args:
        init_value: the value at step 0.
        peak_value: the value at the end of the warmup.
        warmup_steps: the warmup's length in steps.
        decay_steps: the step the decay ends at (the warmup included).
        end_value: the value after the decay.
        exponent: as in [`cosine_decay_schedule`][rune.optim.cosine_decay_schedule].

    Returns:
        A schedule: a function of the step (an int or an integer array) giving the
        value.

    Examples:
        >>> import numpy as np, rune
        >>> s = rune.optim.warmup_cosine_decay_schedule(0.0, 1.0, 2, 6, end_value=0.1)
        >>> np.round(s(np.arange(8)), 4)
        array([0.    , 0.5   , 1.    , 0.8682, 0.55  , 0.2318, 0.1   , 0.1   ])

    See also:
        [`adamw`][rune.optim.adamw] (a schedule as its learning rate).
    """
    _check_steps(warmup_steps, "warmup_steps", "warmup_cosine_decay_schedule", positive=False)
    _check_steps(decay_steps, "decay_steps", "warmup_cosine_decay_schedule")
    if decay_steps <= warmup_steps:
        raise ValueError(f"rune.optim.warmup_cosine_decay_schedule: decay_steps "
                         f"({decay_steps}) counts the warmup and must exceed warmup_steps "
                         f"({warmup_steps})")
    _check_number(peak_value, "peak_value", "warmup_cosine_decay_schedule", low_open=True)
    alpha = end_value / peak_value
    cosine = cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)
    if warmup_steps == 0:
        return cosine
    warmup = linear_schedule(init_value, peak_value, warmup_steps)
    return join_schedules([warmup, cosine], [warmup_steps])
