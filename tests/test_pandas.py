"""pandas inside a transformed function (issue 25, rune.pandas_compat): a traced value
meeting a Series or DataFrame raises one clear error naming pandas and what to pass
instead; the NumPy numbers of a pandas object (``to_numpy()``, ``.values``) work with the
right derivatives; pandas outside transformations is untouched."""

import doctest
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rune
from rune import pandas_compat
from rune.pandas_compat import PandasTracedError

pd = pytest.importorskip("pandas")

S = pd.Series([1.0, 2.0, 3.0], index=["a", "b", "c"])
DF = pd.DataFrame({"u": [1.0, 2.0], "v": [3.0, -4.0]})
W = np.array([0.5, -1.5])
TAU = 2.0

# (function, argument): every shape of a traced value meeting a pandas object
MEETINGS = {
    "Series / tau": (lambda tau: np.sum(S / tau), TAU),
    "tau * Series": (lambda tau: np.sum(tau * S), TAU),
    "DataFrame @ w": (lambda w: np.sum(DF @ w), W),
    "np.sum(Series * tau)": (lambda tau: np.sum(S * tau), TAU),
    "Series + tau": (lambda tau: np.sum(S + tau), TAU),
    "tau - Series": (lambda tau: np.sum(tau - S), TAU),
    "Series > tau": (lambda tau: np.sum(np.where(S > tau, 1.0, 0.0) * tau), TAU),
    "np.multiply(Series, tau)": (lambda tau: np.sum(np.multiply(S, tau)), TAU),
    "np.multiply(tau, Series)": (lambda tau: np.sum(np.multiply(tau, S)), TAU),
    "np.exp(Series) * tau": (lambda tau: np.sum(np.exp(S) * tau), TAU),
    "w @ DataFrame.T": (lambda w: np.sum(w @ DF.T), W),
    "DataFrame * tau": (lambda tau: np.sum(np.asarray(DF * tau)), TAU),
    "pd.Series(traced)": (lambda w: np.sum(pd.Series(w * 2.0)), W),
}


def _modes(f, x):
    xs = np.stack([np.asarray(x, float), np.asarray(x, float) + 1.0])
    return {"grad": lambda: rune.grad(f)(x),
            "jvp": lambda: rune.jvp(f, (x,), (np.ones_like(x),)),
            "vmap": lambda: rune.vmap(f)(xs)}


@pytest.mark.parametrize("mode", ["grad", "jvp", "vmap"])
@pytest.mark.parametrize("name", list(MEETINGS))
def test_a_traced_value_meeting_pandas_is_one_clear_error(name, mode):
    f, x = MEETINGS[name]
    with pytest.raises(PandasTracedError) as e:
        _modes(f, x)[mode]()
    msg = str(e.value)
    assert "pandas" in msg and ".to_numpy()" in msg, msg
    assert isinstance(e.value, rune.TracerConversionError)
    if "DataFrame" in name and "@ w" not in name:
        assert "a pandas DataFrame" in msg and "df.to_numpy()" in msg, msg
    elif "Series" in name and "pd.Series" not in name:
        assert "a pandas Series" in msg and "series.to_numpy()" in msg, msg


def test_the_numbers_of_pandas_objects_work_with_derivatives():
    def series_numbers(tau):
        return np.sum(S.to_numpy() * tau) + np.sum(np.asarray(S) / tau)

    def frame_numbers(w):
        return np.sum(np.tanh(DF.values @ w)) + np.sum(DF.to_numpy() @ (w * w))

    rune.check_grads(series_numbers, TAU, order=2)
    rune.check_grads(frame_numbers, W, order=2)
    assert rune.grad(series_numbers)(TAU) == pytest.approx(6.0 - 6.0 / TAU ** 2)
    expect = DF.values.T @ (1 - np.tanh(DF.values @ W) ** 2) + 2 * W * DF.values.sum(axis=0)
    np.testing.assert_allclose(rune.grad(frame_numbers)(W), expect, rtol=1e-12)
    xs = np.stack([W, -W])
    np.testing.assert_allclose(rune.vmap(rune.grad(frame_numbers))(xs),
                               np.stack([rune.grad(frame_numbers)(v) for v in xs]))


def test_pandas_outside_transformations_is_untouched():
    _ = rune.grad(lambda t: t * 2.0)(1.0)          # rune's replacements are installed
    out = S * 2.0
    assert type(out) is pd.Series and list(out.index) == ["a", "b", "c"]
    assert (S / np.float64(2.0)).tolist() == [0.5, 1.0, 1.5]
    assert (DF @ W).tolist() == [-4.0, 7.0]
    assert type(np.multiply(S, 2.0)) is pd.Series
    assert (2.0 - S).tolist() == [1.0, 0.0, -1.0]


def test_pandas_first_imported_inside_the_transformed_function():
    code = textwrap.dedent("""
        import sys
        import numpy as np, rune
        from rune.pandas_compat import PandasTracedError
        assert "pandas" not in sys.modules
        def f(tau):
            import pandas as pd
            return np.sum(pd.Series([1.0, 2.0]) * tau)
        try:
            rune.grad(f)(2.0)
        except PandasTracedError as e:
            assert "series.to_numpy()" in str(e)
            print("clear")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0 and res.stdout.strip() == "clear", res.stderr[-2000:]


def test_doctests_of_the_module():
    result = doctest.testmod(pandas_compat)
    assert result.failed == 0 and result.attempted > 0
