"""The optimizers: chains of :mod:`rune.optim.transforms` blocks with optax's names,
arguments and defaults.  ``learning_rate`` is a number or a schedule ``step -> rate``
(:mod:`rune.optim.schedules`), ``step`` counting the updates made before (0 first).

Where PyTorch's update differs from optax's, the docstring says how to get PyTorch's.
"""

from __future__ import annotations

from .directions import (scale_by_adam, scale_by_lion, scale_by_rms, scale_by_rss,
                         scale_by_stddev, trace)
from .transforms import (GradientTransformation, Mask, Schedule, _check_number,
                         _check_rate, add_decayed_weights, chain, identity,
                         scale_by_learning_rate)

__all__ = ["sgd", "adam", "adamw", "rmsprop", "adagrad", "lion"]

Rate = float | Schedule


def sgd(learning_rate: Rate, momentum: float | None = None,
        nesterov: bool = False) -> GradientTransformation:
    """Stochastic gradient descent, with momentum ``b = momentum * b + g`` and the step
    ``-lr * b`` (``-lr * (g + momentum * b)`` with ``nesterov``): PyTorch's ``SGD`` with
    ``dampening=0``.

    Args:
        learning_rate: a number, or a schedule ``step -> rate`` (``step`` counts the
            updates made before, 0 first).
        momentum: the momentum factor, or ``None`` for none.
        nesterov: Nesterov's momentum (needs ``momentum``).

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import numpy as np, rune
        >>> opt = rune.optim.sgd(learning_rate=0.1, momentum=0.9)
        >>> params = {"w": np.array([1.0, -2.0])}
        >>> state = opt.init(params)
        >>> grads = {"w": np.array([1.0, 1.0])}
        >>> updates, state = opt.update(grads, state, params)
        >>> rune.optim.apply_updates(params, updates)
        {'w': array([ 0.9, -2.1])}

    See also:
        [`trace`][rune.optim.trace], [`adam`][rune.optim.adam],
        [`apply_updates`][rune.optim.apply_updates].
    """
    _check_rate(learning_rate, "learning_rate", "sgd")
    if momentum is None:
        if nesterov:
            raise ValueError("rune.optim.sgd: nesterov=True needs a momentum")
        first = identity()
    else:
        _check_number(momentum, "momentum", "sgd")
        first = trace(momentum, nesterov)
    return chain(first, scale_by_learning_rate(learning_rate))


def adam(learning_rate: Rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
         eps_root: float = 0.0) -> GradientTransformation:
    """Adam: the step ``-lr * m_hat / (sqrt(v_hat + eps_root) + eps)`` of
    [`scale_by_adam`][rune.optim.scale_by_adam] (the bias-corrected moments); PyTorch's ``Adam``.

    Args:
        learning_rate: a number, or a schedule ``step -> rate`` (``step`` counts the
            updates made before, 0 first).
        b1: the decay of the first moment.
        b2: the decay of the second moment.
        eps: added to the root of the second moment.
        eps_root: added to the second moment under the root.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import numpy as np, rune
        >>> opt = rune.optim.adam(learning_rate=0.1)
        >>> params = np.array([1.0, 2.0], np.float32)
        >>> updates, state = opt.update(np.array([0.5, -4.0], np.float32), opt.init(params))
        >>> rune.optim.apply_updates(params, updates)
        array([0.9, 2.1], dtype=float32)

    See also:
        [`adamw`][rune.optim.adamw], [`scale_by_adam`][rune.optim.scale_by_adam].
    """
    _check_rate(learning_rate, "learning_rate", "adam")
    return chain(scale_by_adam(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def adamw(learning_rate: Rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          eps_root: float = 0.0, weight_decay: float = 1e-4,
          mask: Mask = None) -> GradientTransformation:
    """Adam with decoupled weight decay: ``p -= lr * (adam_update + weight_decay * p)``
    (PyTorch's ``AdamW``, whose default ``weight_decay`` is 0.01).  ``mask`` picks the
    leaves that decay (see [`add_decayed_weights`][rune.optim.add_decayed_weights]).

    Args:
        learning_rate: a number, or a schedule ``step -> rate`` (``step`` counts the
            updates made before, 0 first).
        b1: as in [`adam`][rune.optim.adam].
        b2: as in ``adam``.
        eps: as in ``adam``.
        eps_root: as in ``adam``.
        weight_decay: the decoupled weight decay.
        mask: the leaves that decay: a callable on each leaf's path (``"params['w']"``)
            giving a bool, or a tree of bools shaped like the parameters (or a prefix of
            it); ``None``: every floating leaf.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import numpy as np, rune
        >>> opt = rune.optim.adamw(0.1, weight_decay=0.5, mask=lambda path: path == "params['w']")
        >>> params = {"w": np.array([2.0]), "b": np.array([2.0])}
        >>> grads = {"w": np.array([1.0]), "b": np.array([1.0])}
        >>> updates, state = opt.update(grads, opt.init(params), params)
        >>> rune.tree.map(lambda u: np.round(u, 6), updates)     # -0.1 * (1 + 0.5 * 2)
        {'w': array([-0.2]), 'b': array([-0.1])}

    See also:
        [`adam`][rune.optim.adam], [`add_decayed_weights`][rune.optim.add_decayed_weights].
    """
    _check_rate(learning_rate, "learning_rate", "adamw")
    return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate: Rate, decay: float = 0.9, eps: float = 1e-8,
            initial_scale: float = 0.0, eps_in_sqrt: bool = True, centered: bool = False,
            momentum: float | None = None, nesterov: bool = False) -> GradientTransformation:
    """RMSProp: the step ``-lr * g / sqrt(v + eps)``, ``v`` the running average of ``g**2``
    (``v - m**2`` if ``centered``), then an optional momentum as in [`sgd`][rune.optim.sgd].
    PyTorch's ``RMSprop(lr, alpha=decay, eps, momentum, centered)`` is
    ``eps_in_sqrt=False``: ``g / (sqrt(v) + eps)``.

    Args:
        learning_rate: a number, or a schedule ``step -> rate`` (``step`` counts the
            updates made before, 0 first).
        decay: the decay of the mean square (PyTorch's ``alpha``).
        eps: the stabilizer.
        initial_scale: the mean square's start.
        eps_in_sqrt: ``eps`` under the root (optax) or added to it (PyTorch).
        centered: divide by the standard deviation instead.
        momentum: a momentum factor, or ``None``.
        nesterov: Nesterov's momentum (needs ``momentum``).

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import rune
        >>> opt = rune.optim.rmsprop(learning_rate=0.1, decay=0.75, eps=0.0)
        >>> opt.update([2.0], opt.init([0.0]))[0]
        [-0.2]

    See also:
        [`scale_by_rms`][rune.optim.scale_by_rms],
        [`scale_by_stddev`][rune.optim.scale_by_stddev].
    """
    _check_rate(learning_rate, "learning_rate", "rmsprop")
    block = scale_by_stddev if centered else scale_by_rms
    parts = [block(decay, eps, initial_scale, eps_in_sqrt)]
    if momentum is not None:
        _check_number(momentum, "momentum", "rmsprop")
        parts.append(trace(momentum, nesterov))
    elif nesterov:
        raise ValueError("rune.optim.rmsprop: nesterov=True needs a momentum")
    return chain(*parts, scale_by_learning_rate(learning_rate))


def adagrad(learning_rate: Rate, initial_accumulator_value: float = 0.1,
            eps: float = 1e-7) -> GradientTransformation:
    """Adagrad: ``s = s + g**2`` from ``initial_accumulator_value``, the step
    ``-lr * g / sqrt(s + eps)``.  PyTorch's ``Adagrad`` puts ``eps`` (1e-10) outside the
    root, ``g / (sqrt(s) + eps)``, and starts from 0; the two agree at ``eps=0``.

    Args:
        learning_rate: a number, or a schedule ``step -> rate`` (``step`` counts the
            updates made before, 0 first).
        initial_accumulator_value: the sum of squares' starting value.
        eps: added under the root.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import rune
        >>> opt = rune.optim.adagrad(learning_rate=0.5, initial_accumulator_value=0.0, eps=0.0)
        >>> opt.update([-4.0], opt.init([0.0]))[0]
        [0.5]

    See also:
        [`scale_by_rss`][rune.optim.scale_by_rss].
    """
    _check_rate(learning_rate, "learning_rate", "adagrad")
    return chain(scale_by_rss(initial_accumulator_value, eps),
                 scale_by_learning_rate(learning_rate))


def lion(learning_rate: Rate, b1: float = 0.9, b2: float = 0.99, weight_decay: float = 1e-3,
         mask: Mask = None) -> GradientTransformation:
    """Lion (Chen et al., 2023): ``p -= lr * (sign(b1 m + (1 - b1) g) + weight_decay * p)``,
    then ``m = b2 m + (1 - b2) g``; ``mask`` as in [`adamw`][rune.optim.adamw].

    Args:
        learning_rate: a number, or a schedule ``step -> rate`` (``step`` counts the
            updates made before, 0 first).
        b1: the interpolation of the update's sign.
        b2: the decay of the momentum.
        weight_decay: the decoupled weight decay.
        mask: the leaves that decay: a callable on each leaf's path (``"params['w']"``)
            giving a bool, or a tree of bools shaped like the parameters (or a prefix of
            it); ``None``: every floating leaf.

    Returns:
        A [`GradientTransformation`][rune.optim.GradientTransformation].

    Examples:
        >>> import numpy as np, rune
        >>> opt = rune.optim.lion(learning_rate=0.01, weight_decay=0.0)
        >>> params = np.array([1.0, 1.0])
        >>> updates, state = opt.update(np.array([0.2, -5.0]), opt.init(params), params)
        >>> updates
        array([-0.01,  0.01])

    See also:
        [`scale_by_lion`][rune.optim.scale_by_lion], [`adamw`][rune.optim.adamw].
    """
    _check_rate(learning_rate, "learning_rate", "lion")
    return chain(scale_by_lion(b1, b2), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))
