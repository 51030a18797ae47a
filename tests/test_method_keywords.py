"""Every ndarray method with NumPy's keywords, on a traced value as on an ndarray (issue 24):
the same values, and derivatives that agree in grad, jvp (jacfwd = jacrev) and vmap."""

import numpy as np
import pytest

import rune

X = np.arange(1.0, 7.0).reshape(2, 3) / 3.0

CASES = {
    "reshape C": lambda x: x.reshape(3, 2),
    "reshape F": lambda x: x.reshape(3, 2, order="F"),
    "reshape F tuple": lambda x: x.reshape((6,), order="F"),
    "reshape A of F-ordered": lambda x: np.sin(x.T).reshape(6, order="A"),
    "reshape A of C-ordered": lambda x: x.reshape(6, order="A"),
    "flatten F": lambda x: x.flatten("F"),
    "flatten K of transposed": lambda x: np.sin(x.T).flatten("K"),
    "ravel F": lambda x: x.ravel("F"),
    "np.ravel A of F-ordered": lambda x: np.ravel(np.cos(x.T), order="A"),
    "astype same_kind": lambda x: x.astype(np.float32, casting="same_kind"),
    "astype copy False": lambda x: x.astype(np.float64, copy=False) * 2.0,
    "sum axis keepdims": lambda x: x.sum(axis=1, keepdims=True),
    "sum dtype": lambda x: x.sum(axis=0, dtype=np.float32),
    "mean keepdims": lambda x: x.mean(axis=0, keepdims=True),
    "var ddof": lambda x: x.var(axis=1, ddof=1),
    "std ddof keepdims": lambda x: x.std(ddof=1, keepdims=True),
    "max keepdims": lambda x: x.max(axis=0, keepdims=True),
    "min axis": lambda x: x.min(axis=1),
    "cumsum axis": lambda x: x.cumsum(axis=1),
    "cumprod axis": lambda x: x.cumprod(axis=0),
    "prod axis": lambda x: x.prod(axis=1, keepdims=True),
    "transpose axes": lambda x: x.transpose(1, 0),
    "transpose tuple": lambda x: x.transpose((1, 0)),
    "swapaxes": lambda x: x.swapaxes(0, 1),
    "squeeze axis": lambda x: x.reshape(1, 2, 3).squeeze(axis=0),
    "repeat axis": lambda x: x.repeat(2, axis=1),
    "take axis": lambda x: x.take([2, 0], axis=1),
    "clip": lambda x: x.clip(0.5, 1.5),
    "round decimals": lambda x: x.round(decimals=1) * x,
    "diagonal offset": lambda x: x.diagonal(offset=1),
    "trace offset": lambda x: x.trace(offset=1),
    "dot": lambda x: x.dot(x.T),
    "copy F": lambda x: x.copy(order="F") * 2.0,
    "conj": lambda x: x.conj(),
    "np.ptp axis": lambda x: np.ptp(x, axis=1),      # (the method is gone from NumPy 2)
}


# orders 'A' and 'K' follow the memory layout, which rune knows eagerly but not per example
LAYOUT_DEPENDENT = {"reshape A of F-ordered", "flatten K of transposed",
                    "np.ravel A of F-ordered"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_method_keyword_on_a_traced_value_is_numpys(name):
    f = CASES[name]
    want = f(X)
    out = rune.vjp(f, X)[0]
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_array_equal(out, want)
    np.testing.assert_allclose(rune.jvp(f, (X,), (np.ones_like(X),))[0], want)
    jf, jr = rune.jacfwd(f)(X), rune.jacrev(f)(X)
    np.testing.assert_allclose(jf, jr, rtol=1e-6, atol=1e-7)
    batch = np.stack([X, 2 * X])
    if name in LAYOUT_DEPENDENT:     # under vmap rune cannot know one example's layout:
        with pytest.raises(NotImplementedError, match="memory order"):   # a clear error
            rune.vmap(f)(batch)
    else:
        np.testing.assert_allclose(rune.vmap(f)(batch), np.stack([f(b) for b in batch]),
                                   rtol=1e-6)
    if want.dtype == np.float64:
        rune.check_grads(lambda x: np.sum(np.sin(f(x))), X, order=1)


def test_astype_refuses_what_numpy_refuses():
    with pytest.raises(TypeError, match="according to the rule 'safe'"):
        rune.grad(lambda x: np.sum(x.astype(np.int32, casting="safe")))(X)
    with pytest.raises(TypeError, match="same_kind"):
        rune.jvp(lambda x: x.astype(np.int64, casting="same_kind"), (X,), (X,))


def test_fortran_reshape_writes_through_as_in_numpy():
    def f(x):
        y = np.asfortranarray(x.reshape(2, 3))
        z = y.reshape(3, 2, order="F")         # a view in NumPy: y is F-ordered
        z[0, 0] = 100.0
        return y

    x = np.arange(6.0)
    np.testing.assert_array_equal(rune.vjp(f, x)[0], f(x))

    def g(x):
        y = x.reshape(2, 3).copy()
        z = y.reshape(3, 2, order="F")         # a copy in NumPy: y is C-ordered
        z[0, 0] = 100.0
        return y

    np.testing.assert_array_equal(rune.vjp(g, x)[0], g(x))
