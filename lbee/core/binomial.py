"""Binomial tail probabilities for the describers' tests, from `scipy.special`.

`scipy.stats.binom` gives the same numbers, but importing `scipy.stats` takes about a second, paid inside
the first analysis of a process; `scipy.special` is already loaded. These two functions are its ``sf`` and
``cdf`` on integer counts, edges included (`scipy.special.bdtrc` / `bdtr` return NaN where the tail is
empty or whole).
"""

from __future__ import annotations


def at_least(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p): ``scipy.stats.binom.sf(k - 1, n, p)``."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    from scipy.special import bdtrc  # lazily: `lbee --help` imports no SciPy

    return float(bdtrc(k - 1, n, p))


def at_most(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p): ``scipy.stats.binom.cdf(k, n, p)``."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    from scipy.special import bdtr

    return float(bdtr(k, n, p))
