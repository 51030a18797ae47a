"""SPEC 3's conversion rule (issue 24): float/int/complex/round and NumPy's scalar types on a
value being differentiated raise; .item() is the explicit way out, but a derivative never
vanishes silently through it."""

import numpy as np
import pytest

import rune


def leaky_argmin(k):
    """What scipy.optimize.minimize does with the objective's value: .item()."""
    x = np.zeros(2)
    for _ in range(50):
        g = 2 * (x - k)
        if abs(np.sum(g).item()) < 1e-12:
            break
        x = x - 0.5 * np.array([v.item() for v in g])
    return x


def test_a_derivative_that_left_through_item_raises_naming_the_line():
    with pytest.raises(rune.TracerConversionError, match=r"test_trust_conversions.py:\d+") as ei:
        rune.grad(lambda k: np.sum(leaky_argmin(k)))(0.5)
    assert "rune.stop_gradient" in str(ei.value) and ".item()" in str(ei.value)
    with pytest.raises(rune.TracerConversionError, match=r"\.item\(\)"):
        rune.jvp(lambda k: np.sum(leaky_argmin(k)), (0.5,), (1.0,))
    with pytest.raises(rune.TracerConversionError):
        rune.jacrev(lambda k: leaky_argmin(k))(np.array(0.5))


def test_scipy_minimize_no_longer_gives_a_silent_zero():
    so = pytest.importorskip("scipy.optimize")
    # rune.scipy.optimize now differentiates the solution itself (issue 26): the derivative
    assert rune.grad(lambda k: so.minimize(lambda x: np.sum((x - k) ** 2),
                                           np.zeros(2)).x.sum())(0.5) == 2.0


def test_item_for_logging_and_control_flow_is_fine():
    def f(x):
        loss = np.sum(x ** 2)
        assert loss.item() > 0                  # logging, a branch
        return loss if loss.item() < 100 else loss / 2

    np.testing.assert_allclose(rune.grad(f)(np.array([1.0, 2.0])), [2.0, 4.0])
    # the result depends on x through another path: no error (the spec's rule)
    np.testing.assert_allclose(rune.grad(lambda x: x * 2 + 0 * x.item())(3.0), 2.0)
    # a stop_gradient says a zero derivative is wanted
    assert rune.grad(lambda k: np.sum(leaky_argmin(rune.stop_gradient(k))) * 0 + 1.0)(0.5) \
        == 0.0


@pytest.mark.parametrize("convert", [float, int, complex, round, np.float64, np.float32,
                                     np.int64, np.complex128])
def test_conversions_raise_and_name_stop_gradient(convert):
    with pytest.raises(rune.TracerConversionError) as ei:
        rune.grad(lambda x: x * convert(x))(1.5)
    assert "rune.stop_gradient" in str(ei.value)
    with pytest.raises(rune.TracerConversionError):
        rune.jvp(lambda x: x * convert(x), (1.5,), (1.0,))


def test_round_with_digits_is_numpys_round_and_batched_conversions_run_per_example():
    np.testing.assert_allclose(rune.grad(lambda x: round(x, 1) * x)(1.55), 1.6)
    with pytest.warns(rune.PerformanceWarning):
        out = rune.vmap(lambda x: x * float(x))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(out, [1.0, 4.0])
    assert round(np.float64(2.6)) == 3 and type(np.float64(1.0)) is np.float64


def test_a_conversion_error_names_the_numpy_or_scipy_call_that_reached_it():
    """Issue 25: the error names the user-visible call, not only the conversion."""
    import scipy.linalg
    import scipy.signal

    def uses_private_scipy_code(x):        # SciPy code rune has no rule for
        return scipy.signal.detrend(x * x)

    with pytest.raises(rune.TracerConversionError, match=r"^scipy\.signal\.detrend reached"):
        rune.grad(lambda x: np.sum(uses_private_scipy_code(x)))(np.ones(3))
    with pytest.raises(NotImplementedError, match=r"^scipy\.signal\.medfilt reached"):
        rune.grad(lambda x: np.sum(scipy.signal.medfilt(x * x)))(np.ones(3))
    with pytest.raises(rune.TracerConversionError) as e:      # a direct conversion: no call
        rune.grad(lambda x: float(x))(1.0)
    assert "reached" not in str(e.value)
    assert scipy.linalg     # (imported: its functions forward, and are not blamed)
