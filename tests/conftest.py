import numpy as np
import pytest
from hypothesis import settings

import rune
from rune import core

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True)
settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _clean_stack():
    """Every test leaves no active transformation and NumPy unpatched."""
    yield
    assert core.active_traces() == (), "a transformation level leaked"
    assert core._active_count == 0
    assert np.asarray is rune.numpy_api._np_asarray


@pytest.fixture
def rng():
    return np.random.default_rng(0)
