"""The binomial tails the describers test with equal scipy.stats.binom's, edges included."""

import numpy as np
import pytest
from scipy.stats import binom

from lbee.core.binomial import at_least, at_most


@pytest.mark.parametrize("n", [0, 1, 2, 17, 1000, 364_432])
def test_tails_equal_scipy_stats(n):
    for k in [-2, 0, 1, 2, 16, 17, 18, 999, 1000, 1001, n - 1, n, n + 1]:
        for p in [0.0, 1e-9, 0.03, 0.5, 0.9, 1.0]:
            assert at_least(k, n, p) == pytest.approx(binom.sf(k - 1, n, p), rel=1e-9, abs=1e-300)
            assert at_most(k, n, p) == pytest.approx(binom.cdf(k, n, p), rel=1e-9, abs=1e-300)
            assert np.isfinite(at_least(k, n, p)) and np.isfinite(at_most(k, n, p))
