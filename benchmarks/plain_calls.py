"""Plain NumPy/SciPy calls that rune's interception replaces, for ``icount.py outside``:
what code outside transformations pays for rune (docs/interception.md)."""

import numpy as np
import scipy.stats as st
from scipy.special import logsumexp

a = np.linspace(-1, 1, 16)


def calls():
    np.asarray(a)
    np.sum(a)
    np.mean([1.0, 2.0])
    logsumexp(a)
    st.norm.logpdf(a, 0.1, 2.0)
