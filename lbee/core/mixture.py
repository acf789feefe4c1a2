"""Two-population mixtures of an atom's similarities, and the posterior made monotone: the atoms' calibration.

Step 1 of `lbee.core.atoms`: per atom (a column of similarities), a two-component 1-D Gaussian mixture, fitted on
an evenly spread sample of the images and applied to all, says whether the similarities are two populations (the
images that hold the atom and those that do not) and gives each image the posterior of the higher one, made
non-decreasing in the similarity. Computed in place and in row blocks: a million images by 60 atoms never hold
more than two (n, A) arrays.
"""

from __future__ import annotations

import numpy as np

from ..typing import ArrayLike, BoolArray, FloatArray

#: Ashman's D at or above which an atom's similarities are two populations.
SEPARATION = 2.0
#: Ashman's D below which two fitted components are one population split in two (a unimodal, skewed atom).
MIN_SEPARATION = 0.5
MIN_WEIGHT = 0.01


#: The mixtures are fitted on at most this many images (every k-th), then applied to all.
FIT_ROWS = 2048


def _mixture(
    s_all: FloatArray,
    weights: ArrayLike | None = None,
    n_iter: int = 40,
    boundary: float | None = None,
    split_at: float | None = None,
) -> tuple[FloatArray, BoolArray, FloatArray, FloatArray, FloatArray, BoolArray]:
    """Two-component 1-D Gaussian mixtures, one per column of ``s`` (n, A), fitted on the rows of ``weights`` > 0.

    Returns the posterior of the higher component (n, A), non-decreasing in s,
    whether the two are separated (A,), the components' pooled width (A,), the
    column's spread (A,), Ashman's D of the two components (A,) and whether
    they are two populations at all (A,): each with its share, D ≥
    ``MIN_SEPARATION`` (however much they overlap), on either side of
    ``boundary`` and of ``split_at``.
    With ``boundary`` (a float, or (A,)), two components are one population
    unless they lie on either side of it: a similarity that is bimodal because
    of *other* attributes (two squares look a little like a rectangle) is not
    a population that holds the atom.
    """
    step = max(1, -(-s_all.shape[0] // FIT_ROWS))  # a deterministic, evenly spread sample
    s = s_all[::step]
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)[::step]
    n, a = s.shape
    w_row = np.ones((n, 1)) if weights is None else np.asarray(weights, dtype=np.float64).reshape(n, -1)
    tot = np.maximum(w_row.sum(0), 1e-9)
    lo = np.array(
        [
            np.percentile(s[w_row[:, min(i, w_row.shape[1] - 1)] > 0, i], 25)
            if (w_row[:, min(i, w_row.shape[1] - 1)] > 0).any()
            else 0.0
            for i in range(a)
        ]
    )
    hi = np.array(
        [
            np.percentile(s[w_row[:, min(i, w_row.shape[1] - 1)] > 0, i], 75)
            if (w_row[:, min(i, w_row.shape[1] - 1)] > 0).any()
            else 0.0
            for i in range(a)
        ]
    )
    mu = np.stack([lo, hi])
    mean = (w_row * s).sum(0) / tot
    spread = np.sqrt((w_row * (s - mean) ** 2).sum(0) / tot) + 1e-6
    var = np.stack([spread, spread]) ** 2 / 4
    w = np.full((2, a), 0.5)
    for _ in range(n_iter):
        previous = mu
        logp = (
            -0.5 * (s[None] - mu[:, None]) ** 2 / var[:, None]
            - 0.5 * np.log(2 * np.pi * var[:, None])
            + np.log(np.maximum(w[:, None], 1e-12))
        )
        r = np.exp(logp - logp.max(0))
        r /= r.sum(0)
        rw = r * w_row[None]
        nk = rw.sum(1) + 1e-9
        w = nk / tot
        mu = (rw * s[None]).sum(1) / nk
        var = np.maximum((rw * (s[None] - mu[:, None]) ** 2).sum(1) / nk, (spread * 1e-2) ** 2)
        if np.all(np.abs(mu - previous) <= 1e-4 * spread):  # converged (EM only creeps from here)
            break
    high = np.argmax(mu, axis=0)
    d = np.sqrt(2) * np.abs(mu[0] - mu[1]) / np.sqrt(var[0] + var[1])
    # two populations, however much they overlap: each with its share of the images (on either side of
    # `boundary`); separated: also far enough apart to be told apart image by image
    two = (w.min(0) >= MIN_WEIGHT) & (w.min(0) * tot >= 3) & (d >= MIN_SEPARATION)
    if boundary is not None:
        two &= (mu.min(0) < boundary) & (boundary < mu.max(0))
    separated = two & (d >= SEPARATION)
    if split_at is not None:  # the overlapping populations must also lie on either side of `split_at`
        two &= (mu.min(0) < split_at) & (split_at < mu.max(0))
    # posterior of the higher component for every image: a logistic of the two log densities' difference, a
    # quadratic in s (two Gaussians of their own variances), computed as ((qa s + qb) s + qc) in place on one (n, A)
    # array: four passes, where each log density's took six (a third of 'compose''s literal probabilities at 1M)
    lo = 1 - high
    ar = np.arange(a)
    m_lo, m_hi, v_lo, v_hi = mu[lo, ar], mu[high, ar], var[lo, ar], var[high, ar]
    qa = -0.5 * (1 / v_lo - 1 / v_hi)
    qb = m_lo / v_lo - m_hi / v_hi
    qc = -0.5 * (m_lo**2 / v_lo - m_hi**2 / v_hi) - 0.5 * np.log(v_lo / v_hi) + np.log(w[lo, ar] / w[high, ar])
    post = s_all * qa
    post += qb
    post *= s_all
    post += qc
    np.clip(post, -60, 60, out=post)
    np.exp(post, out=post)
    post += 1.0
    np.reciprocal(post, out=post)
    post = _monotone(s_all, post, var[high, ar] > var[lo, ar], in_place=True)
    return post, separated, np.sqrt((var[0] + var[1]) / 2), spread, d, two


def _monotone(s: FloatArray, post: FloatArray, wider: ArrayLike | None = None, *, in_place: bool = False) -> FloatArray:
    """``post`` made non-decreasing in ``s``, column by column (a higher similarity never means a lower P).

    Two Gaussians' posterior is a logistic of a quadratic in s: it rises then falls (the lower component is the
    wider) or falls then rises (the higher is, ``wider``). A far tail is not the other population, so past the
    turn it keeps the turn's value: above a peak the peak's, below a trough the trough's (O(n), no sort; a far
    left tail lifted every large-text image's P("small text") to 0.98). The ranking is the similarity's.
    ``in_place``: written into ``post`` (returned), else into a copy.
    """
    post = post if in_place else post.copy()
    n, a = post.shape
    wide = np.zeros(a, bool) if wider is None else np.asarray(wider, bool).reshape(-1)
    if n == 0:
        return post
    # every column at once, in row blocks (a column of an (n, A) array is strided: read one by one, it was the
    # step's cost), in place: the same numbers as column by column
    top, bottom = post.max(axis=0), post.min(axis=0)  # the peak (a rising posterior), the trough (``wide``)
    low = post[np.argmin(s, axis=0), np.arange(a)]  # the posterior at the lowest s
    turn = np.full(a, np.inf)  # the lowest s where it peaks; for ``wide``, the highest s at its trough
    trough = np.full(a, -np.inf)
    for i0 in range(0, n, _MONOTONE_ROWS):
        sb, pb = s[i0 : i0 + _MONOTONE_ROWS], post[i0 : i0 + _MONOTONE_ROWS]
        turn = np.minimum(turn, np.where(pb == top, sb, np.inf).min(axis=0))
        trough = np.maximum(trough, np.where(pb == bottom, sb, -np.inf).max(axis=0))
    for i0 in range(0, n, _MONOTONE_ROWS):
        sb, pb = s[i0 : i0 + _MONOTONE_ROWS], post[i0 : i0 + _MONOTONE_ROWS]
        rising = np.where(sb <= turn, np.maximum(pb, low), top)  # below the peak: at least the far left's value
        pb[...] = np.where(wide, np.where(sb <= trough, bottom, pb), rising)  # below the trough: the trough's
    return post


#: Rows per block of `_monotone`'s passes.
_MONOTONE_ROWS = 16384
