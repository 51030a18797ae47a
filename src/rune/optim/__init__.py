"""Optimizers over the user's own records (dataclasses, NamedTuples, dicts, registered
classes): the parameters, their gradients from ``rune.grad``, the updates and the
optimizer's state all have the parameters' structure.

Gradient transformations in optax's shape (an optimizer is a
[`GradientTransformation`][rune.optim.GradientTransformation]: ``init`` and ``update``):

    opt = rune.optim.adam(learning_rate=1e-3)
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    params = rune.optim.apply_updates(params, updates)

and full-batch solvers on the same records: [`lbfgs`][rune.optim.lbfgs] (rune's own
L-BFGS) and [`minimize`][rune.optim.minimize] (SciPy's ``minimize``, imported only when
called).

Examples:
    >>> import numpy as np, rune
    >>> opt = rune.optim.chain(rune.optim.clip_by_global_norm(1.0),
    ...                        rune.optim.sgd(learning_rate=0.1, momentum=0.9))
    >>> params = {"w": np.array([3.0, 4.0])}
    >>> state = opt.init(params)
    >>> for _ in range(3):
    ...     grads = rune.grad(lambda p: np.sum(p["w"] ** 2))(params)
    ...     updates, state = opt.update(grads, state, params)
    ...     params = rune.optim.apply_updates(params, updates)
    >>> np.round(params["w"], 4)
    array([2.6634, 3.5512])
"""

from .transforms import (GradientTransformation, EmptyState, ScaleByScheduleState,
                         TraceState, ScaleByAdamState, ScaleByRmsState, ScaleByRStdDevState,
                         ScaleByRssState, ScaleByLionState, identity, chain, apply_updates,
                         global_norm, scale, scale_by_schedule, scale_by_learning_rate,
                         clip_by_global_norm, add_decayed_weights)
from .directions import (trace, scale_by_adam, scale_by_rms, scale_by_stddev, scale_by_rss,
                         scale_by_lion)
from .optimizers import sgd, adam, adamw, rmsprop, adagrad, lion
from .schedules import (constant_schedule, linear_schedule, cosine_decay_schedule,
                        exponential_decay, warmup_cosine_decay_schedule, join_schedules)
from .solver import lbfgs, LBFGSResult
from .scipy_bridge import minimize

__all__ = [
    "GradientTransformation", "EmptyState", "ScaleByScheduleState", "TraceState",
    "ScaleByAdamState", "ScaleByRmsState", "ScaleByRStdDevState", "ScaleByRssState",
    "ScaleByLionState", "identity", "chain", "apply_updates", "global_norm", "scale",
    "scale_by_schedule", "scale_by_learning_rate", "trace", "scale_by_adam", "scale_by_rms",
    "scale_by_stddev", "scale_by_rss", "scale_by_lion", "clip_by_global_norm",
    "add_decayed_weights",
    "sgd", "adam", "adamw", "rmsprop", "adagrad", "lion",
    "constant_schedule", "linear_schedule", "cosine_decay_schedule", "exponential_decay",
    "warmup_cosine_decay_schedule", "join_schedules",
    "lbfgs", "LBFGSResult", "minimize",
]
