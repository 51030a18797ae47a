"""Structural zeros in forward mode too (issue 24, SPEC 1.6): a tangent that is zero because
np.where selected the other branch stays zero through every primitive that moves or selects
elements, so jacfwd agrees with jacrev (f05ccaa's jvp gave NaN through concatenate & co.)."""

import numpy as np
import pytest

import rune


def masked(x):
    return np.where(x > 0, x, 0.0)      # the branch not taken at x <= 0


MOVES = {
    "concatenate": lambda x: np.concatenate([masked(x), np.ones(1)]),
    "stack": lambda x: np.stack([masked(x), np.ones(2)]),
    "vstack": lambda x: np.vstack([masked(x), np.ones(2)]),
    "hstack": lambda x: np.hstack([masked(x), np.ones(2)]),
    "column_stack": lambda x: np.column_stack([masked(x), np.ones(2)]),
    "append": lambda x: np.append(masked(x), 1.0),
    "block": lambda x: np.block([masked(x), np.ones(2)]),
    "insert": lambda x: np.insert(masked(x), 1, 5.0),
    "pad": lambda x: np.pad(masked(x), 1),
    "max over a stack": lambda x: np.max(np.stack([masked(x), np.zeros(2)]), axis=0),
    "complex round trip": lambda x: np.real(masked(x).astype(complex)),
    "astype": lambda x: masked(x).astype(np.float32),
    "conj": lambda x: np.conj(masked(x)),
    "reshape": lambda x: masked(x).reshape(2, 1),
    "index": lambda x: masked(x)[::-1],
    "split": lambda x: np.split(masked(x), 2)[1] + np.split(masked(x), 2)[0],
}


@pytest.mark.parametrize("name", sorted(MOVES))
def test_jacfwd_equals_jacrev_through_a_structural_zero(name):
    g = lambda x: np.sqrt(MOVES[name](x))      # noqa: E731  (sqrt: infinite slope at 0)
    x = np.array([-1.0, 2.0])
    jf, jr = rune.jacfwd(g)(x), rune.jacrev(g)(x)
    assert not np.isnan(jf).any() and not np.isnan(jr).any()
    np.testing.assert_allclose(jf, jr, rtol=1e-6)
    t = rune.jvp(g, (x,), (np.ones(2),))[1]
    np.testing.assert_allclose(t, jf.sum(axis=-1), rtol=1e-6)
    hf = rune.jacfwd(rune.jacrev(lambda x: np.sum(g(x))))(x)
    hr = rune.jacrev(rune.jacrev(lambda x: np.sum(g(x))))(x)
    np.testing.assert_allclose(hf, hr, rtol=1e-6)


def test_the_issues_example():
    f = lambda x: np.sqrt(np.concatenate([np.where(x > 0, x, 0.0), np.ones(1)]))  # noqa: E731
    _, t = rune.jvp(f, (np.array([-1.0, 2.0]),), (np.ones(2),))
    np.testing.assert_allclose(t, [0.0, 0.5 / np.sqrt(2.0), 0.0])
