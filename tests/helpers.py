"""Shared test helpers: vmap against a Python loop, and a rule-checking sweep."""

import numpy as np

import rune


def check_vmap(f, *args, in_axes=0, out_axes=0, rtol=1e-10, atol=1e-12):
    """``vmap(f)`` equals a Python loop over the batch, stacked at ``out_axes``."""
    got = rune.vmap(f, in_axes=in_axes, out_axes=out_axes)(*args)
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = []
    for i in range(size):
        ex = [a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)]
        outs.append(f(*ex))
    want = rune.tree.map(lambda *xs: np.stack(xs, axis=out_axes), *outs)
    rune.tree.map(lambda g, w: np.testing.assert_allclose(g, w, rtol=rtol, atol=atol), got, want)
    return got


def check_all_axes(f, *args, rtol=1e-10, atol=1e-12):
    """``check_vmap`` with the batch axis of every argument first, last and in the middle,
    and under ``vmap(vmap(f))``.  ``args`` are per-example values; batches are built here."""
    rng = np.random.default_rng(1)
    batched = []
    for a in args:
        a = np.asarray(a)
        stack = np.stack([a + 0.1 * rng.standard_normal(a.shape).astype(a.dtype)
                          if a.dtype.kind == "f" else a for _ in range(3)])
        batched.append(stack)
    for pos in ("first", "last", "middle"):
        moved, axes = [], []
        for b in batched:
            ax = {"first": 0, "last": b.ndim - 1, "middle": (b.ndim - 1) // 2}[pos]
            moved.append(np.moveaxis(b, 0, ax))
            axes.append(ax)
        check_vmap(f, *moved, in_axes=tuple(axes), rtol=rtol, atol=atol)
    # vmap of vmap: two batch axes
    double = [np.stack([b, b * 0.5 if b.dtype.kind == "f" else b]) for b in batched]
    got = rune.vmap(rune.vmap(f))(*double)
    for i in range(2):
        for j in range(3):
            want = f(*[d[i, j] for d in double])
            rune.tree.map(lambda g, w: np.testing.assert_allclose(g, w, rtol=rtol, atol=atol),
                          rune.tree.map(lambda g: g[i, j], got), want)
