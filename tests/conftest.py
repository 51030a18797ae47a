import numpy as np
import pytest
from hypothesis import settings

from rune import core

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True)
settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _clean_stack():
    """Every test leaves no active transformation in this context."""
    yield
    assert core.active_traces() == (), "a transformation level leaked"


@pytest.fixture
def rng():
    return np.random.default_rng(0)
