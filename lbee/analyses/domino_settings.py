"""Domino's slice-discovery settings (Domino §4.1, A.3.1) over any dataset with metadata.

A setting subsamples a base dataset so that a slice is *rare*, *correlated*
with the target, or carries *noisy labels*, and simulates a model that
underperforms on it (Domino's synthetic beta models, A.3.4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_positive_int, check_real

KINDS = ("rare", "correlation", "noisy_label")


@dataclass
class DominoSetting:
    """One generated setting.

    Attributes
    ----------
    indices : ndarray of int, shape (n,)
        Rows of the base dataset in the setting.
    targets : ndarray of int, shape (n,)
        Labels (with label noise inside the slice for ``noisy_label``).
    slice_mask : ndarray of bool, shape (n,)
        The true underperforming slice.
    pred_probs : ndarray of shape (n,)
        Simulated P(ŷ = 1).
    kind : str
    alpha : float
    """

    indices: np.ndarray
    targets: np.ndarray
    slice_mask: np.ndarray
    pred_probs: np.ndarray
    kind: str
    alpha: float


def _take(rng, pool, count, name):
    if count > len(pool):
        raise ValueError(
            f"The base dataset has {len(pool)} rows with {name}; the setting needs {count}. "
            "Use a smaller `n` or another `alpha`."
        )
    return rng.choice(pool, size=count, replace=False)


def make_setting(
    target, slice_attribute, *, kind, alpha, n=1000, random_state=None, in_slice_rate=0.4, out_slice_rate=0.9
):
    """Build a Domino setting.

    Parameters
    ----------
    target : array-like of {0, 1}, shape (n_base,)
        Y of the base dataset.
    slice_attribute : array-like of bool, shape (n_base,)
        C, the metadata attribute defining the slice (e.g. "the circle is orange").
    kind : str
        One of:

        - 'rare': among Y = 1, C occurs with proportion α (0.01–0.1 in Domino); slice = Y ∧ C.
        - 'correlation': Y and C have correlation α (0.2–0.8); slice = [C ≠ Y].
        - 'noisy_label': labels inside C are flipped with probability α (0.01–0.3); slice = C.
    alpha : float
        The setting's strength α (above).
    n : int, default=1000
        Images drawn.
    random_state : int, Generator or None, default=None
        Seed of the draw.
    in_slice_rate : float, default=0.4
        Sensitivity = specificity of the simulated model inside the slice.
    out_slice_rate : float, default=0.9
        Sensitivity = specificity of the simulated model outside the slice.

    Returns
    -------
    DominoSetting
    """
    from ..spotcheck import domino_synthetic_predictions

    if kind not in KINDS:
        raise ValueError(f"`kind` must be one of {list(KINDS)}; received {kind!r}.")
    alpha = check_real(alpha, "alpha", minimum=0.0)
    if alpha >= 1:
        raise ValueError(f"`alpha` must be below 1; received {alpha}.")
    n = check_positive_int(n, "n", minimum=4)
    y = np.asarray(target).astype(np.int64)
    c = np.asarray(slice_attribute).astype(bool)
    if y.shape != c.shape or y.ndim != 1:
        raise ValueError(f"`target` {y.shape} and `slice_attribute` {c.shape} must be 1-D of the same length.")
    rng = np.random.default_rng(random_state)
    cells = {(a, b): np.flatnonzero((y == a) & (c == b)) for a in (0, 1) for b in (0, 1)}
    if kind == "rare":
        n1 = n // 2
        n_slice = max(1, int(round(alpha * n1)))
        idx = np.concatenate(
            [
                _take(rng, cells[(1, 1)], n_slice, "Y=1 and C"),
                _take(rng, cells[(1, 0)], n1 - n_slice, "Y=1 and not C"),
                _take(rng, np.flatnonzero(y == 0), n - n1, "Y=0"),
            ]
        )
        labels = y[idx]
        sl = (labels == 1) & c[idx]
    elif kind == "correlation":
        # P(Y=1) = P(C=1) = 1/2 and corr(Y, C) = alpha
        agree = int(round(n * (1 + alpha) / 4))
        disagree = n // 2 - agree
        idx = np.concatenate(
            [
                _take(rng, cells[(1, 1)], agree, "Y=1 and C"),
                _take(rng, cells[(0, 0)], agree, "Y=0 and not C"),
                _take(rng, cells[(1, 0)], disagree, "Y=1 and not C"),
                _take(rng, cells[(0, 1)], disagree, "Y=0 and C"),
            ]
        )
        labels = y[idx]
        sl = c[idx] != (labels == 1)
    else:
        idx = rng.choice(len(y), size=min(n, len(y)), replace=False)
        labels = y[idx].copy()
        sl = c[idx]
        flip = sl & (rng.random(len(idx)) < alpha)
        labels[flip] = 1 - labels[flip]
    order = rng.permutation(len(idx))
    idx, labels, sl = idx[order], labels[order], sl[order]
    probs = domino_synthetic_predictions(
        labels,
        sl,
        in_sensitivity=in_slice_rate,
        in_specificity=in_slice_rate,
        out_sensitivity=out_slice_rate,
        out_specificity=out_slice_rate,
        random_state=rng.integers(2**31),
    )
    return DominoSetting(idx, labels, sl, probs, kind, alpha)
