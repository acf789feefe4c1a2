"""Rendering an EC's splits: random images, or every combination of the rollable attributes (official sampling)."""

from __future__ import annotations

import numpy as np

from ._render import render
from ._world import ATTRIBUTES, META


def _label(attrs, blindspots, mislabel):
    """The label the model sees: square present, flipped to 0 inside a blindspot when ``mislabel``.

    Official definition (SpotCheck §3, njohnson99/spotcheck): blindspots hold
    positive images only, and only positive labels are flipped.
    """
    y = int(attrs[("square", "presence")] == "true")
    if mislabel and y == 1 and any(b.contains(attrs) for b in blindspots):
        y = 0
    return y


def generate_images(dataset, blindspots, n, rng, size, *, mislabel, enrich=0.0):
    """Render ``n`` images drawn at random; with ``mislabel`` positive blindspot images are labelled 0.

    With ``enrich`` > 0, that fraction of images is drawn inside a random
    blindspot (its triplets pinned, everything else sampled as usual). This is
    the ``sampling="random"`` mode of `make_ec` (lbee's earlier protocol).
    """
    images = np.empty((n, size, size, 3), np.uint8)
    attrs, labels = [], np.empty(n, np.int64)
    for i in range(n):
        fixed = {}
        if enrich and rng.random() < enrich:
            fixed = blindspots[int(rng.integers(len(blindspots)))].as_dict()
        images[i], a = render(dataset.sample_attributes(rng, fixed), rng, size, position=fixed.get(META))
        attrs.append(a)
        labels[i] = _label(a, blindspots, mislabel)
    return images, attrs, labels


def combinations(dataset):
    """Every assignment of the dataset's rollable attributes, as fixed-attribute dicts (2^r of them)."""
    import itertools

    keys = list(dataset.rollable)
    return [dict(zip(keys, values)) for values in itertools.product(*(ATTRIBUTES[k] for k in keys))]


def generate_uniform_split(dataset, blindspots, per_combination, rng, size, *, mislabel, n_enrich=0):
    """``per_combination`` images of every rollable-attribute combination, shuffled (official sampling).

    The official generator (njohnson99/spotcheck ``data_utils.py``) renders a
    fixed number of images per attribute combination (400 / 50 / 50 for train
    / val / test), so a blindspot pinning m rollable attributes holds 2^-m of
    the split (less again when it pins the square's position: "above" holds for
    about half the one-square images and most two-square ones).
    ``n_enrich`` extra images are drawn inside random blindspots (a training
    aid of lbee's, used for the train split only; 0 is the official sampling).
    """
    fixed_list = [c for c in combinations(dataset) for _ in range(int(per_combination))]
    fixed_list += [blindspots[int(rng.integers(len(blindspots)))].as_dict() for _ in range(int(n_enrich))]
    order = rng.permutation(len(fixed_list))
    n = len(fixed_list)
    images = np.empty((n, size, size, 3), np.uint8)
    attrs, labels = [], np.empty(n, np.int64)
    for i, j in enumerate(order):
        fixed = fixed_list[j]
        images[i], a = render(dataset.sample_attributes(rng, fixed), rng, size, position=fixed.get(META))
        attrs.append(a)
        labels[i] = _label(a, blindspots, mislabel)
    return images, attrs, labels
