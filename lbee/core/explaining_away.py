"""Conditions a failure does not need, explained away by the others.

A confounder goes with a failure (it holds for 90 % of the failure's images and for half of the others) without
causing it. Added to the failure's own conditions it still raises the region's error concentration a little:
where the encoder is unsure of the true conditions, it halves the images they are wrongly said to hold for. The
search's gates, which ask whether a literal raises the lift, keep it.

The question asked here is the one the condition ablation asks on held-out images (`lbee.core.confirmation`): do
the images a literal keeps out of the conjunction (those the other literals hold for and it does not, each by
P ≥ ½) fail like the conjunction's images or like the rest? Their hard share, as a fraction of the way from the
rest's hard share to the conjunction's,

    r = (hard share kept out − hard share outside) / (hard share inside − hard share outside),

is compared with what it would be either way. An image kept out satisfies the other literals with probability
P(rest) and the literal itself with P(literal), both below 1 for a noisy encoder. If the failure needs the
literal, an image kept out fails like the failure's with probability P(rest) · P(literal), so r is about their
mean over the images kept out; if it does not, with P(rest), so r is about its mean. The literal goes when r lies
above the midpoint of the two (the ablation's midpoint, for noisy relevance) and the images kept out are harder
than a needed literal leaves them beyond chance (one-sided binomial test at `ALPHA`: 14 images kept out of "a
gear with glare, under dark lighting" dropped the gear); the most explained one goes first, and the others are
asked again. With a near-perfect encoder the midpoint is ½: a literal goes when the images it
keeps out fail more often than halfway between the rest and the failure.

Measured with `lbee bench worlds` (docs/worlds.md). The rule has no threshold of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .binomial import at_least

if TYPE_CHECKING:
    from .compose import ComposeSearch, Vector

#: Images a literal must keep out for their hard share to be read (fewer: the search's backward elimination
#: decides, by the lift).
MIN_EXCLUDED = 10
#: The level of the one-sided binomial test that the images kept out are harder than a needed literal leaves them.
ALPHA = 0.05


def explained_away(search: ComposeSearch, lits: Sequence[int], weight: Vector | None = None) -> list[int]:
    """``lits`` without the literals the others explain away (module docstring).

    Parameters
    ----------
    search : lbee.core.compose.ComposeSearch
        The literal probabilities and the hard and easy splits.
    lits : sequence of int
        The conjunction's literals (columns of ``search.keys``).
    weight : ndarray of shape (n_hard,), optional
        How much each hard image counts (`lbee.core.discovery`: 1 − P(an earlier failure covers it)); default 1.

    Returns
    -------
    list of int
        The literals kept. A removed literal's presupposition stays when no kept literal implies it ("a distant
        truck" → "a truck").
    """
    n = search.probs.shape[0]
    mass = np.zeros(n, np.float64)  # the images the shares count: hard (by their weight) and easy
    mass[search.hard] = 1.0 if weight is None else np.asarray(weight, np.float64)
    hard_mass = mass.copy()
    mass[search.easy] = 1.0

    def share(mask: np.ndarray) -> tuple[float, float]:
        m = float(np.add.reduce(mass, where=mask))  # no copy of the masked images (a million of them)
        return float(np.add.reduce(hard_mass, where=mask)) / max(m, 1e-9), m

    lits = list(lits)
    while len(lits) > 1:
        region = search.region(lits) >= 0.5
        inside, _ = share(region)
        outside, _ = share(~region)
        if inside <= outside:
            break
        best: tuple[float, int] | None = None
        for j in lits:
            rest = search.without(lits, j)
            if rest is None:
                continue  # presupposed by a literal that stays
            p_rest = search.region(rest)
            kept_out = (p_rest >= 0.5) & ~region & (mass > 0)
            hard_share, size = share(kept_out)
            if size < MIN_EXCLUDED:
                continue
            p_rest, p_j = p_rest[kept_out], search.cond[kept_out, j]
            needed, free = float((p_rest * p_j).mean()), float(p_rest.mean())  # r expected either way
            explained = (hard_share - outside) / (inside - outside) - 0.5 * (needed + free)
            # and more hard images than a needed literal leaves out, beyond chance (14 images kept out of "a gear
            # with glare, under dark lighting" dropped the gear)
            expected = outside + (inside - outside) * needed
            k, m = int(round(hard_share * size)), int(round(size))
            if explained <= 0 or at_least(k, m, min(max(expected, 0.0), 1.0)) > ALPHA:
                continue
            if best is None or explained > best[0]:
                best = (explained, j)
        if best is None:
            break
        lits = search.without(lits, best[1]) or lits
    return lits
