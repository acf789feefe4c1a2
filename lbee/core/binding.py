"""The binding guard: an attribute value that is another subject's, seen through a loosely binding encoder.

Used by `lbee.core.atoms.literal_probabilities` on the contrast
mixtures of attribute values (step 2 of `lbee.core.atoms`); the
literals it flags are calibrated as one population, ``contrast-unbound``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..typing import BoolArray, FloatArray

if TYPE_CHECKING:
    from .atoms import Key

#: The share of images two subjects' values of one attribute must split alike to be one fact.
BINDING_AGREEMENT = 0.9
#: The smaller side's share below which a value does not split a set of images.
MIN_SPLIT = 0.05
#: The smaller side's share each of two values must have where both subjects are, to be compared at all.
SHARED_SPLIT = 0.1


def _split_share(post: FloatArray, rows: BoolArray) -> float | None:
    """The smaller side's share of ``rows`` when split at posterior 0.5 (None with fewer than 20 rows)."""
    if rows.sum() < 20:
        return None
    share = float(np.mean(post[rows] >= 0.5))
    return min(share, 1.0 - share)


def unbound_values(
    col_keys: Sequence[Key], post: FloatArray, separated: BoolArray, dist: FloatArray, weights: FloatArray
) -> BoolArray:
    """Which contrast columns are another subject's value leaking through the encoder's binding.

    An image tower that binds attributes loosely lets "small text" shift
    "a small circle" against "a large circle", so in a world of large circles
    and texts of two sizes the circle's size margin is bimodal too, and splits
    the images as the text's does. Two subjects' values of one attribute
    (size, colour ...) that both split the images holding both subjects
    (posterior ≥ 0.5; each smaller side ≥ `SHARED_SPLIT`, where
    independent splits agree on at most 82 % of the images) and put at least
    `BINDING_AGREEMENT` of them on the same sides (or on opposite sides
    throughout) are one visual fact the encoder cannot assign to a subject.
    The leak is the one that does not split its own subject's images where
    the other subject is absent (its smaller side under `MIN_SPLIT`),
    while the other's does or cannot be checked (no such images: the square
    among positive images only): "small circle" fires only beside small text,
    text sizes differ with or without a circle. It is then calibrated as one
    population (its value says nothing about any image, as it should not).
    Independent attributes are left alone, and so is a pair whose leak
    cannot be told.

    Parameters
    ----------
    col_keys : list of (str, str)
        The (subject, attribute) of each contrast column.
    post : ndarray of shape (n, A)
    separated, dist : ndarray of shape (A,)
    weights : ndarray of shape (n, A)
        The images where each column's subject is likely present.

    Returns
    -------
    ndarray of bool, shape (A,)
    """
    first: dict[Key, int] = {}
    for t, key in enumerate(col_keys):
        if separated[t]:
            first.setdefault(key, t)
    leaked: set[Key] = set()
    items = list(first.items())
    present = weights > 0  # once, not per pair (an (n, A) array each time: seconds at 1M images)
    for i, (ka, ta) in enumerate(items):
        for kb, tb in items[i + 1 :]:
            if ka[0] == kb[0] or ka[1] != kb[1]:
                continue
            both = present[:, ta] & present[:, tb]
            # two real splits where both subjects are (independent ones then agree on at most 82 % of the images)
            if min(_split_share(post[:, ta], both) or 0.0, _split_share(post[:, tb], both) or 0.0) < SHARED_SPLIT:
                continue
            same = float(np.mean((post[both, ta] >= 0.5) == (post[both, tb] >= 0.5)))
            if max(same, 1.0 - same) < BINDING_AGREEMENT:
                continue
            # the leak is the value that splits its subject's images only where the other subject is there too
            # (None: no image holds the subject without the other, e.g. the square among positives only)
            sa = _split_share(post[:, ta], present[:, ta] & ~present[:, tb])
            sb = _split_share(post[:, tb], present[:, tb] & ~present[:, ta])
            if sa is not None and sa < MIN_SPLIT and (sb is None or sb >= MIN_SPLIT):
                leaked.add(ka)
            elif sb is not None and sb < MIN_SPLIT and (sa is None or sa >= MIN_SPLIT):
                leaked.add(kb)
    return np.array([key in leaked for key in col_keys], dtype=bool)
