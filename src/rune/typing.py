"""Type aliases of rune's public signatures.

A *tree* ([`PyTree`][rune.typing.PyTree]) is any nesting of tuples, lists, dicts, ``None``,
NamedTuples, dataclasses and registered classes ([`rune.tree.register`][rune.tree.register])
whose leaves are arrays or numbers.  Its static type is ``Any``: the
containers of a tree are the user's own types and a transformation changes
its leaves' types (a gradient of Python floats is made of floats, of
``float32`` arrays of ``float32`` arrays), which no type checker follows.
Where a function keeps its argument's type (``rune.stop_gradient``,
``rune.checkpoint``, ``rune.custom_vjp``), its signature says so with a type
variable; where it keeps the parameters (``rune.grad``, ``rune.jacfwd``, ...),
with a ``ParamSpec``; ``rune.vmap``'s function takes batches, whose types are not the
parameters', so it accepts any arguments.

Examples:
    >>> import numpy as np, rune
    >>> from rune.typing import PyTree
    >>> def loss(params: PyTree) -> float:
    ...     return float(np.sum(params["w"] ** 2))
    >>> loss({"w": np.ones(3)})
    3.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeAlias, TypeVar

__all__ = ["PyTree", "ArgNums", "AxisSpec", "IsLeaf", "P", "R", "T"]

PyTree: TypeAlias = Any
"""A nested container of arrays (see the module docstring): statically ``Any``."""
ArgNums: TypeAlias = int | Sequence[int]
"""Which positional arguments to differentiate: one index or a sequence of them."""
AxisSpec: TypeAlias = Any
"""``vmap``'s ``in_axes``/``out_axes``: an int, ``None``, or a tree prefix of them."""
IsLeaf: TypeAlias = Callable[[Any], bool] | None
"""``is_leaf`` of the tree functions: stops flattening at the nodes it accepts."""

P = ParamSpec("P")
"""The parameters of a transformed function (``grad(f)`` takes ``f``'s arguments)."""
R = TypeVar("R")
"""The result of a function whose type a transformation keeps (``checkpoint``, ``jit``)."""
T = TypeVar("T")
"""A value whose type a function keeps (``stop_gradient``)."""
